//! Baselines: the library at its best where one has the op (cuBLASLt for GEMM, cuDNN SDPA for
//! attention), else a composition of cuBLASLt products and harness kernels ([`super::composed`]:
//! MLA decode, the gated delta rule), bound to a tensor set, checked once against the fp32
//! reference, and timed alone for `ptxbench baseline`.

use crate::record::Stage;
use std::rc::Rc;

use super::Stats;
use super::composed::{self, Composed, Composition};
use super::conditions::Conditions;
use super::inputs::{POISON_BYTE, TensorSet, allocate, fill_inputs, refresh_inputs, seed_for};
use super::judge::check_stored;
use super::reference::{Reference, compute_reference};
use super::support::Support;
use super::verdict::Stop;
use super::{BaselineInfo, Outcome, OutputCheck, Verdict};
use crate::candidate::plan::LaunchPlan;
use crate::cuda::cublaslt::{Gemm, GemmInput};
use crate::cuda::cudnn::{
    BoundSdpa, PagedDecodeShape, PagedKv, PrefillShape, Sdpa, SdpaPass, SdpaShape,
};
use crate::cuda::driver::{DeviceBuffer, Gpu};
use crate::expr::Bindings;
use crate::task::{Op, Task, Workload};

/// What an op's baseline is, in words (the methodology page and the task pages say it).
pub fn described(op: &Op) -> String {
    let best = "the fastest, timed per workload, of the heuristic's";
    let sdpa = |what: &str| {
        format!(
            "cuDNN SDPA {what} through cuDNN's native backend graph API; {best} engine configurations"
        )
    };
    match op {
        Op::Gemm { .. } => format!(
            "cuBLASLt matmul, bf16 in and out with fp32 accumulation; {best} up to 8 algorithms"
        ),
        Op::GemmFp8 { .. } => format!(
            "cuBLASLt matmul on e4m3 with the per-tensor scales, bf16 out (the TN layout fp8 needs on Hopper); {best} up to 8 algorithms"
        ),
        Op::AttentionFwd { .. } => sdpa("forward with LSE"),
        Op::AttentionBwd { .. } => sdpa("backward"),
        Op::AttentionFwdFp8 { .. } => sdpa("fp8 forward with LSE"),
        Op::AttentionDecode { .. } => sdpa(
            "paged GQA decode with LSE (the dense page table it reads converted from the task's CSR table outside the timed launch)",
        ),
        Op::AttentionPrefill { .. } => sdpa(
            "causal GQA prefill with LSE over ragged or paged keys (offsets, lengths and page table derived from the row pointers outside the timed launch)",
        ),
        Op::AttentionMlaDecode { .. } => format!(
            "composed (no library has MLA decode): {}; each product's algorithm {best}, and every launch of the composition in the baseline's time",
            composed::mla::STEPS
        ),
        Op::GdnPrefill => format!(
            "composed (no library has the gated delta rule): {}; each product's algorithm {best}, and every launch of the composition in the baseline's time",
            composed::gdn::STEPS
        ),
    }
}

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
        /// Buffers the graph reads that the task does not have (a paged decode's dense page
        /// table and sequence lengths), kept alive with the binding.
        _derived: Vec<DeviceBuffer>,
    },
    /// Composed where no library has the op: every launch of it is the baseline's time.
    Composed(Box<Composed>),
}

fn baseline_error(what: &str, e: impl std::fmt::Display) -> Stop {
    Stop::new(Outcome::failed(
        Verdict::Other,
        Stage::Timing,
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
            Baseline::Composed(c) => c.launch(gpu).map_err(|e| baseline_error(" (composed)", e)),
        }
    }

    /// Where the baseline writes the task output `name`.
    pub fn output(&self, name: &str) -> Option<&DeviceBuffer> {
        match self {
            Baseline::Gemm { c, .. } => (name == "C").then_some(c),
            Baseline::Sdpa { outputs, .. } => {
                outputs.iter().find(|(n, _)| n == name).map(|(_, b)| b)
            }
            Baseline::Composed(c) => c.output(name),
        }
    }
}

/// The baseline planned for one workload, shared by its tensor sets.
#[derive(Default)]
pub(super) struct Planned {
    sdpa: Option<Rc<Sdpa>>,
    /// The engine configurations' medians when they were timed, in words.
    timed: Option<String>,
}

impl Planned {
    /// The workload's SDPA plan: `build`'s on the first tensor set, the same one after.
    fn sdpa<E: std::fmt::Display>(
        &mut self,
        build: impl FnOnce() -> Result<Sdpa, E>,
    ) -> Result<Rc<Sdpa>, Stop> {
        if let Some(s) = &self.sdpa {
            return Ok(Rc::clone(s));
        }
        let s = Rc::new(build().map_err(|e| baseline_error(" setup", e))?);
        self.sdpa = Some(Rc::clone(&s));
        Ok(s)
    }
}

pub(super) fn baseline_for(
    gpu: &Gpu,
    support: &Support,
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
        Op::AttentionFwdFp8 { .. } | Op::AttentionDecode { .. } | Op::AttentionPrefill { .. } => {
            return planned_baseline(gpu, support, task, env, set, planned);
        }
        // No library has MLA decode or the gated delta rule: their baselines are composed.
        Op::AttentionMlaDecode { .. } | Op::GdnPrefill => {
            return composed_baseline(gpu, support, task, env, set);
        }
    };
    let (m, n, k) = (axis("M"), axis("N"), axis("K"));
    let mut gemm = Gemm::new(gpu, input, m, n, k).map_err(|e| baseline_error(" setup", e))?;
    let c = gpu.alloc((m * n * 2) as usize)?;
    let (a, b) = (set.ptr("A").unwrap_or(0), set.ptr("B").unwrap_or(0));
    let medians = fastest_of(gpu, "cuBLASLt algorithm", gemm.algorithms(), |i, launch| {
        gemm.choose(i);
        if launch {
            gemm.launch(gpu, a, b, c.ptr()).map_err(|e| e.to_string())
        } else {
            Ok(())
        }
    })?;
    let info = BaselineInfo {
        provider: "cublaslt".into(),
        version: gemm.version.to_string(),
        library: gemm.library.clone(),
        label: None,
        engine: Some(format!(
            "algorithm {} of the heuristic's {} (the fastest; their medians in ms, L2 flushed: {})",
            gemm.chosen(),
            gemm.algorithms(),
            shown(&medians)
        )),
    };
    Ok(Some((Baseline::Gemm { gemm, a, b, c }, info)))
}

/// Medians in words: `0.4143, failed, 0.4210`.
fn shown(medians: &[Option<f64>]) -> String {
    let words: Vec<String> = medians
        .iter()
        .map(|m| m.map_or("failed".into(), |ms| format!("{ms:.4}")))
        .collect();
    words.join(", ")
}

/// Launches of each library configuration when choosing among them: untimed, then timed.
const CHOICE_WARMUP: u32 = 1;
const CHOICE_LAUNCHES: u32 = 5;

/// Times each of a library's `count` configurations for this workload (cuBLASLt's algorithms,
/// cuDNN's engine configurations: the heuristic's guesses, best first) and leaves the fastest
/// chosen, so the baseline is the library at its best for this shape. `run(i, launch)` makes
/// configuration `i` current and, when `launch`, enqueues one launch of it. Each is timed with
/// L2 flushed before every launch, the median of a few launches; one that fails to launch is
/// skipped, but the heuristic's first choice must run. Returns each one's median (`None`: it
/// failed; no timing at all when there is only one).
fn fastest_of(
    gpu: &Gpu,
    what: &str,
    count: usize,
    mut run: impl FnMut(usize, bool) -> Result<(), String>,
) -> Result<Vec<Option<f64>>, Stop> {
    if count < 2 {
        return Ok(vec![None; count]);
    }
    let conditions = Conditions::new(gpu)?;
    let events = [gpu.event()?, gpu.event()?];
    let mut medians = Vec::new();
    for i in 0..count {
        run(i, false).map_err(|e| baseline_error(" setup", e))?;
        let mut samples = Vec::new();
        for l in 0..CHOICE_WARMUP + CHOICE_LAUNCHES {
            conditions.flush_l2(gpu, l ^ 0x3c3c)?;
            gpu.record(&events[0])?;
            if run(i, true).is_err() {
                break;
            }
            gpu.record(&events[1])?;
            if l >= CHOICE_WARMUP {
                samples.push(f64::from(gpu.elapsed_ms(&events[0], &events[1])?));
            }
        }
        // A failed launch may leave an error on the stream: a later sync reports it.
        gpu.sync()?;
        medians.push(Stats::from_samples(&samples).map(|s| s.median_ms));
    }
    let best = medians
        .iter()
        .enumerate()
        .filter_map(|(i, m)| m.map(|m| (i, m)))
        .min_by(|x, y| x.1.total_cmp(&y.1))
        .map(|(i, _)| i);
    match best {
        Some(i) if medians[0].is_some() => {
            run(i, false).map_err(|e| baseline_error(" setup", e))?;
        }
        _ => {
            return Err(baseline_error(
                " setup",
                format!("the heuristic's first {what} did not launch"),
            ));
        }
    }
    Ok(medians)
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
    let shape = SdpaShape {
        b: axis("B"),
        h: axis("H"),
        s: axis("S"),
        d: axis("D"),
        causal,
    };
    let sdpa = planned.sdpa(|| Sdpa::new(gpu, pass, shape))?;
    bind_sdpa(gpu, task, set, sdpa, Vec::new(), planned)
}

/// An int32 row pointer of `set` (`qo_indptr`, `kv_indptr`: `entries` values), read back.
fn indptr(gpu: &Gpu, set: &TensorSet, name: &str, entries: usize) -> Result<Vec<i32>, Stop> {
    let (buf, ..) = &set.tensors[name];
    let raw = gpu.download(buf, super::inputs::GUARD, entries * 4)?;
    Ok(raw
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect())
}

/// `values` in a fresh device buffer.
fn uploaded(gpu: &Gpu, values: &[i32]) -> Result<DeviceBuffer, Stop> {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let buf = gpu.alloc(bytes.len().max(4))?;
    gpu.upload(&buf, 0, &bytes)?;
    Ok(buf)
}

/// Each entry of a row pointer times `per_row` (cuDNN's ragged offsets count elements), or
/// why it does not fit an int32.
fn scaled(indptr: &[i32], per_row: u64) -> Result<Vec<i32>, String> {
    indptr
        .iter()
        .map(|&r| {
            u64::try_from(r)
                .ok()
                .and_then(|r| r.checked_mul(per_row))
                .and_then(|e| i32::try_from(e).ok())
                .ok_or_else(|| {
                    format!("row pointer {r} times {per_row} elements does not fit an int32 offset")
                })
        })
        .collect()
}

/// Sequence lengths from a row pointer.
fn lengths(indptr: &[i32]) -> Vec<i32> {
    indptr.windows(2).map(|w| w[1] - w[0]).collect()
}

/// The cuDNN graphs of the suite-1.2 and 1.4 ops (fp8 forward, paged decode, prefill),
/// planned once per workload and bound to `set`. The paged graphs read a dense page table,
/// converted here from the task's CSR table (kept while timing) once per tensor set, outside
/// the timed launch; the prefill graphs read ragged offsets and sequence lengths derived from
/// the row pointers the same way.
fn planned_baseline(
    gpu: &Gpu,
    support: &Support,
    task: &Task,
    env: &Bindings,
    set: &TensorSet,
    planned: &mut Planned,
) -> Result<Option<(Baseline, BaselineInfo)>, Stop> {
    let setup = |e: &dyn std::fmt::Display| baseline_error(" setup", e);
    let problem = task.problem_in(env).map_err(|e| setup(&e))?;
    let mut derived: Vec<(&str, DeviceBuffer)> = Vec::new();
    let sdpa = match task.op {
        Op::AttentionDecode { .. } => {
            let d = problem.decode().map_err(|e| setup(&e))?;
            let kv = indptr(gpu, set, "kv_indptr", d.batch as usize + 1)?;
            let max_len = lengths(&kv).into_iter().max().unwrap_or(1).max(1);
            let (b, maxp) = (d.batch as i32, max_len);
            let table = gpu.alloc((b as usize) * (maxp as usize) * 4)?;
            let seq_len = gpu.alloc((b as usize) * 4)?;
            support.csr_to_table(
                gpu,
                set.ptr("kv_indptr").expect("validated"),
                set.ptr("kv_indices").expect("validated"),
                b,
                maxp,
                table.ptr(),
                seq_len.ptr(),
            )?;
            gpu.sync()?;
            let shape = PagedDecodeShape {
                b: d.batch as i64,
                h_q: d.heads as i64,
                h_kv: d.kv_heads as i64,
                d: d.head_dim as i64,
                num_pages: d.pages as i64,
                max_pages_per_seq: i64::from(maxp),
                block_size: d.page_size as i64,
            };
            derived.push(("page_table", table));
            derived.push(("seq_len_kv", seq_len));
            // The padded key length depends on the longest sequence, fixed per workload.
            planned.sdpa(|| Sdpa::paged_decode(gpu, shape))?
        }
        Op::AttentionPrefill { paged, .. } => {
            let p = problem.prefill().map_err(|e| setup(&e))?;
            let entries = p.indptr as usize;
            let qo = indptr(gpu, set, "qo_indptr", entries)?;
            let kv = indptr(gpu, set, "kv_indptr", entries)?;
            let (q_lens, kv_lens) = (lengths(&qo), lengths(&kv));
            let longest = |l: &[i32]| l.iter().copied().max().unwrap_or(1).max(1);
            let (max_q, max_kv) = (longest(&q_lens), longest(&kv_lens));
            let (hq, hkv, d) = (p.heads, p.kv_heads, p.head_dim);
            let b = p.batch() as i32;
            derived.push(("seq_len_q", uploaded(gpu, &q_lens)?));
            derived.push((
                "q_offsets",
                uploaded(gpu, &scaled(&qo, hq * d).map_err(|e| setup(&e))?)?,
            ));
            derived.push((
                "lse_offsets",
                uploaded(gpu, &scaled(&qo, hq).map_err(|e| setup(&e))?)?,
            ));
            let kv_cache = if paged {
                let (pages, page_size) = p.paged.unwrap_or((0, 1));
                if page_size != 1 {
                    return Err(setup(&format!(
                        "page size {page_size}: the page table is built for one token per page"
                    )));
                }
                let table = gpu.alloc((b as usize) * (max_kv as usize) * 4)?;
                let seq_len = gpu.alloc((b as usize) * 4)?;
                support.csr_to_table(
                    gpu,
                    set.ptr("kv_indptr").expect("validated"),
                    set.ptr("kv_indices").expect("validated"),
                    b,
                    max_kv,
                    table.ptr(),
                    seq_len.ptr(),
                )?;
                gpu.sync()?;
                derived.push(("page_table", table));
                derived.push(("seq_len_kv", seq_len));
                Some(PagedKv {
                    num_pages: pages as i64,
                    max_pages_per_seq: i64::from(max_kv),
                    block_size: 1,
                })
            } else {
                derived.push(("seq_len_kv", uploaded(gpu, &kv_lens)?));
                derived.push((
                    "kv_offsets",
                    uploaded(gpu, &scaled(&kv, hkv * d).map_err(|e| setup(&e))?)?,
                ));
                None
            };
            // The padded lengths depend on the longest sequences, fixed per workload.
            let shape = PrefillShape {
                b: i64::from(b),
                h_q: hq as i64,
                h_kv: hkv as i64,
                d: d as i64,
                max_q: i64::from(max_q),
                max_kv: i64::from(max_kv),
                paged: kv_cache,
            };
            planned.sdpa(|| Sdpa::prefill(gpu, shape))?
        }
        Op::AttentionFwdFp8 { causal } => {
            let a = problem.attention().map_err(|e| setup(&e))?;
            let shape = SdpaShape {
                b: a.batch as i64,
                h: a.heads as i64,
                s: a.seq as i64,
                d: a.head_dim as i64,
                causal,
            };
            planned.sdpa(|| Sdpa::forward_fp8(gpu, shape))?
        }
        _ => return Ok(None),
    };
    bind_sdpa(gpu, task, set, sdpa, derived, planned)
}

/// Binds a planned SDPA to `set`: the task's inputs in place, fresh buffers for its outputs
/// (the baseline writes its own), and `derived` buffers for what the graph reads that the task
/// has not (both page tables of a decode are `page_table`). The first binding of a workload's
/// plan times its engine configurations and keeps the fastest ([`fastest_of`]).
fn bind_sdpa(
    gpu: &Gpu,
    task: &Task,
    set: &TensorSet,
    sdpa: Rc<Sdpa>,
    derived: Vec<(&str, DeviceBuffer)>,
    planned: &mut Planned,
) -> Result<Option<(Baseline, BaselineInfo)>, Stop> {
    let missing = |name: &str| baseline_error(" setup", format!("the task has no tensor {name}"));
    let mut outputs = Vec::new();
    let mut pointers = Vec::new();
    for name in sdpa.tensors() {
        let key = match *name {
            "page_table_k" | "page_table_v" => "page_table",
            "v_offsets" => "kv_offsets",
            "o_offsets" => "q_offsets",
            other => other,
        };
        if let Some((_, buf)) = derived.iter().find(|(n, _)| *n == key) {
            pointers.push(buf.ptr());
        } else if task.outputs.iter().any(|t| t.name == *name) {
            let (_, bytes, ..) = set.tensors.get(*name).ok_or_else(|| missing(name))?;
            let buf = gpu.alloc(*bytes)?;
            pointers.push(buf.ptr());
            outputs.push(((*name).to_string(), buf));
        } else {
            pointers.push(set.ptr(name).ok_or_else(|| missing(name))?);
        }
    }
    let bound = sdpa
        .bind(&pointers)
        .map_err(|e| baseline_error(" setup", e))?;
    if planned.timed.is_none() {
        let count = sdpa.configurations();
        let medians = fastest_of(gpu, "cuDNN engine configuration", count, |i, launch| {
            sdpa.choose(i);
            if launch {
                sdpa.launch(&bound).map_err(|e| e.to_string())
            } else {
                Ok(())
            }
        })?;
        planned.timed = Some(if count < 2 {
            "the heuristic's only configuration".to_string()
        } else {
            format!(
                "configuration {} of the heuristic's {} (the fastest; their medians in ms, L2 flushed: {})",
                sdpa.chosen() + 1,
                count,
                shown(&medians)
            )
        });
    }
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
            sdpa.kind().label()
        )),
        engine: Some(format!(
            "{}; {}",
            sdpa.engine(),
            planned.timed.as_deref().unwrap_or_default()
        )),
    };
    Ok(Some((
        Baseline::Sdpa {
            sdpa,
            bound,
            outputs,
            _derived: derived.into_iter().map(|(_, b)| b).collect(),
        },
        info,
    )))
}

/// The composed baseline of an op no library has ([`composed`]), bound to `set`: planned from
/// the sequence lengths the set's row pointers give (fixed per workload), run once so every
/// intermediate holds real values, then each of its cuBLASLt products timed alone with each of
/// the heuristic's algorithms and the fastest kept ([`fastest_of`]).
fn composed_baseline(
    gpu: &Gpu,
    support: &Support,
    task: &Task,
    env: &Bindings,
    set: &TensorSet,
) -> Result<Option<(Baseline, BaselineInfo)>, Stop> {
    let setup = |e: &dyn std::fmt::Display| baseline_error(" setup (composed)", e);
    let Some(composition) = Composition::of(&task.op) else {
        return Ok(None);
    };
    let problem = task.problem_in(env).map_err(|e| setup(&e))?;
    let as_lengths = |indptr: &[i32]| -> Vec<u64> {
        lengths(indptr)
            .into_iter()
            .map(|l| u64::try_from(l).unwrap_or(0))
            .collect()
    };
    let mut c = match composition {
        Composition::MlaDecode => {
            let d = problem.mla_decode().map_err(|e| setup(&e))?;
            let kv = indptr(gpu, set, "kv_indptr", d.batch as usize + 1)?;
            let shape = composed::mla::MlaShape {
                batch: d.batch,
                heads: d.heads,
                ckv: d.ckv_dim,
                pe: d.pe_dim,
            };
            let scale = super::reference::mla_scale(d.pe_dim);
            composed::mla::bind(gpu, support, set, shape, &as_lengths(&kv), scale)
                .map_err(|e| setup(&e))?
        }
        Composition::GdnPrefill => {
            let d = problem.gdn().map_err(|e| setup(&e))?;
            let cu = indptr(gpu, set, "cu_seqlens", d.batch as usize + 1)?;
            let shape = composed::gdn::GdnShape {
                heads: d.heads,
                v_heads: d.v_heads,
                dim: d.head_dim,
            };
            let scale = super::reference::gdn_scale(d.head_dim);
            composed::gdn::bind(gpu, support, set, shape, &as_lengths(&cu), scale)
                .map_err(|e| setup(&e))?
        }
    };
    c.launch(gpu).map_err(|e| setup(&e))?;
    gpu.sync()?;
    let mut chosen = Vec::new();
    for i in 0..c.gemms() {
        let count = c.gemm_mut(i).1.algorithms();
        let medians = fastest_of(gpu, "cuBLASLt algorithm", count, |j, launch| {
            c.gemm_mut(i).1.choose(j);
            if launch {
                c.launch_gemm(gpu, i)
            } else {
                Ok(())
            }
        })?;
        let (what, g) = c.gemm_mut(i);
        chosen.push(format!(
            "{what}: algorithm {} of {count}{}",
            g.chosen(),
            if count < 2 {
                String::new()
            } else {
                format!(" ({})", shown(&medians))
            }
        ));
    }
    let (version, library) = c.library().unwrap_or_default();
    let info = BaselineInfo {
        provider: composed::PROVIDER.into(),
        version: version.to_string(),
        library,
        label: Some(composition.label().to_string()),
        engine: Some(format!(
            "{}; cuBLASLt algorithms, each the fastest of the heuristic's (medians in ms, L2 flushed): {}",
            c.summary,
            chosen.join("; ")
        )),
    };
    Ok(Some((Baseline::Composed(Box::new(c)), info)))
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
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct BaselineRun {
    pub info: Option<BaselineInfo>,
    pub check: Vec<OutputCheck>,
    pub stats: Option<Stats>,
    pub tflops: Option<f64>,
}

/// Times the library baseline alone on one workload, with the protocol of
/// [`time_workload`]'s library launches: the outputs checked once against the fp32
/// reference (poisoned first), then before every timed launch fresh inputs drawn from the
/// workload's stream of seeds (what the task keeps while timing, such as a page table, kept),
/// L2 flushed, events around the launch. `ptxbench baseline` uses it to measure the baseline
/// without a candidate.
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
    fill_inputs(gpu, support, task, w, &set, seed)?;
    let reference = compute_reference(gpu, support, task, &env, &set)?;
    let mut planned = Planned::default();
    let Some((baseline, info)) = baseline_for(gpu, support, task, &env, &set, &mut planned)? else {
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
    let conditions = Conditions::new(gpu)?;
    let events = [gpu.event()?, gpu.event()?];
    let stream = format!("baseline:{}", w.name);
    let mut samples = Vec::new();
    for i in 0..p.iterations.max(1) {
        refresh_inputs(gpu, support, task, &set, seed_for(seed, &stream, i + 1))?;
        conditions.flush_l2(gpu, i ^ 0x5a5a)?;
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

#[cfg(test)]
mod tests {
    use super::{lengths, scaled};

    #[test]
    fn ragged_offsets_count_elements_and_refuse_what_overflows_an_int32() {
        let qo = [0, 1, 18, 148];
        assert_eq!(lengths(&qo), vec![1, 17, 130]);
        assert_eq!(
            scaled(&qo, 32 * 128).expect("fits"),
            vec![0, 4096, 73728, 606208]
        );
        assert_eq!(scaled(&qo, 32).expect("fits"), vec![0, 32, 576, 4736]);
        let err = scaled(&[0, 1 << 20], 1 << 12).expect_err("overflows");
        assert!(err.contains("1048576") && err.contains("int32"), "{err}");
    }
}
