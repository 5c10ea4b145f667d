//! The front end must never panic: arbitrary strings, PTX-like token soup
//! and mutated real fixtures (truncated, lines deleted or duplicated,
//! random bytes inserted) go through `parse`, and every successfully parsed
//! module through `inventory`, `function_inventory`, `safety_issues` and the
//! size/call helpers. A panic anywhere fails the test. Errors must carry a
//! position inside the input.

use proptest::prelude::*;
use ptxbench_ptx::{function_inventory, inventory, parse, safety_issues};

const FIXTURES: &[&str] = &[
    include_str!("fixtures/gemm_simt_bf16.sm_90a.ptx"),
    include_str!("fixtures/hopper_wgmma_tma.sm_90a.ptx"),
    include_str!("fixtures/blackwell_tcgen05.sm_100a.ptx"),
    include_str!("fixtures/ampere_mma.sm_80.ptx"),
    include_str!("fixtures/printf_kernel.sm_90a.ptx"),
    include_str!("fixtures/noinline_call.sm_90a.ptx"),
    include_str!("fixtures/device_launch_cdp.sm_90a.ptx"),
    include_str!("fixtures/device_launch_handwritten.ptx"),
    include_str!("fixtures/undefined_call.ptx"),
];

const TOKENS: &[&str] = &[
    ".version",
    "9.0",
    "9",
    "8.7",
    ".target",
    "sm_90a",
    "sm_100a",
    "debug",
    ",",
    ".address_size",
    "64",
    ".visible",
    ".extern",
    ".weak",
    ".entry",
    ".func",
    "k",
    "f",
    "(",
    ")",
    "{",
    "}",
    ";",
    ":",
    ".param",
    ".reg",
    ".u64",
    ".u32",
    ".b8",
    ".b32",
    ".f32",
    ".pred",
    ".texref",
    "[",
    "]",
    "[]",
    "128",
    "0x10",
    "99999999999999999999999",
    ".align",
    ".ptr",
    ".global",
    ".shared",
    ".const",
    ".local",
    ".v4",
    ".attribute",
    ".managed",
    "%r",
    "<",
    ">",
    "%r1",
    "%rd1",
    "%p1",
    "@",
    "!",
    "bra",
    "L1",
    "$L__BB0_1",
    "call.uni",
    "call",
    "vprintf",
    "malloc",
    "cudaLaunchDeviceV2",
    "__cudaCDP2LaunchDeviceV2",
    "retval0",
    "param0",
    "=",
    ".maxntid",
    ".reqntid",
    ".explicitcluster",
    ".reqnctapercluster",
    ".pragma",
    "\"nounroll\"",
    "\"",
    "/*",
    "*/",
    "//",
    "\n",
    ".section",
    ".debug_info",
    ".file",
    ".loc",
    "@@DWARF",
    "prototype_0",
    ".callprototype",
    "_",
    "wgmma.fence.sync.aligned",
    "mbarrier.try_wait.parity.shared::cta.b64",
    "cp.async.bulk.tensor.2d.shared::cluster.global",
    "tcgen05.alloc.cta_group::1",
    "::",
    ".",
    "+",
    "-",
    "é",
    "\u{0}",
    "\t",
];

/// Everything a caller might do with a parse result.
fn exercise(src: &str) {
    match parse(src) {
        Ok(m) => {
            let inv = inventory(&m);
            assert_eq!(inv.total, m.instructions().count());
            let _ = safety_issues(&m);
            for f in &m.functions {
                let _ = function_inventory(f);
                let _ = (f.param_bytes(), f.static_shared_bytes());
                for p in f.params.iter().chain(&f.returns) {
                    let _ = (p.size_bytes(), p.alignment());
                }
                for i in &f.instructions {
                    let _ = (i.call_target(), i.family(), i.mnemonic());
                }
                for d in &f.declarations {
                    let _ = d.size_bytes();
                }
            }
            for d in &m.globals {
                let _ = d.size_bytes();
            }
            let _ = m.entries().count();
        }
        Err(e) => {
            let lines = u32::try_from(src.split('\n').count()).unwrap_or(u32::MAX);
            assert!(
                e.line >= 1 && e.line <= lines,
                "line {} outside 1..={lines}: {e}",
                e.line
            );
            assert!(e.column >= 1, "{e}");
            assert!(!e.message.is_empty());
        }
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[derive(Debug, Clone)]
enum Mutation {
    Truncate(usize),
    DeleteLine(usize),
    DuplicateLine(usize),
    InsertBytes(usize, Vec<u8>),
    ReplaceChar(usize, char),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(a, b)| Mutation::InsertBytes(a, b)),
        (
            any::<usize>(),
            prop::sample::select(vec![
                '{', '}', '(', ')', ';', '"', '/', '*', '@', '.', ':', ' ', '\n'
            ])
        )
            .prop_map(|(a, c)| Mutation::ReplaceChar(a, c)),
    ]
}

fn apply(src: &str, m: &Mutation) -> String {
    let lines: Vec<&str> = src.split('\n').collect();
    let n = lines.len().max(1);
    match m {
        Mutation::Truncate(at) => {
            let at = floor_boundary(src, at % (src.len() + 1));
            src.get(..at).unwrap_or("").to_string()
        }
        Mutation::DeleteLine(i) => {
            let i = i % n;
            lines
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, l)| *l)
                .collect::<Vec<_>>()
                .join("\n")
        }
        Mutation::DuplicateLine(i) => {
            let i = i % n;
            let mut out: Vec<&str> = lines.clone();
            if let Some(l) = lines.get(i) {
                out.insert(i, l);
            }
            out.join("\n")
        }
        Mutation::InsertBytes(at, bytes) => {
            let at = floor_boundary(src, at % (src.len() + 1));
            let mut b = src.as_bytes().to_vec();
            b.splice(at..at, bytes.iter().copied());
            String::from_utf8_lossy(&b).into_owned()
        }
        Mutation::ReplaceChar(at, c) => {
            let at = floor_boundary(src, at % (src.len() + 1));
            let mut s = src.to_string();
            if let Some(old) = s.get(at..).and_then(|r| r.chars().next()) {
                s.replace_range(at..at + old.len_utf8(), &c.to_string());
            }
            s
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_strings_do_not_panic(s in any::<String>()) {
        exercise(&s);
    }

    #[test]
    fn arbitrary_bytes_do_not_panic(b in prop::collection::vec(any::<u8>(), 0..512)) {
        exercise(&String::from_utf8_lossy(&b));
    }

    #[test]
    fn token_soup_does_not_panic(
        toks in prop::collection::vec((prop::sample::select(TOKENS), prop::sample::select(vec!["", " ", "\n"])), 0..120)
    ) {
        let src: String = toks.iter().flat_map(|(t, sep)| [*t, *sep]).collect();
        exercise(&src);
        exercise(&format!(".version 9.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{{\n{src}\n}}\n"));
    }

    #[test]
    fn mutated_fixtures_do_not_panic(
        which in 0..FIXTURES.len(),
        muts in prop::collection::vec(mutation(), 1..6),
    ) {
        let mut src = FIXTURES.get(which).copied().unwrap_or("").to_string();
        for m in &muts {
            src = apply(&src, m);
        }
        exercise(&src);
    }
}

/// Every prefix of the small fixtures, and every 17th prefix of the large ones.
#[test]
fn every_prefix_of_the_fixtures_does_not_panic() {
    for src in FIXTURES {
        let stride = if src.len() < 4096 { 1 } else { 17 };
        for end in (0..=src.len()).step_by(stride) {
            exercise(src.get(..floor_boundary(src, end)).unwrap_or(""));
        }
    }
}

#[test]
fn fixtures_parse_unmutated() {
    for src in FIXTURES {
        assert!(parse(src).is_ok());
    }
}
