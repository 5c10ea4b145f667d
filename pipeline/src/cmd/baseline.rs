//! `ptxbench baseline --task ID [--workload W]`: times the baseline alone (the library's, or a
//! composed one where no library has the op; no candidate) with the engine's protocol and
//! checks its outputs against the fp32 reference.
//! For inspecting the baselines and for comparing them with other front ends
//! (pipeline/scripts/fidelity.py).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::cuda::driver::Gpu;
use crate::engine::support::Support;
use crate::engine::{Protocol, baseline};
use crate::task::WorkloadKind;

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
    #[arg(long, default_value_t = 0)]
    pub gpu: usize,
    /// One JSON object per workload instead of a line of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: BaselineArgs, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let suite = super::load_suite(dir)?;
    let task = suite
        .get(&a.task)
        .with_context(|| format!("no task `{}`", a.task))?;
    let workloads: Vec<_> = if a.workload.is_empty() {
        task.workloads
            .iter()
            .filter(|w| w.kind == WorkloadKind::Performance)
            .collect()
    } else {
        a.workload
            .iter()
            .map(|n| {
                task.workload(n)
                    .with_context(|| format!("task {} has no workload `{n}`", a.task))
            })
            .collect::<anyhow::Result<_>>()?
    };
    let gpu = Gpu::open(a.gpu)?;
    let support = Support::load(&gpu)?;
    let protocol = Protocol {
        warmup: a.warmup,
        iterations: a.iterations,
        ..Protocol::default()
    };
    let mut ok = true;
    for w in workloads {
        let r = baseline::time_baseline(&gpu, &support, task, w, a.seed, &protocol)
            .map_err(|s| anyhow::anyhow!("{}: {}", w.name, s.0.message))?;
        ok &= r.check.iter().all(|c| c.passed);
        if a.json {
            let v = serde_json::json!({"task": task.id.as_str(), "workload": w.name, "run": r});
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
            "{} {}: {label}: median {} ms (IQR {}), {} TFLOP/s; {}",
            task.id.as_str(),
            w.name,
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
