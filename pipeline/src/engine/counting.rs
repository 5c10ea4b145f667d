//! Dynamic target evidence: the counted copy of the PTX (counters spliced in before every
//! target instruction) run once, untimed, and its counters read back.

use std::collections::BTreeMap;

use super::inputs::{allocate, fill_inputs, prepare_outputs, seed_for};
use super::launch::run_plan;
use super::support::Support;
use super::verdict::Stop;
use super::{CountedPtx, DynamicCounts, Request};
use crate::candidate::bind;
use crate::candidate::plan::LaunchPlan;
use crate::cuda::driver::Gpu;
use crate::task::{Task, Workload, WorkloadKind};

/// Runs the counted copy of the PTX once on the first performance workload (the last selected
/// workload if none is a performance one) and reads the counters back. A failure here is
/// reported in the evidence, never as the candidate's verdict: the copy is our rewrite.
pub fn count_targets(
    gpu: &Gpu,
    task: &Task,
    plan: &LaunchPlan,
    module: &ptxbench_ptx::Module,
    counted: &CountedPtx,
    req: &Request,
) -> DynamicCounts {
    let selected: Vec<&Workload> = task
        .workloads
        .iter()
        .filter(|w| req.workloads.is_empty() || req.workloads.contains(&w.name))
        .collect();
    let w = selected
        .iter()
        .find(|w| w.kind == WorkloadKind::Performance)
        .or(selected.last())
        .copied();
    let mut result = DynamicCounts {
        method: "ptx-splice".into(),
        workload: w.map(|w| w.name.clone()).unwrap_or_default(),
        counts: Vec::new(),
        error: None,
    };
    let Some(w) = w else {
        result.error = Some("no workload selected".into());
        return result;
    };
    let run = || -> Result<Vec<u64>, String> {
        let launches = bind::resolve(plan, module, task, w, req.arch).map_err(|p| {
            p.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        })?;
        let m = gpu
            .compile(&counted.ptx, Some(req.arch))
            .map_err(|e| e.to_string())?
            .module;
        let mut kernels = BTreeMap::new();
        for l in &launches {
            let k = gpu.kernel(&m, &l.entry).map_err(|e| e.to_string())?;
            kernels.insert(l.entry.clone(), k);
        }
        let env = task.bindings(w);
        let stop = |s: Stop| s.0.message;
        let support = Support::load(gpu).map_err(|e| e.to_string())?;
        let set = allocate(gpu, task, plan, &env).map_err(stop)?;
        fill_inputs(
            gpu,
            &support,
            task,
            &env,
            &set,
            seed_for(req.seed, &w.name, 0),
        )
        .map_err(stop)?;
        prepare_outputs(gpu, task, &set).map_err(|e| e.to_string())?;
        run_plan(gpu, &kernels, &launches, &set).map_err(stop)?;
        let (ptr, bytes) = gpu.global(&m, &counted.symbol).map_err(|e| e.to_string())?;
        let n = counted.families.len();
        if bytes < 8 * n {
            return Err(format!(
                "counter array {} has {bytes} bytes for {n} counters",
                counted.symbol
            ));
        }
        let raw = gpu.download_raw(ptr, 8 * n).map_err(|e| e.to_string())?;
        Ok(raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect())
    };
    match run() {
        Ok(counts) => result.counts = counted.families.iter().cloned().zip(counts).collect(),
        Err(e) => result.error = Some(e),
    }
    result
}
