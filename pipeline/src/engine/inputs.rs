//! Device memory for one evaluation step and what goes in it: every task tensor with guard
//! bytes around it, the plan's workspaces, inputs drawn from the task's distributions by seed
//! (derived inputs from the fp32 reference forward), input snapshots, and outputs poisoned
//! before every launch sequence.

use crate::record::Stage;
use std::collections::BTreeMap;

use super::Outcome;
use super::Verdict;
use super::support::Support;
use super::verdict::{Stop, setup_error};
use crate::candidate::plan::{LaunchPlan, WorkspaceInit};
use crate::cuda::driver::{DeviceBuffer, DriverError, Gpu};
use crate::expr::Bindings;
use crate::task::{DType, Op, Task, Workload};

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
        // The trailing guard runs to the allocation's real end (`DeviceBuffer::bytes`), so no
        // slack past the request is left unwritten and unchecked.
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
                    Stage::Launch,
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
    let quantized = task.op.quantized_inputs();
    let amax = if quantized.is_empty() {
        None
    } else {
        Some(gpu.alloc(4)?)
    };
    for (i, t) in task.inputs.iter().enumerate() {
        if skip.contains(&t.name.as_str()) {
            continue;
        }
        let dist = task
            .input_distribution(&t.name)
            .unwrap_or(&task.distribution);
        let ptr = set.ptr(&t.name).expect("allocated");
        let n = set.numel(&t.name);
        if let (Some((_, descale)), Some(amax)) =
            (quantized.iter().find(|(q, _)| *q == t.name), &amax)
        {
            // Drawn in fp32, then quantized with its own per-tensor scale.
            let draw = gpu.alloc(f32_bytes(n)?)?;
            support.fill(gpu, draw.ptr(), DType::F32, n, input_seed(seed, i), dist)?;
            let descale = set
                .ptr(descale)
                .expect("validated: the descale is an input");
            support.quantize_e4m3(gpu, draw.ptr(), n, ptr, descale, amax)?;
            gpu.sync()?;
            continue;
        }
        support.fill(gpu, ptr, t.dtype, n, input_seed(seed, i), dist)?;
    }
    Ok(())
}

/// The row pointers of sequences of these lengths packed in order: `[0, l0, l0 + l1, ...]`.
pub fn indptr(lens: &[u64]) -> Result<Vec<i32>, String> {
    let mut out = vec![0i32];
    let mut at = 0u64;
    for l in lens {
        at += l;
        out.push(i32::try_from(at).map_err(|_| format!("{at} does not fit an int32 index"))?);
    }
    Ok(out)
}

/// The CSR page table of a paged decode workload: `kv_indptr` from its `kv_lens`, and
/// `kv_indices` distinct pages drawn from `seed` in random order (a partial Fisher-Yates
/// shuffle of all pages), so that no kernel can assume sequences sit in consecutive pages.
pub fn page_table(lens: &[u64], pages: u64, seed: u64) -> Result<(Vec<i32>, Vec<i32>), String> {
    let tokens: u64 = lens.iter().sum();
    if tokens > pages {
        return Err(format!("{tokens} KV tokens do not fit in {pages} pages"));
    }
    let indptr = indptr(lens)?;
    let n = usize::try_from(pages).map_err(|e| e.to_string())?;
    i32::try_from(pages).map_err(|_| format!("{pages} does not fit an int32 index"))?;
    let mut all: Vec<i32> = (0..n as i32).collect();
    let mut rng = super::estimate::SplitMix::new(seed);
    let take = tokens as usize;
    for i in 0..take {
        let j = i + rng.below(n - i);
        all.swap(i, j);
    }
    all.truncate(take);
    Ok((indptr, all))
}

fn upload_i32(gpu: &Gpu, set: &TensorSet, name: &str, v: &[i32]) -> Result<(), Stop> {
    let (buf, bytes, ..) = &set.tensors[name];
    let raw: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    if raw.len() != *bytes {
        return Err(setup_error(format!(
            "{name}: {} values for a tensor of {} bytes",
            v.len(),
            bytes
        )));
    }
    gpu.upload(buf, GUARD, &raw)?;
    Ok(())
}

/// Fills the drawn inputs; derived inputs come from the others: attention backward's O and
/// LSE from the fp32 reference forward, fp8 descales from the quantization of their tensors,
/// a paged (GQA or MLA) decode's page table from the workload's KV lengths and the seed, a
/// prefill's indptrs from its query and KV lengths (and, paged, its page table from the seed),
/// a GDN prefill's `cu_seqlens` from its sequence lengths.
pub fn fill_inputs(
    gpu: &Gpu,
    support: &Support,
    task: &Task,
    w: &Workload,
    set: &TensorSet,
    seed: u64,
) -> Result<(), Stop> {
    let env = &task.bindings(w);
    fill_drawn(gpu, support, task, set, seed, task.op.derived_inputs())?;
    if let Op::AttentionDecode { .. } | Op::AttentionMlaDecode { .. } = task.op {
        let problem = task.problem_in(env).map_err(setup_error)?;
        let pages = match task.op {
            Op::AttentionMlaDecode { .. } => problem.mla_decode().map(|d| d.pages),
            _ => problem.decode().map(|d| d.pages),
        }
        .map_err(setup_error)?;
        let lens = w
            .kv_lens
            .as_deref()
            .ok_or_else(|| setup_error(format!("workload {} lists no kv_lens", w.name)))?;
        let (indptr, indices) =
            page_table(lens, pages, input_seed(seed, task.inputs.len())).map_err(setup_error)?;
        upload_i32(gpu, set, "kv_indptr", &indptr)?;
        upload_i32(gpu, set, "kv_indices", &indices)?;
    }
    if let Op::AttentionPrefill { paged, .. } = task.op {
        let dims = task
            .problem_in(env)
            .and_then(|p| p.prefill())
            .map_err(setup_error)?;
        let lens = |l: &Option<Vec<u64>>, what: &str| {
            l.clone()
                .ok_or_else(|| setup_error(format!("workload {} lists no {what}", w.name)))
        };
        let (qo, kv) = (lens(&w.qo_lens, "qo_lens")?, lens(&w.kv_lens, "kv_lens")?);
        upload_i32(gpu, set, "qo_indptr", &indptr(&qo).map_err(setup_error)?)?;
        if paged {
            let pages = dims.paged.map_or(0, |(pages, _)| pages);
            let (kv_indptr, indices) =
                page_table(&kv, pages, input_seed(seed, task.inputs.len())).map_err(setup_error)?;
            upload_i32(gpu, set, "kv_indptr", &kv_indptr)?;
            upload_i32(gpu, set, "kv_indices", &indices)?;
        } else {
            upload_i32(gpu, set, "kv_indptr", &indptr(&kv).map_err(setup_error)?)?;
        }
    }
    if let Op::GdnPrefill = task.op {
        let lens = w
            .seq_lens
            .as_deref()
            .ok_or_else(|| setup_error(format!("workload {} lists no seq_lens", w.name)))?;
        upload_i32(gpu, set, "cu_seqlens", &indptr(lens).map_err(setup_error)?)?;
    }
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
            Stage::Setup,
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

/// Outputs to NaN and workspaces to their declared fill over their whole allocation (past the
/// declared bytes too, to the allocation's real end), before every launch sequence: nothing a
/// kernel leaves in a workspace reaches its next launch.
pub fn prepare_outputs(gpu: &Gpu, task: &Task, set: &TensorSet) -> Result<(), DriverError> {
    for t in &task.outputs {
        let (buf, bytes, ..) = &set.tensors[&t.name];
        gpu.fill_u8(buf, GUARD, POISON_BYTE, *bytes)?;
    }
    for (buf, _, init) in set.workspaces.values() {
        let v = match init {
            WorkspaceInit::Zero => 0,
            WorkspaceInit::Poison => POISON_BYTE,
        };
        gpu.fill_u8(buf, 0, v, buf.bytes())?;
    }
    Ok(())
}

/// Bytes of an fp32 buffer of `n` elements, checked.
pub fn f32_bytes(n: u64) -> Result<usize, Stop> {
    n.checked_mul(4)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| setup_error(format!("{n} fp32 values do not fit in memory")))
}

#[cfg(test)]
mod tests {
    use super::page_table;

    #[test]
    fn a_page_table_names_distinct_pages_per_seed() {
        let (indptr, indices) = page_table(&[3, 1, 5], 12, 7).expect("fits");
        assert_eq!(indptr, vec![0, 3, 4, 9]);
        assert_eq!(indices.len(), 9);
        let mut sorted = indices.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 9, "distinct pages: {indices:?}");
        assert!(indices.iter().all(|&p| (0..12).contains(&p)));
        assert_eq!(page_table(&[3, 1, 5], 12, 7).expect("fits").1, indices);
        assert_ne!(page_table(&[3, 1, 5], 12, 8).expect("fits").1, indices);
        assert!(page_table(&[3, 1, 5], 8, 7).is_err());
    }

    #[test]
    fn an_indptr_packs_sequences_in_order() {
        assert_eq!(super::indptr(&[1, 7, 65]), Ok(vec![0, 1, 8, 73]));
        assert_eq!(super::indptr(&[]), Ok(vec![0]));
        let err = super::indptr(&[1 << 31]).expect_err("past i32");
        assert!(err.contains("2147483648"), "{err}");
    }
}
