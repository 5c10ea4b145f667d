//! The arithmetic a kernel does *outside* the target families, counted in the same spliced copy
//! as the target instructions ([`super::splice::splice_counting_work`]).
//!
//! Counting target MMA FLOPs alone cannot tell work from decoration: a SIMT GEMM that also
//! runs enough wgmma on tiles it then ignores reaches any MMA share. So the copy also counts,
//! per thread, the operations of every floating-point `fma`/`mad`/`add`/`sub`/`mul` (scalar
//! or packed), integer multiplies and multiply-adds, `red`/`atom` adds, `dp4a`/`dp2a`, and
//! the MMA instructions that are not a target family (`mma.sync`, `mma.sp`, `wmma.mma`, at
//! their dense shape's FLOPs over the 32 threads of a warp); weights in [`flops_per_thread`]. "Correct on target" then also requires that these stay a small share
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
//! What it does not see: integer adds and shifts (address arithmetic is made of them),
//! transcendentals (`ex2`, `lg2`), and `cp.reduce.async.bulk` (its size is a register).

use ptxbench_ptx::{Family, Module};
use serde::{Deserialize, Serialize};

use super::splice::{Body, SpliceError, counted};

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

/// The operations one thread does in one execution of `opcode`, if it is arithmetic the copy
/// counts; `None` for everything else. The weights (the methodology page has them as a table):
///
/// | instruction | weight per thread |
/// |---|---|
/// | floating-point `fma`/`mad` (f16, bf16, f32, f64) | 2 per lane (`x2` packs: 2 lanes) |
/// | floating-point `add`/`sub`/`mul` | 1 per lane |
/// | integer `mad`/`mad24`/`mad.wide` | 2 |
/// | integer `mul`/`mul24`/`mul.wide` | 1 |
/// | `dp4a` / `dp2a` | 8 / 4 |
/// | `red`/`atom` `.add` (float or integer) | 1 per lane and vector element |
/// | `mma.sync`, `mma.sp`, `wmma.mma` (any shape) | 2·M·N·K / 32 |
///
/// Integer multiplies are counted although address arithmetic uses them: a tensor-core kernel
/// does a few per tile, a kernel that does its GEMM in integers does them per element.
pub fn flops_per_thread(opcode: &str) -> Option<u64> {
    let parts: Vec<&str> = opcode.split('.').collect();
    let float_lanes = parts.iter().skip(1).find_map(|p| match *p {
        "f16" | "bf16" | "f32" | "f64" => Some(1),
        "f16x2" | "bf16x2" | "f32x2" => Some(2),
        _ => None,
    });
    let integer = parts.iter().skip(1).any(|p| {
        matches!(
            *p,
            "u16" | "u32" | "u64" | "s16" | "s32" | "s64" | "b16" | "b32" | "b64"
        )
    });
    match parts.first().copied()? {
        "fma" => float_lanes.map(|l| 2 * l),
        "mad" | "mad24" => float_lanes.map(|l| 2 * l).or(integer.then_some(2)),
        "mul" | "mul24" => float_lanes.or(integer.then_some(1)),
        "add" | "sub" => float_lanes,
        "red" | "atom" if parts.contains(&"add") => {
            let vector = parts
                .iter()
                .find_map(|p| p.strip_prefix('v').and_then(|n| n.parse::<u64>().ok()))
                .unwrap_or(1);
            float_lanes.or(integer.then_some(1)).map(|l| l * vector)
        }
        "mma" => warp_mma_flops(opcode),
        "wmma" if parts.get(1) == Some(&"mma") => warp_mma_flops(opcode),
        "dp4a" => Some(8),
        "dp2a" => Some(4),
        _ => None,
    }
}

/// A warp-wide MMA's 2 * M * N * K over its 32 threads.
fn warp_mma_flops(opcode: &str) -> Option<u64> {
    let flops = super::sites::wgmma_flops(opcode)?;
    Some((flops / 32.0).round() as u64)
}

/// Adds the other-arithmetic counting of `bodies` (the module's function bodies, in order) to
/// `inserts` (offset, text), skipping instructions of the target families in `order` (they are
/// counted as target sites).
pub(super) fn splice_work(
    module: &Module,
    bodies: &[Body],
    order: &[Family],
    inserts: &mut Vec<(usize, String)>,
) -> Result<WorkCounters, SpliceError> {
    let with_body: Vec<&ptxbench_ptx::Function> =
        module.functions.iter().filter(|f| f.has_body).collect();
    if with_body.len() != bodies.len() {
        return Err(SpliceError::Bodies {
            expected: with_body.len() as u64,
            found: bodies.len() as u64,
        });
    }
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
    for (f, body) in with_body.iter().zip(bodies) {
        // The scanner must see every instruction the parser sees that the count depends on
        // (an arithmetic instruction or a return it missed would be uncounted work).
        let parsed =
            |keep: &dyn Fn(&str) -> bool| f.instructions.iter().filter(|i| keep(&i.opcode)).count();
        let scanned = |keep: &dyn Fn(&str) -> bool| {
            body.statements.iter().filter(|s| keep(&s.opcode)).count()
        };
        let arithmetic = |o: &str| weight(o).is_some();
        let leaves = |o: &str| matches!(o.split('.').next(), Some("ret" | "exit" | "call"));
        for keep in [&arithmetic as &dyn Fn(&str) -> bool, &leaves] {
            let (expected, found) = (parsed(keep), scanned(keep));
            if expected != found {
                return Err(SpliceError::WorkMismatch {
                    function: f.name.clone(),
                    expected: expected as u64,
                    found: found as u64,
                });
            }
        }
        let weighed: Vec<Option<u64>> = body.statements.iter().map(|s| weight(&s.opcode)).collect();
        if weighed.iter().all(Option::is_none) {
            continue;
        }
        let slot = format!("[{WORK_SYMBOL}+{}]", 8 * counters.functions.len());
        counters.functions.push(f.name.clone());
        // On the line of the opening brace, so the copy keeps the original's line numbers.
        inserts.push((body.open, format!(" .reg .u64 {reg}; mov.u64 {reg}, 0;")));
        for (s, w) in body.statements.iter().zip(&weighed) {
            let guard = s
                .predicate
                .as_ref()
                .map(|p| format!("@{p} "))
                .unwrap_or_default();
            if let Some(w) = w {
                counters.sites += 1;
                inserts.push((s.at, format!("{guard}add.u64 {reg}, {reg}, {w}; ")));
            }
            let mnemonic = s.opcode.split('.').next().unwrap_or("");
            if matches!(mnemonic, "ret" | "exit" | "call") {
                inserts.push((
                    s.at,
                    format!("{guard}red.global.add.u64 {slot}, {reg}; {guard}mov.u64 {reg}, 0; "),
                ));
            }
        }
        inserts.push((body.close, format!("red.global.add.u64 {slot}, {reg}; ")));
    }
    Ok(counters)
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
            // Integer multiplies count (a GEMM done in integers), adds do not (addresses).
            ("mad.lo.s32", Some(2)),
            ("mad.wide.u32", Some(2)),
            ("mul.wide.u32", Some(1)),
            ("mul24.lo.s32", Some(1)),
            ("red.global.add.u32", Some(1)),
            ("atom.global.v2.add.s32", Some(2)),
            ("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", Some(256)),
            ("add.s32", None),
            ("ex2.approx.ftz.f32", None),
            ("wmma.load.a.sync.aligned.row.m16n16k16.global.f16", None),
        ];
        for (opcode, want) in cases {
            assert_eq!(flops_per_thread(opcode), want, "{opcode}");
        }
        assert_eq!(flops_per_thread("shl.b32"), None);
        assert_eq!(flops_per_thread("max.f32"), None);
    }
}
