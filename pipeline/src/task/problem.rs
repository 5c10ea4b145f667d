//! Axis roles and problem sizes: what each axis of a task means to its op, and the op's sizes
//! for one workload in checked 64-bit arithmetic.
//!
//! Roles come from the op's signature (the lowercase letters of [`super::signature`]): a GEMM's
//! `A [m, k]` gives `m` and `k` whatever the task calls those axes. Validation resolves every
//! role to an axis of the task (or a literal), so the engine never names an axis.

use serde::Serialize;

use super::model::{Task, Workload};
use super::roles::ShapeError;
pub use super::roles::{AxisRoles, Extent, Role};
use crate::expr::Bindings;

/// Attention sizes: `[batch, heads, seq, head_dim]` tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AttentionDims {
    pub batch: u64,
    pub heads: u64,
    pub seq: u64,
    pub head_dim: u64,
}

impl AttentionDims {
    /// batch * heads (the number of independent attention problems).
    pub fn bh(&self) -> Result<u64, ShapeError> {
        mul(&[self.batch, self.heads])
    }

    /// batch * heads * seq (rows of LSE).
    pub fn rows(&self) -> Result<u64, ShapeError> {
        mul(&[self.batch, self.heads, self.seq])
    }

    /// batch * heads * seq * head_dim (elements of Q, K, V, O).
    pub fn elements(&self) -> Result<u64, ShapeError> {
        mul(&[self.batch, self.heads, self.seq, self.head_dim])
    }

    /// (batch * heads, seq, head_dim) as the `int`s the reference kernels take.
    pub fn as_i32(&self) -> Result<(i32, i32, i32), ShapeError> {
        let bh = self.bh()?;
        // The kernels index `bh * seq * head_dim` elements with 64-bit offsets but take the
        // three factors as ints.
        self.elements()?;
        Ok((to_i32(bh)?, to_i32(self.seq)?, to_i32(self.head_dim)?))
    }
}

/// GEMM sizes: `C [m, n] = A [m, k] @ B^T`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GemmDims {
    pub m: u64,
    pub n: u64,
    pub k: u64,
}

impl GemmDims {
    /// m * n (elements of C).
    pub fn outputs(&self) -> Result<u64, ShapeError> {
        mul(&[self.m, self.n])
    }

    pub fn as_i32(&self) -> Result<(i32, i32, i32), ShapeError> {
        mul(&[self.m, self.n, self.k])?;
        Ok((to_i32(self.m)?, to_i32(self.n)?, to_i32(self.k)?))
    }
}

/// Paged decode sizes: one query per sequence, `heads` query heads sharing `kv_heads` KV heads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DecodeDims {
    pub batch: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    pub pages: u64,
    pub page_size: u64,
    /// Entries of `kv_indptr` (batch + 1).
    pub indptr: u64,
    /// KV tokens over the batch (entries of `kv_indices` at page size 1).
    pub tokens: u64,
}

impl DecodeDims {
    /// The sizes as the `int`s the reference kernels take: (batch, heads, kv_heads, head_dim).
    pub fn as_i32(&self) -> Result<(i32, i32, i32, i32), ShapeError> {
        mul(&[self.pages, self.page_size, self.kv_heads, self.head_dim])?;
        Ok((
            to_i32(self.batch)?,
            to_i32(self.heads)?,
            to_i32(self.kv_heads)?,
            to_i32(self.head_dim)?,
        ))
    }
}

/// Prefill sizes: sequences packed along the token axes, `heads` query heads sharing
/// `kv_heads` KV heads; keys ragged (`pages` = None) or in a paged cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PrefillDims {
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    /// Entries of `qo_indptr` and `kv_indptr` (sequences + 1).
    pub indptr: u64,
    /// Query tokens over the batch (rows of `q`).
    pub qo_tokens: u64,
    /// KV tokens over the batch (rows of ragged `k`, or entries of `kv_indices`).
    pub kv_tokens: u64,
    /// Paged: (pages, page size) of the cache.
    pub paged: Option<(u64, u64)>,
}

impl PrefillDims {
    /// Sequences of the batch (`indptr - 1`).
    pub fn batch(&self) -> u64 {
        self.indptr.saturating_sub(1)
    }

    /// Rows of `output` and `lse` (query tokens times query heads).
    pub fn rows(&self) -> Result<u64, ShapeError> {
        mul(&[self.qo_tokens, self.heads])
    }

    /// Rows of the K and V tensors as stored (ragged tokens, or pages times page size).
    pub fn kv_rows(&self) -> Result<u64, ShapeError> {
        match self.paged {
            Some((pages, page_size)) => mul(&[pages, page_size]),
            None => Ok(self.kv_tokens),
        }
    }

    /// The sizes as the `int`s the reference kernel takes: (batch, heads, kv_heads, head_dim,
    /// page_size), page size 0 when ragged.
    pub fn as_i32(&self) -> Result<(i32, i32, i32, i32, i32), ShapeError> {
        mul(&[self.kv_rows()?, self.kv_heads, self.head_dim])?;
        mul(&[self.rows()?, self.head_dim])?;
        Ok((
            to_i32(self.batch())?,
            to_i32(self.heads)?,
            to_i32(self.kv_heads)?,
            to_i32(self.head_dim)?,
            to_i32(self.paged.map_or(0, |(_, ps)| ps))?,
        ))
    }
}

/// MLA decode sizes: one query per sequence, `heads` query heads reading one latent KV head
/// of `ckv_dim` (keys and values) plus a rotary part of `pe_dim` (keys only), in a paged cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MlaDecodeDims {
    pub batch: u64,
    pub heads: u64,
    pub ckv_dim: u64,
    pub pe_dim: u64,
    pub pages: u64,
    pub page_size: u64,
    /// Entries of `kv_indptr` (batch + 1).
    pub indptr: u64,
    /// KV tokens over the batch (entries of `kv_indices` at page size 1).
    pub tokens: u64,
}

impl MlaDecodeDims {
    /// The sizes as the `int`s the reference kernel takes: (batch, heads, ckv_dim, pe_dim).
    pub fn as_i32(&self) -> Result<(i32, i32, i32, i32), ShapeError> {
        mul(&[self.pages, self.page_size, self.ckv_dim])?;
        mul(&[self.batch, self.heads, self.ckv_dim])?;
        Ok((
            to_i32(self.batch)?,
            to_i32(self.heads)?,
            to_i32(self.ckv_dim)?,
            to_i32(self.pe_dim)?,
        ))
    }
}

/// GDN prefill sizes: `batch` sequences packed along `tokens`, `heads` query/key heads shared
/// by `v_heads` value heads (each value head owns a state of `head_dim x head_dim`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GdnDims {
    pub batch: u64,
    pub heads: u64,
    pub v_heads: u64,
    pub head_dim: u64,
    /// Entries of `cu_seqlens` (batch + 1).
    pub indptr: u64,
    /// Tokens over the batch (rows of `q`, `k`, `v`).
    pub tokens: u64,
}

impl GdnDims {
    /// The sizes as the `int`s the reference kernel takes: (batch, heads, v_heads, head_dim).
    pub fn as_i32(&self) -> Result<(i32, i32, i32, i32), ShapeError> {
        mul(&[self.batch, self.v_heads, self.head_dim, self.head_dim])?;
        mul(&[self.tokens, self.v_heads, self.head_dim])?;
        to_i32(self.tokens)?;
        Ok((
            to_i32(self.batch)?,
            to_i32(self.heads)?,
            to_i32(self.v_heads)?,
            to_i32(self.head_dim)?,
        ))
    }
}

/// The op's sizes for one workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ProblemSize {
    Gemm(GemmDims),
    Attention(AttentionDims),
    Decode(DecodeDims),
    Prefill(PrefillDims),
    MlaDecode(MlaDecodeDims),
    Gdn(GdnDims),
}

impl ProblemSize {
    pub fn gemm(&self) -> Result<GemmDims, ShapeError> {
        match self {
            ProblemSize::Gemm(g) => Ok(*g),
            _ => Err(ShapeError::NoRole { role: Role::M }),
        }
    }

    pub fn attention(&self) -> Result<AttentionDims, ShapeError> {
        match self {
            ProblemSize::Attention(a) => Ok(*a),
            _ => Err(ShapeError::NoRole { role: Role::Seq }),
        }
    }

    pub fn prefill(&self) -> Result<PrefillDims, ShapeError> {
        match self {
            ProblemSize::Prefill(p) => Ok(*p),
            _ => Err(ShapeError::NoRole {
                role: Role::QoTokens,
            }),
        }
    }

    pub fn mla_decode(&self) -> Result<MlaDecodeDims, ShapeError> {
        match self {
            ProblemSize::MlaDecode(d) => Ok(*d),
            _ => Err(ShapeError::NoRole { role: Role::PeDim }),
        }
    }

    pub fn gdn(&self) -> Result<GdnDims, ShapeError> {
        match self {
            ProblemSize::Gdn(d) => Ok(*d),
            _ => Err(ShapeError::NoRole { role: Role::VHeads }),
        }
    }

    pub fn decode(&self) -> Result<DecodeDims, ShapeError> {
        match self {
            ProblemSize::Decode(d) => Ok(*d),
            _ => Err(ShapeError::NoRole {
                role: Role::KvTokens,
            }),
        }
    }
}

fn mul(factors: &[u64]) -> Result<u64, ShapeError> {
    factors
        .iter()
        .try_fold(1u64, |acc, f| acc.checked_mul(*f))
        .ok_or_else(|| ShapeError::Overflow {
            tensor: "(problem size)".into(),
        })
}

fn to_i32(v: u64) -> Result<i32, ShapeError> {
    i32::try_from(v).map_err(|_| ShapeError::TooLarge {
        what: "a problem dimension".into(),
        value: v,
        max: i32::MAX as u64,
    })
}

impl Task {
    /// The op's sizes for `w`, from the axis roles resolved at validation.
    pub fn problem(&self, w: &Workload) -> Result<ProblemSize, ShapeError> {
        self.problem_in(&self.bindings(w))
    }

    /// The op's sizes under explicit axis values.
    pub fn problem_in(&self, env: &Bindings) -> Result<ProblemSize, ShapeError> {
        let v = |r: Role| self.roles.value(r, env);
        Ok(match self.op {
            super::Op::Gemm { .. } | super::Op::GemmFp8 { .. } => ProblemSize::Gemm(GemmDims {
                m: v(Role::M)?,
                n: v(Role::N)?,
                k: v(Role::K)?,
            }),
            super::Op::AttentionDecode { .. } => ProblemSize::Decode(DecodeDims {
                batch: v(Role::Batch)?,
                heads: v(Role::Heads)?,
                kv_heads: v(Role::KvHeads)?,
                head_dim: v(Role::HeadDim)?,
                pages: v(Role::Pages)?,
                page_size: v(Role::PageSize)?,
                indptr: v(Role::Indptr)?,
                tokens: v(Role::KvTokens)?,
            }),
            super::Op::AttentionMlaDecode { .. } => ProblemSize::MlaDecode(MlaDecodeDims {
                batch: v(Role::Batch)?,
                heads: v(Role::Heads)?,
                ckv_dim: v(Role::HeadDim)?,
                pe_dim: v(Role::PeDim)?,
                pages: v(Role::Pages)?,
                page_size: v(Role::PageSize)?,
                indptr: v(Role::Indptr)?,
                tokens: v(Role::KvTokens)?,
            }),
            super::Op::GdnPrefill => ProblemSize::Gdn(GdnDims {
                batch: v(Role::Batch)?,
                heads: v(Role::Heads)?,
                v_heads: v(Role::VHeads)?,
                head_dim: v(Role::HeadDim)?,
                indptr: v(Role::Indptr)?,
                tokens: v(Role::QoTokens)?,
            }),
            super::Op::AttentionPrefill { paged, .. } => ProblemSize::Prefill(PrefillDims {
                heads: v(Role::Heads)?,
                kv_heads: v(Role::KvHeads)?,
                head_dim: v(Role::HeadDim)?,
                indptr: v(Role::Indptr)?,
                qo_tokens: v(Role::QoTokens)?,
                kv_tokens: v(Role::KvTokens)?,
                paged: if paged {
                    Some((v(Role::Pages)?, v(Role::PageSize)?))
                } else {
                    None
                },
            }),
            super::Op::AttentionFwd { .. }
            | super::Op::AttentionBwd { .. }
            | super::Op::AttentionFwdFp8 { .. } => ProblemSize::Attention(AttentionDims {
                batch: v(Role::Batch)?,
                heads: v(Role::Heads)?,
                seq: v(Role::Seq)?,
                head_dim: v(Role::HeadDim)?,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_resolve_axes_of_any_name_and_literals() {
        let roles = AxisRoles::new(vec![
            (Role::M, Extent::Axis("tokens".into())),
            (Role::N, Extent::Literal(128)),
            (Role::K, Extent::Axis("depth".into())),
        ]);
        let env: Bindings = [("tokens".to_string(), 70), ("depth".to_string(), 4096)]
            .into_iter()
            .collect();
        assert_eq!(roles.value(Role::M, &env), Ok(70));
        assert_eq!(roles.value(Role::N, &env), Ok(128));
        assert!(matches!(
            roles.value(Role::Seq, &env),
            Err(ShapeError::NoRole { role: Role::Seq })
        ));
        let unbound: Bindings = Bindings::new();
        assert!(matches!(
            roles.value(Role::M, &unbound),
            Err(ShapeError::Unbound { .. })
        ));
    }

    #[test]
    fn sizes_are_checked_not_wrapped() {
        let a = AttentionDims {
            batch: 4,
            heads: 48,
            seq: 4096,
            head_dim: 128,
        };
        assert_eq!(a.elements(), Ok(4 * 48 * 4096 * 128));
        assert_eq!(a.as_i32(), Ok((192, 4096, 128)));
        let huge = AttentionDims {
            batch: u64::MAX / 2,
            heads: 3,
            seq: 1,
            head_dim: 1,
        };
        assert!(matches!(huge.bh(), Err(ShapeError::Overflow { .. })));
        let wide = GemmDims {
            m: 1 << 31,
            n: 1,
            k: 1,
        };
        assert!(matches!(wide.as_i32(), Err(ShapeError::TooLarge { .. })));
    }
}
