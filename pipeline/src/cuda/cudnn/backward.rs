//! The bf16 backward graph: dQ, dK, dV from Q, K, V, O, dO and the forward's LSE.

use cudarc::cudnn::sys;
use sys::cudnnDataType_t as Dt;
use sys::cudnnPointwiseMode_t as Pw;

use super::DnnError;
use super::builder::{Builder, Scalar, row_major};
use super::graph::{GraphIo, InternalTensor, SdpaShape};

pub(super) fn backward_graph(g: &mut Builder, sh: SdpaShape) -> Result<GraphIo, DnnError> {
    let (b, h, s, d) = (sh.b, sh.h, sh.s, sh.d);
    let bf16 = Dt::CUDNN_DATA_BFLOAT16;
    let f32t = Dt::CUDNN_DATA_FLOAT;
    let qkv = [b, h, s, d];
    let t_dims = [b, h, d, s];
    let t_strides = [h * s * d, s * d, 1, d];
    let q = g.io(qkv, row_major(qkv), bf16)?;
    let kt = g.io(t_dims, t_strides, bf16)?;
    let vt = g.io(t_dims, t_strides, bf16)?;
    let o = g.io(qkv, row_major(qkv), bf16)?;
    let d_o = g.io(qkv, row_major(qkv), bf16)?;
    let stats_dims = [b, h, s, 1];
    let lse = g.io(stats_dims, row_major(stats_dims), f32t)?;
    let dq = g.io(qkv, row_major(qkv), bf16)?;
    let dk = g.io(qkv, row_major(qkv), bf16)?;
    let dv = g.io(qkv, row_major(qkv), bf16)?;
    let ss = [b, h, s, s];
    let ss_t_strides = [h * s * s, s * s, 1, s];

    // Delta = sum_d dO * O, kept in memory (fp32 [B,H,S,1]).
    let prod = g.pw(Pw::CUDNN_POINTWISE_MUL, &[d_o, o], qkv)?;
    let dsum = g.virt(stats_dims, f32t)?;
    g.reduction(
        sys::cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_ADD,
        prod,
        dsum,
    )?;
    let one = g.scalar(Scalar::One)?;
    let delta = g.io(stats_dims, row_major(stats_dims), f32t)?;
    g.pointwise(Pw::CUDNN_POINTWISE_MUL, f32t, &[dsum, one], delta, None)?;

    // P = exp(scale * Q K^T (masked) - LSE).
    let scores = g.virt(ss, f32t)?;
    g.matmul(q, kt, scores)?;
    let scale = g.scalar(Scalar::Scale)?;
    let mut x = g.pw(Pw::CUDNN_POINTWISE_MUL, &[scores, scale], ss)?;
    if sh.causal {
        x = g.causal_mask(x, ss)?;
    }
    let shifted = g.pw(Pw::CUDNN_POINTWISE_SUB, &[x, lse], ss)?;
    let p = g.pw(Pw::CUDNN_POINTWISE_EXP, &[shifted], ss)?;

    // dV = P^T dO.
    let pt = g.tensor_desc([b, h, s, s], ss_t_strides, bf16, true, false)?;
    g.reshape(p, pt)?;
    g.matmul(pt, d_o, dv)?;

    // dS = P * (dO V^T - Delta) * scale.
    let dp = g.virt(ss, f32t)?;
    g.matmul(d_o, vt, dp)?;
    let dp_sub = g.pw(Pw::CUDNN_POINTWISE_SUB, &[dp, delta], ss)?;
    let ds_raw = g.pw(Pw::CUDNN_POINTWISE_MUL, &[dp_sub, p], ss)?;
    let ds = g.pw(Pw::CUDNN_POINTWISE_MUL, &[ds_raw, scale], ss)?;

    // dK = dS^T Q.
    let dst = g.tensor_desc([b, h, s, s], ss_t_strides, bf16, true, false)?;
    g.reshape(ds, dst)?;
    g.matmul(dst, q, dk)?;

    // dQ = dS K, accumulated in fp32 in memory, then converted.
    let k = g.tensor_desc(qkv, row_major(qkv), bf16, true, false)?;
    g.reshape(kt, k)?;
    let dq_accum = g.io(qkv, row_major(qkv), f32t)?;
    g.matmul(ds, k, dq_accum)?;
    g.pointwise(Pw::CUDNN_POINTWISE_IDENTITY, f32t, &[dq_accum], dq, None)?;

    let n = |dims: [i64; 4]| dims.iter().product::<i64>() as usize * 4;
    Ok((
        vec![
            q.uid, kt.uid, vt.uid, o.uid, d_o.uid, lse.uid, dq.uid, dk.uid, dv.uid,
        ],
        vec![
            InternalTensor {
                uid: delta.uid,
                bytes: n(stats_dims),
                fill: None,
            },
            InternalTensor {
                uid: dq_accum.uid,
                bytes: n(qkv),
                fill: None,
            },
        ],
    ))
}
