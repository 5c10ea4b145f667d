//! `ptxbench check CANDIDATE --task ID [--arch ARCH] [--json]`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::arch::Arch;
use crate::candidate::Candidate;
use crate::check::{self, CheckOptions};

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// A model response (markdown with a kernel and a plan block) or a candidate folder
    /// (kernel.ptx or kernel.cu, and plan.yaml).
    pub candidate: PathBuf,
    /// Task id (see `ptxbench tasks list`).
    #[arg(long)]
    pub task: String,
    #[arg(long, default_value = "sm_90a")]
    pub arch: Arch,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: CheckArgs, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let suite = super::load_suite(dir)?;
    let task = super::task(&suite, &a.task)?;
    let opts = CheckOptions {
        arch: a.arch,
        compile_for: Arch::ALL.to_vec(),
    };
    let report = match Candidate::load(&a.candidate) {
        Ok(c) => check::check(&c, task, &opts),
        Err(e) if e.is_extraction() => check::extraction_failed(task, a.arch, e.to_string()),
        Err(e) => return Err(e.into()),
    };
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        out!("{}", check::render_text(&report))?;
    }
    // 3: the harness could not check it (nothing is said of the candidate); 1: it failed.
    Ok(if !report.harness.is_empty() {
        ExitCode::from(3)
    } else if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
