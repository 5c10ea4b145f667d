//! `ptxbench reference --task ID --workload W`: runs the harness's fp32 reference on the GPU
//! and writes its inputs and outputs as raw little-endian fp32 files plus a JSON index, so an
//! independent implementation (pipeline/scripts/crosscheck_references.py, PyTorch in float64)
//! can check it. The GPU work runs in a worker process ([`crate::engine::harness_work`]).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::engine::harness_work::{Produced, REFERENCE_DIR, Work};
use crate::record::TaskObject;

#[derive(Debug, Args)]
pub struct ReferenceArgs {
    #[arg(long)]
    pub task: String,
    #[arg(long)]
    pub workload: String,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output folder (created).
    #[arg(short, long)]
    pub out: PathBuf,
    #[command(flatten)]
    pub worker: super::WorkerFlags,
}

pub fn run(a: ReferenceArgs, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let suite = super::load_suite(dir)?;
    let task = super::task(&suite, &a.task)?;
    if let Some(why) = task.unknown_workload(std::slice::from_ref(&a.workload)) {
        anyhow::bail!("--workload: {why}");
    }
    let work = Work::Reference {
        task: TaskObject::from_suite(&suite, task)?,
        workload: a.workload.clone(),
        seed: a.seed,
    };
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    // The worker's files are moved out of its exchange folder before the folder goes.
    let out = &a.out;
    let what = format!("{} {}", a.task, a.workload);
    let (answer, moved) = a.worker.run(&what, &work, |exchange| {
        let from = exchange.join(REFERENCE_DIR);
        let Ok(entries) = std::fs::read_dir(&from) else {
            return Ok(0);
        };
        let mut moved = 0usize;
        for e in entries {
            let e = e.map_err(|e| format!("reading {}: {e}", from.display()))?;
            let bytes = std::fs::read(e.path())
                .map_err(|err| format!("reading {}: {err}", e.path().display()))?;
            crate::destination::write_atomic(&out.join(e.file_name()), &bytes)
                .map_err(|err| err.to_string())?;
            moved += 1;
        }
        Ok(moved)
    })?;
    match answer.result {
        Ok(Produced::Reference(files)) if files.len() == moved => {
            println!("wrote {} ({} files)", a.out.display(), files.len());
            Ok(ExitCode::SUCCESS)
        }
        Ok(Produced::Reference(files)) => anyhow::bail!(
            "the worker wrote {} files but {moved} reached {}",
            files.len(),
            a.out.display()
        ),
        Ok(other) => anyhow::bail!("the worker answered with other work: {other:?}"),
        Err(e) => anyhow::bail!("{} {}: {e}", a.task, a.workload),
    }
}
