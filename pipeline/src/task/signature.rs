//! The tensors each reference op binds: names, symbolic shapes and allowed dtypes.
//!
//! Validation checks a task's inputs and outputs against its op's signature, so the engine can
//! bind `A`, `B`, `C` (or `Q`, `K`, `V`, ...) by name and trust their ranks, dtypes and that
//! shared dimensions really are the same axis.

use std::collections::BTreeMap;

use super::model::{DType, Op, TensorSpec};
use super::problem::{AxisRoles, Extent, Role};

/// One tensor of an op's signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    pub name: &'static str,
    pub output: bool,
    /// Symbolic dimensions: a lowercase letter names an axis role (`m`, `k`, `s`...) and must be
    /// the same axis wherever it appears; `"1"` is the literal 1.
    pub dims: &'static [&'static str],
    pub dtypes: &'static [DType],
    /// The dtype must equal this slot's.
    pub same_dtype_as: Option<&'static str>,
}

const HALF: &[DType] = &[DType::Bf16, DType::F16];
const FP8: &[DType] = &[DType::E4m3, DType::E5m2];
const F32: &[DType] = &[DType::F32];
const WIDE_OUT: &[DType] = &[DType::Bf16, DType::F16, DType::F32];
const I32: &[DType] = &[DType::I32];
const E4M3: &[DType] = &[DType::E4m3];
const BHSD: &[&str] = &["b", "h", "s", "d"];
/// Paged KV cache: pages, page size, KV heads, head dim.
const PAGED: &[&str] = &["pages", "page_size", "kv_heads", "d"];
const BHS: &[&str] = &["b", "h", "s"];
/// Packed query tokens: tokens, query heads, head dim.
const TQ_HD: &[&str] = &["q_tokens", "h", "d"];
/// Packed (ragged) KV tokens: tokens, KV heads, head dim.
const TK_HD: &[&str] = &["tokens", "kv_heads", "d"];
/// MLA's paged latent cache (one KV head): pages, page size, latent dim; and its rotary part.
const MLA_CKV: &[&str] = &["pages", "page_size", "d"];
const MLA_KPE: &[&str] = &["pages", "page_size", "d_pe"];
/// GDN's packed tokens by query/key head and by value head; its state per sequence and value
/// head (k-last: `[.., d_v, d_k]`, both `d`); a per-token, per-value-head scalar.
const GDN_QK: &[&str] = &["q_tokens", "h", "d"];
const GDN_V: &[&str] = &["q_tokens", "v_heads", "d"];
const GDN_STATE: &[&str] = &["b", "v_heads", "d", "d"];
const GDN_TOKEN: &[&str] = &["q_tokens", "v_heads"];

const fn slot(
    name: &'static str,
    output: bool,
    dims: &'static [&'static str],
    dtypes: &'static [DType],
    same_dtype_as: Option<&'static str>,
) -> Slot {
    Slot {
        name,
        output,
        dims,
        dtypes,
        same_dtype_as,
    }
}

/// The signature of `op`, inputs first, in parameter order.
pub(crate) fn slots(op: &Op) -> Vec<Slot> {
    match *op {
        Op::Gemm { transpose_b } => vec![
            slot("A", false, &["m", "k"], HALF, None),
            slot(
                "B",
                false,
                if transpose_b {
                    &["n", "k"]
                } else {
                    &["k", "n"]
                },
                HALF,
                Some("A"),
            ),
            slot("C", true, &["m", "n"], HALF, Some("A")),
        ],
        Op::GemmFp8 { per_tensor_scales } => {
            let mut v = vec![
                slot("A", false, &["m", "k"], FP8, None),
                slot("B", false, &["n", "k"], FP8, None),
            ];
            if per_tensor_scales {
                v.push(slot("scale_a", false, &["1"], F32, None));
                v.push(slot("scale_b", false, &["1"], F32, None));
            }
            v.push(slot("C", true, &["m", "n"], WIDE_OUT, None));
            v
        }
        Op::AttentionFwd { .. } => vec![
            slot("Q", false, BHSD, HALF, None),
            slot("K", false, BHSD, HALF, Some("Q")),
            slot("V", false, BHSD, HALF, Some("Q")),
            slot("O", true, BHSD, HALF, Some("Q")),
            slot("LSE", true, BHS, F32, None),
        ],
        Op::AttentionBwd { .. } => vec![
            slot("Q", false, BHSD, HALF, None),
            slot("K", false, BHSD, HALF, Some("Q")),
            slot("V", false, BHSD, HALF, Some("Q")),
            slot("O", false, BHSD, HALF, Some("Q")),
            slot("dO", false, BHSD, HALF, Some("Q")),
            slot("LSE", false, BHS, F32, None),
            slot("dQ", true, BHSD, HALF, Some("Q")),
            slot("dK", true, BHSD, HALF, Some("Q")),
            slot("dV", true, BHSD, HALF, Some("Q")),
        ],
        Op::AttentionFwdFp8 { .. } => vec![
            slot("Q", false, BHSD, E4M3, None),
            slot("K", false, BHSD, E4M3, None),
            slot("V", false, BHSD, E4M3, None),
            slot("descale_q", false, &["1"], F32, None),
            slot("descale_k", false, &["1"], F32, None),
            slot("descale_v", false, &["1"], F32, None),
            slot("O", true, BHSD, E4M3, None),
            slot("LSE", true, BHS, F32, None),
        ],
        Op::AttentionDecode { .. } => vec![
            slot("q", false, &["b", "h", "d"], HALF, None),
            slot("k_cache", false, PAGED, HALF, Some("q")),
            slot("v_cache", false, PAGED, HALF, Some("q")),
            slot("kv_indptr", false, &["indptr"], I32, None),
            slot("kv_indices", false, &["tokens"], I32, None),
            slot("output", true, &["b", "h", "d"], HALF, Some("q")),
            slot("lse", true, &["b", "h"], F32, None),
        ],
        Op::AttentionMlaDecode { .. } => vec![
            slot("q_nope", false, &["b", "h", "d"], HALF, None),
            slot("q_pe", false, &["b", "h", "d_pe"], HALF, Some("q_nope")),
            slot("ckv_cache", false, MLA_CKV, HALF, Some("q_nope")),
            slot("kpe_cache", false, MLA_KPE, HALF, Some("q_nope")),
            slot("kv_indptr", false, &["indptr"], I32, None),
            slot("kv_indices", false, &["tokens"], I32, None),
            slot("output", true, &["b", "h", "d"], HALF, Some("q_nope")),
            slot("lse", true, &["b", "h"], F32, None),
        ],
        Op::GdnPrefill => vec![
            slot("q", false, GDN_QK, HALF, None),
            slot("k", false, GDN_QK, HALF, Some("q")),
            slot("v", false, GDN_V, HALF, Some("q")),
            slot("state", false, GDN_STATE, F32, None),
            slot("A_log", false, &["v_heads"], F32, None),
            slot("a", false, GDN_TOKEN, HALF, Some("q")),
            slot("dt_bias", false, &["v_heads"], F32, None),
            slot("b", false, GDN_TOKEN, HALF, Some("q")),
            slot("cu_seqlens", false, &["indptr"], I32, None),
            slot("output", true, GDN_V, HALF, Some("q")),
            slot("new_state", true, GDN_STATE, F32, None),
        ],
        Op::AttentionPrefill { paged, .. } => {
            let mut v = vec![slot("q", false, TQ_HD, HALF, None)];
            if paged {
                v.push(slot("k_cache", false, PAGED, HALF, Some("q")));
                v.push(slot("v_cache", false, PAGED, HALF, Some("q")));
            } else {
                v.push(slot("k", false, TK_HD, HALF, Some("q")));
                v.push(slot("v", false, TK_HD, HALF, Some("q")));
            }
            v.push(slot("qo_indptr", false, &["indptr"], I32, None));
            v.push(slot("kv_indptr", false, &["indptr"], I32, None));
            if paged {
                v.push(slot("kv_indices", false, &["tokens"], I32, None));
            }
            v.push(slot("output", true, TQ_HD, HALF, Some("q")));
            v.push(slot("lse", true, &["q_tokens", "h"], F32, None));
            v
        }
    }
}

fn show(dims: &[&str]) -> String {
    format!("[{}]", dims.join(", "))
}

/// Every way `inputs` and `outputs` differ from the signature of `op`, as (field, reason).
pub(crate) fn check(
    op: &Op,
    inputs: &[TensorSpec],
    outputs: &[TensorSpec],
) -> Vec<(String, String)> {
    let kind = op.family().as_str();
    let slots = slots(op);
    let mut out = Vec::new();
    let section = |output: bool| if output { "outputs" } else { "inputs" };
    let find = |output: bool, name: &str| {
        let list = if output { outputs } else { inputs };
        list.iter().find(|t| t.name == name)
    };

    for (output, list) in [(false, inputs), (true, outputs)] {
        for t in list {
            if !slots.iter().any(|s| s.name == t.name && s.output == output) {
                let expected: Vec<&str> = slots
                    .iter()
                    .filter(|s| s.output == output)
                    .map(|s| s.name)
                    .collect();
                out.push((
                    format!("{}.{}", section(output), t.name),
                    format!(
                        "op `{kind}` has no {} named `{}` (its {}: {})",
                        if output { "output" } else { "input" },
                        t.name,
                        section(output),
                        expected.join(", ")
                    ),
                ));
            }
        }
    }

    // symbol -> (axis entry, where it was first seen)
    let mut roles: BTreeMap<&str, (String, String)> = BTreeMap::new();
    for s in &slots {
        let Some(t) = find(s.output, s.name) else {
            out.push((
                section(s.output).to_string(),
                format!(
                    "op `{kind}` needs {} `{}` {}",
                    if s.output { "output" } else { "input" },
                    s.name,
                    show(s.dims)
                ),
            ));
            continue;
        };
        let field = format!("{}.{}", section(s.output), s.name);
        if !s.dtypes.contains(&t.dtype) {
            let allowed: Vec<&str> = s.dtypes.iter().map(|d| d.as_str()).collect();
            out.push((
                format!("{field}.dtype"),
                format!(
                    "op `{kind}` takes `{}` as {}, not {}",
                    s.name,
                    allowed.join(" or "),
                    t.dtype
                ),
            ));
        } else if let Some(other) = s.same_dtype_as {
            let other_t = find(false, other).or_else(|| find(true, other));
            if let Some(o) = other_t
                && o.dtype != t.dtype
            {
                out.push((
                    format!("{field}.dtype"),
                    format!(
                        "must be the dtype of `{other}` ({}), found {}",
                        o.dtype, t.dtype
                    ),
                ));
            }
        }
        if t.shape.len() != s.dims.len() {
            out.push((
                format!("{field}.shape"),
                format!(
                    "op `{kind}` expects `{}` of rank {} {}, found rank {}",
                    s.name,
                    s.dims.len(),
                    show(s.dims),
                    t.shape.len()
                ),
            ));
            continue;
        }
        for (i, (sym, entry)) in s.dims.iter().zip(&t.shape).enumerate() {
            let here = format!("{field}.shape[{i}]");
            if *sym == "1" {
                if entry != "1" {
                    out.push((here, format!("must be the literal 1, found `{entry}`")));
                }
                continue;
            }
            match roles.get(sym) {
                None => {
                    roles.insert(sym, (entry.clone(), here));
                }
                Some((first, at)) if first != entry => out.push((
                    here,
                    format!(
                        "must be the same axis as {at} (`{first}`: both are the `{sym}` dimension), found `{entry}`"
                    ),
                )),
                Some(_) => {}
            }
        }
    }
    out
}

/// The axis roles of a task whose tensors passed [`check`]: each signature letter resolved to
/// the axis (or literal) at its place in the task's shapes.
pub(crate) fn roles(op: &Op, inputs: &[TensorSpec], outputs: &[TensorSpec]) -> AxisRoles {
    let mut out = Vec::new();
    for s in slots(op) {
        let list = if s.output { outputs } else { inputs };
        let Some(t) = list.iter().find(|t| t.name == s.name) else {
            continue;
        };
        for (letter, entry) in s.dims.iter().zip(&t.shape) {
            let Some(role) = Role::from_letter(letter) else {
                continue;
            };
            let extent = match entry.parse::<u64>() {
                Ok(v) => Extent::Literal(v),
                Err(_) => Extent::Axis(entry.clone()),
            };
            out.push((role, extent));
        }
    }
    AxisRoles::new(out)
}
