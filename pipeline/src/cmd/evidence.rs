//! `ptxbench evidence CUBIN-or-CANDIDATE --task ID [--arch ARCH] [--ncu-csv FILE] [--json]`:
//! the static SASS inventory and, with Nsight Compute's CSV, the dynamic counts, as the
//! per-family evidence status.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use serde::Serialize;

use crate::arch::Arch;
use crate::candidate::Candidate;
use crate::check::{self, CheckOptions};
use crate::evidence::ncu::{self, NcuSourceReport};
use crate::evidence::{self, SassInventory, StaticSass, TargetEvidence};

#[derive(Debug, Args)]
pub struct EvidenceArgs {
    /// A cubin (`*.cubin`), or a candidate: a model response or a folder with kernel.ptx or
    /// kernel.cu (compiled with ptxas for `--arch`).
    pub input: PathBuf,
    /// Task id (see `ptxbench tasks list`).
    #[arg(long)]
    pub task: String,
    #[arg(long, default_value = "sm_90a")]
    pub arch: Arch,
    /// Fold in Nsight Compute's executed counts: the CSV of `ncu --page source --print-source
    /// sass --csv` with `--metrics inst_executed,thread_inst_executed_true`.
    #[arg(long, value_name = "FILE")]
    pub ncu_csv: Option<PathBuf>,
    /// Print the `--kernel-name regex:` value for ncu that matches the kernel's entries, and exit.
    #[arg(long)]
    pub kernel_regex: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Everything `ptxbench evidence` found.
#[derive(Debug, Serialize)]
struct EvidenceReport {
    task: String,
    input: String,
    evidence: TargetEvidence,
    /// Per-function SASS inventory, when the cubin was disassembled.
    sass: Option<SassInventory>,
    /// Nsight Compute's per-launch counts, when a CSV was given.
    ncu: Option<NcuSourceReport>,
}

pub fn run(a: EvidenceArgs, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let suite = super::load_suite(dir)?;
    let task = super::task(&suite, &a.task)?;
    let target = task
        .target(a.arch)
        .with_context(|| format!("task {} has no target for {}", a.task, a.arch))?;

    let (sass, entries) = static_sass(&a.input, task, a.arch)?;
    if a.kernel_regex {
        anyhow::ensure!(
            !entries.is_empty(),
            "no kernel entries found in {}",
            a.input.display()
        );
        outln!("{}", ncu::kernel_regex(entries.iter().map(String::as_str)))?;
        return Ok(ExitCode::SUCCESS);
    }
    let ncu_report = match &a.ncu_csv {
        None => None,
        Some(p) => {
            let text = super::read_text(p)?;
            Some(
                ncu::parse_source_csv(&text)
                    .with_context(|| format!("reading Nsight Compute CSV {}", p.display()))?,
            )
        }
    };
    let dynamic = ncu_report.as_ref().map(NcuSourceReport::dynamic_counts);
    let mut ev = evidence::assess(target, &sass, dynamic.as_ref());
    if let Some(r) = &ncu_report {
        let names: Vec<String> = r
            .kernels
            .iter()
            .map(|k| k.kernel.clone().unwrap_or_else(|| "(unnamed)".into()))
            .collect();
        ev.notes.push(format!(
            "ncu: {} profiled launch(es): {}",
            r.kernels.len(),
            names.join(", ")
        ));
    }
    let report = EvidenceReport {
        task: task.id.to_string(),
        input: a.input.display().to_string(),
        evidence: ev,
        sass: match sass {
            StaticSass::Inventory(inv) => Some(inv),
            _ => None,
        },
        ncu: ncu_report,
    };
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        out!("{}", render_text(&report))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The static inventory of the input, and the kernel entry names it defines.
fn static_sass(
    input: &Path,
    task: &crate::task::Task,
    arch: Arch,
) -> anyhow::Result<(StaticSass, Vec<String>)> {
    if input.extension().is_some_and(|e| e == "cubin") {
        let bytes = std::fs::read(input).with_context(|| format!("reading {}", input.display()))?;
        return Ok(match evidence::sass::disassemble(&bytes) {
            Ok(inv) => {
                let names = inv.functions.iter().map(|f| f.name.clone()).collect();
                (StaticSass::Inventory(inv), names)
            }
            Err(e) => (StaticSass::InspectionFailed(e.to_string()), Vec::new()),
        });
    }
    let candidate = match Candidate::load(input) {
        Ok(c) => c,
        Err(e) if e.is_extraction() => {
            return Ok((StaticSass::SourceMissing(e.to_string()), Vec::new()));
        }
        Err(e) => return Err(e.into()),
    };
    let opts = CheckOptions {
        arch,
        compile_for: vec![arch],
    };
    let report = check::check(&candidate, task, &opts);
    let entries = report.entries.clone();
    if report.ptx.is_none() {
        let why = report
            .failure
            .as_ref()
            .map(|f| f.reasons.join("; "))
            .unwrap_or_else(|| report.warnings.join("; "));
        return Ok((StaticSass::SourceMissing(format!("no PTX: {why}")), entries));
    }
    let sass = match report
        .ptxas
        .iter()
        .find(|p| p.arch == arch)
        .map(|p| &p.result)
    {
        None => StaticSass::InspectionFailed("ptxas was not run".into()),
        Some(Err(e)) => StaticSass::InspectionFailed(format!("ptxas not run: {e}")),
        Some(Ok(res)) => match &res.cubin {
            None => {
                StaticSass::SourceMissing(format!("ptxas -arch={arch} failed:\n{}", res.log.trim()))
            }
            Some(cubin) => match evidence::sass::disassemble(cubin) {
                Ok(inv) => StaticSass::Inventory(inv),
                Err(e) => StaticSass::InspectionFailed(e.to_string()),
            },
        },
    };
    Ok((sass, entries))
}

fn render_text(r: &EvidenceReport) -> String {
    let e = &r.evidence;
    let mut s = String::new();
    let _ = writeln!(s, "task {}, arch {}: {}", r.task, e.arch, r.input);
    if !e.disassembler.is_empty() {
        let _ = writeln!(s, "disassembler: {}", e.disassembler);
    }
    if let Some(inv) = &r.sass {
        for f in &inv.functions {
            let _ = writeln!(
                s,
                "function {}: {} SASS instructions",
                f.name, f.instructions
            );
        }
    }
    for f in &e.families {
        let dynamic = match (f.dynamic_count, f.method) {
            (Some(n), Some(m)) => format!(", executed {n} ({m:?})"),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "{}: {} (SASS {}: {} static{}{})",
            f.family,
            f.status,
            f.sass_patterns.join(" / "),
            f.static_count,
            if f.static_opcodes.is_empty() {
                String::new()
            } else {
                format!(" [{}]", f.static_opcodes.join(", "))
            },
            dynamic
        );
    }
    for n in &e.notes {
        let _ = writeln!(s, "note: {n}");
    }
    let _ = writeln!(s, "status: {}", e.status);
    s
}
