//! The bf16 forward graph with softmax statistics (LSE).

use cudarc::cudnn::sys::cudnnDataType_t as Dt;
use cudarc::cudnn::sys::cudnnPointwiseMode_t as Pw;

use super::DnnError;
use super::builder::{Builder, Scalar, row_major};
use super::graph::{GraphIo, SdpaShape};

/// Forward: the io uids (Q, K, V, O, LSE), no internal tensors.
pub(super) fn forward_graph(g: &mut Builder, sh: SdpaShape) -> Result<GraphIo, DnnError> {
    let (b, h, s, d) = (sh.b, sh.h, sh.s, sh.d);
    let bf16 = Dt::CUDNN_DATA_BFLOAT16;
    let qkv = [b, h, s, d];
    let q = g.io(qkv, row_major(qkv), bf16)?;
    // K [B,H,S,D] row-major seen as K^T [B,H,D,S].
    let kt = g.io([b, h, d, s], [h * s * d, s * d, 1, d], bf16)?;
    let v = g.io(qkv, row_major(qkv), bf16)?;
    let o = g.io(qkv, row_major(qkv), bf16)?;
    let stats_dims = [b, h, s, 1];
    let lse = g.io(stats_dims, row_major(stats_dims), Dt::CUDNN_DATA_FLOAT)?;
    let ss = [b, h, s, s];

    let scores = g.virt(ss, Dt::CUDNN_DATA_FLOAT)?;
    g.matmul(q, kt, scores)?;
    let scale = g.scalar(Scalar::Scale)?;
    let mut x = g.pw(Pw::CUDNN_POINTWISE_MUL, &[scores, scale], ss)?;
    if sh.causal {
        x = g.causal_mask(x, ss)?;
    }
    // P in the io type: the second matmul's A operand.
    let p = g.softmax_with_stats(x, ss, lse, bf16)?;
    g.matmul(p, v, o)?;
    Ok((vec![q.uid, kt.uid, v.uid, o.uid, lse.uid], Vec::new()))
}
