//! fp32 references on the GPU: every output of the task's op for the inputs of one tensor set,
//! computed by the harness's own kernels (support.cu) from fp32 copies of the inputs.

use std::collections::BTreeMap;

use super::inputs::{GUARD, TensorSet, f32_bytes, to_f32};
use super::support::Support;
use super::verdict::{Stop, setup_error};
use crate::cuda::driver::{DeviceBuffer, Gpu};
use crate::expr::Bindings;
use crate::task::{Op, Task};

/// fp32 copies of inputs and the fp32 reference outputs of one set.
#[derive(Debug)]
pub struct Reference {
    pub outputs: BTreeMap<String, DeviceBuffer>,
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
    let problem = task.problem_in(env).map_err(setup_error)?;
    match task.op {
        Op::Gemm { .. } | Op::GemmFp8 { .. } => {
            let dims = problem.gemm().map_err(setup_error)?;
            let (m, n, k) = dims.as_i32().map_err(setup_error)?;
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
            let c = gpu.alloc(f32_bytes(dims.outputs().map_err(setup_error)?)?)?;
            support.gemm(gpu, a.ptr(), b.ptr(), c.ptr(), m, n, k, scale)?;
            outputs.insert("C".to_string(), c);
        }
        Op::AttentionFwd { causal } => {
            let dims = problem.attention().map_err(setup_error)?;
            let (bh, s, d) = dims.as_i32().map_err(setup_error)?;
            let q = to_f32(gpu, support, set, "Q")?;
            let k = to_f32(gpu, support, set, "K")?;
            let v = to_f32(gpu, support, set, "V")?;
            let o = gpu.alloc(f32_bytes(dims.elements().map_err(setup_error)?)?)?;
            let lse = gpu.alloc(f32_bytes(dims.rows().map_err(setup_error)?)?)?;
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
        Op::AttentionFwdFp8 { causal } => {
            let dims = problem.attention().map_err(setup_error)?;
            let (bh, s, d) = dims.as_i32().map_err(setup_error)?;
            let n = dims.elements().map_err(setup_error)?;
            // The dequantized inputs: X * descale_x, in fp32.
            let mut dq = Vec::new();
            for (name, descale) in task.op.quantized_inputs() {
                let x = to_f32(gpu, support, set, name)?;
                support.scale_by(gpu, x.ptr(), n, set.ptr(descale).expect("validated"))?;
                dq.push(x);
            }
            let o = gpu.alloc(f32_bytes(n)?)?;
            let lse = gpu.alloc(f32_bytes(dims.rows().map_err(setup_error)?)?)?;
            support.attention_fwd(
                gpu,
                dq[0].ptr(),
                dq[1].ptr(),
                dq[2].ptr(),
                o.ptr(),
                lse.ptr(),
                bh,
                s,
                d,
                causal,
            )?;
            gpu.sync()?;
            outputs.insert("O".to_string(), o);
            outputs.insert("LSE".to_string(), lse);
        }
        Op::AttentionDecode { .. } => {
            let dims = problem.decode().map_err(setup_error)?;
            let (b, h, hkv, d) = dims.as_i32().map_err(setup_error)?;
            let q = to_f32(gpu, support, set, "q")?;
            let k = to_f32(gpu, support, set, "k_cache")?;
            let v = to_f32(gpu, support, set, "v_cache")?;
            let rows = dims.batch * dims.heads;
            let out = gpu.alloc(f32_bytes(rows * dims.head_dim)?)?;
            let lse = gpu.alloc(f32_bytes(rows)?)?;
            let ptr = |n: &str| set.ptr(n).expect("validated");
            support.paged_decode(
                gpu,
                [
                    q.ptr(),
                    k.ptr(),
                    v.ptr(),
                    ptr("kv_indptr"),
                    ptr("kv_indices"),
                ],
                [out.ptr(), lse.ptr()],
                b,
                h,
                hkv,
                d,
            )?;
            gpu.sync()?;
            outputs.insert("output".to_string(), out);
            outputs.insert("lse".to_string(), lse);
        }
        Op::AttentionMlaDecode { .. } => {
            let dims = problem.mla_decode().map_err(setup_error)?;
            // The reference kernel keeps a row of q_nope and q_pe in registers.
            if dims.ckv_dim > 512 || dims.pe_dim > 64 {
                return Err(setup_error(format!(
                    "the MLA reference takes latent dims up to 512 and rotary dims up to 64, not {} and {}",
                    dims.ckv_dim, dims.pe_dim
                )));
            }
            let (b, h, dc, dp) = dims.as_i32().map_err(setup_error)?;
            let q_nope = to_f32(gpu, support, set, "q_nope")?;
            let q_pe = to_f32(gpu, support, set, "q_pe")?;
            let ckv = to_f32(gpu, support, set, "ckv_cache")?;
            let kpe = to_f32(gpu, support, set, "kpe_cache")?;
            let rows = dims.batch * dims.heads;
            let out = gpu.alloc(f32_bytes(rows * dims.ckv_dim)?)?;
            let lse = gpu.alloc(f32_bytes(rows)?)?;
            let ptr = |n: &str| set.ptr(n).expect("validated");
            support.mla_decode(
                gpu,
                [
                    q_nope.ptr(),
                    q_pe.ptr(),
                    ckv.ptr(),
                    kpe.ptr(),
                    ptr("kv_indptr"),
                    ptr("kv_indices"),
                ],
                [out.ptr(), lse.ptr()],
                (b, h, dc, dp),
                mla_scale(dims.pe_dim),
            )?;
            gpu.sync()?;
            outputs.insert("output".to_string(), out);
            outputs.insert("lse".to_string(), lse);
        }
        Op::AttentionPrefill { paged, causal } => {
            let dims = problem.prefill().map_err(setup_error)?;
            let (b, h, hkv, d, _) = dims.as_i32().map_err(setup_error)?;
            let tq = i32::try_from(dims.qo_tokens).map_err(setup_error)?;
            let q = to_f32(gpu, support, set, "q")?;
            let (k_name, v_name) = if paged {
                ("k_cache", "v_cache")
            } else {
                ("k", "v")
            };
            let k = to_f32(gpu, support, set, k_name)?;
            let v = to_f32(gpu, support, set, v_name)?;
            let rows = dims.rows().map_err(setup_error)?;
            let out = gpu.alloc(f32_bytes(rows * dims.head_dim)?)?;
            let lse = gpu.alloc(f32_bytes(rows)?)?;
            let ptr = |n: &str| set.ptr(n).expect("validated");
            support.prefill(
                gpu,
                [
                    q.ptr(),
                    k.ptr(),
                    v.ptr(),
                    ptr("qo_indptr"),
                    ptr("kv_indptr"),
                    // Ragged: never read (the kernel indexes K and V by kv_indptr alone).
                    if paged { ptr("kv_indices") } else { 0 },
                ],
                [out.ptr(), lse.ptr()],
                (b, tq, h, hkv, d),
                paged,
                causal,
            )?;
            gpu.sync()?;
            outputs.insert("output".to_string(), out);
            outputs.insert("lse".to_string(), lse);
        }
        Op::GdnPrefill => {
            let dims = problem.gdn().map_err(setup_error)?;
            // A thread keeps its state column in a local array of 128.
            if dims.head_dim > 128 || dims.heads == 0 || dims.v_heads % dims.heads != 0 {
                return Err(setup_error(format!(
                    "the GDN reference takes head dims up to 128 and value heads a multiple of the query/key heads, not d = {}, {} and {} heads",
                    dims.head_dim, dims.v_heads, dims.heads
                )));
            }
            let (n, hqk, hv, d) = dims.as_i32().map_err(setup_error)?;
            let f = |name: &str| to_f32(gpu, support, set, name);
            let (q, k, v, state) = (f("q")?, f("k")?, f("v")?, f("state")?);
            let (a_log, a, dt_bias, b) = (f("A_log")?, f("a")?, f("dt_bias")?, f("b")?);
            let out = gpu.alloc(f32_bytes(dims.tokens * dims.v_heads * dims.head_dim)?)?;
            let new_state = gpu.alloc(f32_bytes(
                dims.batch * dims.v_heads * dims.head_dim * dims.head_dim,
            )?)?;
            support.gdn_prefill(
                gpu,
                [
                    q.ptr(),
                    k.ptr(),
                    v.ptr(),
                    state.ptr(),
                    a_log.ptr(),
                    a.ptr(),
                    dt_bias.ptr(),
                    b.ptr(),
                    set.ptr("cu_seqlens").expect("validated"),
                ],
                [out.ptr(), new_state.ptr()],
                (n, hqk, hv, d),
                gdn_scale(dims.head_dim),
            )?;
            gpu.sync()?;
            outputs.insert("output".to_string(), out);
            outputs.insert("new_state".to_string(), new_state);
        }
        Op::AttentionBwd { causal } => {
            let dims = problem.attention().map_err(setup_error)?;
            let (bh, s, d) = dims.as_i32().map_err(setup_error)?;
            let n = f32_bytes(dims.elements().map_err(setup_error)?)?;
            let rows = f32_bytes(dims.rows().map_err(setup_error)?)?;
            let q = to_f32(gpu, support, set, "Q")?;
            let k = to_f32(gpu, support, set, "K")?;
            let v = to_f32(gpu, support, set, "V")?;
            let d_o = to_f32(gpu, support, set, "dO")?;
            // The task defines the gradients from the inputs the kernel is given: Delta from
            // the bf16 O (not the exact forward's fp32 O, which the kernel never sees; at S=2
            // the difference alone is a 10% relative error in dQ and dK) and P from the LSE.
            let o = to_f32(gpu, support, set, "O")?;
            let lse = to_f32(gpu, support, set, "LSE")?;
            let delta = gpu.alloc(rows)?;
            let dq = gpu.alloc(n)?;
            let dk = gpu.alloc(n)?;
            let dv = gpu.alloc(n)?;
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

/// MLA decode's softmax scale: `1/sqrt(qk_nope_head_dim + pe_dim)`, DeepSeek's query-key head
/// dim before the weights are absorbed (1/sqrt(192) with the 64-wide rotary part), not the
/// latent width the kernel multiplies over.
pub fn mla_scale(pe_dim: u64) -> f32 {
    1.0 / ((crate::task::MLA_QK_NOPE_DIM + pe_dim) as f32).sqrt()
}

/// GDN prefill's output scale: `1/sqrt(d)` (the release's default for a `scale` of 0 or none).
pub fn gdn_scale(head_dim: u64) -> f32 {
    1.0 / (head_dim as f32).sqrt()
}
