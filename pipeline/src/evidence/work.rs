//! The arithmetic a kernel does *outside* the target families, counted in the same spliced copy
//! as the target instructions ([`super::splice::splice_counting_work`]).
//!
//! Counting target MMA FLOPs alone cannot tell work from decoration: a SIMT GEMM that also
//! runs enough wgmma on tiles it then ignores reaches any MMA share. So the copy also counts,
//! per thread, every instruction outside the target families that is not pure data movement,
//! control or synchronisation ([`NO_ARITHMETIC`]): floating-point and integer arithmetic,
//! logic, comparisons, conversions, special functions, computing atomics, and the MMA
//! instructions that are not a target family (at their dense shape's FLOPs over the threads
//! that issue them); an opcode it does not know counts 1, never 0. Weights in
//! [`flops_per_thread`]. "Correct on target" then also requires that these stay a small share
//! of the task's FLOPs ([`crate::record::ON_TARGET_OTHER_SHARE`]): a real wgmma GEMM does an
//! epilogue's worth (under 1%), a real attention kernel its softmax (a few %).
//!
//! How: each function body with such an instruction declares `%ptxbench_work` (`.u64`, zeroed
//! on entry); each counted instruction is preceded, in place and under its own guard, by an
//! `add.u64` of its per-thread FLOPs; before every `ret`, `exit` and `call` (a callee may
//! `exit`) and before the body's closing brace the register is added to the function's slot of
//! `ptxbench_work_counters` and zeroed. A register add per instruction and one atomic per
//! thread and return keeps the copy fast enough for a SIMT kernel's billions of FMAs, where an
//! atomic per instruction would not be.
//!
//! What it does not see: `cp.reduce.async.bulk` (its size is a register) and the arithmetic
//! inside instructions of the target families.

use ptxbench_ptx::{Family, Module};
use serde::{Deserialize, Serialize};

use super::sites::counted;

/// The symbol of the other-arithmetic counter array (one slot per counted function).
pub const WORK_SYMBOL: &str = "ptxbench_work_counters";
/// The register each counted function accumulates its FLOPs in.
pub const WORK_REGISTER: &str = "%ptxbench_work";

/// Where the counted copy keeps its other-arithmetic FLOPs: slot `i` of `symbol` holds the
/// FLOPs `functions[i]` did (summed over threads); `sites` instructions were instrumented.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkCounters {
    pub symbol: String,
    pub functions: Vec<String>,
    pub sites: u64,
}

/// Instructions that do no arithmetic on data: moves, memory, control, synchronisation, and
/// the asynchronous copy and matrix-movement machinery. Every other opcode is counted: the
/// arithmetic, conversion and special-function ones at their weight in [`flops_per_thread`],
/// and any opcode in neither list at 1 per thread, never as free (integrity v4).
pub const NO_ARITHMETIC: &[&str] = &[
    "ld",
    "ldu",
    "st",
    "mov",
    "cvta",
    "isspacep",
    "prefetch",
    "prefetchu",
    "bra",
    "brx",
    "call",
    "ret",
    "exit",
    "bar",
    "barrier",
    "membar",
    "fence",
    "mbarrier",
    "cp",
    "shfl",
    "vote",
    "match",
    "activemask",
    "elect",
    "nanosleep",
    "trap",
    "brkpt",
    "pmevent",
    "griddepcontrol",
    "setmaxnreg",
    "stmatrix",
    "ldmatrix",
    "movmatrix",
    "tensormap",
    "getctarank",
    "mapa",
    "clusterlaunchcontrol",
    "discard",
    "applypriority",
    "createpolicy",
    "alloca",
    "stacksave",
    "stackrestore",
];

/// The operations one thread does in one execution of `opcode`, if it is arithmetic the copy
/// counts; `None` only for the instructions of [`NO_ARITHMETIC`] (and the non-arithmetic parts
/// of the MMA families). The weights (the methodology page has them as a table):
///
/// | instruction | weight per thread |
/// |---|---|
/// | floating-point `fma`/`mad` (f16, bf16, f32, f64) | 2 per lane (`x2` packs: 2 lanes) |
/// | integer `mad`/`mad24`/`mad.wide` | 2 |
/// | `dp4a` / `dp2a` | 8 / 4 |
/// | `red`/`atom` that compute (`add`, `min`, `max`, `inc`, `dec`, `and`, `or`, `xor`) | 1 per lane and vector element |
/// | `mma.sync`, `mma.sp`, `wmma.mma` (any shape) | 2·M·N·K / 32 |
/// | `wgmma.mma_async` where wgmma is not a target family | 2·M·N·K / 128 |
/// | every other arithmetic, logic, comparison, conversion or special-function instruction (`add`, `sub`, `mul`, `div`, `rem`, `rcp`, `sqrt`, `rsqrt`, `ex2`, `lg2`, `sin`, `cos`, `tanh`, `min`, `max`, `abs`, `neg`, shifts, `and`/`or`/`xor`/`lop3`, `bfe`/`bfi`/`prmt`, `popc`/`clz`, `setp`/`set`/`selp`/`slct`, `cvt`, `redux`, ...) | 1 per lane (`x2` packs: 2) |
/// | any opcode in neither list | 1 |
///
/// Integer arithmetic is counted although address arithmetic is made of it: a tensor-core
/// kernel does a few integer operations per tile, a kernel that does its GEMM in integers, or
/// by reciprocals and conversions, does them per element.
pub fn flops_per_thread(opcode: &str) -> Option<u64> {
    let parts: Vec<&str> = opcode.split('.').collect();
    let mnemonic = *parts.first()?;
    let float_lanes = parts.iter().skip(1).find_map(|p| match *p {
        "f16" | "bf16" | "f32" | "f64" | "e4m3" | "e5m2" | "f8" => Some(1),
        "f16x2" | "bf16x2" | "f32x2" | "e4m3x2" | "e5m2x2" => Some(2),
        _ => None,
    });
    // The lanes of a packed operation (`x2`, `x4` anywhere in the type), else one.
    let lanes = parts
        .iter()
        .skip(1)
        .filter_map(|p| p.rsplit_once('x').and_then(|(_, n)| n.parse::<u64>().ok()))
        .max()
        .unwrap_or(1)
        .max(float_lanes.unwrap_or(1));
    if NO_ARITHMETIC.contains(&mnemonic) {
        return None;
    }
    match mnemonic {
        "fma" => Some(2 * lanes),
        "mad" | "mad24" => Some(if float_lanes.is_some() { 2 * lanes } else { 2 }),
        "red" | "atom" => {
            let computes = parts.iter().any(|p| {
                matches!(
                    *p,
                    "add" | "min" | "max" | "inc" | "dec" | "and" | "or" | "xor"
                )
            });
            if !computes {
                return None;
            }
            let vector = parts
                .iter()
                .find_map(|p| p.strip_prefix('v').and_then(|n| n.parse::<u64>().ok()))
                .unwrap_or(1);
            Some(lanes * vector)
        }
        "mma" => warp_mma_flops(opcode).or(Some(1)),
        "wmma" if parts.get(1) == Some(&"mma") => warp_mma_flops(opcode).or(Some(1)),
        // The matrix fragments' loads and stores move data.
        "wmma" => None,
        "wgmma" if parts.get(1) == Some(&"mma_async") => super::sites::wgmma_flops(opcode)
            .map(|f| (f / 128.0).round() as u64)
            .or(Some(1)),
        // fence, commit_group, wait_group.
        "wgmma" => None,
        // Tensor memory allocation, copies and waits move data; an MMA outside the targets is
        // counted, at 1 (its shape is in the instruction descriptor, not the opcode).
        "tcgen05" => (parts.get(1) == Some(&"mma")).then_some(1),
        "dp4a" => Some(8),
        "dp2a" => Some(4),
        _ => Some(lanes),
    }
}

/// A warp-wide MMA's 2 * M * N * K over its 32 threads.
fn warp_mma_flops(opcode: &str) -> Option<u64> {
    let flops = super::sites::wgmma_flops(opcode)?;
    Some((flops / 32.0).round() as u64)
}

/// Adds the other-arithmetic counting of the module's function bodies (at the parser's byte
/// spans) to `inserts` (offset, text), skipping instructions of the target families in `order`
/// (they are counted as target sites).
pub(super) fn splice_work(
    module: &Module,
    order: &[Family],
    inserts: &mut Vec<(usize, String)>,
) -> WorkCounters {
    let reg = WORK_REGISTER;
    let mut counters = WorkCounters {
        symbol: WORK_SYMBOL.into(),
        functions: Vec::new(),
        sites: 0,
    };
    // Per-thread FLOPs of an instruction the copy counts here (target instructions are counted
    // as target sites instead).
    let weight = |opcode: &str| {
        if order.iter().any(|f| counted(*f, opcode)) {
            None
        } else {
            flops_per_thread(opcode)
        }
    };
    for f in &module.functions {
        let Some(body) = &f.body else { continue };
        let weighed: Vec<Option<u64>> = f.instructions.iter().map(|i| weight(&i.opcode)).collect();
        if weighed.iter().all(Option::is_none) {
            continue;
        }
        let slot = format!("[{WORK_SYMBOL}+{}]", 8 * counters.functions.len());
        counters.functions.push(f.name.clone());
        // On the line of the opening brace, so the copy keeps the original's line numbers.
        inserts.push((body.start, format!(" .reg .u64 {reg}; mov.u64 {reg}, 0;")));
        for (i, w) in f.instructions.iter().zip(&weighed) {
            let guard = i
                .predicate
                .as_ref()
                .map(|p| format!("@{p} "))
                .unwrap_or_default();
            if let Some(w) = w {
                counters.sites += 1;
                inserts.push((i.start, format!("{guard}add.u64 {reg}, {reg}, {w}; ")));
            }
            let mnemonic = i.opcode.split('.').next().unwrap_or("");
            if matches!(mnemonic, "ret" | "exit" | "call") {
                inserts.push((
                    i.start,
                    format!("{guard}red.global.add.u64 {slot}, {reg}; {guard}mov.u64 {reg}, 0; "),
                ));
            }
        }
        inserts.push((body.end, format!("red.global.add.u64 {slot}, {reg}; ")));
    }
    counters
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_counts_and_how_much() {
        let cases: [(&str, Option<u64>); 24] = [
            ("fma.rn.f32", Some(2)),
            ("fma.rn.ftz.sat.f32", Some(2)),
            ("fma.rn.bf16x2", Some(4)),
            ("fma.rn.f32x2", Some(4)),
            ("mad.rn.f64", Some(2)),
            ("mul.rn.f32", Some(1)),
            ("add.f16x2", Some(2)),
            ("sub.ftz.f32", Some(1)),
            ("red.global.add.f32", Some(1)),
            ("red.global.v4.f32.add", Some(4)),
            ("atom.global.add.noftz.bf16x2", Some(2)),
            // 2 * 16 * 8 * 16 = 4096 FLOPs per warp, 128 per thread.
            (
                "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                Some(128),
            ),
            ("wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32", Some(256)),
            ("dp4a.s32.s32", Some(8)),
            ("mad.lo.s32", Some(2)),
            ("mad.wide.u32", Some(2)),
            ("mul.wide.u32", Some(1)),
            ("mul24.lo.s32", Some(1)),
            ("red.global.add.u32", Some(1)),
            ("atom.global.v2.add.s32", Some(2)),
            ("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", Some(256)),
            ("ex2.approx.ftz.f32", Some(1)),
            ("wmma.load.a.sync.aligned.row.m16n16k16.global.f16", None),
            ("ld.global.v4.u32", None),
        ];
        for (opcode, want) in cases {
            assert_eq!(flops_per_thread(opcode), want, "{opcode}");
        }
    }

    /// Integrity v4, class 3: division, reciprocals, conversions and integer adds were free,
    /// so a SIMT GEMM done with `div.approx` by a reciprocal and `cvt`/`add.s64` counted as no
    /// work beside an ignored wgmma. Every arithmetic, conversion and special-function opcode
    /// now has a weight, and an opcode the table does not know counts, never as free.
    #[test]
    fn issue_57_no_arithmetic_is_free() {
        for opcode in [
            "div.approx.f32",
            "div.full.f32",
            "div.rn.f64",
            "rcp.approx.ftz.f32",
            "rcp.rn.f64",
            "sqrt.approx.f32",
            "rsqrt.approx.f32",
            "lg2.approx.f32",
            "sin.approx.f32",
            "tanh.approx.f32",
            "cvt.rn.f32.s32",
            "cvt.rzi.s32.f32",
            "cvt.rn.bf16.f32",
            "add.s64",
            "add.s32",
            "sub.u32",
            "shl.b32",
            "shr.u64",
            "and.b32",
            "xor.b32",
            "lop3.b32",
            "bfe.u32",
            "prmt.b32",
            "popc.b32",
            "max.f32",
            "min.s32",
            "abs.f32",
            "neg.f32",
            "setp.lt.f32",
            "selp.f32",
            "redux.sync.add.s32",
            "copysign.f32",
            "some.future.opcode",
        ] {
            assert!(
                flops_per_thread(opcode).is_some_and(|w| w >= 1),
                "{opcode} must count"
            );
        }
        assert_eq!(flops_per_thread("cvt.rn.bf16x2.f32"), Some(2), "two lanes");
        // wgmma outside the targets: 2 * 64 * 128 * 16 over 128 threads.
        assert_eq!(
            flops_per_thread("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"),
            Some(2048)
        );
        for free in [
            "ld.global.nc.v4.u32",
            "st.shared.u32",
            "mov.b32",
            "bra.uni",
            "bar.sync",
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
            "mbarrier.try_wait.parity.shared::cta.b64",
            "shfl.sync.bfly.b32",
            "atom.global.exch.b32",
            "atom.global.cas.b32",
            "wgmma.fence.sync.aligned",
            "stmatrix.sync.aligned.m8n8.x4.shared.b16",
        ] {
            assert_eq!(flops_per_thread(free), None, "{free} moves data");
        }
    }
}
