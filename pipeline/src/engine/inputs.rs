//! Device memory for one evaluation step and what goes in it: every task tensor with guard
//! bytes around it, the plan's workspaces, inputs drawn from the task's distributions by seed
//! (derived inputs from the fp32 reference forward), input snapshots, and outputs poisoned
//! before every launch sequence.

use std::collections::BTreeMap;

use super::Outcome;
use super::Verdict;
use super::support::Support;
use super::verdict::{Stop, setup_error};
use crate::candidate::plan::{LaunchPlan, WorkspaceInit};
use crate::cuda::driver::{DeviceBuffer, DriverError, Gpu};
use crate::expr::Bindings;
use crate::task::{DType, Op, Task};

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

pub fn seed_for(base: u64, workload: &str, trial: u32) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(&base.to_le_bytes());
    h.update(workload.as_bytes());
    h.update(&trial.to_le_bytes());
    let d = h.finalize();
    u64::from_le_bytes(d.as_bytes()[..8].try_into().expect("8 bytes"))
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
        let bytes = task.size_bytes(t, env).map_err(setup_error)?;
        let numel = task.numel(t, env).map_err(setup_error)?;
        let bytes = usize::try_from(bytes).map_err(setup_error)?;
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

/// The seed of input `index` of a set filled from `seed`.
fn input_seed(seed: u64, index: usize) -> u64 {
    seed ^ (0x1000_0000_0000_0000u64.wrapping_mul(index as u64 + 1))
}

/// Redraws, from `seed`, every input the timing loop changes between timed launches (all but
/// [`crate::task::Op::kept_while_timing`]); the same seed gives the same bytes.
pub fn refresh_inputs(
    gpu: &Gpu,
    support: &Support,
    task: &Task,
    set: &TensorSet,
    seed: u64,
) -> Result<(), Stop> {
    fill_drawn(gpu, support, task, set, seed, task.op.kept_while_timing())
}

/// Fills every input of `set` from its distribution and `seed`, except those in `skip`.
fn fill_drawn(
    gpu: &Gpu,
    support: &Support,
    task: &Task,
    set: &TensorSet,
    seed: u64,
    skip: &[&str],
) -> Result<(), Stop> {
    for (i, t) in task.inputs.iter().enumerate() {
        if skip.contains(&t.name.as_str()) {
            continue;
        }
        let dist = task
            .input_distribution(&t.name)
            .unwrap_or(&task.distribution);
        let ptr = set.ptr(&t.name).expect("allocated");
        support.fill(
            gpu,
            ptr,
            t.dtype,
            set.numel(&t.name),
            input_seed(seed, i),
            dist,
        )?;
    }
    Ok(())
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
    fill_drawn(gpu, support, task, set, seed, task.op.derived_inputs())?;
    if let Op::AttentionBwd { causal } = task.op {
        let dims = task
            .problem_in(env)
            .and_then(|p| p.attention())
            .map_err(setup_error)?;
        let (bh, s, d) = dims.as_i32().map_err(setup_error)?;
        let n = dims.elements().map_err(setup_error)?;
        let q = to_f32(gpu, support, set, "Q")?;
        let k = to_f32(gpu, support, set, "K")?;
        let v = to_f32(gpu, support, set, "V")?;
        let o = gpu.alloc(f32_bytes(n)?)?;
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

pub fn to_f32(
    gpu: &Gpu,
    support: &Support,
    set: &TensorSet,
    name: &str,
) -> Result<DeviceBuffer, Stop> {
    let (_, _, dtype, numel) = set.tensors.get(name).ok_or_else(|| {
        Stop::new(Outcome::failed(
            Verdict::Other,
            "setup",
            format!("no tensor {name}"),
        ))
    })?;
    let out = gpu.alloc(f32_bytes(*numel)?)?;
    support.to_f32(
        gpu,
        set.ptr(name).expect("present"),
        *dtype,
        out.ptr(),
        *numel,
    )?;
    Ok(out)
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
        gpu.copy(&copy, buf)?;
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

/// Bytes of an fp32 buffer of `n` elements, checked.
pub fn f32_bytes(n: u64) -> Result<usize, Stop> {
    n.checked_mul(4)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| setup_error(format!("{n} fp32 values do not fit in memory")))
}
