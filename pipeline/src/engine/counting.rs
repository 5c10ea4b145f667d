//! Dynamic target evidence: the counted copy of the PTX (counters spliced in before every
//! target instruction) run once, untimed, and its counters read back.

use std::collections::BTreeMap;

use super::inputs::{allocate, fill_inputs, prepare_outputs, seed_for};
use super::launch::run_plan;
use super::support::Support;
use super::verdict::Stop;
use super::{CountedPtx, Direction, DynamicCounts, Request, SiteCount};
use crate::candidate::bind::{self, ResolvedLaunch, ResolvedParam};
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
        sites: Vec::new(),
        mma_flops: None,
        mma_flop_share: None,
        tma_load_bytes: None,
        tma_byte_share: None,
        other_flops: None,
        other_flop_share: None,
        notes: Vec::new(),
        error: None,
    };
    let Some(w) = w else {
        result.error = Some("no workload selected".into());
        return result;
    };
    let run = || -> Result<Counted, String> {
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
        fill_inputs(gpu, &support, task, w, &set, seed_for(req.seed, &w.name, 0)).map_err(stop)?;
        prepare_outputs(gpu, task, &set).map_err(|e| e.to_string())?;
        run_plan(gpu, &kernels, &launches, &set).map_err(stop)?;
        // The other arithmetic: one slot per counted function, summed.
        let work = match &counted.work {
            None => None,
            Some(w) => Some(
                read_counters(gpu, &m, &w.symbol, w.functions.len())?
                    .into_iter()
                    .fold(0u64, u64::saturating_add),
            ),
        };
        let counts = read_counters(gpu, &m, &counted.symbol, counted.sites.len())?;
        Ok(Counted {
            counts,
            other_flops: work,
            launches,
        })
    };
    match run() {
        Ok(read) => weigh(&mut result, task, w, module, counted, &read),
        Err(e) => result.error = Some(e),
    }
    result
}

/// The first `n` u64 counters of the module global `symbol` (none read when `n` is 0).
fn read_counters(
    gpu: &Gpu,
    m: &crate::cuda::driver::Module,
    symbol: &str,
    n: usize,
) -> Result<Vec<u64>, String> {
    let (ptr, bytes) = gpu.global(m, symbol).map_err(|e| e.to_string())?;
    if bytes < 8 * n {
        return Err(format!(
            "counter array {symbol} has {bytes} bytes for {n} counters"
        ));
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    let raw = gpu.download_raw(ptr, 8 * n).map_err(|e| e.to_string())?;
    Ok(raw
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect())
}

/// What the counted copy's run read back.
struct Counted {
    /// Per site, in the order of `CountedPtx::sites`.
    counts: Vec<u64>,
    /// The other-arithmetic FLOPs, when the copy counts them.
    other_flops: Option<u64>,
    /// The launches that ran.
    launches: Vec<ResolvedLaunch>,
}

/// The box bytes of the tensor map bound to `param` of kernel `function`, if the plan binds one.
fn box_bytes(
    module: &ptxbench_ptx::Module,
    launches: &[ResolvedLaunch],
    function: &str,
    param: &str,
) -> Option<u64> {
    let f = module.entry(function)?;
    let index = f.params.iter().position(|p| p.name == param)?;
    launches
        .iter()
        .filter(|l| l.entry == function)
        .find_map(|l| match l.params.get(index) {
            Some(ResolvedParam::TensorMap { map, .. }) => Some(map.desc.box_bytes()),
            _ => None,
        })
}

/// Per-site counts weighed by each site's work: executed MMA FLOPs and TMA load bytes, as
/// shares of the workload's FLOPs and input bytes, and the other arithmetic's FLOPs as a share
/// of the workload's.
fn weigh(
    result: &mut DynamicCounts,
    task: &Task,
    w: &Workload,
    module: &ptxbench_ptx::Module,
    counted: &CountedPtx,
    read: &Counted,
) {
    let (counts, launches) = (&read.counts, &read.launches);
    let mut per_family: BTreeMap<String, u64> =
        counted.families.iter().map(|f| (f.clone(), 0)).collect();
    let mut mma_flops = 0.0;
    let mut mma_known = true;
    let mut mma_sites = 0;
    let mut load_bytes = 0.0;
    let mut load_known = true;
    for (site, &count) in counted.sites.iter().zip(counts) {
        *per_family.entry(site.family.clone()).or_default() += count;
        let executions = count as f64 / site.threads_per_execution.max(1) as f64;
        let bytes = match (&site.direction, &site.tensor_map_param) {
            (Some(Direction::Load), Some(p)) => box_bytes(module, launches, &site.function, p),
            _ => None,
        };
        if site.family == "wgmma"
            || site.family == "tcgen05" && site.opcode.starts_with("tcgen05.mma")
        {
            mma_sites += 1;
            match site.flops_per_execution {
                Some(f) => mma_flops += executions * f,
                None if count > 0 => {
                    mma_known = false;
                    result.notes.push(format!(
                        "{} (line {}) executed {count} times; its shape is not in the opcode, so its FLOPs are unknown",
                        site.opcode, site.line
                    ));
                }
                None => {}
            }
        }
        if site.direction == Some(Direction::Load) {
            match bytes {
                Some(b) => load_bytes += executions * b as f64,
                None if count > 0 => {
                    load_known = false;
                    result.notes.push(format!(
                        "the TMA load at line {} of {} executed {count} times; its tensor map could not be traced to a bound parameter",
                        site.line, site.function
                    ));
                }
                None => {}
            }
        }
        result.sites.push(SiteCount {
            site: site.clone(),
            count,
            bytes_per_execution: bytes,
        });
    }
    result.counts = per_family.into_iter().collect();
    let env = task.bindings(w);
    let task_flops = task.flops_of(w).ok().filter(|f| *f > 0.0);
    if mma_known
        && (mma_sites > 0
            || counted
                .families
                .iter()
                .any(|f| f == "wgmma" || f == "tcgen05"))
    {
        result.mma_flops = Some(mma_flops);
        result.mma_flop_share = task_flops.map(|f| mma_flops / f);
    }
    if let Some(other) = read.other_flops {
        let other = other as f64;
        result.other_flops = Some(other);
        result.other_flop_share = task_flops.map(|f| other / f);
    }
    // The compulsory input bytes: the task's byte formula less its outputs (every input for
    // most tasks; for a paged decode only the cache rows of the tokens in use).
    let output_bytes: Option<u64> = task
        .outputs
        .iter()
        .map(|t| task.size_bytes(t, &env).ok())
        .sum();
    let input_bytes: Option<u64> = task
        .bytes_of(w)
        .ok()
        .zip(output_bytes)
        .map(|(all, out)| (all - out as f64).max(0.0) as u64);
    if load_known && counted.families.iter().any(|f| f == "tma") {
        result.tma_load_bytes = Some(load_bytes);
        result.tma_byte_share = input_bytes
            .filter(|b| *b > 0)
            .map(|b| load_bytes / b as f64);
    }
}
