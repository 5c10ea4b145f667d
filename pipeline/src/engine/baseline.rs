//! Library baselines: cuBLASLt for GEMM, cuDNN SDPA for attention (forward with LSE and
//! backward), bound to a tensor set, checked once against the fp32 reference, and timed alone
//! for `ptxbench baseline`.

use std::rc::Rc;

use super::Stats;
use super::inputs::{POISON_BYTE, TensorSet, allocate, fill_inputs};
use super::judge::check_stored;
use super::reference::{Reference, compute_reference};
use super::support::Support;
use super::verdict::Stop;
use super::{BaselineInfo, Outcome, OutputCheck, Verdict};
use crate::candidate::plan::LaunchPlan;
use crate::cuda::cublaslt::{Gemm, GemmInput};
use crate::cuda::cudnn::{BoundSdpa, Sdpa, SdpaPass, SdpaShape};
use crate::cuda::driver::{DeviceBuffer, Gpu};
use crate::expr::Bindings;
use crate::task::{Op, Task, Workload};

/// A baseline bound to one tensor set; it writes its outputs to its own buffers.
pub(super) enum Baseline {
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
    pub fn launch(&self, gpu: &Gpu) -> Result<(), Stop> {
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
    pub fn output(&self, name: &str) -> Option<&DeviceBuffer> {
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
pub(super) struct Planned {
    sdpa: Option<Rc<Sdpa>>,
}

pub(super) fn baseline_for(
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
pub(super) fn check_baseline(
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
        checks.push(check_stored(
            gpu,
            support,
            scratch,
            t,
            buf.ptr(),
            set.numel(&t.name),
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

pub fn l2_flush_buffer(gpu: &Gpu) -> Result<DeviceBuffer, Stop> {
    let l2 = usize::try_from(gpu.info.l2_bytes)
        .unwrap_or(64 << 20)
        .max(1 << 20);
    Ok(gpu.alloc(2 * l2)?)
}
