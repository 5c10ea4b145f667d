//! Timing protocol: candidate and library baseline interleaved in one process, on the same
//! stream, each launch bracketed by CUDA events, L2 flushed before each, input/output sets
//! rotated, outputs poisoned before every timed candidate launch and re-checked afterwards.
//!
//! Baselines: cuBLASLt for GEMM, cuDNN SDPA (native backend graph API, forward with LSE and
//! backward) for attention. Each baseline's own outputs are checked once per workload against
//! the fp32 reference (on poisoned buffers) and that comparison is recorded with the timing.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::Stats;
use super::evaluate::{
    POISON_BYTE, Reference, Stop, TensorSet, allocate, check_output, check_trial,
    compute_reference, encode_params, fill_inputs, launch_encoded, prepare_outputs,
};
use super::support::Support;
use super::{BaselineInfo, Outcome, OutputCheck, Request, Timing, Verdict};
use crate::candidate::bind::ResolvedLaunch;
use crate::candidate::plan::LaunchPlan;
use crate::cuda::cublaslt::{Gemm, GemmInput};
use crate::cuda::cudnn::{BoundSdpa, Sdpa, SdpaPass, SdpaShape};
use crate::cuda::driver::{DeviceBuffer, Gpu, Kernel};
use crate::expr::Bindings;
use crate::task::{Op, Task, Workload};

/// A baseline bound to one tensor set; it writes its outputs to its own buffers.
enum Baseline {
    Gemm {
        gemm: Gemm,
        a: u64,
        b: u64,
        c: DeviceBuffer,
    },
    Sdpa {
        sdpa: Rc<Sdpa>,
        bound: BoundSdpa,
        /// The pass's outputs by task tensor name (forward: O, LSE; backward: dQ, dK, dV).
        outputs: Vec<(String, DeviceBuffer)>,
    },
}

fn baseline_error(what: &str, e: impl std::fmt::Display) -> Stop {
    Stop::new(Outcome::failed(
        Verdict::Other,
        "timing",
        format!("baseline{what}: {e}"),
    ))
}

impl Baseline {
    fn launch(&self, gpu: &Gpu) -> Result<(), Stop> {
        match self {
            Baseline::Gemm { gemm, a, b, c } => gemm
                .launch(gpu, *a, *b, c.ptr())
                .map_err(|e| baseline_error("", e)),
            Baseline::Sdpa { sdpa, bound, .. } => {
                sdpa.launch(bound).map_err(|e| baseline_error("", e))
            }
        }
    }

    /// Where the baseline writes the task output `name`.
    fn output(&self, name: &str) -> Option<&DeviceBuffer> {
        match self {
            Baseline::Gemm { c, .. } => (name == "C").then_some(c),
            Baseline::Sdpa { outputs, .. } => {
                outputs.iter().find(|(n, _)| n == name).map(|(_, b)| b)
            }
        }
    }
}

/// The baseline planned for one workload, shared by its tensor sets.
#[derive(Default)]
struct Planned {
    sdpa: Option<Rc<Sdpa>>,
}

fn baseline_for(
    gpu: &Gpu,
    task: &Task,
    env: &Bindings,
    set: &TensorSet,
    planned: &mut Planned,
) -> Result<Option<(Baseline, BaselineInfo)>, Stop> {
    let axis = |k: &str| u64::try_from(*env.get(k).unwrap_or(&0)).unwrap_or(0);
    let input = match task.op {
        Op::Gemm { .. } => GemmInput::Bf16,
        Op::GemmFp8 { .. } => GemmInput::E4m3 {
            scale_a: set.ptr("scale_a").unwrap_or(0),
            scale_b: set.ptr("scale_b").unwrap_or(0),
        },
        Op::AttentionFwd { causal } => {
            return sdpa_baseline(gpu, task, env, set, planned, SdpaPass::Forward, causal);
        }
        Op::AttentionBwd { causal } => {
            return sdpa_baseline(gpu, task, env, set, planned, SdpaPass::Backward, causal);
        }
    };
    let (m, n, k) = (axis("M"), axis("N"), axis("K"));
    let gemm = Gemm::new(gpu, input, m, n, k).map_err(|e| baseline_error(" setup", e))?;
    let info = BaselineInfo {
        provider: "cublaslt".into(),
        version: gemm.version.to_string(),
        library: gemm.library.clone(),
        label: None,
        engine: None,
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

/// cuDNN SDPA (native backend graph), planned once per workload and bound to `set`.
fn sdpa_baseline(
    gpu: &Gpu,
    task: &Task,
    env: &Bindings,
    set: &TensorSet,
    planned: &mut Planned,
    pass: SdpaPass,
    causal: bool,
) -> Result<Option<(Baseline, BaselineInfo)>, Stop> {
    let axis = |k: &str| *env.get(k).unwrap_or(&0);
    let sdpa = match &planned.sdpa {
        Some(s) => Rc::clone(s),
        None => {
            let shape = SdpaShape {
                b: axis("B"),
                h: axis("H"),
                s: axis("S"),
                d: axis("D"),
                causal,
            };
            let s = Rc::new(Sdpa::new(gpu, pass, shape).map_err(|e| baseline_error(" setup", e))?);
            planned.sdpa = Some(Rc::clone(&s));
            s
        }
    };
    let mut outputs = Vec::new();
    let mut pointers = Vec::new();
    for name in pass.tensors() {
        if task.outputs.iter().any(|t| t.name == *name) {
            let (_, bytes, ..) = set.tensors.get(*name).ok_or_else(|| {
                baseline_error(" setup", format!("the task has no tensor {name}"))
            })?;
            let buf = gpu.alloc(*bytes)?;
            pointers.push(buf.ptr());
            outputs.push(((*name).to_string(), buf));
        } else {
            pointers.push(set.ptr(name).ok_or_else(|| {
                baseline_error(" setup", format!("the task has no tensor {name}"))
            })?);
        }
    }
    let bound = sdpa
        .bind(&pointers)
        .map_err(|e| baseline_error(" setup", e))?;
    let major_minor = sdpa
        .version
        .rsplit_once('.')
        .map_or(sdpa.version.as_str(), |(a, _)| a);
    let info = BaselineInfo {
        provider: "cudnn".into(),
        version: sdpa.version.clone(),
        library: sdpa.library.clone(),
        label: Some(format!(
            "cuDNN {major_minor} SDPA {} (native graph API)",
            match pass {
                SdpaPass::Forward => "forward with LSE",
                SdpaPass::Backward => "backward",
            }
        )),
        engine: Some(sdpa.engine.clone()),
    };
    Ok(Some((
        Baseline::Sdpa {
            sdpa,
            bound,
            outputs,
        },
        info,
    )))
}

/// Runs the baseline once on poisoned outputs and compares what it wrote with the fp32
/// reference, output by output, under the task's tolerances: a wrong baseline is recorded.
fn check_baseline(
    gpu: &Gpu,
    support: &Support,
    scratch: &DeviceBuffer,
    task: &Task,
    set: &TensorSet,
    reference: &Reference,
    baseline: &Baseline,
) -> Result<Vec<OutputCheck>, Stop> {
    for t in &task.outputs {
        if let Some(buf) = baseline.output(&t.name) {
            gpu.fill_u8(buf, 0, POISON_BYTE, buf.bytes())?;
        }
    }
    baseline.launch(gpu)?;
    gpu.sync()?;
    let mut checks = Vec::new();
    for t in &task.outputs {
        let Some(buf) = baseline.output(&t.name) else {
            continue;
        };
        let numel = set.numel(&t.name);
        let dtype = set.tensors[&t.name].2;
        let got = gpu.alloc(numel as usize * 4)?;
        support.to_f32(gpu, buf.ptr(), dtype, got.ptr(), numel)?;
        checks.push(check_output(
            gpu,
            support,
            scratch,
            t,
            got.ptr(),
            numel,
            &reference.outputs[&t.name],
        )?);
    }
    Ok(checks)
}

/// What [`time_baseline`] measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BaselineRun {
    pub info: Option<BaselineInfo>,
    pub check: Vec<OutputCheck>,
    pub stats: Option<Stats>,
    pub tflops: Option<f64>,
}

/// Times the library baseline alone on one workload, with the same protocol as
/// [`time_workload`] (fresh inputs, poisoned-output check against the fp32 reference, L2
/// flushed before each launch, events around each): `ptxbench baseline` uses it to measure
/// the baseline without a candidate.
pub fn time_baseline(
    gpu: &Gpu,
    support: &Support,
    task: &Task,
    w: &Workload,
    seed: u64,
    p: &super::Protocol,
) -> Result<BaselineRun, Stop> {
    let env = task.bindings(w);
    let plan = LaunchPlan {
        launches: Vec::new(),
        workspaces: Vec::new(),
    };
    let scratch = gpu.alloc(256)?;
    let set = allocate(gpu, task, &plan, &env)?;
    fill_inputs(gpu, support, task, &env, &set, seed)?;
    let reference = compute_reference(gpu, support, task, &env, &set)?;
    let mut planned = Planned::default();
    let Some((baseline, info)) = baseline_for(gpu, task, &env, &set, &mut planned)? else {
        return Ok(BaselineRun {
            info: None,
            check: Vec::new(),
            stats: None,
            tflops: None,
        });
    };
    let check = check_baseline(gpu, support, &scratch, task, &set, &reference, &baseline)?;
    for _ in 0..p.warmup {
        baseline.launch(gpu)?;
    }
    gpu.sync()?;
    let flush = l2_flush_buffer(gpu)?;
    let flush_words = flush.bytes() / 4;
    let events = [gpu.event()?, gpu.event()?];
    let mut samples = Vec::new();
    for i in 0..p.iterations.max(1) {
        gpu.fill_u32(&flush, 0, i ^ 0x5a5a, flush_words)?;
        gpu.record(&events[0])?;
        baseline.launch(gpu)?;
        gpu.record(&events[1])?;
        samples.push(f64::from(gpu.elapsed_ms(&events[0], &events[1])?));
    }
    let stats = Stats::from_samples(&samples);
    let flops = task.flops_of(w).unwrap_or(0.0);
    let tflops = stats.as_ref().map(|s| flops / (s.median_ms * 1e-3) / 1e12);
    Ok(BaselineRun {
        info: Some(info),
        check,
        stats,
        tflops,
    })
}

fn l2_flush_buffer(gpu: &Gpu) -> Result<DeviceBuffer, Stop> {
    let l2 = usize::try_from(gpu.info.l2_bytes)
        .unwrap_or(64 << 20)
        .max(1 << 20);
    Ok(gpu.alloc(2 * l2)?)
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
