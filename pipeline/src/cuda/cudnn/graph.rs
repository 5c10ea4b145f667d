//! What the SDPA graphs share: the shapes and passes, the graph kinds and the tensors each
//! binds, and what a graph builder returns. The builders (`forward`, `backward`,
//! `forward_fp8`, `paged_decode`, `prefill`) and the plan ([`super::sdpa::Sdpa`]) import it;
//! it imports neither.

/// Shape of one SDPA problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SdpaShape {
    pub b: i64,
    pub h: i64,
    pub s: i64,
    pub d: i64,
    pub causal: bool,
}

/// Forward or backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SdpaPass {
    /// Inputs Q, K, V; outputs O, LSE.
    Forward,
    /// Inputs Q, K, V, O, dO, LSE; outputs dQ, dK, dV.
    Backward,
}

impl SdpaPass {
    /// The names of the tensors [`Sdpa::bind`](super::Sdpa::bind) takes, in order.
    pub fn tensors(self) -> &'static [&'static str] {
        SdpaKind::from(self).tensors()
    }
}

pub(super) fn head_dim_ok(d: i64) -> Result<(), String> {
    if d % 16 != 0 || d > 256 {
        return Err(format!(
            "head dimension d = {d} must be a multiple of 16 and at most 256"
        ));
    }
    Ok(())
}

impl SdpaShape {
    pub(super) fn validate(&self) -> Result<(), String> {
        let named = [("b", self.b), ("h", self.h), ("s", self.s), ("d", self.d)];
        if let Some((n, v)) = named.iter().find(|(_, v)| *v <= 0) {
            return Err(format!("{n} = {v} must be positive"));
        }
        head_dim_ok(self.d)
    }
}

/// Which SDPA graph a plan holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SdpaKind {
    /// bf16 forward with LSE ([`Sdpa::new`](super::Sdpa::new) with [`SdpaPass::Forward`]).
    Forward,
    /// bf16 backward ([`Sdpa::new`](super::Sdpa::new) with [`SdpaPass::Backward`]).
    Backward,
    /// bf16 paged grouped-query decode with LSE ([`Sdpa::paged_decode`](super::Sdpa::paged_decode)).
    PagedDecode,
    /// fp8 (e4m3) forward with LSE ([`Sdpa::forward_fp8`](super::Sdpa::forward_fp8)).
    ForwardFp8,
    /// bf16 causal GQA prefill over packed sequences, keys packed too ([`Sdpa::prefill`](super::Sdpa::prefill)).
    Prefill,
    /// bf16 causal GQA prefill over packed sequences, keys in a paged cache ([`Sdpa::prefill`](super::Sdpa::prefill)).
    PagedPrefill,
}

impl From<SdpaPass> for SdpaKind {
    fn from(p: SdpaPass) -> SdpaKind {
        match p {
            SdpaPass::Forward => SdpaKind::Forward,
            SdpaPass::Backward => SdpaKind::Backward,
        }
    }
}

impl SdpaKind {
    /// The names of the tensors [`Sdpa::bind`](super::Sdpa::bind) takes, in order. Where a name is the task's
    /// tensor name the engine can look it up directly; the rest are derived buffers the
    /// engine provides:
    ///
    /// - `Forward`: Q, K, V bf16 `[B,H,S,D]`; O bf16 `[B,H,S,D]`, LSE f32 `[B,H,S]`.
    /// - `Backward`: Q, K, V, O, dO bf16, LSE f32; dQ, dK, dV bf16.
    /// - `PagedDecode`: q bf16 `[B,Hq,D]`; k_cache, v_cache bf16 `[num_pages,block_size(=1),
    ///   Hkv,D]` (read as `[num_pages,Hkv,block_size,D]`, the same bytes when block_size is
    ///   1); page_table_k, page_table_v int32 `[B,max_pages_per_seq]` (may be one buffer,
    ///   unused slots any valid page, e.g. 0); seq_len_kv int32 `[B]`; output bf16
    ///   `[B,Hq,D]`, lse f32 `[B,Hq]`. seq_len_q (all 1) is an internal buffer.
    /// - `ForwardFp8`: Q, K, V e4m3 `[B,H,S,D]`; descale_q, descale_k, descale_v f32 `[1]`;
    ///   O e4m3 `[B,H,S,D]`, LSE f32 `[B,H,S]`. descale_s, scale_s, scale_o (1.0) and the
    ///   amax_s, amax_o outputs are internal buffers.
    /// - `Prefill`: q bf16 `[total_q,Hq,D]`; k, v bf16 `[total_kv,Hkv,D]`; kv_offsets and
    ///   v_offsets (one buffer may serve both: `kv_indptr * Hkv * D`), q_offsets and o_offsets
    ///   (`qo_indptr * Hq * D`), lse_offsets (`qo_indptr * Hq`) int32 `[B+1]`; seq_len_q,
    ///   seq_len_kv int32 `[B]`; output bf16 `[total_q,Hq,D]`, lse f32 `[total_q,Hq]`.
    /// - `PagedPrefill`: as `Prefill`, with k_cache, v_cache and the page tables of
    ///   `PagedDecode` in place of k, v and their offsets.
    pub fn tensors(self) -> &'static [&'static str] {
        match self {
            SdpaKind::Forward => &["Q", "K", "V", "O", "LSE"],
            SdpaKind::Backward => &["Q", "K", "V", "O", "dO", "LSE", "dQ", "dK", "dV"],
            SdpaKind::PagedDecode => &[
                "q",
                "k_cache",
                "v_cache",
                "page_table_k",
                "page_table_v",
                "seq_len_kv",
                "output",
                "lse",
            ],
            SdpaKind::ForwardFp8 => &[
                "Q",
                "K",
                "V",
                "descale_q",
                "descale_k",
                "descale_v",
                "O",
                "LSE",
            ],
            SdpaKind::Prefill => &[
                "q",
                "k",
                "v",
                "kv_offsets",
                "v_offsets",
                "q_offsets",
                "o_offsets",
                "lse_offsets",
                "seq_len_q",
                "seq_len_kv",
                "output",
                "lse",
            ],
            SdpaKind::PagedPrefill => &[
                "q",
                "k_cache",
                "v_cache",
                "page_table_k",
                "page_table_v",
                "q_offsets",
                "o_offsets",
                "lse_offsets",
                "seq_len_q",
                "seq_len_kv",
                "output",
                "lse",
            ],
        }
    }

    /// Which of [`SdpaKind::tensors`] the graph writes.
    pub fn outputs(self) -> &'static [&'static str] {
        match self {
            SdpaKind::Forward | SdpaKind::ForwardFp8 => &["O", "LSE"],
            SdpaKind::Backward => &["dQ", "dK", "dV"],
            SdpaKind::PagedDecode | SdpaKind::Prefill | SdpaKind::PagedPrefill => {
                &["output", "lse"]
            }
        }
    }

    /// Words for a baseline label, e.g. "fp8 forward with LSE".
    pub fn label(self) -> &'static str {
        match self {
            SdpaKind::Forward => "forward with LSE",
            SdpaKind::Backward => "backward",
            SdpaKind::PagedDecode => "paged GQA decode with LSE",
            SdpaKind::ForwardFp8 => "fp8 forward with LSE",
            SdpaKind::Prefill => "causal ragged GQA prefill with LSE",
            SdpaKind::PagedPrefill => "causal paged GQA prefill with LSE",
        }
    }

    pub(super) fn graph_name(self) -> &'static str {
        match self {
            SdpaKind::Forward => "forward",
            SdpaKind::Backward => "backward",
            SdpaKind::PagedDecode => "paged decode",
            SdpaKind::ForwardFp8 => "fp8 forward",
            SdpaKind::Prefill => "ragged prefill",
            SdpaKind::PagedPrefill => "paged prefill",
        }
    }
}

/// A tensor of the graph kept in a buffer of the plan's own: its uid, its size, and the
/// 32-bit word it is filled with once (None: scratch or an output nobody reads).
pub(super) struct InternalTensor {
    pub(super) uid: i64,
    pub(super) bytes: usize,
    pub(super) fill: Option<u32>,
}

/// What a graph builder returns: the io uids in [`SdpaKind::tensors`] order and the internal
/// tensors.
pub(super) type GraphIo = (Vec<i64>, Vec<InternalTensor>);
