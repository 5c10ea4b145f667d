//! Instruction inventory: counts of instructions per [`Family`] and per
//! normalised opcode key, for a whole module or one function. Every
//! instruction of a body is counted, including those inside nested `{ }`
//! scopes (inline-asm blocks). Pure counting; never panics.
//!
//! # Opcode keys
//!
//! [`opcode_key`] maps a full dotted opcode to a short, stable key:
//!
//! 1. Components are compared with any `::qualifier` removed
//!    (`shared::cluster` -> `shared`, `wait::ld` -> `wait`).
//! 2. If a prefix of the components is listed in [`OPERATION_PATHS`] (the
//!    multi-part operation names such as `wgmma.mma_async`,
//!    `cp.async.bulk.tensor`, `mbarrier.try_wait`, `barrier.cluster.arrive`),
//!    the longest such prefix is the key.
//! 3. Otherwise, for the memory instructions `ld`, `ldu`, `st`, `atom`,
//!    `red`, `prefetch`, `prefetchu`, `cvta` and `isspacep`, the key is the
//!    mnemonic plus its state space if one is written (`ld.global`,
//!    `st.shared`, `atom.shared`, `cvta.to.global` -> `cvta.global`), and
//!    `ld.global.nc` keeps its `.nc`.
//! 4. Otherwise the key is the bare mnemonic (`add`, `mov`, `setp`, `bra`).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::family::{Family, family_of};
use crate::module::{Function, Instruction, Module};

/// Multi-component operation names used as opcode keys (see the module docs).
pub const OPERATION_PATHS: &[&str] = &[
    "wgmma.fence",
    "wgmma.mma_async",
    "wgmma.mma_async.sp",
    "wgmma.commit_group",
    "wgmma.wait_group",
    "mbarrier.init",
    "mbarrier.inval",
    "mbarrier.arrive",
    "mbarrier.arrive.expect_tx",
    "mbarrier.arrive_drop",
    "mbarrier.expect_tx",
    "mbarrier.complete_tx",
    "mbarrier.test_wait",
    "mbarrier.try_wait",
    "mbarrier.pending_count",
    "cp.async",
    "cp.async.commit_group",
    "cp.async.wait_group",
    "cp.async.wait_all",
    "cp.async.mbarrier.arrive",
    "cp.async.bulk",
    "cp.async.bulk.tensor",
    "cp.async.bulk.prefetch",
    "cp.async.bulk.prefetch.tensor",
    "cp.async.bulk.commit_group",
    "cp.async.bulk.wait_group",
    "cp.reduce.async.bulk",
    "cp.reduce.async.bulk.tensor",
    "tcgen05.alloc",
    "tcgen05.dealloc",
    "tcgen05.relinquish_alloc_permit",
    "tcgen05.mma",
    "tcgen05.mma.sp",
    "tcgen05.mma.ws",
    "tcgen05.cp",
    "tcgen05.shift",
    "tcgen05.ld",
    "tcgen05.st",
    "tcgen05.wait",
    "tcgen05.commit",
    "tcgen05.fence",
    "setmaxnreg.inc",
    "setmaxnreg.dec",
    "mma.sp",
    "wmma.load",
    "wmma.store",
    "wmma.mma",
    "barrier.cluster.arrive",
    "barrier.cluster.wait",
    "barrier.sync",
    "barrier.arrive",
    "barrier.red",
    "bar.sync",
    "bar.arrive",
    "bar.red",
    "bar.warp.sync",
    "fence.proxy.async",
    "fence.proxy.tensormap",
    "fence.proxy.alias",
    "fence.mbarrier_init",
    "griddepcontrol.wait",
    "griddepcontrol.launch_dependents",
    "tensormap.replace",
    "tensormap.cp_fenceproxy",
    "multimem.ld_reduce",
    "multimem.st",
    "multimem.red",
    "st.async",
    "red.async",
    "st.bulk",
    "clusterlaunchcontrol.try_cancel",
    "clusterlaunchcontrol.query_cancel",
];

const MEMORY_MNEMONICS: &[&str] = &[
    "ld",
    "ldu",
    "st",
    "atom",
    "red",
    "prefetch",
    "prefetchu",
    "cvta",
    "isspacep",
];

const STATE_SPACES: &[&str] = &["global", "shared", "local", "param", "const", "generic"];

/// The normalised opcode key of a full dotted opcode (see the module docs).
pub fn opcode_key(opcode: &str) -> String {
    let parts: Vec<&str> = opcode
        .split('.')
        .map(|p| p.split("::").next().unwrap_or(p))
        .collect();
    let mut best: Option<&str> = None;
    for path in OPERATION_PATHS {
        let n = path.split('.').count();
        let matches = parts.len() >= n && path.split('.').zip(parts.iter()).all(|(a, b)| a == *b);
        if matches && best.is_none_or(|b| b.len() < path.len()) {
            best = Some(path);
        }
    }
    if let Some(b) = best {
        return b.to_string();
    }
    let mnemonic = parts.first().copied().unwrap_or("");
    if MEMORY_MNEMONICS.contains(&mnemonic) {
        let rest = parts.get(1..).unwrap_or(&[]);
        if let Some(space) = rest.iter().find(|p| STATE_SPACES.contains(p)) {
            let nc = mnemonic == "ld" && rest.contains(&"nc");
            return format!("{mnemonic}.{space}{}", if nc { ".nc" } else { "" });
        }
    }
    mnemonic.to_string()
}

/// Instruction counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Inventory {
    /// Instructions per family; families with no instructions are absent.
    pub by_family: BTreeMap<Family, usize>,
    /// Instructions per [`opcode_key`].
    pub by_opcode: BTreeMap<String, usize>,
    /// All instructions counted.
    pub total: usize,
}

impl Inventory {
    /// Counts one more instruction.
    pub fn add(&mut self, ins: &Instruction) {
        self.total = self.total.saturating_add(1);
        if let Some(f) = family_of(&ins.opcode) {
            let c = self.by_family.entry(f).or_insert(0);
            *c = c.saturating_add(1);
        }
        let c = self.by_opcode.entry(opcode_key(&ins.opcode)).or_insert(0);
        *c = c.saturating_add(1);
    }

    /// Instructions of family `f` (0 when none).
    pub fn count(&self, f: Family) -> usize {
        self.by_family.get(&f).copied().unwrap_or(0)
    }

    /// Instructions with opcode key `key` (0 when none).
    pub fn opcode_count(&self, key: &str) -> usize {
        self.by_opcode.get(key).copied().unwrap_or(0)
    }

    /// Whether any instruction of family `f` is present.
    pub fn has(&self, f: Family) -> bool {
        self.count(f) > 0
    }

    /// The families present, in `Family` order.
    pub fn families(&self) -> impl Iterator<Item = Family> + '_ {
        self.by_family.keys().copied()
    }
}

/// Counts every instruction of every function in the module.
pub fn inventory(m: &Module) -> Inventory {
    let mut inv = Inventory::default();
    m.instructions().for_each(|i| inv.add(i));
    inv
}

/// Counts the instructions of one function.
pub fn function_inventory(f: &Function) -> Inventory {
    let mut inv = Inventory::default();
    f.instructions.iter().for_each(|i| inv.add(i));
    inv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcode_keys() {
        let cases = [
            (
                "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
                "wgmma.mma_async",
            ),
            (
                "wgmma.mma_async.sp.sync.aligned.m64n128k32.f32.bf16.bf16",
                "wgmma.mma_async.sp",
            ),
            ("wgmma.wait_group.sync.aligned", "wgmma.wait_group"),
            (
                "mbarrier.try_wait.parity.shared::cta.b64",
                "mbarrier.try_wait",
            ),
            (
                "mbarrier.arrive.expect_tx.shared::cta.b64",
                "mbarrier.arrive.expect_tx",
            ),
            ("mbarrier.arrive.shared::cta.b64", "mbarrier.arrive"),
            (
                "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
                "cp.async.bulk.tensor",
            ),
            (
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
                "cp.async.bulk",
            ),
            ("cp.async.bulk.prefetch.L2.global", "cp.async.bulk.prefetch"),
            ("cp.async.cg.shared.global", "cp.async"),
            ("cp.async.wait_group", "cp.async.wait_group"),
            ("tcgen05.wait::ld.sync.aligned", "tcgen05.wait"),
            ("tcgen05.fence::after_thread_sync", "tcgen05.fence"),
            ("tcgen05.mma.cta_group::1.kind::f16", "tcgen05.mma"),
            ("setmaxnreg.inc.sync.aligned.u32", "setmaxnreg.inc"),
            (
                "barrier.cluster.arrive.release.aligned",
                "barrier.cluster.arrive",
            ),
            ("bar.warp.sync", "bar.warp.sync"),
            ("bar.sync", "bar.sync"),
            ("ld.global.f32", "ld.global"),
            ("ld.global.nc.f32", "ld.global.nc"),
            ("ld.volatile.shared::cta.u32", "ld.shared"),
            ("ld.param.u64", "ld.param"),
            ("ld.u32", "ld"),
            ("st.shared.v4.f32", "st.shared"),
            ("atom.global.add.f32", "atom.global"),
            ("cvta.to.global.u64", "cvta.global"),
            (
                "st.async.shared::cluster.mbarrier::complete_tx::bytes.u32",
                "st.async",
            ),
            ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "mma"),
            ("add.s32", "add"),
            ("setp.ne.s32", "setp"),
            ("stmatrix.sync.aligned.x4.m8n8.shared.b16", "stmatrix"),
            ("call.uni", "call"),
            ("ret", "ret"),
            ("", ""),
        ];
        for (op, want) in cases {
            assert_eq!(opcode_key(op), want, "{op}");
        }
    }
}
