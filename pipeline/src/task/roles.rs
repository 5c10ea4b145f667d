//! What each dimension of an op means (its role), where a role's extent comes from, and the
//! error of a shape that cannot be sized. The task model and the problem sizes both read them.

use serde::Serialize;

use crate::expr::Bindings;

/// Why a tensor's size cannot be computed for a workload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error("tensor `{tensor}`: axis `{axis}` has no value in this workload")]
    Unbound { tensor: String, axis: String },
    #[error("tensor `{tensor}`: axis `{axis}` = {value} is not positive")]
    NotPositive {
        tensor: String,
        axis: String,
        value: i64,
    },
    #[error("tensor `{tensor}`: size overflows 64 bits")]
    Overflow { tensor: String },
    #[error("the op has no `{}` dimension", role.as_str())]
    NoRole { role: Role },
    #[error("{what} is {value}, more than {max}")]
    TooLarge { what: String, value: u64, max: u64 },
}

/// The meaning of one dimension of an op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    M,
    N,
    K,
    Batch,
    Heads,
    Seq,
    HeadDim,
    KvHeads,
    Pages,
    PageSize,
    Indptr,
    KvTokens,
    QoTokens,
    PeDim,
    VHeads,
}

impl Role {
    /// The role of a signature letter (`m`, `n`, `k`, `b`, `h`, `s`, `d`).
    pub(crate) fn from_letter(letter: &str) -> Option<Role> {
        Some(match letter {
            "m" => Role::M,
            "n" => Role::N,
            "k" => Role::K,
            "b" => Role::Batch,
            "h" => Role::Heads,
            "s" => Role::Seq,
            "d" => Role::HeadDim,
            "kv_heads" => Role::KvHeads,
            "pages" => Role::Pages,
            "page_size" => Role::PageSize,
            "indptr" => Role::Indptr,
            "tokens" => Role::KvTokens,
            "q_tokens" => Role::QoTokens,
            "d_pe" => Role::PeDim,
            "v_heads" => Role::VHeads,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::M => "m",
            Role::N => "n",
            Role::K => "k",
            Role::Batch => "batch",
            Role::Heads => "heads",
            Role::Seq => "seq",
            Role::HeadDim => "head_dim",
            Role::KvHeads => "kv_heads",
            Role::Pages => "pages",
            Role::PageSize => "page_size",
            Role::Indptr => "indptr",
            Role::KvTokens => "kv_tokens",
            Role::QoTokens => "qo_tokens",
            Role::PeDim => "pe_dim",
            Role::VHeads => "v_heads",
        }
    }
}

/// Where a role's extent comes from: a declared axis, or a literal dimension in a shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Extent {
    Axis(String),
    Literal(u64),
}

/// The roles of a validated task's op. Invariant (kept by validation): every role its op's
/// signature names is present exactly once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AxisRoles(Vec<(Role, Extent)>);

impl AxisRoles {
    pub(crate) fn new(mut roles: Vec<(Role, Extent)>) -> AxisRoles {
        roles.sort_by_key(|(r, _)| *r);
        roles.dedup_by_key(|(r, _)| *r);
        AxisRoles(roles)
    }

    pub fn extent(&self, role: Role) -> Option<&Extent> {
        self.0.iter().find(|(r, _)| *r == role).map(|(_, e)| e)
    }

    /// The value of `role` under `env`.
    pub fn value(&self, role: Role, env: &Bindings) -> Result<u64, ShapeError> {
        let extent = self.extent(role).ok_or(ShapeError::NoRole { role })?;
        match extent {
            Extent::Literal(v) => Ok(*v),
            Extent::Axis(name) => {
                let v = *env.get(name).ok_or_else(|| ShapeError::Unbound {
                    tensor: format!("({} of the op)", role.as_str()),
                    axis: name.clone(),
                })?;
                u64::try_from(v)
                    .ok()
                    .filter(|v| *v > 0)
                    .ok_or_else(|| ShapeError::NotPositive {
                        tensor: format!("({} of the op)", role.as_str()),
                        axis: name.clone(),
                        value: v,
                    })
            }
        }
    }
}
