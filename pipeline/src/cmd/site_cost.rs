//! `ptxbench site-cost KERNEL --task ID --workload W`: what the counted copy's counters cost a
//! CTA, measured inside it (`engine::site_cost`): the kernel alone and with each family's
//! sites counted, each carrying a clock probe, launched in turns. For the harness's own kernels
//! (the references): the probe is never put in a graded candidate. The GPU work runs in a
//! worker process ([`crate::engine::harness_work`]).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::arch::Arch;
use crate::candidate::{Candidate, KernelLang};
use crate::engine::harness_work::{Produced, Work};
use crate::record::TaskObject;

#[derive(Debug, Args)]
pub struct SiteCostArgs {
    /// A kernel folder with kernel.ptx and plan.yaml.
    pub kernel: PathBuf,
    #[arg(long)]
    pub task: String,
    #[arg(long)]
    pub workload: String,
    #[arg(long, default_value = "sm_90a")]
    pub arch: Arch,
    /// Launches of each variant (the variants take turns).
    #[arg(long, default_value_t = 21)]
    pub launches: u32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub worker: super::WorkerFlags,
    /// The figures as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: SiteCostArgs, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let suite = super::load_suite(dir)?;
    let task = super::task(&suite, &a.task)?;
    if let Some(why) = task.unknown_workload(std::slice::from_ref(&a.workload)) {
        anyhow::bail!("--workload: {why}");
    }
    let candidate = Candidate::load(&a.kernel)?;
    anyhow::ensure!(
        candidate.lang == KernelLang::Ptx,
        "{}: site-cost takes a PTX kernel (kernel.ptx)",
        a.kernel.display()
    );
    let work = Work::SiteCost {
        task: TaskObject::from_suite(&suite, task)?,
        arch: a.arch,
        ptx: candidate.kernel,
        plan: candidate.plan,
        workload: a.workload.clone(),
        seed: a.seed,
        launches: a.launches,
    };
    let what = format!("{} {}", a.task, a.workload);
    let (answer, ()) = a.worker.run(&what, &work, |_| Ok(()))?;
    let variants = match answer.result {
        Ok(Produced::SiteCost(v)) => v,
        Ok(other) => anyhow::bail!("the worker answered with other work: {other:?}"),
        Err(e) => anyhow::bail!("{} {}: {e}", a.task, a.workload),
    };
    if a.json {
        let v = serde_json::json!({
            "task": task.id.as_str(), "workload": a.workload, "kernel": a.kernel,
            "device": answer.device, "launches": a.launches, "variants": variants,
        });
        outln!("{v}")?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{} {} on {} ({} launches each)",
        task.id.as_str(),
        a.workload,
        answer.device.as_deref().unwrap_or("?"),
        a.launches
    )?;
    outln!(
        "| variant | CTAs | cycles per CTA (median) | site executions per CTA | counter increments per CTA | cycles added per execution |"
    )?;
    outln!("|---|---|---|---|---|---|")?;
    for v in &variants {
        let executions: Vec<String> = v
            .executions_per_cta
            .iter()
            .map(|(f, n)| format!("{f} {n:.1}"))
            .collect();
        outln!(
            "| {} | {} | {:.0} | {} | {:.0} | {} |",
            v.variant,
            v.ctas,
            v.cycles,
            if executions.is_empty() {
                "-".to_string()
            } else {
                executions.join(", ")
            },
            v.increments_per_cta,
            v.cycles_per_execution
                .map_or("-".to_string(), |c| format!("{c:.1}"))
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
