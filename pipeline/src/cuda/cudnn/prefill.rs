//! The causal grouped-query prefill graphs (cuDNN >= 9.6, which takes ragged tensors with fewer
//! KV heads than query heads): queries packed along the token axis (ragged offsets), keys and
//! values packed the same way or gathered from a paged cache, the causal mask aligned to each
//! sequence's last key, LSE written packed like the output.

use cudarc::cudnn::sys::cudnnDataType_t as Dt;
use cudarc::cudnn::sys::cudnnPointwiseMode_t as Pw;

use super::DnnError;
use super::builder::{Builder, Scalar, row_major};
use super::graph::{GraphIo, head_dim_ok};

/// A paged KV cache: `[num_pages, h_kv, block_size, d]` containers read through a page table
/// `[b, 1, max_pages_per_seq, 1]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PagedKv {
    pub num_pages: i64,
    pub max_pages_per_seq: i64,
    pub block_size: i64,
}

/// Shape of one causal GQA prefill over `b` packed sequences.
///
/// Sequence `b` owns query rows `q_offsets` of `q` `[total_q, h_q, d]` (and the same rows of
/// `output` and `lse`); its keys are rows of `k`, `v` `[total_kv, h_kv, d]` from `kv_offsets`
/// (ragged) or the pages of its page-table row (paged). The graph is planned for the longest
/// sequence (`max_q`, `max_kv`); `seq_len_q` and `seq_len_kv` mask the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefillShape {
    pub b: i64,
    pub h_q: i64,
    pub h_kv: i64,
    pub d: i64,
    pub max_q: i64,
    pub max_kv: i64,
    pub paged: Option<PagedKv>,
}

/// A tensor's dims and strides.
type Layout = ([i64; 4], [i64; 4]);

impl PrefillShape {
    /// Checks what cuDNN's ragged SDPA needs of the shape.
    pub fn validate(&self) -> Result<(), String> {
        let mut named = vec![
            ("b", self.b),
            ("h_q", self.h_q),
            ("h_kv", self.h_kv),
            ("d", self.d),
            ("max_q", self.max_q),
            ("max_kv", self.max_kv),
        ];
        if let Some(p) = self.paged {
            named.push(("num_pages", p.num_pages));
            named.push(("max_pages_per_seq", p.max_pages_per_seq));
            named.push(("block_size", p.block_size));
            if p.max_pages_per_seq * p.block_size != self.max_kv {
                return Err(format!(
                    "max_kv = {} is not max_pages_per_seq * block_size = {}",
                    self.max_kv,
                    p.max_pages_per_seq * p.block_size
                ));
            }
        }
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

    /// Q and the output: `[b, h_q, max_q, d]` over packed rows `[token, head, d]`.
    fn q_layout(&self) -> Layout {
        let (h, s, d) = (self.h_q, self.max_q, self.d);
        ([self.b, h, s, d], [s * h * d, d, h * d, 1])
    }

    /// LSE: `[b, h_q, max_q, 1]` over packed rows `[token, head]`.
    fn stats_layout(&self) -> Layout {
        let (h, s) = (self.h_q, self.max_q);
        ([self.b, h, s, 1], [s * h, 1, h, 1])
    }

    /// Ragged K^T `[b, h_kv, d, max_kv]` and V `[b, h_kv, max_kv, d]` over packed rows
    /// `[token, head, d]`.
    fn ragged_kv(&self) -> (Layout, Layout) {
        let (h, s, d) = (self.h_kv, self.max_kv, self.d);
        (
            ([self.b, h, d, s], [s * h * d, d, 1, h * d]),
            ([self.b, h, s, d], [s * h * d, d, h * d, 1]),
        )
    }

    /// Paged: the containers' dims, the page table's layout, and the gathered K^T and V as
    /// the frontend lays them out.
    fn paged_kv(&self, p: PagedKv) -> ([i64; 4], Layout, Layout, Layout) {
        let (b, h, d, s) = (self.b, self.h_kv, self.d, self.max_kv);
        let m = p.max_pages_per_seq;
        (
            [p.num_pages, h, p.block_size, d],
            ([b, 1, m, 1], [m, m, 1, 1]),
            ([b, h, d, s], [h * d * s, d * s, 1, d]),
            ([b, h, s, d], [h * s * d, s * d, d, 1]),
        )
    }
}

/// The graph, io uids in [`SdpaKind::Prefill`](super::SdpaKind::Prefill) or
/// [`SdpaKind::PagedPrefill`](super::SdpaKind::PagedPrefill) order, nothing internal.
pub(super) fn prefill_graph(g: &mut Builder, sh: PrefillShape) -> Result<GraphIo, DnnError> {
    let bf16 = Dt::CUDNN_DATA_BFLOAT16;
    let f32t = Dt::CUDNN_DATA_FLOAT;
    let i32t = Dt::CUDNN_DATA_INT32;
    let offsets = [sh.b + 1, 1, 1, 1];
    let per_seq = [sh.b, 1, 1, 1];

    let q_offsets = g.io(offsets, [1; 4], i32t)?;
    let (q_dims, q_strides) = sh.q_layout();
    let q = g.io_ragged(q_dims, q_strides, bf16, q_offsets)?;
    let seq_len_q = g.io(per_seq, [1; 4], i32t)?;
    let seq_len_kv = g.io(per_seq, [1; 4], i32t)?;

    let mut uids = vec![q.uid];
    let (kt, v) = match sh.paged {
        None => {
            let kv_offsets = g.io(offsets, [1; 4], i32t)?;
            let ((kt_dims, kt_strides), (v_dims, v_strides)) = sh.ragged_kv();
            let kt = g.io_ragged(kt_dims, kt_strides, bf16, kv_offsets)?;
            let v_offsets = g.io(offsets, [1; 4], i32t)?;
            let v = g.io_ragged(v_dims, v_strides, bf16, v_offsets)?;
            uids.extend([kt.uid, v.uid, kv_offsets.uid, v_offsets.uid]);
            (kt, v)
        }
        Some(p) => {
            let (c_dims, (pt_dims, pt_strides), (kt_dims, kt_strides), (v_dims, v_strides)) =
                sh.paged_kv(p);
            let k_container = g.io(c_dims, row_major(c_dims), bf16)?;
            let v_container = g.io(c_dims, row_major(c_dims), bf16)?;
            let page_table_k = g.io(pt_dims, pt_strides, i32t)?;
            let page_table_v = g.io(pt_dims, pt_strides, i32t)?;
            let kt = g.tensor_desc(kt_dims, kt_strides, bf16, true, false)?;
            g.paged_cache_load(k_container, seq_len_kv, page_table_k, kt)?;
            let v = g.tensor_desc(v_dims, v_strides, bf16, true, false)?;
            g.paged_cache_load(v_container, seq_len_kv, page_table_v, v)?;
            uids.extend([
                k_container.uid,
                v_container.uid,
                page_table_k.uid,
                page_table_v.uid,
            ]);
            (kt, v)
        }
    };
    let o_offsets = g.io(offsets, [1; 4], i32t)?;
    let o = g.io_ragged(q_dims, q_strides, bf16, o_offsets)?;
    let lse_offsets = g.io(offsets, [1; 4], i32t)?;
    let (stats_dims, stats_strides) = sh.stats_layout();
    let lse = g.io_ragged(stats_dims, stats_strides, f32t, lse_offsets)?;

    // S = Q K^T (K heads broadcast over their query-head groups), scaled, padded, causal.
    let ss = [sh.b, sh.h_q, sh.max_q, sh.max_kv];
    let scores = g.virt(ss, f32t)?;
    g.matmul_overridden(q, kt, scores, [Some(seq_len_q), Some(seq_len_kv), None])?;
    let scale = g.scalar(Scalar::Scale)?;
    let x = g.pw(Pw::CUDNN_POINTWISE_MUL, &[scores, scale], ss)?;
    let x = g.padding_mask(x, ss, seq_len_q, seq_len_kv)?;
    let x = g.causal_mask_bottom_right(x, ss, seq_len_q, seq_len_kv)?;
    let p = g.softmax_with_stats(x, ss, lse, bf16)?;
    g.matmul_overridden(p, v, o, [Some(seq_len_q), None, Some(seq_len_kv)])?;

    uids.extend([
        q_offsets.uid,
        o_offsets.uid,
        lse_offsets.uid,
        seq_len_q.uid,
        seq_len_kv.uid,
        o.uid,
        lse.uid,
    ]);
    Ok((uids, Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ragged() -> PrefillShape {
        PrefillShape {
            b: 3,
            h_q: 32,
            h_kv: 8,
            d: 128,
            max_q: 130,
            max_kv: 130,
            paged: None,
        }
    }

    #[test]
    fn packed_layouts_address_rows_of_token_head_d() {
        let sh = ragged();
        let (dims, strides) = sh.q_layout();
        assert_eq!(dims, [3, 32, 130, 128]);
        // Element (b, h, i, e) of a sequence starting at offset o is o + i*h_q*d + h*d + e.
        assert_eq!(strides[1..], [128, 32 * 128, 1]);
        let (dims, strides) = sh.stats_layout();
        assert_eq!(dims, [3, 32, 130, 1]);
        assert_eq!(strides[1..3], [1, 32]);
        let ((kt_dims, kt_strides), (v_dims, v_strides)) = sh.ragged_kv();
        assert_eq!(kt_dims, [3, 8, 128, 130]);
        assert_eq!(kt_strides[1..], [128, 1, 8 * 128]);
        assert_eq!(v_dims, [3, 8, 130, 128]);
        assert_eq!(v_strides[1..], [128, 8 * 128, 1]);
    }

    #[test]
    fn paged_layouts_read_the_cache_as_pages_of_heads() {
        let p = PagedKv {
            num_pages: 2000,
            max_pages_per_seq: 892,
            block_size: 1,
        };
        let sh = PrefillShape {
            max_q: 892,
            max_kv: 892,
            paged: Some(p),
            ..ragged()
        };
        assert_eq!(sh.validate(), Ok(()));
        let (c, (pt, pt_strides), (kt, _), (v, _)) = sh.paged_kv(p);
        // k_cache [pages, 1, Hkv, D] is the container [pages, Hkv, 1, D]: the same bytes.
        assert_eq!(c, [2000, 8, 1, 128]);
        assert_eq!(pt, [3, 1, 892, 1]);
        assert_eq!(pt_strides, [892, 892, 1, 1]);
        assert_eq!(kt, [3, 8, 128, 892]);
        assert_eq!(v, [3, 8, 892, 128]);
    }

    #[test]
    fn validation_names_what_is_wrong() {
        assert_eq!(ragged().validate(), Ok(()));
        let gqa = PrefillShape {
            h_kv: 5,
            ..ragged()
        };
        assert!(
            gqa.validate()
                .expect_err("h_kv")
                .contains("multiple of h_kv")
        );
        let empty = PrefillShape {
            max_q: 0,
            ..ragged()
        };
        assert!(empty.validate().expect_err("max_q").contains("max_q"));
        let paged = PrefillShape {
            paged: Some(PagedKv {
                num_pages: 10,
                max_pages_per_seq: 4,
                block_size: 1,
            }),
            ..ragged()
        };
        assert!(
            paged
                .validate()
                .expect_err("pages")
                .contains("max_pages_per_seq")
        );
    }
}
