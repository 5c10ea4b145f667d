//! Timing protocol: candidate and library baseline interleaved in one process, on the same
//! stream, each launch bracketed by CUDA events, L2 flushed before each, input/output sets
//! rotated, outputs poisoned before every timed candidate launch and re-checked afterwards.

use std::collections::BTreeMap;

use super::evaluate::{
    Reference, Stop, TensorSet, allocate, check_trial, compute_reference, encode_params,
    fill_inputs, launch_encoded, prepare_outputs,
};
use super::stats::Stats;
use super::support::Support;
use super::{BaselineInfo, Outcome, Request, Timing, Verdict};
use crate::candidate::bind::ResolvedLaunch;
use crate::candidate::plan::LaunchPlan;
use crate::cuda::cublaslt::{Gemm, GemmInput};
use crate::cuda::driver::{DeviceBuffer, Gpu, Kernel};
use crate::expr::Bindings;
use crate::task::{Op, Task, Workload};

/// A baseline bound to one tensor set.
enum Baseline {
    Gemm {
        gemm: Gemm,
        a: u64,
        b: u64,
        c: DeviceBuffer,
    },
}

impl Baseline {
    fn launch(&self, gpu: &Gpu) -> Result<(), Stop> {
        match self {
            Baseline::Gemm { gemm, a, b, c } => gemm.launch(gpu, *a, *b, c.ptr()).map_err(|e| {
                Stop::new(Outcome::failed(
                    Verdict::Other,
                    "timing",
                    format!("baseline: {e}"),
                ))
            }),
        }
    }
}

fn baseline_for(
    gpu: &Gpu,
    task: &Task,
    env: &Bindings,
    set: &TensorSet,
) -> Result<Option<(Baseline, BaselineInfo)>, Stop> {
    let axis = |k: &str| u64::try_from(*env.get(k).unwrap_or(&0)).unwrap_or(0);
    let input = match task.op {
        Op::Gemm { .. } => GemmInput::Bf16,
        Op::GemmFp8 { .. } => GemmInput::E4m3 {
            scale_a: set.ptr("scale_a").unwrap_or(0),
            scale_b: set.ptr("scale_b").unwrap_or(0),
        },
        // cuDNN SDPA is not wired in yet: attention is timed without a baseline.
        Op::AttentionFwd { .. } | Op::AttentionBwd { .. } => return Ok(None),
    };
    let (m, n, k) = (axis("M"), axis("N"), axis("K"));
    let gemm = Gemm::new(gpu, input, m, n, k).map_err(|e| {
        Stop::new(Outcome::failed(
            Verdict::Other,
            "timing",
            format!("baseline setup: {e}"),
        ))
    })?;
    let info = BaselineInfo {
        provider: "cublaslt".into(),
        version: gemm.version.to_string(),
        library: gemm.library.clone(),
    };
    let c = gpu.alloc((m * n * 2) as usize)?;
    Ok(Some((
        Baseline::Gemm {
            gemm,
            a: set.ptr("A").unwrap_or(0),
            b: set.ptr("B").unwrap_or(0),
            c,
        },
        info,
    )))
}

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
        let seed = super::evaluate::seed_for(req.seed, &format!("timing:{}", w.name), r);
        let set = allocate(gpu, task, plan, env)?;
        fill_inputs(gpu, support, task, env, &set, seed)?;
        let reference = compute_reference(gpu, support, task, env, &set)?;
        sets.push((set, reference, seed));
    }
    let mut keep = Vec::new();
    let mut encoded = Vec::new();
    let mut baselines = Vec::new();
    let mut info = None;
    for (set, ..) in &sets {
        encoded.push(encode_params(gpu, launches, set, &mut keep).map_err(|e| {
            Stop::new(Outcome::failed(
                Verdict::Runtime,
                "launch",
                format!("encoding a tensor map: {e}"),
            ))
        })?);
        if let Some((b, i)) = baseline_for(gpu, task, env, set)? {
            baselines.push(b);
            info = Some(i);
        }
    }
    let l2 = usize::try_from(gpu.info.l2_bytes)
        .unwrap_or(64 << 20)
        .max(1 << 20);
    let flush = gpu.alloc(2 * l2)?;
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
            recheck_passed,
            state_before,
            state_after,
        },
        info,
    ))
}
