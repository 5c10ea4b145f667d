//! Dynamic evidence without a profiler: a copy of the candidate's PTX with an atomic counter
//! increment spliced in front of every target instruction.
//!
//! The copy declares `.visible .global .align 8 .u64 ptxbench_evidence_counters[N];` (one
//! counter per counted instruction *site*, in [`Spliced::site_info`] order, so the work each
//! site does can be weighed by its count) after the module header, and puts
//! `red.global.add.u64 [ptxbench_evidence_counters+8*i], 1;` on the same line just before each
//! counted instruction, after its labels and with its guard predicate (`@%p2 cp.async...`
//! becomes `@%p2 red...; @%p2 cp.async...`). Because the increment is written in place, it sits
//! in the instruction's own `{ }` scope (inline asm), so a predicate declared there is in scope;
//! it addresses the counter array by symbol, so it needs no register and no kernel parameter.
//!
//! # What it proves, and what it does not
//! - It proves that, in the copy, the PTX instruction was *reached with a true guard* by that
//!   many threads (the count is thread-level: a warpgroup's `wgmma.mma_async` adds 128).
//! - It does not prove that ptxas emitted the target SASS opcode for it (it could lower the
//!   instruction differently, or the copy could compile differently from the original): pair it
//!   with the SASS inventory of the *original* cubin, as [`super::status::assess`] does.
//! - Control flow that depends on timing (spin loops on mbarriers) may take a different path
//!   in the copy; the extra atomics perturb timing, so timed runs use the unmodified PTX.
//!
//! # How the engine reads the counters back
//! Load the spliced module, then `cuModuleGetGlobal(module, "ptxbench_evidence_counters")`
//! gives the array's device pointer and size (`8 * families_in_order.len()` bytes); zero it
//! (`cuMemsetD8`) before the launches to count, run them, synchronize, and copy the array down
//! (`cuMemcpyDtoH`): element `i` is the count of `families_in_order[i]`. Feed the counts to
//! [`super::status::ExecutedCounts::Families`] with `DynamicMethod::SplicedCounters`.

use std::collections::BTreeMap;

use super::sites::counted;
use ptxbench_ptx::{Family, ParseError};

/// The symbol of the counter array in the spliced copy.
pub const COUNTER_SYMBOL: &str = "ptxbench_evidence_counters";

/// The spliced copy of a module.
#[derive(Debug, Clone, PartialEq)]
pub struct Spliced {
    pub ptx: String,
    /// The `.global .u64` array to read back (see the module docs).
    pub counter_symbol: String,
    /// Counter `i` counts `families_in_order[i]`.
    pub families_in_order: Vec<Family>,
    /// How many instructions were instrumented per family (same order).
    pub sites: Vec<u64>,
    /// Counter `i` counts site `site_info[i]`.
    pub site_info: Vec<super::sites::CountedSite>,
    /// The other-arithmetic counters, when asked for ([`splice_counting_work`]).
    pub work: Option<super::work::WorkCounters>,
    /// The in-bounds bytes of the tile-mode TMA loads, when there are any
    /// ([`super::in_bounds`]).
    pub tma_bytes: Option<super::in_bounds::TmaBytes>,
}

impl Spliced {
    /// The counter array read back as bytes (little-endian u64s), summed per family name.
    pub fn counts_from_bytes(&self, bytes: &[u8]) -> BTreeMap<String, u64> {
        let mut out: BTreeMap<String, u64> = self
            .families_in_order
            .iter()
            .map(|f| (f.as_str().to_string(), 0))
            .collect();
        for (site, b) in self.site_info.iter().zip(bytes.chunks_exact(8)) {
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            *out.entry(site.family.clone()).or_default() += u64::from_le_bytes(w);
        }
        out
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpliceError {
    #[error("no family to count")]
    NoFamilies,
    #[error("the PTX does not parse: {0}")]
    Parse(ParseError),
    #[error("the PTX already defines `{0}`")]
    SymbolTaken(String),
    #[error("no `.address_size` or `.target` directive to declare the counters after")]
    NoHeader,
    #[error(
        "splicing found {found} `{family}` instructions where the parser counts {expected}; refusing a copy that would miscount"
    )]
    Mismatch {
        family: Family,
        expected: u64,
        found: u64,
    },
    #[error(
        "counting other arithmetic in {function}: the spliced copy has {found} additions where {expected} were inserted; refusing a copy that would miscount"
    )]
    WorkMismatch {
        function: String,
        expected: u64,
        found: u64,
    },
    #[error("the spliced copy does not parse: {0}")]
    Reparse(ParseError),
}

/// One instruction found by the scanner.
struct Site {
    /// Byte offset of the instruction (its `@` guard, else its opcode).
    at: usize,
    predicate: Option<String>,
    /// Index of its family in the splice's order.
    family: usize,
    opcode: String,
}

/// Produces the instrumented copy of `ptx` counting `families` (duplicates ignored).
pub fn splice(ptx: &str, families: &[Family]) -> Result<Spliced, SpliceError> {
    splice_inner(ptx, families, false)
}

/// [`splice`], and also the FLOPs each thread does in arithmetic outside the target families
/// (see [`super::work`]): the copy the engine runs for tasks that require an MMA family.
pub fn splice_counting_work(ptx: &str, families: &[Family]) -> Result<Spliced, SpliceError> {
    splice_inner(ptx, families, true)
}

fn splice_inner(ptx: &str, families: &[Family], count_work: bool) -> Result<Spliced, SpliceError> {
    let mut order: Vec<Family> = Vec::new();
    for f in families {
        if !order.contains(f) {
            order.push(*f);
        }
    }
    if order.is_empty() {
        return Err(SpliceError::NoFamilies);
    }
    let module = ptxbench_ptx::parse(ptx).map_err(SpliceError::Parse)?;
    for taken in [
        COUNTER_SYMBOL,
        super::work::WORK_SYMBOL,
        super::work::WORK_REGISTER,
        super::in_bounds::BYTES_SYMBOL,
        super::in_bounds::SHAPE_SYMBOL,
        super::in_bounds::REGISTER,
    ] {
        if ptx.contains(taken) {
            return Err(SpliceError::SymbolTaken(taken.into()));
        }
    }
    let expected: Vec<u64> = order
        .iter()
        .map(|f| {
            module
                .instructions()
                .filter(|i| counted(*f, &i.opcode))
                .count() as u64
        })
        .collect();

    let sites = scan(&module, &order);
    let mut found = vec![0u64; order.len()];
    for s in &sites {
        found[s.family] += 1;
    }
    for (i, f) in order.iter().enumerate() {
        if found[i] != expected[i] {
            return Err(SpliceError::Mismatch {
                family: *f,
                expected: expected[i],
                found: found[i],
            });
        }
    }

    // The parser's counted instructions, in text order, describe the scanner's sites.
    let described: Vec<(Family, &ptxbench_ptx::Function, &ptxbench_ptx::Instruction)> = module
        .functions
        .iter()
        .flat_map(|f| f.instructions.iter().map(move |i| (f, i)))
        .filter_map(|(f, i)| {
            order
                .iter()
                .find(|fam| counted(**fam, &i.opcode))
                .map(|fam| (*fam, f, i))
        })
        .collect();
    let mut site_info = Vec::with_capacity(sites.len());
    // Each readable tile-mode TMA load's coordinates, by site index.
    let mut load_coords: Vec<(usize, Vec<String>)> = Vec::new();
    for (index, (s, (fam, f, i))) in sites.iter().zip(&described).enumerate() {
        if order[s.family] != *fam || s.opcode != i.opcode {
            return Err(SpliceError::Mismatch {
                family: *fam,
                expected: described.len() as u64,
                found: sites.len() as u64,
            });
        }
        let info = super::sites::describe(*fam, f, i);
        if info.direction == Some(super::sites::Direction::Load)
            && let Some(c) = super::in_bounds::coordinates(&i.opcode, &i.operands)
        {
            load_coords.push((index, c));
        }
        site_info.push(info);
    }
    if site_info.len() != sites.len() {
        return Err(SpliceError::Mismatch {
            family: order[0],
            expected: described.len() as u64,
            found: sites.len() as u64,
        });
    }

    let header_end = header_end(ptx).ok_or(SpliceError::NoHeader)?;
    let mut out = String::with_capacity(ptx.len() + sites.len() * 64 + 128);
    let mut last = 0usize;
    let mut declaration = format!(
        "\n.visible .global .align 8 .u64 {COUNTER_SYMBOL}[{}];",
        sites.len().max(1)
    );
    let mut inserts: Vec<(usize, String)> = Vec::new();
    let work = count_work.then(|| super::work::splice_work(&module, &order, &mut inserts));
    if let Some(w) = &work {
        declaration.push_str(&format!(
            " .visible .global .align 8 .u64 {}[{}];",
            w.symbol,
            w.functions.len().max(1)
        ));
    }
    let tma_bytes = (!load_coords.is_empty()).then(|| super::in_bounds::TmaBytes {
        symbol: super::in_bounds::BYTES_SYMBOL.into(),
        shape_symbol: super::in_bounds::SHAPE_SYMBOL.into(),
        sites: load_coords.iter().map(|(i, _)| *i).collect(),
    });
    if tma_bytes.is_some() {
        declaration.push_str(&super::in_bounds::declarations(load_coords.len()));
    }
    inserts.push((header_end, declaration));
    let guard_of = |s: &Site| {
        s.predicate
            .as_ref()
            .map(|p| format!("@{p} "))
            .unwrap_or_default()
    };
    for (slot, (index, coords)) in load_coords.iter().enumerate() {
        let s = &sites[*index];
        inserts.push((s.at, super::in_bounds::block(slot, coords, &guard_of(s))));
    }
    for (index, s) in sites.iter().enumerate() {
        let guard = guard_of(s);
        inserts.push((
            s.at,
            format!(
                "{guard}red.global.add.u64 [{COUNTER_SYMBOL}+{}], 1; ",
                8 * index
            ),
        ));
    }
    // Stable: at one offset, what was added first comes first.
    inserts.sort_by_key(|(at, _)| *at);
    for (at, text) in inserts {
        out.push_str(&ptx[last..at]);
        out.push_str(&text);
        last = at;
    }
    out.push_str(&ptx[last..]);

    let copy = ptxbench_ptx::parse(&out).map_err(SpliceError::Reparse)?;
    let added = copy
        .instructions()
        .filter(|i| i.mnemonic() == "red" && i.operands.contains(COUNTER_SYMBOL))
        .count();
    if added != sites.len() {
        return Err(SpliceError::Mismatch {
            family: order[0],
            expected: sites.len() as u64,
            found: added as u64,
        });
    }
    let byte_adds = copy
        .instructions()
        .filter(|i| i.mnemonic() == "red" && i.operands.contains(super::in_bounds::BYTES_SYMBOL))
        .count();
    if byte_adds != load_coords.len() {
        return Err(SpliceError::Mismatch {
            family: Family::Tma,
            expected: load_coords.len() as u64,
            found: byte_adds as u64,
        });
    }
    if let Some(w) = &work {
        let reg = super::work::WORK_REGISTER;
        let adds = copy
            .instructions()
            .filter(|i| i.mnemonic() == "add" && i.operands.starts_with(reg))
            .count() as u64;
        if adds != w.sites {
            return Err(SpliceError::WorkMismatch {
                function: "the whole copy".into(),
                expected: w.sites,
                found: adds,
            });
        }
    }
    Ok(Spliced {
        ptx: out,
        counter_symbol: COUNTER_SYMBOL.into(),
        families_in_order: order,
        sites: found,
        site_info,
        work,
        tma_bytes,
    })
}

/// Byte offset just after the `.address_size` directive (else `.target`) line.
pub(super) fn header_end(ptx: &str) -> Option<usize> {
    let mut offset = 0usize;
    let mut target_end = None;
    for line in ptx.split_inclusive('\n') {
        let t = line.trim_start();
        let end = offset + line.trim_end_matches(['\n', '\r']).len();
        if t.starts_with(".address_size") {
            return Some(end);
        }
        if t.starts_with(".target") && target_end.is_none() {
            target_end = Some(end);
        }
        if t.starts_with(".visible") || t.starts_with(".entry") || t.starts_with(".func") {
            break;
        }
        offset += line.len();
    }
    target_end
}

/// The counted instructions, from the parser's byte spans, in text order.
fn scan(module: &ptxbench_ptx::Module, order: &[Family]) -> Vec<Site> {
    module
        .functions
        .iter()
        .filter(|f| f.body.is_some())
        .flat_map(|f| &f.instructions)
        .filter_map(|i| {
            let family = order.iter().position(|fam| counted(*fam, &i.opcode))?;
            Some(Site {
                at: i.start,
                predicate: i.predicate.clone(),
                family,
                opcode: i.opcode.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = ".version 8.0\n.target sm_90a\n.address_size 64\n\n\
.visible .entry k(.param .u64 p)\n.maxntid 128, 1, 1\n{\n\
  .reg .pred %p<2>;\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n\
  // wgmma.mma_async in a comment is not counted;\n\
  wgmma.fence.sync.aligned;\n\
$L1:\n  @!%p1 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r1];\n\
  {\n  .reg .pred p;\n  setp.ne.b32 p, %r1, 0;\n\
  wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%r0, %r1, %r2, %r3}, %rd1, %rd2, p, 1, 1, 0, 0;\n  }\n\
  wgmma.commit_group.sync.aligned;\n  ret;\n}\n";

    #[test]
    fn splices_in_place_with_predicates_and_labels() {
        let s = splice(PTX, &[Family::Wgmma, Family::Tma, Family::Wgmma]).expect("splices");
        assert_eq!(s.families_in_order, vec![Family::Wgmma, Family::Tma]);
        assert_eq!(s.sites, vec![1, 1]);
        assert!(s.ptx.contains(
            ".address_size 64\n.visible .global .align 8 .u64 ptxbench_evidence_counters[2]; \
             .visible .global .align 8 .u64 ptxbench_evidence_tma_bytes[1]; \
             .visible .global .align 8 .s64 ptxbench_evidence_tma_shape[16];\n"
        ));
        // The TMA load's in-bounds bytes, from its two coordinates, then its count.
        let at = s
            .ptx
            .find("$L1:\n  { .reg .s64 %ptxbench_tb<7>;")
            .expect("block");
        let line = &s.ptx[at + 5..at + 5 + s.ptx[at + 5..].find('\n').expect("line")];
        assert!(line.contains("cvt.s64.s32 %ptxbench_tb1, %r2;"), "{line}");
        assert!(line.contains("cvt.s64.s32 %ptxbench_tb1, %r3;"), "{line}");
        assert!(line.contains(
            "@!%p1 red.global.add.u64 [ptxbench_evidence_tma_bytes+0], %ptxbench_tb0; } \
             @!%p1 red.global.add.u64 [ptxbench_evidence_counters+0], 1; @!%p1 cp.async"
        ));
        let tma = s.tma_bytes.as_ref().expect("the load is counted");
        assert_eq!(tma.sites, vec![0]);
        assert!(
            s.ptx
                .contains("red.global.add.u64 [ptxbench_evidence_counters+8], 1; wgmma.mma_async")
        );
        assert!(!s.ptx.contains("1; wgmma.fence"));
        assert!(!s.ptx.contains("1; wgmma.commit"));
        // Line numbers of the original are kept after the declaration's line.
        assert_eq!(s.ptx.lines().count(), PTX.lines().count() + 1);
    }

    #[test]
    fn counters_read_back_in_order() {
        let s = splice(PTX, &[Family::Tma, Family::Wgmma]).expect("splices");
        let mut bytes = 5u64.to_le_bytes().to_vec();
        bytes.extend(128u64.to_le_bytes());
        // Counters are per site, in text order: the TMA copy, then the wgmma.
        let c = s.counts_from_bytes(&bytes);
        assert_eq!(c.get("tma"), Some(&5));
        assert_eq!(c.get("wgmma"), Some(&128));
        assert_eq!(
            s.site_info[1].flops_per_execution,
            Some(2.0 * 64.0 * 8.0 * 16.0)
        );
        assert_eq!(s.site_info[1].threads_per_execution, 128);
        assert_eq!(s.site_info[0].function, "k");
    }

    #[test]
    fn refusals() {
        assert_eq!(splice(PTX, &[]), Err(SpliceError::NoFamilies));
        assert!(matches!(
            splice("garbage {", &[Family::Wgmma]),
            Err(SpliceError::Parse(_))
        ));
        let taken = PTX.replace(
            ".address_size 64\n",
            ".address_size 64\n.global .u64 ptxbench_evidence_counters[1];\n",
        );
        assert!(matches!(
            splice(&taken, &[Family::Wgmma]),
            Err(SpliceError::SymbolTaken(_))
        ));
        // A family with no instruction is spliced with zero sites (its counter stays 0).
        let s = splice(PTX, &[Family::Tcgen05]).expect("splices");
        assert_eq!(s.sites, vec![0]);
    }

    /// A SIMT loop beside a wgmma, a predicated FMA in an inline scope, an early predicated
    /// `ret`, a call, instructions behind `.loc` lines (as Triton writes them), and a `.func`
    /// that does arithmetic and `exit`s.
    const WORK_PTX: &str = ".version 8.0\n.target sm_90a\n.address_size 64\n\n\
.func helper(.param .b32 x)\n{\n  .reg .f32 %h<2>;\n  mul.f32 %h1, %h0, %h0;\n  exit;\n}\n\
.visible .entry k(.param .u64 p)\n{\n\
  .reg .pred %p<2>;\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n  .reg .f32 %f<4>;\n\
  @%p1 ret;\n\
$LOOP:\n  .loc 1 7 2\n  fma.rn.f32 %f1, %f2, %f3, %f1;\n  mad.lo.s32 %r1, %r2, %r3, %r1;\n\
  {\n  .reg .pred q;\n  setp.ne.b32 q, %r1, 0;\n  @q add.rn.bf16x2 %r0, %r1, %r2;\n  }\n\
  .loc 1 8 2\n  // an operand in braces after a .loc line\n\
  wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f0, %f1, %f2, %f3}, %rd1, %rd2, 1, 1, 1, 0, 0;\n\
  mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f0, %f1, %f2, %f3}, {%r0, %r1, %r2, %r3}, {%r0, %r1}, {%f0, %f1, %f2, %f3};\n\
  @%p0 bra $LOOP;\n  call helper, (%r1);\n  .loc 1 10 4\n  ret;\n}\n";

    #[test]
    fn the_work_copy_counts_other_arithmetic_per_function() {
        let s = splice_counting_work(WORK_PTX, &[Family::Wgmma]).expect("splices");
        let w = s.work.as_ref().expect("work counted");
        assert_eq!(w.functions, ["helper", "k"]);
        // mul (helper), fma, the integer mad, the setp, the packed add and the mma.sync (k);
        // not the wgmma (a target site, found behind its `.loc` line).
        assert_eq!(w.sites, 6);
        assert!(
            s.ptx
                .contains("add.u64 %ptxbench_work, %ptxbench_work, 1; setp.ne.b32")
        );
        assert_eq!(s.sites, vec![1]);
        let t = &s.ptx;
        assert!(t.contains("[1]; .visible .global .align 8 .u64 ptxbench_work_counters[2];\n"));
        assert!(
            t.contains("{ .reg .u64 %ptxbench_work; mov.u64 %ptxbench_work, 0;\n  .reg .f32 %h")
        );
        assert!(t.contains("add.u64 %ptxbench_work, %ptxbench_work, 1; mul.f32"));
        assert!(t.contains(
            "$LOOP:\n  .loc 1 7 2\n  add.u64 %ptxbench_work, %ptxbench_work, 2; fma.rn.f32"
        ));
        assert!(t.contains(".loc 1 10 4\n  red.global.add.u64 [ptxbench_work_counters+8]"));
        assert!(t.contains("@q add.u64 %ptxbench_work, %ptxbench_work, 2; @q add.rn.bf16x2"));
        assert!(t.contains("%ptxbench_work, 2; mad.lo"));
        assert!(t.contains("%ptxbench_work, 128; mma.sync"));
        assert!(
            t.contains("red.global.add.u64 [ptxbench_evidence_counters+0], 1; wgmma.mma_async")
        );
        // The helper flushes to slot 0 before it exits, the kernel to slot 1 before each ret
        // (under the guard) and before the call.
        assert!(t.contains(
            "red.global.add.u64 [ptxbench_work_counters+0], %ptxbench_work; mov.u64 %ptxbench_work, 0; exit;"
        ));
        assert!(t.contains(
            "@%p1 red.global.add.u64 [ptxbench_work_counters+8], %ptxbench_work; @%p1 mov.u64 %ptxbench_work, 0; @%p1 ret;"
        ));
        assert!(t.contains("%ptxbench_work, 0; call helper"));
        assert_eq!(
            t.matches("red.global.add.u64 [ptxbench_work_counters+8]")
                .count(),
            4
        );
        assert_eq!(
            t.matches("red.global.add.u64 [ptxbench_evidence_counters")
                .count(),
            1
        );
        assert_eq!(t.lines().count(), WORK_PTX.lines().count() + 1);
        // Without the work count, the copy is the plain one.
        let plain = splice(WORK_PTX, &[Family::Wgmma]).expect("splices");
        assert!(plain.work.is_none() && !plain.ptx.contains("ptxbench_work"));
        let taken = WORK_PTX.replace("%h<2>", "%h<2>; .reg .u64 %ptxbench_work");
        assert!(matches!(
            splice_counting_work(&taken, &[Family::Wgmma]),
            Err(SpliceError::SymbolTaken(_))
        ));
    }

    #[test]
    fn what_is_counted() {
        assert!(counted(
            Family::Wgmma,
            "wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.bf16.bf16"
        ));
        assert!(!counted(Family::Wgmma, "wgmma.wait_group.sync.aligned"));
        assert!(counted(
            Family::Tma,
            "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group"
        ));
        assert!(!counted(
            Family::Tma,
            "cp.async.bulk.prefetch.tensor.2d.L2.global"
        ));
        assert!(counted(
            Family::Tcgen05,
            "tcgen05.ld.sync.aligned.32x32b.x8.b32"
        ));
        assert!(counted(
            Family::Tcgen05,
            "tcgen05.mma.cta_group::1.kind::f16"
        ));
        assert!(!counted(
            Family::Tcgen05,
            "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64"
        ));
        assert!(counted(
            Family::Mbarrier,
            "mbarrier.try_wait.parity.shared::cta.b64"
        ));
    }
}
