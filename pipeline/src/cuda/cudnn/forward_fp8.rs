//! The fp8 (e4m3) forward graph with LSE, the frontend's sdpa_fp8 pattern.

use cudarc::cudnn::sys;
use sys::cudnnDataType_t as Dt;
use sys::cudnnPointwiseMode_t as Pw;

use super::DnnError;
use super::builder::{Builder, Scalar, Tensor, row_major};
use super::graph::{GraphIo, InternalTensor, SdpaShape};

/// The fp32 word 1.0.
const ONE_F32_BITS: u32 = 0x3f80_0000;

/// fp8 forward, the frontend's sdpa_fp8 forward pattern: `S = Q K^T` (fp32), `* attn_scale`,
/// `* descale_q`, `* descale_k`, optional causal mask, softmax with stats (LSE), `amax_s =
/// amax(P)`, `P8 = e4m3(P * scale_s)`, `O32 = P8 V` (fp32), `* descale_s`, `* descale_v`,
/// `O = e4m3(. * scale_o)`, `amax_o = amax(. before scale_o)`. io uids in
/// [`SdpaKind::ForwardFp8`](super::SdpaKind::ForwardFp8) order; descale_s, scale_s, scale_o
/// (1.0) and amax_s, amax_o internal.
pub(super) fn forward_fp8_graph(g: &mut Builder, sh: SdpaShape) -> Result<GraphIo, DnnError> {
    let (b, h, s, d) = (sh.b, sh.h, sh.s, sh.d);
    let e4m3 = Dt::CUDNN_DATA_FP8_E4M3;
    let f32t = Dt::CUDNN_DATA_FLOAT;
    let qkv = [b, h, s, d];
    let q = g.io(qkv, row_major(qkv), e4m3)?;
    let kt = g.io([b, h, d, s], [h * s * d, s * d, 1, d], e4m3)?;
    let v = g.io(qkv, row_major(qkv), e4m3)?;
    let unit = |g: &mut Builder| g.io([1; 4], [1; 4], f32t);
    let descale_q = unit(g)?;
    let descale_k = unit(g)?;
    let descale_v = unit(g)?;
    let o = g.io(qkv, row_major(qkv), e4m3)?;
    let stats_dims = [b, h, s, 1];
    let lse = g.io(stats_dims, row_major(stats_dims), f32t)?;
    let descale_s = unit(g)?;
    let scale_s = unit(g)?;
    let scale_o = unit(g)?;
    let amax_s = unit(g)?;
    let amax_o = unit(g)?;
    let ss = [b, h, s, s];

    // bmm1 and its scales, in the frontend's order: attn_scale, descale_q, descale_k.
    let scores = g.virt(ss, f32t)?;
    g.matmul(q, kt, scores)?;
    let scale = g.scalar(Scalar::Scale)?;
    let x = g.pw(Pw::CUDNN_POINTWISE_MUL, &[scores, scale], ss)?;
    let x = g.pw(Pw::CUDNN_POINTWISE_MUL, &[x, descale_q], ss)?;
    let mut x = g.pw(Pw::CUDNN_POINTWISE_MUL, &[x, descale_k], ss)?;
    if sh.causal {
        x = g.causal_mask(x, ss)?;
    }
    let p = g.softmax_with_stats(x, ss, lse, f32t)?;
    g.reduction(
        sys::cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_AMAX,
        p,
        amax_s,
    )?;
    // P * scale_s in the io type: bmm2's A operand.
    let p8 = g.virt(ss, e4m3)?;
    g.pointwise(Pw::CUDNN_POINTWISE_MUL, f32t, &[p, scale_s], p8, None)?;

    // bmm2 as the frontend's matmul_fp8: matmul, descale_a, descale_b, scale_c, amax_c.
    let o32 = g.virt(qkv, f32t)?;
    g.matmul(p8, v, o32)?;
    let y = g.pw(Pw::CUDNN_POINTWISE_MUL, &[o32, descale_s], qkv)?;
    let y = g.pw(Pw::CUDNN_POINTWISE_MUL, &[y, descale_v], qkv)?;
    g.pointwise(Pw::CUDNN_POINTWISE_MUL, f32t, &[y, scale_o], o, None)?;
    g.reduction(
        sys::cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_AMAX,
        y,
        amax_o,
    )?;

    let scalar = |t: Tensor, fill: Option<u32>| InternalTensor {
        uid: t.uid,
        bytes: 4,
        fill,
    };
    Ok((
        vec![
            q.uid,
            kt.uid,
            v.uid,
            descale_q.uid,
            descale_k.uid,
            descale_v.uid,
            o.uid,
            lse.uid,
        ],
        vec![
            // scale_s = descale_s = 1 as upstream pins them (FA3's cuDNN benchmark). 448 (P's
            // largest value at e4m3's largest) was tried on the H200 and did not bring the
            // large-L outputs within the task's tolerance (artifacts/evidence/suite-v2-h200).
            scalar(descale_s, Some(ONE_F32_BITS)),
            scalar(scale_s, Some(ONE_F32_BITS)),
            scalar(scale_o, Some(ONE_F32_BITS)),
            scalar(amax_s, None),
            scalar(amax_o, None),
        ],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_scale_word() {
        assert_eq!(f32::from_bits(ONE_F32_BITS), 1.0);
    }
}
