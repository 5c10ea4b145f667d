//! `ptxbench audit HASH`: re-run the evaluation a record describes on this machine's GPU and
//! compare (see `crate::audit`). Everything comes from the store: the record, its PTX and plan,
//! and the task definition it was measured against; no `tasks/` folder is needed.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;

use crate::audit;
use crate::candidate::{Candidate, KernelLang};
use crate::engine::Verdict;
use crate::engine::evaluator::{Evaluator, Job, Prepared, Work};
use crate::record;
use crate::store::Store;

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// A record's digest or a unique prefix of it.
    pub record: String,
    /// The store (default: the nearest `artifacts/`).
    #[arg(long)]
    pub store: Option<PathBuf>,
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    #[arg(long, default_value_t = 0)]
    pub gpu: usize,
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: AuditArgs) -> anyhow::Result<ExitCode> {
    let root = match &a.store {
        Some(s) => s.clone(),
        None => Store::discover(&std::env::current_dir()?)
            .context("no artifacts/ store here or above; pass --store")?,
    };
    let store = Store::open(root);
    let digest = store.resolve(&a.record)?;
    let record = record::load_record(&store, &digest)?;
    let task = audit::task_of(&store, &digest, &record)?;
    let ptx_digest = record
        .ptx_digest
        .context("the record has no PTX (it failed before compiling): nothing to re-run")?;
    let ptx = String::from_utf8(store.get(&ptx_digest)?).context("the stored PTX is not UTF-8")?;
    let plan = String::from_utf8(store.get(&record.plan_digest)?)
        .context("the stored plan is not UTF-8")?;
    let job = Job {
        arch: record.arch,
        seed: record.seed,
        protocol: record.protocol.clone(),
        workloads: record.workloads_selected.clone(),
        no_timing: record.correctness_only,
    };
    eprintln!(
        "re-running record {digest} ({} on {}, seed {}) against task object {}",
        record.entry, record.task, record.seed, task.digest
    );
    // The stored PTX is a candidate like any other: the static check and its safety screen run
    // first, and code they refuse never reaches this machine's GPU.
    let candidate = Candidate {
        lang: KernelLang::Ptx,
        kernel: ptx,
        plan,
        plan_source: "the record's plan".into(),
        notes: Vec::new(),
    };
    let Prepared { work, .. } = Evaluator::prepare(Ok(&candidate), &task.task, &task.object, &job);
    let now = match work {
        Work::Decided(o) => {
            eprintln!("the static check decided it: nothing ran on the GPU");
            *o
        }
        Work::Evaluate(req) => {
            let evaluator = Evaluator::this_executable()?;
            evaluator.run(&req, a.gpu, Duration::from_secs(a.timeout))
        }
    };
    if now.verdict == Verdict::Other && now.device.is_none() {
        anyhow::bail!("could not re-run the evaluation here: {}", now.message);
    }
    let mut report = audit::compare(&record, &now);
    report.environment_differences.extend(task.revalidated);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", audit::render(&report));
    }
    Ok(if report.agrees {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
