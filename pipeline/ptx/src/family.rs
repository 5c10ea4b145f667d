//! Instruction families: architecture-specific instruction groups
//! (wgmma, TMA, mbarrier, tcgen05, ...) keyed by stable lowercase names.
//! [`family_of`] is a pure function of the opcode text; it never panics and
//! returns `None` for ordinary SIMT instructions.

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

/// A family of architecture-specific instructions. The lowercase name
/// ([`Family::as_str`]) is stable and is what `Serialize` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// `wgmma.*` (Hopper warpgroup MMA: fence, mma_async, commit_group, wait_group).
    Wgmma,
    /// Tensor-map bulk copies: `cp.async.bulk.tensor.*`,
    /// `cp.reduce.async.bulk.tensor.*`, `cp.async.bulk.prefetch.tensor.*`.
    Tma,
    /// Non-tensor bulk copies: other `cp.async.bulk.*` (including
    /// `cp.async.bulk.prefetch`, `commit_group`, `wait_group`) and
    /// `cp.reduce.async.bulk.*`.
    BulkCopy,
    /// `mbarrier.*`.
    Mbarrier,
    /// `setmaxnreg.*`.
    Setmaxnreg,
    /// `stmatrix.*`.
    Stmatrix,
    /// `ldmatrix.*`.
    Ldmatrix,
    /// `mma.*` (`mma.sync`, `mma.sp`).
    Mma,
    /// `wmma.*` (legacy warp-level matrix API).
    Wmma,
    /// Ampere `cp.async.ca/cg`, `cp.async.commit_group`,
    /// `cp.async.wait_group`, `cp.async.wait_all`, `cp.async.mbarrier.arrive`.
    CpAsync,
    /// Thread-block clusters: `barrier.cluster.*`, `mapa.*`, `getctarank.*`,
    /// and the distributed-shared-memory `st.async`/`red.async`.
    Cluster,
    /// `fence.proxy.async*`.
    FenceProxyAsync,
    /// `elect.sync`.
    Elect,
    /// `tcgen05.*` (Blackwell tensor memory: alloc, dealloc,
    /// relinquish_alloc_permit, mma, ld, st, cp, shift, commit, wait, fence).
    Tcgen05,
    /// `griddepcontrol.*` (programmatic dependent launch).
    Griddepcontrol,
    /// `multimem.*` (NVLink multicast memory).
    Multimem,
    /// `tensormap.*` and `fence.proxy.tensormap*` (on-device tensor-map edits).
    Tensormap,
}

/// The name given to [`Family::from_str`] is not a family.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown instruction family `{0}`")]
pub struct UnknownFamily(pub String);

impl Family {
    /// Every family, in declaration (and `Ord`) order.
    pub const ALL: [Family; 17] = [
        Family::Wgmma,
        Family::Tma,
        Family::BulkCopy,
        Family::Mbarrier,
        Family::Setmaxnreg,
        Family::Stmatrix,
        Family::Ldmatrix,
        Family::Mma,
        Family::Wmma,
        Family::CpAsync,
        Family::Cluster,
        Family::FenceProxyAsync,
        Family::Elect,
        Family::Tcgen05,
        Family::Griddepcontrol,
        Family::Multimem,
        Family::Tensormap,
    ];

    /// The stable lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Wgmma => "wgmma",
            Family::Tma => "tma",
            Family::BulkCopy => "bulk_copy",
            Family::Mbarrier => "mbarrier",
            Family::Setmaxnreg => "setmaxnreg",
            Family::Stmatrix => "stmatrix",
            Family::Ldmatrix => "ldmatrix",
            Family::Mma => "mma",
            Family::Wmma => "wmma",
            Family::CpAsync => "cp_async",
            Family::Cluster => "cluster",
            Family::FenceProxyAsync => "fence_proxy_async",
            Family::Elect => "elect",
            Family::Tcgen05 => "tcgen05",
            Family::Griddepcontrol => "griddepcontrol",
            Family::Multimem => "multimem",
            Family::Tensormap => "tensormap",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Family {
    type Err = UnknownFamily;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Family::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| UnknownFamily(s.to_string()))
    }
}

impl Serialize for Family {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The family an opcode belongs to, or `None` for ordinary instructions.
/// Matching is on the dotted components with any `::qualifier` removed
/// (`shared::cluster` -> `shared`), so `wgmmax.fence` is not `wgmma`.
pub fn family_of(opcode: &str) -> Option<Family> {
    let parts: Vec<&str> = opcode
        .split('.')
        .map(|p| p.split("::").next().unwrap_or(p))
        .collect();
    let at = |i: usize| parts.get(i).copied().unwrap_or("");
    let has = |w: &str| parts.iter().skip(1).any(|p| *p == w);
    match at(0) {
        "wgmma" => Some(Family::Wgmma),
        "mbarrier" => Some(Family::Mbarrier),
        "setmaxnreg" => Some(Family::Setmaxnreg),
        "stmatrix" => Some(Family::Stmatrix),
        "ldmatrix" => Some(Family::Ldmatrix),
        "mma" => Some(Family::Mma),
        "wmma" => Some(Family::Wmma),
        "elect" => Some(Family::Elect),
        "tcgen05" => Some(Family::Tcgen05),
        "griddepcontrol" => Some(Family::Griddepcontrol),
        "multimem" => Some(Family::Multimem),
        "tensormap" => Some(Family::Tensormap),
        "mapa" | "getctarank" => Some(Family::Cluster),
        "barrier" if at(1) == "cluster" => Some(Family::Cluster),
        "st" | "red" if at(1) == "async" => Some(Family::Cluster),
        "fence" if at(1) == "proxy" && at(2) == "async" => Some(Family::FenceProxyAsync),
        "fence" if at(1) == "proxy" && at(2) == "tensormap" => Some(Family::Tensormap),
        "cp" if at(1) == "async" && at(2) == "bulk" => {
            if has("tensor") {
                Some(Family::Tma)
            } else {
                Some(Family::BulkCopy)
            }
        }
        "cp" if at(1) == "reduce" && at(2) == "async" && at(3) == "bulk" => {
            if has("tensor") {
                Some(Family::Tma)
            } else {
                Some(Family::BulkCopy)
            }
        }
        "cp" if at(1) == "async" => Some(Family::CpAsync),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in Family::ALL {
            assert_eq!(f.as_str().parse::<Family>(), Ok(f));
            assert_eq!(f.to_string(), f.as_str());
        }
        assert!("nope".parse::<Family>().is_err());
    }

    #[test]
    fn classifies_opcodes() {
        let cases = [
            (
                "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
                Some(Family::Wgmma),
            ),
            ("wgmma.fence.sync.aligned", Some(Family::Wgmma)),
            (
                "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
                Some(Family::Tma),
            ),
            (
                "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group",
                Some(Family::Tma),
            ),
            (
                "cp.async.bulk.prefetch.tensor.2d.L2.global",
                Some(Family::Tma),
            ),
            (
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
                Some(Family::BulkCopy),
            ),
            ("cp.async.bulk.prefetch.L2.global", Some(Family::BulkCopy)),
            ("cp.async.bulk.commit_group", Some(Family::BulkCopy)),
            (
                "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32",
                Some(Family::BulkCopy),
            ),
            ("cp.async.cg.shared.global", Some(Family::CpAsync)),
            ("cp.async.ca.shared.global", Some(Family::CpAsync)),
            ("cp.async.commit_group", Some(Family::CpAsync)),
            ("cp.async.wait_group", Some(Family::CpAsync)),
            (
                "cp.async.mbarrier.arrive.noinc.shared.b64",
                Some(Family::CpAsync),
            ),
            (
                "mbarrier.try_wait.parity.shared::cta.b64",
                Some(Family::Mbarrier),
            ),
            ("setmaxnreg.inc.sync.aligned.u32", Some(Family::Setmaxnreg)),
            (
                "stmatrix.sync.aligned.x4.m8n8.shared.b16",
                Some(Family::Stmatrix),
            ),
            (
                "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                Some(Family::Ldmatrix),
            ),
            (
                "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                Some(Family::Mma),
            ),
            (
                "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32",
                Some(Family::Mma),
            ),
            (
                "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32",
                Some(Family::Wmma),
            ),
            (
                "barrier.cluster.arrive.release.aligned",
                Some(Family::Cluster),
            ),
            ("mapa.shared::cluster.u32", Some(Family::Cluster)),
            ("getctarank.shared::cluster.u32", Some(Family::Cluster)),
            (
                "st.async.shared::cluster.mbarrier::complete_tx::bytes.u32",
                Some(Family::Cluster),
            ),
            (
                "fence.proxy.async.shared::cta",
                Some(Family::FenceProxyAsync),
            ),
            ("fence.proxy.async", Some(Family::FenceProxyAsync)),
            (
                "fence.proxy.tensormap::generic.acquire.gpu",
                Some(Family::Tensormap),
            ),
            (
                "tensormap.replace.tile.global_address.global.b1024.b64",
                Some(Family::Tensormap),
            ),
            ("elect.sync", Some(Family::Elect)),
            (
                "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32",
                Some(Family::Tcgen05),
            ),
            ("tcgen05.wait::ld.sync.aligned", Some(Family::Tcgen05)),
            (
                "griddepcontrol.launch_dependents",
                Some(Family::Griddepcontrol),
            ),
            (
                "multimem.ld_reduce.relaxed.sys.global.add.f32",
                Some(Family::Multimem),
            ),
            ("ld.global.f32", None),
            ("bar.sync", None),
            ("barrier.sync", None),
            ("fence.sc.gpu", None),
            ("fence.mbarrier_init.release.cluster", None),
            ("cp", None),
            ("", None),
            ("wgmmax.fence", None),
        ];
        for (op, want) in cases {
            assert_eq!(family_of(op), want, "{op}");
        }
    }
}
