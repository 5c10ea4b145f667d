//! `ptxbench eval CANDIDATE --task ID`: the static check, then the GPU evaluation in an
//! isolated worker process.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use comfy_table::{Table, presets::UTF8_BORDERS_ONLY};

use crate::arch::Arch;
use crate::candidate::Candidate;
use crate::engine::evaluator::{Evaluator, Job};
use crate::engine::{Outcome, Protocol, Verdict};
use crate::record::TaskObject;

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// A model response or a candidate folder (kernel.ptx or kernel.cu, and plan.yaml).
    pub candidate: PathBuf,
    #[arg(long)]
    pub task: String,
    #[arg(long, default_value = "sm_90a")]
    pub arch: Arch,
    /// Base seed of the inputs (the same seed gives the same inputs); by default one is drawn
    /// at run time from OS entropy, so nobody knows the inputs in advance. Printed either way.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Evaluate only these workloads (repeatable).
    #[arg(long = "workload")]
    pub workloads: Vec<String>,
    /// Correctness only.
    #[arg(long)]
    pub no_timing: bool,
    /// Wall-clock limit of the worker, in seconds.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Which GPU.
    #[arg(long, default_value_t = 0)]
    pub gpu: usize,
    /// Print the whole outcome as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: EvalArgs, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let suite = super::load_suite(dir)?;
    let task = super::task(&suite, &a.task)?;
    if let Some(why) = task.unknown_workload(&a.workloads) {
        anyhow::bail!("--workload: {why}");
    }
    let candidate = match Candidate::load(&a.candidate) {
        Ok(c) => Ok(c),
        Err(e) if e.is_extraction() => Err(e.to_string()),
        Err(e) => return Err(e.into()),
    };
    let seed = match a.seed {
        Some(s) => s,
        None => crate::runner::seed::draw()?,
    };
    eprintln!("seed {seed}");
    let job = Job {
        arch: a.arch,
        seed,
        protocol: Protocol::default(),
        workloads: a.workloads.clone(),
        no_timing: a.no_timing,
    };
    let object = TaskObject::from_suite(&suite, task)?;
    let prepared = Evaluator::prepare(
        candidate.as_ref().map_err(Clone::clone),
        task,
        &object,
        &job,
    );
    let evaluator = Evaluator::this_executable().context("locating the ptxbench executable")?;
    let outcome = evaluator.finish(&prepared.work, a.gpu, Duration::from_secs(a.timeout));
    if a.json {
        println!("{}", serde_json::to_string_pretty(&outcome)?);
    } else {
        print!("{}", render(&outcome));
    }
    Ok(if outcome.verdict == Verdict::Correct {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A short human summary of an outcome.
pub fn render(o: &Outcome) -> String {
    let mut s = String::new();
    if let Some(d) = &o.device {
        s.push_str(&format!(
            "device: {} (sm_{}{}), driver API {}\n",
            d.name, d.compute_capability.0, d.compute_capability.1, d.driver_api_version
        ));
    }
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY);
    t.set_header([
        "workload",
        "trials",
        "max rel L2",
        "ours ms",
        "lib ms",
        "speedup",
        "TFLOP/s",
    ]);
    for w in &o.workloads {
        let rel = w
            .trials
            .iter()
            .flat_map(|t| t.outputs.iter().map(|c| c.comparison.relative_l2))
            .fold(0.0f64, f64::max);
        let passed = w.trials.iter().filter(|t| t.passed).count();
        let (ours, lib, sp, tf) = match &w.timing {
            Some(tm) => (
                format!("{:.4}", tm.candidate.median_ms),
                tm.baseline
                    .as_ref()
                    .map_or("-".into(), |b| format!("{:.4}", b.median_ms)),
                tm.speedup.map_or("-".into(), |x| format!("{x:.3}")),
                format!("{:.1}", tm.candidate_tflops),
            ),
            None => ("-".into(), "-".into(), "-".into(), "-".into()),
        };
        t.add_row([
            w.workload.clone(),
            format!("{passed}/{}", w.trials.len()),
            format!("{rel:.2e}"),
            ours,
            lib,
            sp,
            tf,
        ]);
    }
    if !o.workloads.is_empty() {
        s.push_str(&format!("{t}\n"));
    }
    s.push_str(&format!(
        "verdict: {} (stage {})\n",
        o.verdict.as_str(),
        o.stage
    ));
    if !o.message.is_empty() {
        s.push_str(&format!("{}\n", o.message));
    }
    if let Some(ev) = &o.evidence {
        let fams: Vec<String> = ev
            .families
            .iter()
            .map(|f| {
                format!(
                    "{} {} (SASS {}, executed {})",
                    f.family,
                    f.status.as_str(),
                    f.static_count,
                    f.dynamic_count.map_or("-".into(), |n| n.to_string())
                )
            })
            .collect();
        s.push_str(&format!(
            "target evidence: {} [{}]\n",
            ev.status.as_str(),
            fams.join("; ")
        ));
    }
    if let Some(m) = o.min_speedup {
        s.push_str(&format!("min speedup over performance workloads: {m:.3}\n"));
    }
    s
}
