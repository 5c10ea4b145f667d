//! `ptxbench baseline --task ID [--workload W]`: times the baseline alone (the library's, or a
//! composed one where no library has the op; no candidate) with the engine's protocol and
//! checks its outputs against the fp32 reference.
//! For inspecting the baselines and for comparing them with other front ends
//! (pipeline/scripts/fidelity.py). The GPU work runs in a worker process
//! ([`crate::engine::harness_work`]).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::engine::Protocol;
use crate::engine::harness_work::{Produced, Work};
use crate::record::TaskObject;

#[derive(Debug, Args)]
pub struct BaselineArgs {
    #[arg(long)]
    pub task: String,
    /// Workloads to time (every performance workload when none is named).
    #[arg(long)]
    pub workload: Vec<String>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, default_value_t = 5)]
    pub warmup: u32,
    #[arg(long, default_value_t = 40)]
    pub iterations: u32,
    #[command(flatten)]
    pub worker: super::WorkerFlags,
    /// One JSON object per workload instead of a line of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: BaselineArgs, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let suite = super::load_suite(dir)?;
    let task = super::task(&suite, &a.task)?;
    if let Some(why) = task.unknown_workload(&a.workload) {
        anyhow::bail!("--workload: {why}");
    }
    let work = Work::Baseline {
        task: TaskObject::from_suite(&suite, task)?,
        workloads: a.workload.clone(),
        seed: a.seed,
        protocol: Protocol {
            warmup: a.warmup,
            iterations: a.iterations,
            ..Protocol::default()
        },
    };
    let (answer, ()) = a.worker.run(&a.task, &work, |_| Ok(()))?;
    let runs = match answer.result {
        Ok(Produced::Baseline(runs)) => runs,
        Ok(other) => anyhow::bail!("the worker answered with other work: {other:?}"),
        Err(e) => anyhow::bail!("{}: {e}", a.task),
    };
    let mut ok = true;
    for (workload, r) in runs {
        let r = r.map_err(|e| anyhow::anyhow!("{workload}: {e}"))?;
        ok &= r.check.iter().all(|c| c.passed);
        if a.json {
            let v = serde_json::json!({
                "task": task.id.as_str(), "workload": workload, "device": answer.device, "run": r,
            });
            println!("{v}");
            continue;
        }
        let label = r.info.as_ref().map_or_else(
            || "no baseline".to_string(),
            |i| {
                i.label
                    .clone()
                    .unwrap_or_else(|| format!("{} {}", i.provider, i.version))
            },
        );
        let checks: Vec<String> = r
            .check
            .iter()
            .map(|c| {
                format!(
                    "{} relnorm {:.3e} max|err| {:.3e}{}",
                    c.output,
                    c.comparison.relative_l2,
                    c.comparison.max_abs_error,
                    if c.passed { "" } else { " FAILS tolerance" }
                )
            })
            .collect();
        println!(
            "{} {workload}: {label}: median {} ms (IQR {}), {} TFLOP/s; {}",
            task.id.as_str(),
            r.stats
                .as_ref()
                .map_or("-".into(), |s| format!("{:.4}", s.median_ms)),
            r.stats
                .as_ref()
                .map_or("-".into(), |s| format!("{:.4}", s.p75_ms - s.p25_ms)),
            r.tflops.map_or("-".into(), |t| format!("{t:.1}")),
            checks.join("; ")
        );
        if let Some(i) = &r.info {
            println!(
                "  library {} engine {}",
                i.library,
                i.engine.as_deref().unwrap_or("-")
            );
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
