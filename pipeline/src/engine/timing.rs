//! Timing protocol: candidate and library baseline interleaved in one process, on the same
//! stream, each launch bracketed by CUDA events, L2 flushed before each, input/output sets
//! rotated, outputs poisoned before every timed candidate launch and re-checked afterwards.
//!
//! Baselines: cuBLASLt for GEMM, cuDNN SDPA (native backend graph API, forward with LSE and
//! backward) for attention. Each baseline's own outputs are checked once per workload against
//! the fp32 reference (on poisoned buffers) and that comparison is recorded with the timing.

use std::collections::BTreeMap;

use super::Stats;
use super::baseline::{Planned, baseline_for, check_baseline, l2_flush_buffer};
use super::inputs::{TensorSet, allocate, fill_inputs, prepare_outputs, seed_for};
use super::judge::check_trial;
use super::launch::{encode_params, launch_encoded};
use super::reference::{Reference, compute_reference};
use super::support::Support;
use super::verdict::Stop;
use super::{BaselineInfo, Outcome, Request, Timing, Verdict};
use crate::candidate::bind::ResolvedLaunch;
use crate::candidate::plan::LaunchPlan;
use crate::cuda::driver::{DeviceBuffer, Gpu, Kernel};
use crate::expr::Bindings;
use crate::task::{Task, Workload};

/// Times one performance workload; see the module doc for the protocol.
#[allow(clippy::too_many_arguments)]
pub fn time_workload(
    gpu: &Gpu,
    support: &Support,
    scratch: &DeviceBuffer,
    task: &Task,
    plan: &LaunchPlan,
    w: &Workload,
    env: &Bindings,
    kernels: &BTreeMap<String, Kernel>,
    launches: &[ResolvedLaunch],
    req: &Request,
) -> Result<(Timing, Option<BaselineInfo>), Stop> {
    let p = &req.protocol;
    let mut sets: Vec<(TensorSet, Reference, u64)> = Vec::new();
    for r in 0..p.rotations.max(1) {
        let seed = seed_for(req.seed, &format!("timing:{}", w.name), r);
        let set = allocate(gpu, task, plan, env)?;
        fill_inputs(gpu, support, task, env, &set, seed)?;
        let reference = compute_reference(gpu, support, task, env, &set)?;
        sets.push((set, reference, seed));
    }
    let mut keep = Vec::new();
    let mut encoded = Vec::new();
    let mut baselines = Vec::new();
    let mut info = None;
    let mut planned = Planned::default();
    for (set, ..) in &sets {
        encoded.push(encode_params(gpu, launches, set, &mut keep).map_err(|e| {
            Stop::new(Outcome::failed(
                Verdict::Runtime,
                "launch",
                format!("encoding a tensor map: {e}"),
            ))
        })?);
        if let Some((b, i)) = baseline_for(gpu, task, env, set, &mut planned)? {
            baselines.push(b);
            info = Some(i);
        }
    }
    // The baseline's own outputs against the reference, once per workload.
    let baseline_check = match baselines.first() {
        Some(b) => check_baseline(gpu, support, scratch, task, &sets[0].0, &sets[0].1, b)?,
        None => Vec::new(),
    };
    let flush = l2_flush_buffer(gpu)?;
    let flush_words = flush.bytes() / 4;
    for i in 0..p.warmup {
        let r = i as usize % sets.len();
        launch_encoded(gpu, kernels, launches, &encoded[r])?;
        if let Some(b) = baselines.get(r) {
            b.launch(gpu)?;
        }
    }
    gpu.sync()?;
    let events = [gpu.event()?, gpu.event()?, gpu.event()?, gpu.event()?];
    let state_before = gpu.state();
    let mut cand = Vec::new();
    let mut base = Vec::new();
    let mut spent = 0.0f64;
    for i in 0..p.iterations.max(1) {
        let r = i as usize % sets.len();
        prepare_outputs(gpu, task, &sets[r].0)?;
        gpu.fill_u32(&flush, 0, i, flush_words)?;
        gpu.record(&events[0])?;
        launch_encoded(gpu, kernels, launches, &encoded[r])?;
        gpu.record(&events[1])?;
        if let Some(b) = baselines.get(r) {
            gpu.fill_u32(&flush, 0, i ^ 0x5a5a, flush_words)?;
            gpu.record(&events[2])?;
            b.launch(gpu)?;
            gpu.record(&events[3])?;
        }
        let c = f64::from(gpu.elapsed_ms(&events[0], &events[1])?);
        cand.push(c);
        spent += c;
        if let Some(_b) = baselines.get(r) {
            let b = f64::from(gpu.elapsed_ms(&events[2], &events[3])?);
            base.push(b);
            spent += b;
        }
        if spent / 1e3 > p.max_timing_seconds && cand.len() >= 5 {
            break;
        }
    }
    gpu.sync()?;
    let state_after = gpu.state();
    drop(keep);
    // The outputs now hold each set's last timed launch: they must still be right.
    let mut recheck_passed = true;
    for (set, reference, seed) in &sets {
        let t = check_trial(
            gpu,
            support,
            scratch,
            task,
            set,
            reference,
            &BTreeMap::new(),
            *seed,
        )?;
        recheck_passed &= t.passed;
    }
    let candidate = Stats::from_samples(&cand).ok_or_else(|| {
        Stop::new(Outcome::failed(
            Verdict::Other,
            "timing",
            "no finite candidate timing",
        ))
    })?;
    let baseline = Stats::from_samples(&base);
    let flops = task.flops_of(w).unwrap_or(0.0);
    let tflops = |ms: f64| flops / (ms * 1e-3) / 1e12;
    Ok((
        Timing {
            speedup: baseline.as_ref().map(|b| b.median_ms / candidate.median_ms),
            candidate_tflops: tflops(candidate.median_ms),
            baseline_tflops: baseline.as_ref().map(|b| tflops(b.median_ms)),
            candidate,
            baseline,
            baseline_check,
            recheck_passed,
            state_before,
            state_after,
        },
        info,
    ))
}
