//! The paged grouped-query decode graph (cuDNN >= 9.5): its shape and page layouts, and the
//! graph that gathers K and V from their pages.

use cudarc::cudnn::sys::cudnnDataType_t as Dt;
use cudarc::cudnn::sys::cudnnPointwiseMode_t as Pw;

use super::DnnError;
use super::builder::{Builder, Scalar, row_major};
use super::graph::{GraphIo, InternalTensor, head_dim_ok};

/// Shape of one paged, grouped-query decode step (one query token per sequence).
///
/// K and V live in page containers `[num_pages, h_kv, block_size, d]` (row-major); sequence
/// `b` reads its pages through row `b` of a page table `[b, 1, max_pages_per_seq, 1]`, and its
/// first `seq_len_kv[b]` keys count (the rest are masked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PagedDecodeShape {
    pub b: i64,
    pub h_q: i64,
    pub h_kv: i64,
    pub d: i64,
    pub num_pages: i64,
    pub max_pages_per_seq: i64,
    /// Tokens per page (1 for the suite's decode task).
    pub block_size: i64,
}

impl PagedDecodeShape {
    /// The padded key length the graph is planned for: `max_pages_per_seq * block_size`.
    pub fn max_seq_len_kv(&self) -> i64 {
        self.max_pages_per_seq * self.block_size
    }

    /// Checks what cuDNN's paged SDPA needs of the shape.
    pub fn validate(&self) -> Result<(), String> {
        let named = [
            ("b", self.b),
            ("h_q", self.h_q),
            ("h_kv", self.h_kv),
            ("d", self.d),
            ("num_pages", self.num_pages),
            ("max_pages_per_seq", self.max_pages_per_seq),
            ("block_size", self.block_size),
        ];
        if let Some((n, v)) = named.iter().find(|(_, v)| *v <= 0) {
            return Err(format!("{n} = {v} must be positive"));
        }
        if self.h_q % self.h_kv != 0 {
            return Err(format!(
                "h_q = {} is not a multiple of h_kv = {} (grouped-query attention)",
                self.h_q, self.h_kv
            ));
        }
        head_dim_ok(self.d)
    }

    fn q_dims(&self) -> [i64; 4] {
        [self.b, self.h_q, 1, self.d]
    }

    fn container_dims(&self) -> [i64; 4] {
        [self.num_pages, self.h_kv, self.block_size, self.d]
    }

    fn page_table_dims(&self) -> ([i64; 4], [i64; 4]) {
        let p = self.max_pages_per_seq;
        ([self.b, 1, p, 1], [p, p, 1, 1])
    }

    /// The gathered K^T `[B,Hkv,D,S]` (dims, strides) and V `[B,Hkv,S,D]`, as the frontend
    /// lays them out.
    fn gathered_kv(&self) -> (Layout, Layout) {
        let (b, h, d, s) = (self.b, self.h_kv, self.d, self.max_seq_len_kv());
        (
            ([b, h, d, s], [h * d * s, d * s, 1, d]),
            ([b, h, s, d], [h * s * d, s * d, d, 1]),
        )
    }
}

/// A tensor's dims and strides.
type Layout = ([i64; 4], [i64; 4]);

/// Paged grouped-query decode, as the frontend's composite SDPA node lowers it with paged K/V
/// caches and a padding mask: io uids in [`SdpaKind::PagedDecode`](super::SdpaKind::PagedDecode)
/// order; seq_len_q (all 1) internal.
pub(super) fn paged_decode_graph(
    g: &mut Builder,
    sh: PagedDecodeShape,
) -> Result<GraphIo, DnnError> {
    let bf16 = Dt::CUDNN_DATA_BFLOAT16;
    let f32t = Dt::CUDNN_DATA_FLOAT;
    let i32t = Dt::CUDNN_DATA_INT32;
    let (b, h_q) = (sh.b, sh.h_q);
    let s_kv = sh.max_seq_len_kv();
    let q_dims = sh.q_dims();
    let q = g.io(q_dims, row_major(q_dims), bf16)?;
    let c_dims = sh.container_dims();
    let k_container = g.io(c_dims, row_major(c_dims), bf16)?;
    let v_container = g.io(c_dims, row_major(c_dims), bf16)?;
    let (pt_dims, pt_strides) = sh.page_table_dims();
    let page_table_k = g.io(pt_dims, pt_strides, i32t)?;
    let page_table_v = g.io(pt_dims, pt_strides, i32t)?;
    let per_seq = [b, 1, 1, 1];
    let seq_len_kv = g.io(per_seq, [1; 4], i32t)?;
    let o = g.io(q_dims, row_major(q_dims), bf16)?;
    let stats_dims = [b, h_q, 1, 1];
    let lse = g.io(stats_dims, row_major(stats_dims), f32t)?;
    let seq_len_q = g.io(per_seq, [1; 4], i32t)?;

    // K^T gathered from its pages.
    let ((kt_dims, kt_strides), (v_dims, v_strides)) = sh.gathered_kv();
    let kt = g.tensor_desc(kt_dims, kt_strides, bf16, true, false)?;
    g.paged_cache_load(k_container, seq_len_kv, page_table_k, kt)?;

    // S = Q K^T (the K heads broadcast over their query-head groups), scaled, padded.
    let ss = [b, h_q, 1, s_kv];
    let scores = g.virt(ss, f32t)?;
    g.matmul_overridden(q, kt, scores, [Some(seq_len_q), Some(seq_len_kv), None])?;
    let scale = g.scalar(Scalar::Scale)?;
    let x = g.pw(Pw::CUDNN_POINTWISE_MUL, &[scores, scale], ss)?;
    let x = g.padding_mask(x, ss, seq_len_q, seq_len_kv)?;
    let p = g.softmax_with_stats(x, ss, lse, bf16)?;

    // O = P V, V gathered from its pages.
    let v = g.tensor_desc(v_dims, v_strides, bf16, true, false)?;
    g.paged_cache_load(v_container, seq_len_kv, page_table_v, v)?;
    g.matmul_overridden(p, v, o, [Some(seq_len_q), None, Some(seq_len_kv)])?;

    Ok((
        vec![
            q.uid,
            k_container.uid,
            v_container.uid,
            page_table_k.uid,
            page_table_v.uid,
            seq_len_kv.uid,
            o.uid,
            lse.uid,
        ],
        vec![InternalTensor {
            uid: seq_len_q.uid,
            bytes: b as usize * 4,
            fill: Some(1),
        }],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_shape() -> PagedDecodeShape {
        PagedDecodeShape {
            b: 4,
            h_q: 32,
            h_kv: 8,
            d: 128,
            num_pages: 1000,
            max_pages_per_seq: 300,
            block_size: 1,
        }
    }

    #[test]
    fn paged_decode_layouts() {
        let sh = decode_shape();
        assert_eq!(sh.max_seq_len_kv(), 300);
        assert_eq!(sh.q_dims(), [4, 32, 1, 128]);
        // The container is the task's k_cache [pages, 1, Hkv, D] read as [pages, Hkv, 1, D].
        assert_eq!(sh.container_dims(), [1000, 8, 1, 128]);
        assert_eq!(row_major(sh.container_dims()), [1024, 128, 128, 1]);
        assert_eq!(sh.page_table_dims(), ([4, 1, 300, 1], [300, 300, 1, 1]));
        let ((kt_dims, kt_strides), (v_dims, v_strides)) = sh.gathered_kv();
        assert_eq!(kt_dims, [4, 8, 128, 300]);
        assert_eq!(kt_strides, [8 * 128 * 300, 128 * 300, 1, 128]);
        assert_eq!(v_dims, [4, 8, 300, 128]);
        assert_eq!(v_strides, row_major(v_dims));
        let paged = PagedDecodeShape {
            block_size: 16,
            max_pages_per_seq: 20,
            ..sh
        };
        assert_eq!(paged.max_seq_len_kv(), 320);
    }

    #[test]
    fn paged_decode_validation() {
        assert_eq!(decode_shape().validate(), Ok(()));
        let gqa = PagedDecodeShape {
            h_kv: 6,
            ..decode_shape()
        };
        assert!(
            gqa.validate()
                .expect_err("h_q % h_kv")
                .contains("multiple of h_kv")
        );
        let zero = PagedDecodeShape {
            num_pages: 0,
            ..decode_shape()
        };
        assert!(zero.validate().expect_err("no pages").contains("num_pages"));
        let d = PagedDecodeShape {
            d: 72,
            ..decode_shape()
        };
        assert!(d.validate().expect_err("d = 72").contains("head dimension"));
    }
}
