//! One evaluation, in the worker process: JIT, launches by the plan, the correctness protocol
//! and timing. Every failure of the candidate becomes an [`Outcome`] with its verdict; nothing
//! here panics on a bad candidate.
//!
//! Correctness protocol, per workload and trial: fresh inputs from the task's distributions
//! (seeded by base seed, workload and trial), derived inputs from the fp32 reference, every
//! tensor surrounded by guard bytes, outputs and poison-initialised workspaces filled with NaN
//! bytes (0xFF) before the launches, inputs snapshotted; after the launches: every output
//! compared with the fp32 reference by the task's metric (non-finite values and all-zero
//! outputs rejected), guards and inputs checked unchanged.

use std::collections::BTreeMap;
use std::time::Instant;

use super::support::Support;
use super::timing;
use super::{KernelInfo, Outcome, OutputCheck, Request, Trial, Verdict, WorkloadResult};
use crate::candidate::bind::{self, ResolvedLaunch, ResolvedParam, ResolvedTensorMap};
use crate::candidate::plan::{
    Interleave, L2Promotion, LaunchPlan, OobFill, Swizzle, WorkspaceInit,
};
use crate::cuda::driver::{DeviceBuffer, DriverError, Geometry, Gpu, Kernel, ParamBytes};
use crate::expr::Bindings;
use crate::task::{DType, Op, Task, TensorSpec, Tolerance, Workload, WorkloadKind};

/// Bytes of guard before and after every tensor (keeps 256-byte alignment).
pub const GUARD: usize = 4096;
/// The guard pattern.
pub const GUARD_BYTE: u8 = 0xA5;
/// Poison: 0xFF bytes are NaN in bf16, f16, f32 and e4m3.
pub const POISON_BYTE: u8 = 0xFF;

/// Device memory for one set of a task's tensors (each with guards) and the plan's workspaces.
#[derive(Debug)]
pub struct TensorSet {
    pub tensors: BTreeMap<String, (DeviceBuffer, usize, DType, u64)>, // buffer, bytes, dtype, numel
    pub workspaces: BTreeMap<String, (DeviceBuffer, usize, WorkspaceInit)>,
}

impl TensorSet {
    pub fn ptr(&self, name: &str) -> Option<u64> {
        self.tensors
            .get(name)
            .map(|(b, ..)| b.ptr() + GUARD as u64)
            .or_else(|| self.workspaces.get(name).map(|(b, ..)| b.ptr()))
    }

    pub fn numel(&self, name: &str) -> u64 {
        self.tensors.get(name).map_or(0, |t| t.3)
    }
}

/// fp32 copies of inputs and the fp32 reference outputs of one set.
#[derive(Debug)]
pub struct Reference {
    pub outputs: BTreeMap<String, DeviceBuffer>,
}

pub fn seed_for(base: u64, workload: &str, trial: u32) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(&base.to_le_bytes());
    h.update(workload.as_bytes());
    h.update(&trial.to_le_bytes());
    let d = h.finalize();
    u64::from_le_bytes(d.as_bytes()[..8].try_into().expect("8 bytes"))
}

/// An error that ends the evaluation with a verdict.
#[derive(Debug)]
pub struct Stop(pub Box<Outcome>);

impl Stop {
    pub fn new(o: Outcome) -> Stop {
        Stop(Box::new(o))
    }
}

impl From<DriverError> for Stop {
    fn from(e: DriverError) -> Stop {
        let verdict = if e.is_sticky() {
            Verdict::Runtime
        } else {
            Verdict::Other
        };
        Stop::new(Outcome::failed(verdict, "launch", e.to_string()))
    }
}

/// Runs the whole evaluation in this process.
pub fn evaluate(req: &Request) -> Outcome {
    let mut clock = Clock::new();
    let task = match req.task.validate_exactly() {
        Ok(t) => t,
        Err(e) => return Outcome::failed(Verdict::Other, "static", e.to_string()),
    };
    let task = &task;
    let module = match ptxbench_ptx::parse(&req.ptx) {
        Ok(m) => m,
        Err(e) => {
            return Outcome::failed(
                Verdict::Compilation,
                "static",
                format!("PTX does not parse: {e}"),
            );
        }
    };
    let plan = match LaunchPlan::parse(&req.plan, task) {
        Ok(p) => p,
        Err(e) => return Outcome::failed(Verdict::Runtime, "launch", e.to_string()),
    };
    let problems = bind::check_module(&plan, &module, req.arch);
    if !problems.is_empty() {
        let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
        return Outcome::failed(Verdict::Runtime, "launch", text.join("\n"));
    }
    let gpu = match Gpu::open(req.gpu) {
        Ok(g) => g,
        Err(e) => return Outcome::failed(Verdict::Other, "worker", format!("no GPU: {e}")),
    };
    let mut outcome = Outcome::failed(Verdict::Correct, "done", "");
    outcome.device = Some(gpu.info.clone());
    let support = match Support::load(&gpu) {
        Ok(s) => s,
        Err(e) => {
            outcome.verdict = Verdict::Other;
            outcome.stage = "worker".into();
            outcome.message = e.to_string();
            return outcome;
        }
    };
    outcome.harness_compiler = support.compiler.clone();
    clock.lap("setup");
    match run(
        req,
        task,
        &plan,
        &module,
        &gpu,
        &support,
        &mut outcome,
        &mut clock,
    ) {
        Ok(()) => {}
        Err(Stop(stop)) => {
            outcome.verdict = stop.verdict;
            outcome.stage = stop.stage;
            outcome.message = stop.message;
        }
    }
    outcome.seconds = clock.laps;
    outcome
}

struct Clock {
    start: Instant,
    laps: Vec<(String, f64)>,
}

impl Clock {
    fn new() -> Clock {
        Clock {
            start: Instant::now(),
            laps: Vec::new(),
        }
    }
    fn lap(&mut self, name: &str) {
        self.laps
            .push((name.to_string(), self.start.elapsed().as_secs_f64()));
        self.start = Instant::now();
    }
}

#[allow(clippy::too_many_arguments)]
fn run(
    req: &Request,
    task: &Task,
    plan: &LaunchPlan,
    module: &ptxbench_ptx::Module,
    gpu: &Gpu,
    support: &Support,
    outcome: &mut Outcome,
    clock: &mut Clock,
) -> Result<(), Stop> {
    let compiled = gpu.compile(&req.ptx, Some(req.arch)).map_err(|e| {
        Stop::new(Outcome::failed(
            Verdict::Compilation,
            "jit",
            format!("the PTX did not compile: {}\n{}", e.error, e.log),
        ))
    })?;
    outcome.jit_log = format!("compiled by {}\n{}", compiled.compiler, compiled.log);
    let cu_module = compiled.module;
    outcome.cubin = compiled.cubin;
    let mut kernels: BTreeMap<String, Kernel> = BTreeMap::new();
    for l in &plan.launches {
        if kernels.contains_key(&l.entry) {
            continue;
        }
        let k = gpu
            .kernel(&cu_module, &l.entry)
            .map_err(|e| Stop::new(Outcome::failed(Verdict::Compilation, "load", e.to_string())))?;
        let attributes = gpu.attributes(k)?;
        outcome.kernels.push(KernelInfo {
            entry: l.entry.clone(),
            attributes,
        });
        kernels.insert(l.entry.clone(), k);
    }
    clock.lap("jit");
    let scratch = gpu.alloc(256)?;
    let workloads: Vec<&Workload> = task
        .workloads
        .iter()
        .filter(|w| req.workloads.is_empty() || req.workloads.contains(&w.name))
        .collect();
    let mut baseline_info = None;
    for w in workloads {
        let launches = bind::resolve(plan, module, task, w, req.arch).map_err(|p| {
            let text: Vec<String> = p.iter().map(ToString::to_string).collect();
            Stop::new(Outcome::failed(Verdict::Runtime, "launch", text.join("\n")))
        })?;
        let env = task.bindings(w);
        let mut result = WorkloadResult {
            workload: w.name.clone(),
            performance: w.kind == WorkloadKind::Performance,
            trials: Vec::new(),
            timing: None,
        };
        for trial in 0..req.protocol.trials.max(1) {
            let seed = seed_for(req.seed, &w.name, trial);
            let set = allocate(gpu, task, plan, &env)?;
            fill_inputs(gpu, support, task, &env, &set, seed)?;
            let reference = compute_reference(gpu, support, task, &env, &set)?;
            let snapshot = snapshot_inputs(gpu, task, &set)?;
            prepare_outputs(gpu, task, &set)?;
            run_plan(gpu, &kernels, &launches, &set)?;
            gpu.sync()?;
            let t = check_trial(
                gpu, support, &scratch, task, &set, &reference, &snapshot, seed,
            )?;
            let passed = t.passed;
            result.trials.push(t);
            if !passed {
                let why = result
                    .trials
                    .last()
                    .map(describe_failure)
                    .unwrap_or_default();
                outcome.workloads.push(result);
                return Err(Stop::new(Outcome::failed(
                    Verdict::Numerical,
                    "correctness",
                    format!("workload {} trial {trial}: {why}", w.name),
                )));
            }
        }
        clock.lap(&format!("correctness {}", w.name));
        if w.kind == WorkloadKind::Performance && !req.no_timing {
            let (timing, info) = timing::time_workload(
                gpu, support, &scratch, task, plan, w, &env, &kernels, &launches, req,
            )?;
            if info.is_some() {
                baseline_info = info;
            }
            let recheck = timing.recheck_passed;
            result.timing = Some(timing);
            clock.lap(&format!("timing {}", w.name));
            if !recheck {
                outcome.workloads.push(result);
                return Err(Stop::new(Outcome::failed(
                    Verdict::Numerical,
                    "timing",
                    format!(
                        "workload {}: the output of a timed launch does not match the reference (work skipped or cached across launches?)",
                        w.name
                    ),
                )));
            }
        }
        outcome.workloads.push(result);
    }
    outcome.baseline = baseline_info;
    if let Some(counted) = &req.counted {
        outcome.dynamic = Some(count_targets(gpu, task, plan, module, counted, req));
        clock.lap("dynamic evidence");
    }
    outcome.min_speedup = outcome
        .workloads
        .iter()
        .filter_map(|w| w.timing.as_ref().and_then(|t| t.speedup))
        .min_by(f64::total_cmp);
    outcome.verdict = Verdict::Correct;
    outcome.stage = "done".into();
    Ok(())
}

/// Runs the counted copy of the PTX once on the first performance workload (the last selected
/// workload if none is a performance one) and reads the counters back. A failure here is
/// reported in the evidence, never as the candidate's verdict: the copy is our rewrite.
fn count_targets(
    gpu: &Gpu,
    task: &Task,
    plan: &LaunchPlan,
    module: &ptxbench_ptx::Module,
    counted: &super::CountedPtx,
    req: &Request,
) -> super::DynamicCounts {
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
    let mut result = super::DynamicCounts {
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

fn describe_failure(t: &Trial) -> String {
    let mut parts: Vec<String> = t.outputs.iter().filter_map(|o| o.failure.clone()).collect();
    if t.guard_bytes_changed > 0 {
        parts.push(format!(
            "{} guard bytes around the tensors were overwritten (writes out of bounds)",
            t.guard_bytes_changed
        ));
    }
    if t.input_bytes_changed > 0 {
        parts.push(format!(
            "{} bytes of the inputs were modified",
            t.input_bytes_changed
        ));
    }
    parts.join("; ")
}

/// Allocates every tensor (with guards) and workspace for one workload.
pub fn allocate(
    gpu: &Gpu,
    task: &Task,
    plan: &LaunchPlan,
    env: &Bindings,
) -> Result<TensorSet, Stop> {
    let mut tensors = BTreeMap::new();
    for t in task.inputs.iter().chain(&task.outputs) {
        let bytes = task
            .size_bytes(t, env)
            .map_err(|e| Stop::new(Outcome::failed(Verdict::Other, "setup", e.to_string())))?;
        let numel = task
            .numel(t, env)
            .map_err(|e| Stop::new(Outcome::failed(Verdict::Other, "setup", e.to_string())))?;
        let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        let buf = gpu.alloc(bytes + 2 * GUARD)?;
        gpu.fill_u8(&buf, 0, GUARD_BYTE, buf.bytes())?;
        tensors.insert(t.name.clone(), (buf, bytes, t.dtype, numel));
    }
    let mut workspaces = BTreeMap::new();
    for w in &plan.workspaces {
        let bytes = w
            .bytes
            .eval_int(env)
            .ok()
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| {
                Stop::new(Outcome::failed(
                    Verdict::Runtime,
                    "launch",
                    format!("workspace {} has no valid size", w.name),
                ))
            })?;
        let buf = gpu.alloc(bytes)?;
        workspaces.insert(w.name.clone(), (buf, bytes, w.init));
    }
    Ok(TensorSet {
        tensors,
        workspaces,
    })
}

/// Fills the drawn inputs; derived inputs (attention backward's O and LSE) come from the
/// fp32 reference forward.
pub fn fill_inputs(
    gpu: &Gpu,
    support: &Support,
    task: &Task,
    env: &Bindings,
    set: &TensorSet,
    seed: u64,
) -> Result<(), Stop> {
    let derived = task.op.derived_inputs();
    for (i, t) in task.inputs.iter().enumerate() {
        if derived.contains(&t.name.as_str()) {
            continue;
        }
        let dist = task
            .input_distribution(&t.name)
            .unwrap_or(&task.distribution);
        let ptr = set.ptr(&t.name).expect("allocated above");
        let s = seed ^ (0x1000_0000_0000_0000u64.wrapping_mul(i as u64 + 1));
        support.fill(gpu, ptr, t.dtype, set.numel(&t.name), s, dist)?;
    }
    if let Op::AttentionBwd { causal } = task.op {
        let (bh, s, d) = attention_dims(env);
        let n = (bh * s * d) as u64;
        let q = to_f32(gpu, support, set, "Q")?;
        let k = to_f32(gpu, support, set, "K")?;
        let v = to_f32(gpu, support, set, "V")?;
        let o = gpu.alloc(n as usize * 4)?;
        support.attention_fwd(
            gpu,
            q.ptr(),
            k.ptr(),
            v.ptr(),
            o.ptr(),
            set.ptr("LSE").expect("LSE"),
            bh,
            s,
            d,
            causal,
        )?;
        support.f32_to_bf16(gpu, o.ptr(), set.ptr("O").expect("O"), n)?;
        gpu.sync()?;
    }
    Ok(())
}

fn attention_dims(env: &Bindings) -> (i32, i32, i32) {
    let g = |k: &str| i32::try_from(*env.get(k).unwrap_or(&0)).unwrap_or(0);
    (g("B") * g("H"), g("S"), g("D"))
}

fn to_f32(gpu: &Gpu, support: &Support, set: &TensorSet, name: &str) -> Result<DeviceBuffer, Stop> {
    let (_, _, dtype, numel) = set.tensors.get(name).ok_or_else(|| {
        Stop::new(Outcome::failed(
            Verdict::Other,
            "setup",
            format!("no tensor {name}"),
        ))
    })?;
    let out = gpu.alloc(*numel as usize * 4)?;
    support.to_f32(
        gpu,
        set.ptr(name).expect("present"),
        *dtype,
        out.ptr(),
        *numel,
    )?;
    Ok(out)
}

/// The fp32 reference of every output for the inputs in `set`.
pub fn compute_reference(
    gpu: &Gpu,
    support: &Support,
    task: &Task,
    env: &Bindings,
    set: &TensorSet,
) -> Result<Reference, Stop> {
    let mut outputs = BTreeMap::new();
    let axis = |k: &str| i32::try_from(*env.get(k).unwrap_or(&0)).unwrap_or(0);
    match task.op {
        Op::Gemm { .. } | Op::GemmFp8 { .. } => {
            let (m, n, k) = (axis("M"), axis("N"), axis("K"));
            let a = to_f32(gpu, support, set, "A")?;
            let b = to_f32(gpu, support, set, "B")?;
            let scale = if matches!(task.op, Op::GemmFp8 { .. }) {
                let read = |name: &str| -> Result<f32, Stop> {
                    let (buf, ..) = &set.tensors[name];
                    let raw = gpu.download(buf, GUARD, 4)?;
                    Ok(f32::from_le_bytes(raw[..4].try_into().expect("4 bytes")))
                };
                read("scale_a")? * read("scale_b")?
            } else {
                1.0
            };
            let c = gpu.alloc((m as usize) * (n as usize) * 4)?;
            support.gemm(gpu, a.ptr(), b.ptr(), c.ptr(), m, n, k, scale)?;
            outputs.insert("C".to_string(), c);
        }
        Op::AttentionFwd { causal } => {
            let (bh, s, d) = attention_dims(env);
            let q = to_f32(gpu, support, set, "Q")?;
            let k = to_f32(gpu, support, set, "K")?;
            let v = to_f32(gpu, support, set, "V")?;
            let o = gpu.alloc((bh * s * d) as usize * 4)?;
            let lse = gpu.alloc((bh * s) as usize * 4)?;
            support.attention_fwd(
                gpu,
                q.ptr(),
                k.ptr(),
                v.ptr(),
                o.ptr(),
                lse.ptr(),
                bh,
                s,
                d,
                causal,
            )?;
            outputs.insert("O".to_string(), o);
            outputs.insert("LSE".to_string(), lse);
        }
        Op::AttentionBwd { causal } => {
            let (bh, s, d) = attention_dims(env);
            let n = (bh * s * d) as usize;
            let q = to_f32(gpu, support, set, "Q")?;
            let k = to_f32(gpu, support, set, "K")?;
            let v = to_f32(gpu, support, set, "V")?;
            let d_o = to_f32(gpu, support, set, "dO")?;
            // The exact forward (fp32 O and LSE), not the bf16 O the kernel is given.
            let o = gpu.alloc(n * 4)?;
            let lse = gpu.alloc((bh * s) as usize * 4)?;
            support.attention_fwd(
                gpu,
                q.ptr(),
                k.ptr(),
                v.ptr(),
                o.ptr(),
                lse.ptr(),
                bh,
                s,
                d,
                causal,
            )?;
            let delta = gpu.alloc((bh * s) as usize * 4)?;
            let dq = gpu.alloc(n * 4)?;
            let dk = gpu.alloc(n * 4)?;
            let dv = gpu.alloc(n * 4)?;
            support.attention_bwd(
                gpu,
                [q.ptr(), k.ptr(), v.ptr(), o.ptr(), d_o.ptr(), lse.ptr()],
                [dq.ptr(), dk.ptr(), dv.ptr()],
                delta.ptr(),
                bh,
                s,
                d,
                causal,
            )?;
            outputs.insert("dQ".to_string(), dq);
            outputs.insert("dK".to_string(), dk);
            outputs.insert("dV".to_string(), dv);
        }
    }
    gpu.sync()?;
    Ok(Reference { outputs })
}

/// Device copies of every input, to prove afterwards that the kernel left them alone.
pub fn snapshot_inputs(
    gpu: &Gpu,
    task: &Task,
    set: &TensorSet,
) -> Result<BTreeMap<String, DeviceBuffer>, Stop> {
    let mut out = BTreeMap::new();
    for t in &task.inputs {
        let (buf, ..) = &set.tensors[&t.name];
        let copy = gpu.alloc(buf.bytes())?;
        let bytes = gpu.download(buf, 0, buf.bytes())?;
        gpu.upload(&copy, 0, &bytes)?;
        out.insert(t.name.clone(), copy);
    }
    Ok(out)
}

/// Outputs to NaN and workspaces to their declared fill, before a launch sequence.
pub fn prepare_outputs(gpu: &Gpu, task: &Task, set: &TensorSet) -> Result<(), DriverError> {
    for t in &task.outputs {
        let (buf, bytes, ..) = &set.tensors[&t.name];
        gpu.fill_u8(buf, GUARD, POISON_BYTE, *bytes)?;
    }
    for (buf, bytes, init) in set.workspaces.values() {
        let v = match init {
            WorkspaceInit::Zero => 0,
            WorkspaceInit::Poison => POISON_BYTE,
        };
        gpu.fill_u8(buf, 0, v, (*bytes).max(1).min(buf.bytes()))?;
    }
    Ok(())
}

/// Encoded parameters for every launch of the plan over `set` (tensor maps included).
pub fn encode_params(
    gpu: &Gpu,
    launches: &[ResolvedLaunch],
    set: &TensorSet,
    keep: &mut Vec<DeviceBuffer>,
) -> Result<Vec<Vec<ParamBytes>>, DriverError> {
    let mut all = Vec::new();
    for l in launches {
        let mut params = Vec::new();
        for p in &l.params {
            params.push(match p {
                ResolvedParam::Tensor { name, .. } | ResolvedParam::Workspace { name, .. } => {
                    ParamBytes::new(&set.ptr(name).unwrap_or(0).to_le_bytes())
                }
                ResolvedParam::Scalar { bytes, .. } => ParamBytes::new(bytes),
                ResolvedParam::Null { bytes } => {
                    ParamBytes::new(&vec![0u8; (*bytes).min(128) as usize])
                }
                ResolvedParam::TensorMap { by_value, map } => {
                    let encoded = encode_map(gpu, map, set)?;
                    if *by_value {
                        ParamBytes::new(&encoded)
                    } else {
                        let buf = gpu.alloc(128)?;
                        gpu.upload(&buf, 0, &encoded)?;
                        let p = ParamBytes::new(&buf.ptr().to_le_bytes());
                        keep.push(buf);
                        p
                    }
                }
            });
        }
        all.push(params);
    }
    Ok(all)
}

fn encode_map(gpu: &Gpu, m: &ResolvedTensorMap, set: &TensorSet) -> Result<[u8; 128], DriverError> {
    // CUDA's enum numbering (cuda.h): CUtensorMapDataType, Interleave, Swizzle, L2promotion.
    let data_type = match m.dtype {
        DType::Bf16 => 9,
        DType::F16 => 6,
        DType::F32 => 7,
        DType::E4m3 | DType::E5m2 => 0,
        DType::I32 => 3,
    };
    let interleave = match m.interleave {
        Interleave::None => 0,
        Interleave::B16 => 1,
        Interleave::B32 => 2,
    };
    let swizzle = match m.swizzle {
        Swizzle::None => 0,
        Swizzle::B32 => 1,
        Swizzle::B64 => 2,
        Swizzle::B128 => 3,
    };
    let l2 = match m.l2_promotion {
        L2Promotion::None => 0,
        L2Promotion::B64 => 1,
        L2Promotion::B128 => 2,
        L2Promotion::B256 => 3,
    };
    gpu.encode_tensor_map(
        data_type,
        set.ptr(&m.tensor).unwrap_or(0),
        &m.dims,
        &m.strides,
        &m.box_dims,
        &m.element_strides,
        interleave,
        swizzle,
        l2,
        m.oob_fill == OobFill::Nan,
    )
}

/// Launches the plan once over `set`, in order, on the stream (no sync).
pub fn run_plan(
    gpu: &Gpu,
    kernels: &BTreeMap<String, Kernel>,
    launches: &[ResolvedLaunch],
    set: &TensorSet,
) -> Result<(), Stop> {
    let mut keep = Vec::new();
    let params = encode_params(gpu, launches, set, &mut keep).map_err(|e| {
        Stop::new(Outcome::failed(
            Verdict::Runtime,
            "launch",
            format!("encoding a tensor map: {e}"),
        ))
    })?;
    launch_encoded(gpu, kernels, launches, &params)?;
    // Tensor maps passed by pointer must outlive the launches.
    gpu.sync()?;
    drop(keep);
    Ok(())
}

/// Launches already-encoded parameters (timing reuses them).
pub fn launch_encoded(
    gpu: &Gpu,
    kernels: &BTreeMap<String, Kernel>,
    launches: &[ResolvedLaunch],
    params: &[Vec<ParamBytes>],
) -> Result<(), Stop> {
    for (l, p) in launches.iter().zip(params) {
        let k = kernels[&l.entry];
        gpu.prepare(k, l.shared_mem, l.non_portable_cluster)
            .map_err(|e| Stop::new(Outcome::failed(Verdict::Runtime, "launch", e.to_string())))?;
        let g = Geometry {
            grid: l.grid,
            block: l.block,
            shared_mem: l.shared_mem,
            cluster: l.cluster,
        };
        gpu.launch(k, &g, p).map_err(|e| {
            Stop::new(Outcome::failed(
                Verdict::Runtime,
                "launch",
                format!("launching {}: {e}", l.entry),
            ))
        })?;
    }
    Ok(())
}

/// Compares one output (fp32 copy at `got`, `numel` values) with its reference under the
/// output's tolerance.
pub fn check_output(
    gpu: &Gpu,
    support: &Support,
    scratch: &DeviceBuffer,
    t: &TensorSpec,
    got: u64,
    numel: u64,
    reference: &DeviceBuffer,
) -> Result<OutputCheck, Stop> {
    let tol = t.tolerance.clone().unwrap_or(Tolerance::Allclose {
        rtol: 0.0,
        atol: 0.0,
    });
    let (rtol, atol) = match tol {
        Tolerance::Allclose { rtol, atol } => (rtol, atol),
        Tolerance::Relnorm { .. } => (f64::INFINITY, f64::INFINITY),
    };
    let c = support.compare(gpu, scratch, got, reference.ptr(), numel, rtol, atol)?;
    let failure = if c.non_finite > 0 {
        Some(format!(
            "{}: {} of {} values are NaN or infinite (unwritten or overflowed)",
            t.name, c.non_finite, c.elements
        ))
    } else if c.non_zero == 0 && c.reference_non_zero > 0 {
        Some(format!("{}: every value is zero", t.name))
    } else {
        match tol {
            Tolerance::Allclose { rtol, atol } if c.violations > 0 => Some(format!(
                "{}: {} of {} values outside atol {atol} + rtol {rtol} (first at index {}, max |error| {:.3e}, relative L2 error {:.3e})",
                t.name,
                c.violations,
                c.elements,
                c.first_violation.unwrap_or(0),
                c.max_abs_error,
                c.relative_l2
            )),
            Tolerance::Relnorm { max } if c.relative_l2.is_nan() || c.relative_l2 > max => {
                Some(format!(
                    "{}: relative L2 error {:.3e} exceeds {max} (max |error| {:.3e})",
                    t.name, c.relative_l2, c.max_abs_error
                ))
            }
            _ => None,
        }
    };
    Ok(OutputCheck {
        output: t.name.clone(),
        tolerance: match tol {
            Tolerance::Allclose { rtol, atol } => format!("allclose rtol {rtol} atol {atol}"),
            Tolerance::Relnorm { max } => format!("relnorm {max}"),
        },
        passed: failure.is_none(),
        failure,
        comparison: c,
    })
}

/// Compares every output of `set` with `reference` and checks guards and inputs.
#[allow(clippy::too_many_arguments)]
pub fn check_trial(
    gpu: &Gpu,
    support: &Support,
    scratch: &DeviceBuffer,
    task: &Task,
    set: &TensorSet,
    reference: &Reference,
    snapshot: &BTreeMap<String, DeviceBuffer>,
    seed: u64,
) -> Result<Trial, Stop> {
    let mut outputs = Vec::new();
    for t in &task.outputs {
        let got = to_f32(gpu, support, set, &t.name)?;
        let numel = set.numel(&t.name);
        outputs.push(check_output(
            gpu,
            support,
            scratch,
            t,
            got.ptr(),
            numel,
            &reference.outputs[&t.name],
        )?);
    }
    let mut guard_bytes_changed = 0;
    for (buf, bytes, ..) in set.tensors.values() {
        guard_bytes_changed +=
            support.count_not(gpu, scratch, buf.ptr(), GUARD as u64, GUARD_BYTE)?;
        guard_bytes_changed += support.count_not(
            gpu,
            scratch,
            buf.ptr() + (GUARD + bytes) as u64,
            (buf.bytes() - GUARD - bytes) as u64,
            GUARD_BYTE,
        )?;
    }
    let mut input_bytes_changed = 0;
    for (name, copy) in snapshot {
        let (buf, bytes, ..) = &set.tensors[name];
        let g = GUARD as u64;
        input_bytes_changed +=
            support.count_diff(gpu, scratch, buf.ptr() + g, copy.ptr() + g, *bytes as u64)?;
    }
    let passed =
        outputs.iter().all(|o| o.passed) && guard_bytes_changed == 0 && input_bytes_changed == 0;
    Ok(Trial {
        seed,
        outputs,
        guard_bytes_changed,
        input_bytes_changed,
        passed,
    })
}
