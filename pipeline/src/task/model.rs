//! The validated task model: what a task computes, on which tensors, how a result is judged,
//! which workloads it runs and which instructions must execute on each architecture.
//!
//! Values of these types come only out of validation (`validate.rs`), so downstream code can
//! trust their invariants. They serialize to the canonical JSON that [`Task::digest`] hashes.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::Serialize;

use crate::arch::Arch;
use crate::digest::Digest;
use crate::expr::{Bindings, Expr, ExprError};

use super::roles::ShapeError;

/// A task's name. Invariant: non-empty, only `[a-z0-9_]`, at most 64 characters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct TaskId(String);

/// Longest task id accepted.
pub const MAX_ID_LEN: usize = 64;

impl TaskId {
    /// Checks the pattern `[a-z0-9_]+`.
    pub fn new(id: &str) -> Result<TaskId, String> {
        if id.is_empty() {
            return Err("a task id cannot be empty".into());
        }
        if id.len() > MAX_ID_LEN {
            return Err(format!("`{id}` is longer than {MAX_ID_LEN} characters"));
        }
        if let Some(c) = id
            .chars()
            .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_'))
        {
            return Err(format!(
                "`{id}` contains `{c}`; a task id uses only a-z, 0-9 and _"
            ));
        }
        Ok(TaskId(id.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for TaskId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TaskId::new(s)
    }
}

impl<'de> serde::Deserialize<'de> for TaskId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        TaskId::new(&s).map_err(serde::de::Error::custom)
    }
}

/// Writes `as_str`, `ALL`, `Display`, `FromStr` and serde (as the name) for a fieldless enum
/// from its YAML names.
macro_rules! named_enum {
    ($ty:ident, $what:literal, { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The name used in task files.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $ty::ALL.iter().copied().find(|v| v.as_str() == s).ok_or_else(|| {
                    let known: Vec<&str> = $ty::ALL.iter().map(|v| v.as_str()).collect();
                    format!(concat!("unknown ", $what, " `{}` (known: {})"), s, known.join(", "))
                })
            }
        }

        impl Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

/// The kind of computation; decides the directory a task file lives in and its prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TaskFamily {
    Gemm,
    GemmFp8,
    AttentionFwd,
    AttentionBwd,
    AttentionFwdFp8,
    AttentionDecode,
    AttentionPrefill,
    AttentionMlaDecode,
    GdnPrefill,
}

named_enum!(TaskFamily, "family", {
    Gemm => "gemm",
    GemmFp8 => "gemm_fp8",
    AttentionFwd => "attention_fwd",
    AttentionBwd => "attention_bwd",
    AttentionFwdFp8 => "attention_fwd_fp8",
    AttentionDecode => "attention_decode",
    AttentionPrefill => "attention_prefill",
    AttentionMlaDecode => "attention_mla_decode",
    GdnPrefill => "gdn_prefill",
});

impl TaskFamily {
    /// The directory of the suite that holds this family's task files.
    pub fn dir(self) -> &'static str {
        match self {
            TaskFamily::Gemm | TaskFamily::GemmFp8 => "gemm",
            TaskFamily::AttentionFwd => "attention_fwd",
            TaskFamily::AttentionBwd => "attention_bwd",
            TaskFamily::AttentionFwdFp8 => "attention_fwd_fp8",
            TaskFamily::AttentionDecode => "attention_decode",
            TaskFamily::AttentionPrefill => "attention_prefill",
            TaskFamily::AttentionMlaDecode => "attention_mla_decode",
            TaskFamily::GdnPrefill => "gdn_prefill",
        }
    }
}

/// Element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DType {
    Bf16,
    F16,
    F32,
    E4m3,
    E5m2,
    I32,
}

named_enum!(DType, "dtype", {
    Bf16 => "bf16",
    F16 => "f16",
    F32 => "f32",
    E4m3 => "e4m3",
    E5m2 => "e5m2",
    I32 => "i32",
});

impl DType {
    pub fn size_bytes(self) -> u64 {
        match self {
            DType::Bf16 | DType::F16 => 2,
            DType::F32 | DType::I32 => 4,
            DType::E4m3 | DType::E5m2 => 1,
        }
    }

    /// The PTX type suffix (`.bf16`, `.e4m3`, `.s32`) without the dot.
    pub fn ptx_name(self) -> &'static str {
        match self {
            DType::Bf16 => "bf16",
            DType::F16 => "f16",
            DType::F32 => "f32",
            DType::E4m3 => "e4m3",
            DType::E5m2 => "e5m2",
            DType::I32 => "s32",
        }
    }

    /// The CUDA C++ type (cuda_bf16.h, cuda_fp16.h, cuda_fp8.h).
    pub fn cuda_name(self) -> &'static str {
        match self {
            DType::Bf16 => "__nv_bfloat16",
            DType::F16 => "__half",
            DType::F32 => "float",
            DType::E4m3 => "__nv_fp8_e4m3",
            DType::E5m2 => "__nv_fp8_e5m2",
            DType::I32 => "int",
        }
    }

    pub fn is_float(self) -> bool {
        !matches!(self, DType::I32)
    }

    pub fn is_fp8(self) -> bool {
        matches!(self, DType::E4m3 | DType::E5m2)
    }
}

/// A named dimension. `value` is `Some` for a constant axis (fixed by the task) and `None` for
/// a variable one (bound by each workload). Invariant: a constant is positive; the name is an
/// identifier, so formulas can use it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Axis {
    pub name: String,
    pub value: Option<i64>,
    pub description: String,
}

impl Axis {
    pub fn is_var(&self) -> bool {
        self.value.is_none()
    }
}

/// A dense, row-major (last axis contiguous) tensor the kernel reads or writes.
///
/// Invariants: every shape entry is a declared axis or a positive integer literal;
/// `distribution` appears only on inputs, `tolerance` on every output and only there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TensorSpec {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<String>,
    pub description: String,
    pub distribution: Option<Distribution>,
    pub tolerance: Option<Tolerance>,
}

/// How input values are drawn (fp32 draws, then rounded to the tensor's dtype).
///
/// Invariants: `std > 0`, `spike_std > 0`, `0 < spike_prob < 1`, `lo < hi`, all finite.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Distribution {
    /// N(0, std²).
    Randn { std: f64 },
    /// N(0, std²) plus, with probability `spike_prob` per element, an extra N(0, spike_std²):
    /// rare large values that break a pointwise check and expose overflow in softmax.
    Spiky {
        std: f64,
        spike_std: f64,
        spike_prob: f64,
    },
    /// U(lo, hi).
    Uniform { lo: f64, hi: f64 },
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Distribution::Randn { std } => write!(f, "N(0, {std}^2)"),
            Distribution::Spiky {
                std,
                spike_std,
                spike_prob,
            } => write!(
                f,
                "N(0, {std}^2) + N(0, {spike_std}^2) * Bernoulli({spike_prob})"
            ),
            Distribution::Uniform { lo, hi } => write!(f, "U({lo}, {hi})"),
        }
    }
}

/// The bound on the relative L2 error of attention's O (and paged decode's output) on top of
/// their elementwise rule: honest bf16 kernels measure at most 2.3e-3 on the H200, a kernel that
/// rounds P to e4m3 for P·V about 2.4e-2 (tasks/generate.py has the figures).
pub const ATTENTION_O_RELNORM_MAX: f64 = 0.008;

/// How an output is compared with the fp32 (or wider) reference.
///
/// Invariants: every bound is finite, positive and below 1 (a relative bound of 1 would accept
/// an all-zero output).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "metric", rename_all = "snake_case")]
pub enum Tolerance {
    /// Every element: `|got - ref| <= atol + rtol * |ref|`.
    Allclose { rtol: f64, atol: f64 },
    /// The whole tensor: `||got - ref||_2 / ||ref||_2 <= max`.
    Relnorm { max: f64 },
    /// At least `min_match` of the elements: `|got - ref| <= atol + rtol * |ref|`, and no
    /// element non-finite (upstream's `required_matched_ratio`, for fp8 outputs whose rounding
    /// alone moves single elements by an ulp). Invariant: `0.9 <= min_match < 1`.
    AllcloseFraction {
        rtol: f64,
        atol: f64,
        min_match: f64,
    },
    /// Both: every element `|got - ref| <= atol + rtol * |ref|`, and the whole tensor
    /// `||got - ref||_2 / ||ref||_2 <= max`. For outputs whose elementwise bound is as large as
    /// the values themselves (attention's O, a convex combination of rows of V), where only the
    /// norm tells an honest bf16 kernel from one that computes in a lower precision.
    AllcloseRelnorm { rtol: f64, atol: f64, max: f64 },
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tolerance::Allclose { rtol, atol } => {
                write!(
                    f,
                    "allclose: |got - ref| <= {atol} + {rtol} * |ref| elementwise"
                )
            }
            Tolerance::Relnorm { max } => {
                write!(f, "relnorm: ||got - ref||_2 / ||ref||_2 <= {max}")
            }
            Tolerance::AllcloseFraction {
                rtol,
                atol,
                min_match,
            } => write!(
                f,
                "allclose on at least {}% of the elements: |got - ref| <= {atol} + {rtol} * |ref|, none non-finite",
                min_match * 100.0
            ),
            Tolerance::AllcloseRelnorm { rtol, atol, max } => write!(
                f,
                "allclose: |got - ref| <= {atol} + {rtol} * |ref| elementwise, and relnorm: ||got - ref||_2 / ||ref||_2 <= {max}"
            ),
        }
    }
}

/// Whether a workload checks correctness (small, odd sizes) or is timed (the paper's sizes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WorkloadKind {
    Correctness,
    Performance,
}

named_enum!(WorkloadKind, "workload kind", {
    Correctness => "correctness",
    Performance => "performance",
});

/// One binding of the variable axes. Invariant: `axes` has exactly the task's variable axes,
/// each positive; names and uuids are unique within the task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    pub name: String,
    pub kind: WorkloadKind,
    pub axes: BTreeMap<String, i64>,
    /// The paper's workload uuid, where this workload is one of the paper's.
    pub uuid: Option<String>,
    /// Paged decode and prefill: the KV length of each sequence of the batch (ragged), from
    /// which the harness builds `kv_indptr` (and the page table). Invariant (validation): one
    /// positive length per sequence, summing to the task's KV-token axis.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_lens: Option<Vec<u64>>,
    /// Prefill: the query length of each sequence, from which the harness builds `qo_indptr`.
    /// Invariant (validation): one positive length per sequence, at most its KV length,
    /// summing to the task's query-token axis.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qo_lens: Option<Vec<u64>>,
    /// GDN prefill: the token count of each sequence packed along the token axis, from which
    /// the harness builds `cu_seqlens`. Invariant (validation): one positive length per
    /// sequence, summing to the task's token axis.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq_lens: Option<Vec<u64>>,
}

/// The name under which a prefill workload binds the number of (query, key) pairs its mask
/// keeps (summed over sequences and counted once per query head), for exact FLOP formulas.
pub const ATTENDED_PAIRS: &str = "attended_pairs";

/// (query, key) pairs a prefill keeps over sequences of these lengths: with the causal mask
/// aligned to the end of the KV sequence (query `i` of `q` sees keys `j <= i + kv - q`), a
/// sequence keeps `q * (kv - q) + q * (q + 1) / 2`; without it `q * kv`. `None` on overflow or
/// a query longer than its keys.
pub fn attended_pairs(qo_lens: &[u64], kv_lens: &[u64], causal: bool) -> Option<u64> {
    qo_lens
        .iter()
        .zip(kv_lens)
        .try_fold(0u64, |acc, (&q, &kv)| {
            let prefix = kv.checked_sub(q)?;
            let n = if causal {
                q.checked_mul(prefix)?
                    .checked_add(q.checked_mul(q.checked_add(1)?)? / 2)?
            } else {
                q.checked_mul(kv)?
            };
            acc.checked_add(n)
        })
}

impl Workload {
    /// The bound axes as text, e.g. `B=4, H=48, S=4096`.
    pub fn axes_text(&self) -> String {
        self.axes
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One PTX instruction family that must execute, and the SASS opcodes that prove it did.
///
/// The family counts as used when at least one opcode matching one of `sass` is present in
/// the cubin (static) or executed (dynamic). Patterns are uppercase, `*` matches any run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetFamily {
    pub family: String,
    pub sass: Vec<String>,
}

impl TargetFamily {
    /// Whether a SASS opcode (e.g. `HGMMA.64x128x16.F32.BF16`) matches one of the patterns.
    pub fn matches(&self, opcode: &str) -> bool {
        self.sass.iter().any(|p| glob_match(p, opcode))
    }
}

/// `*`-only glob matching, whole string.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || !text.ends_with(last) || text.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

/// What a kernel must use on one architecture. Invariant: `required` is non-empty, each family
/// once, each family known and available on `arch`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Target {
    pub arch: Arch,
    pub required: Vec<TargetFamily>,
    pub notes: String,
}

/// The reference semantics the engine implements on the GPU (in fp32 or wider).
///
/// Each op fixes the tensor names, ranks and dtypes it binds (checked at validation):
/// - `Gemm`: inputs `A [m,k]`, `B [n,k]` (or `[k,n]` without `transpose_b`); output `C [m,n]`.
///   `C = A @ B^T`.
/// - `GemmFp8`: inputs `A [m,k]`, `B [n,k]` in fp8, with `per_tensor_scales` also `scale_a [1]`
///   and `scale_b [1]` in f32; output `C [m,n]`. `C = scale_a * scale_b * (A @ B^T)`.
/// - `AttentionFwd`: inputs `Q, K, V [b,h,s,d]`; outputs `O [b,h,s,d]`, `LSE [b,h,s]` (f32,
///   natural log), softmax scale `1/sqrt(d)`; causal masks key `j > i` for query `i`.
/// - `AttentionBwd`: inputs `Q, K, V, O, dO [b,h,s,d]`, `LSE [b,h,s]`; outputs `dQ, dK, dV`.
///   `O` and `LSE` are not drawn: the harness computes them from `Q, K, V` with the reference
///   forward (see [`Op::derived_inputs`]).
/// - `AttentionFwdFp8`: inputs `Q, K, V [b,h,s,d]` in e4m3 and `descale_q, descale_k,
///   descale_v [1]` (f32); outputs `O [b,h,s,d]` (e4m3, no output scale) and `LSE [b,h,s]`.
///   Each of Q, K, V is drawn in fp32 and quantized with scale 448/amax; its descale is
///   amax/448 (derived, not drawn).
/// - `AttentionDecode` (paged): inputs `q [b,hq,d]`, `k_cache, v_cache [p,ps,hkv,d]`,
///   `kv_indptr [b+1]`, `kv_indices [t]` (i32); outputs `output [b,hq,d]`, `lse [b,hq]`
///   (natural log). Query head `h` reads KV head `h / (hq/hkv)`; scale `1/sqrt(d)`. The page
///   table is derived from the workload's `kv_lens` and the seed (distinct random pages).
/// - `AttentionPrefill`: sequences packed along the token axis. Inputs `q [tq,hq,d]`, then
///   ragged `k, v [tk,hkv,d]` or paged `k_cache, v_cache [p,ps,hkv,d]`, `qo_indptr [b+1]`,
///   `kv_indptr [b+1]` and, paged, `kv_indices [tk]` (i32); outputs `output [tq,hq,d]`,
///   `lse [tq,hq]` (natural log). Query head `h` reads KV head `h / (hq/hkv)`; scale
///   `1/sqrt(d)`; causal keeps key `j` for query `i` of a sequence when `j <= i + kv - q` (the
///   mask aligned to the last key). The indptrs come from the workload's `qo_lens`, `kv_lens`,
///   the page table from them and the seed.
/// - `AttentionMlaDecode` (paged): multi-head latent attention decode with absorbed weights
///   (DeepSeek's MLA, FlashInfer's `mla_paged_decode`). Inputs `q_nope [b,hq,dc]`,
///   `q_pe [b,hq,dp]`, `ckv_cache [p,ps,dc]`, `kpe_cache [p,ps,dp]`, `kv_indptr [b+1]`,
///   `kv_indices [t]` (i32); outputs `output [b,hq,dc]`, `lse [b,hq]` (natural log). Every
///   query head reads the one latent KV head: `s_j = scale * (q_nope . ckv_j + q_pe . kpe_j)`,
///   the values are the `ckv` rows; scale `1/sqrt(128 + dp)` (DeepSeek's query-key head dim
///   before absorption, [`MLA_QK_NOPE_DIM`] + `dp`). The page table is derived as decode's.
/// - `GdnPrefill`: the gated delta net's prefill (FlashInfer's `gdn_prefill`, k-last state),
///   sequences packed along the token axis. Inputs `q, k [t,hqk,d]`, `v [t,hv,d]` (half),
///   `state [n,hv,d,d]` (f32, the initial state, k-last: `state[n,h,v,k]`), `A_log [hv]`,
///   `dt_bias [hv]` (f32), `a, b [t,hv]` (half), `cu_seqlens [n+1]` (i32); outputs
///   `output [t,hv,d]` (half) and `new_state [n,hv,d,d]` (f32, k-last). Value head `h` reads
///   query and key head `h / (hv/hqk)`. Per token: `g = exp(-exp(A_log) * softplus(a +
///   dt_bias))`, `beta = sigmoid(b)`, `S = g * S`, `S += k (beta * (v - S^T k))^T`,
///   `o = scale * S^T q` with `S [d_k, d_v]` and scale `1/sqrt(d)`. `cu_seqlens` comes from
///   the workload's `seq_lens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Op {
    Gemm { transpose_b: bool },
    GemmFp8 { per_tensor_scales: bool },
    AttentionFwd { causal: bool },
    AttentionBwd { causal: bool },
    AttentionFwdFp8 { causal: bool },
    AttentionDecode { paged: bool },
    AttentionPrefill { paged: bool, causal: bool },
    AttentionMlaDecode { paged: bool },
    GdnPrefill,
}

/// MLA's per-head query-key dimension without the rotary part before the weights are absorbed
/// (DeepSeek-V2/V3's `qk_nope_head_dim`): the softmax scale of [`Op::AttentionMlaDecode`] is
/// `1/sqrt(MLA_QK_NOPE_DIM + dp)`, 1/sqrt(192) with the 64-wide rotary part.
pub const MLA_QK_NOPE_DIM: u64 = 128;

/// The bound on the relative L2 error of GDN prefill's outputs (its state and, on top of an
/// elementwise rule, its output): room for a chunked kernel whose products round q, k, v and
/// the WY factors to bf16 while the state stays fp32 (tasks/generate.py says how it was sized;
/// not yet measured on a GPU).
pub const GDN_RELNORM_MAX: f64 = 0.01;

impl Op {
    /// The family this op belongs to.
    pub fn family(&self) -> TaskFamily {
        match self {
            Op::Gemm { .. } => TaskFamily::Gemm,
            Op::GemmFp8 { .. } => TaskFamily::GemmFp8,
            Op::AttentionFwd { .. } => TaskFamily::AttentionFwd,
            Op::AttentionBwd { .. } => TaskFamily::AttentionBwd,
            Op::AttentionFwdFp8 { .. } => TaskFamily::AttentionFwdFp8,
            Op::AttentionDecode { .. } => TaskFamily::AttentionDecode,
            Op::AttentionPrefill { .. } => TaskFamily::AttentionPrefill,
            Op::AttentionMlaDecode { .. } => TaskFamily::AttentionMlaDecode,
            Op::GdnPrefill => TaskFamily::GdnPrefill,
        }
    }

    /// Inputs quantized from an fp32 draw with a per-tensor scale, each with the input that
    /// receives its descale (amax/448).
    pub fn quantized_inputs(&self) -> &'static [(&'static str, &'static str)] {
        match self {
            Op::AttentionFwdFp8 { .. } => {
                &[("Q", "descale_q"), ("K", "descale_k"), ("V", "descale_v")]
            }
            _ => &[],
        }
    }

    /// Inputs whose values come from the reference forward pass instead of a distribution.
    pub fn derived_inputs(&self) -> &'static [&'static str] {
        match self {
            Op::AttentionBwd { .. } => &["O", "LSE"],
            Op::AttentionFwdFp8 { .. } => &["descale_q", "descale_k", "descale_v"],
            Op::AttentionDecode { .. } | Op::AttentionMlaDecode { .. } => {
                &["kv_indptr", "kv_indices"]
            }
            Op::AttentionPrefill { paged: true, .. } => &["qo_indptr", "kv_indptr", "kv_indices"],
            Op::AttentionPrefill { paged: false, .. } => &["qo_indptr", "kv_indptr"],
            Op::GdnPrefill => &["cu_seqlens"],
            _ => &[],
        }
    }

    /// How a derived input (see [`Op::derived_inputs`]) gets its values, in words.
    pub fn derived_how(&self) -> &'static str {
        match self {
            Op::AttentionBwd { .. } => "computed by the reference forward pass",
            Op::AttentionFwdFp8 { .. } => "amax/448 of its tensor, computed by the harness",
            Op::AttentionDecode { .. } | Op::AttentionMlaDecode { .. } => {
                "from the workload's KV lengths and the seed (distinct pages, random order)"
            }
            Op::AttentionPrefill { paged: true, .. } => {
                "from the workload's query and KV lengths and the seed (distinct pages, random order)"
            }
            Op::AttentionPrefill { paged: false, .. } => {
                "from the workload's query and KV lengths (sequences packed in order)"
            }
            Op::GdnPrefill => "from the workload's sequence lengths (sequences packed in order)",
            _ => "computed by the harness",
        }
    }

    /// Inputs the timing loop keeps while it redraws the others before every timed launch:
    /// the derived inputs and what they are derived from (attention backward's O and LSE come
    /// from Q, K, V by the reference forward, too slow to redo per launch; dO changes, and
    /// with it every output).
    pub fn kept_while_timing(&self) -> &'static [&'static str] {
        match self {
            Op::AttentionBwd { .. } => &["Q", "K", "V", "O", "LSE"],
            // The page table is kept (the pages it names are redrawn); the descales are
            // rewritten by the quantization of their tensors.
            Op::AttentionDecode { .. } | Op::AttentionMlaDecode { .. } => {
                &["kv_indptr", "kv_indices"]
            }
            Op::AttentionPrefill { .. } | Op::GdnPrefill => self.derived_inputs(),
            Op::AttentionFwdFp8 { .. } => &["descale_q", "descale_k", "descale_v"],
            _ => &[],
        }
    }

    pub fn causal(&self) -> bool {
        matches!(
            self,
            Op::AttentionFwd { causal: true }
                | Op::AttentionBwd { causal: true }
                | Op::AttentionFwdFp8 { causal: true }
                | Op::AttentionPrefill { causal: true, .. }
        )
    }
}

/// The library the candidate is timed against, in the same process.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Baseline {
    /// `cublaslt`, `cudnn` or `composed` (see [`BASELINE_LIBRARIES`]).
    pub library: String,
    /// The library operation, in words (for records and pages).
    pub operation: String,
}

/// Libraries a baseline may name. `composed` is a baseline assembled from library calls and
/// harness kernels where no library has the op (MLA decode): its speedups are reported apart,
/// never pooled with those over a library's own kernel.
pub const BASELINE_LIBRARIES: &[&str] = &["cublaslt", "cudnn", "composed"];

/// PTX instruction families a target may require.
pub const KNOWN_FAMILIES: &[&str] = &[
    "wgmma",
    "tma",
    "bulk_copy",
    "mbarrier",
    "setmaxnreg",
    "stmatrix",
    "ldmatrix",
    "mma",
    "cp_async",
    "cluster",
    "fence_proxy_async",
    "elect",
    "tcgen05",
    "griddepcontrol",
];

/// Whether `family` exists on `arch` (wgmma is Hopper-only, tcgen05 Blackwell-only).
pub fn family_available(family: &str, arch: Arch) -> bool {
    match family {
        "wgmma" => arch == Arch::Sm90a,
        "tcgen05" => arch == Arch::Sm100a,
        _ => true,
    }
}

/// The most bytes a workload's tensors may take together (inputs and outputs at their dtypes).
/// The engine also keeps an fp32 copy of every tensor, fp32 references, input snapshots and
/// guards, about 4x this in all for bf16 tasks: 24 GiB keeps a workload within an 80 GB H100,
/// the smallest GPU the suite targets. The largest workload of suite 1.1.0 (attention backward,
/// B=4, H=48, S=8192, D=128) takes 3.0 GiB.
pub const MAX_WORKLOAD_BYTES: u64 = 24 << 30;

/// A validated task. See `tasks/README.md` for the file format.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Task {
    pub id: TaskId,
    pub family: TaskFamily,
    pub title: String,
    pub description: String,
    /// In declaration order (prompts list parameters in this order).
    pub axes: Vec<Axis>,
    /// In declaration order: the kernel's parameter order.
    pub inputs: Vec<TensorSpec>,
    pub outputs: Vec<TensorSpec>,
    pub op: Op,
    pub reference: String,
    /// Default distribution of the inputs that do not set their own.
    pub distribution: Distribution,
    pub baseline: Baseline,
    /// FLOPs of one run, over the axes (for TFLOP/s).
    pub flops: Expr,
    /// Compulsory DRAM bytes of one run, over the axes (for the speed-of-light fraction).
    pub bytes: Expr,
    pub workloads: Vec<Workload>,
    /// Sorted by arch.
    pub targets: Vec<Target>,
    /// Path of the task file relative to the suite directory; not part of the digest.
    #[serde(skip)]
    pub source: PathBuf,
    /// What each axis means to the op (derived from `op` and the tensor shapes at validation,
    /// so not part of the digest).
    #[serde(skip)]
    pub roles: super::roles::AxisRoles,
}

impl Task {
    /// Values of every axis for `w`: the constants and the workload's variables.
    pub fn bindings(&self, w: &Workload) -> Bindings {
        let mut b: Bindings = self
            .axes
            .iter()
            .filter_map(|a| a.value.map(|v| (a.name.clone(), v)))
            .collect();
        b.extend(w.axes.iter().map(|(k, v)| (k.clone(), *v)));
        if let (Op::AttentionPrefill { causal, .. }, Some(q), Some(kv)) =
            (self.op, &w.qo_lens, &w.kv_lens)
            && let Some(n) = attended_pairs(q, kv, causal).and_then(|n| i64::try_from(n).ok())
        {
            b.insert(ATTENDED_PAIRS.to_string(), n);
        }
        b
    }

    pub fn target(&self, arch: Arch) -> Option<&Target> {
        self.targets.iter().find(|t| t.arch == arch)
    }

    /// An input or output by name.
    pub fn tensor(&self, name: &str) -> Option<&TensorSpec> {
        self.inputs
            .iter()
            .chain(&self.outputs)
            .find(|t| t.name == name)
    }

    pub fn axis(&self, name: &str) -> Option<&Axis> {
        self.axes.iter().find(|a| a.name == name)
    }

    pub fn var_axes(&self) -> impl Iterator<Item = &Axis> {
        self.axes.iter().filter(|a| a.is_var())
    }

    pub fn workload(&self, name: &str) -> Option<&Workload> {
        self.workloads.iter().find(|w| w.name == name)
    }

    /// The workload `name`, or an error that names the task and the missing workload.
    pub fn require_workload(&self, name: &str) -> Result<&Workload, String> {
        self.workload(name)
            .ok_or_else(|| format!("task {} has no workload `{name}`", self.id))
    }

    /// Why `names` (a selection of workloads; empty: all) does not name workloads of this
    /// task: the first unknown name, with the valid ones.
    pub fn unknown_workload(&self, names: &[String]) -> Option<String> {
        let unknown = names.iter().find(|n| self.workload(n).is_none())?;
        let valid: Vec<&str> = self.workloads.iter().map(|w| w.name.as_str()).collect();
        Some(format!(
            "`{unknown}` is not a workload of {}; it has: {}",
            self.id,
            valid.join(", ")
        ))
    }

    pub fn workloads_of(&self, kind: WorkloadKind) -> impl Iterator<Item = &Workload> {
        self.workloads.iter().filter(move |w| w.kind == kind)
    }

    /// The distribution an input is drawn from (its own, or the task's default). `None` for
    /// outputs and for inputs the op derives (see [`Op::derived_inputs`]).
    pub fn input_distribution(&self, input: &str) -> Option<&Distribution> {
        if self.op.derived_inputs().contains(&input) {
            return None;
        }
        let t = self.inputs.iter().find(|t| t.name == input)?;
        Some(t.distribution.as_ref().unwrap_or(&self.distribution))
    }

    /// The concrete dimensions of `t` under `b`.
    pub fn dims(&self, t: &TensorSpec, b: &Bindings) -> Result<Vec<u64>, ShapeError> {
        t.shape
            .iter()
            .map(|entry| {
                let value = match entry.parse::<i64>() {
                    Ok(v) => v,
                    Err(_) => *b.get(entry).ok_or_else(|| ShapeError::Unbound {
                        tensor: t.name.clone(),
                        axis: entry.clone(),
                    })?,
                };
                u64::try_from(value).ok().filter(|v| *v > 0).ok_or_else(|| {
                    ShapeError::NotPositive {
                        tensor: t.name.clone(),
                        axis: entry.clone(),
                        value,
                    }
                })
            })
            .collect()
    }

    /// Number of elements of `t` under `b`.
    pub fn numel(&self, t: &TensorSpec, b: &Bindings) -> Result<u64, ShapeError> {
        self.dims(t, b)?
            .into_iter()
            .try_fold(1u64, |acc, d| acc.checked_mul(d))
            .ok_or_else(|| ShapeError::Overflow {
                tensor: t.name.clone(),
            })
    }

    /// Bytes of `t` under `b`.
    pub fn size_bytes(&self, t: &TensorSpec, b: &Bindings) -> Result<u64, ShapeError> {
        self.numel(t, b)?
            .checked_mul(t.dtype.size_bytes())
            .ok_or_else(|| ShapeError::Overflow {
                tensor: t.name.clone(),
            })
    }

    /// FLOPs of one run of `w`.
    pub fn flops_of(&self, w: &Workload) -> Result<f64, ExprError> {
        self.flops.eval_f64(&self.bindings(w))
    }

    /// Compulsory bytes of one run of `w`.
    pub fn bytes_of(&self, w: &Workload) -> Result<f64, ExprError> {
        self.bytes.eval_f64(&self.bindings(w))
    }

    /// The canonical JSON of the task (what [`Task::digest`] hashes): serde_json of this
    /// type, fields in declaration order, maps sorted, `source` left out.
    pub fn canonical_json(&self) -> String {
        serde_json::to_string(self).expect("a task has only string map keys and plain values")
    }

    /// blake3 of [`Task::canonical_json`]; a record names the task by this digest. Storing the
    /// canonical JSON as a blob gives a blob named by the same digest.
    pub fn digest(&self) -> Digest {
        Digest::of(self.canonical_json().as_bytes())
    }
}

impl From<DType> for crate::cuda::tensor_map::TmaElement {
    /// The element as TMA moves it (fp8 has no TMA type: its bytes).
    fn from(d: DType) -> Self {
        use crate::cuda::tensor_map::TmaElement;
        match d {
            DType::Bf16 => TmaElement::Bf16,
            DType::F16 => TmaElement::F16,
            DType::F32 => TmaElement::F32,
            DType::E4m3 | DType::E5m2 => TmaElement::Byte,
            DType::I32 => TmaElement::I32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_follow_the_pattern() {
        assert!(TaskId::new("gemm_n7168_k5120").is_ok());
        for bad in ["", "Gemm", "gemm-n", "gemm n", "é", &"x".repeat(65)] {
            assert!(TaskId::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(d.as_str().parse::<DType>(), Ok(*d));
        }
        for f in TaskFamily::ALL {
            assert_eq!(f.as_str().parse::<TaskFamily>(), Ok(*f));
        }
        let e = "fp64".parse::<DType>().expect_err("unknown");
        assert!(e.contains("bf16"), "{e}");
        assert_eq!(DType::E4m3.cuda_name(), "__nv_fp8_e4m3");
        assert_eq!(DType::I32.ptx_name(), "s32");
    }

    #[test]
    fn globs_match_sass_opcodes() {
        let cases = [
            ("*GMMA*", "HGMMA.64x128x16.F32.BF16", true),
            ("*GMMA*", "GMMA", true),
            ("*GMMA*", "HMMA.16816.F32", false),
            ("UTC*", "UTCHMMA", true),
            ("UTC*", "XUTC", false),
            ("UTMALDG", "UTMALDG", true),
            ("UTMALDG", "UTMALDG.2D", false),
            ("A*B*C", "AxxBxxC", true),
            ("A*B*C", "AC", false),
            ("A*A", "A", false),
        ];
        for (p, t, want) in cases {
            assert_eq!(glob_match(p, t), want, "{p} vs {t}");
        }
    }
}
