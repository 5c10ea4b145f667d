//! The front end must never panic or hang: arbitrary strings, PTX-like token
//! soup, mutated real fixtures (truncated, lines deleted, duplicated or
//! repeated up to a megabyte, random bytes inserted) and large or deeply
//! nested modules go through `parse`, and every successfully parsed module
//! through `inventory`, `function_inventory`, `safety_issues` and the
//! size/call helpers. A panic anywhere fails the test; so does a case that
//! gives no answer within [`CASE_LIMIT`]. Errors must carry a position inside
//! the input. Inputs are at most [`MAX_INPUT`] bytes.
//!
//! Time budget: the case counts of [`config`] keep this file under 20 s in a
//! debug build on a 2-core machine; `PROPTEST_CASES=N` runs N cases of every
//! property instead.

use std::sync::mpsc;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use ptxbench_ptx::{function_inventory, inventory, parse, safety_issues};

/// How long one case may take before it counts as a hang. Parsing and taking
/// the inventory of [`MAX_FLOOD`] bytes of instructions takes about a second
/// in a debug build on an idle 2-core machine; the margin is for a machine
/// busy with other work.
const CASE_LIMIT: Duration = Duration::from_secs(10);

/// The largest generated input, in bytes.
const MAX_INPUT: usize = 1 << 20;

/// The largest input that repeated lines or declarations grow to.
const MAX_FLOOD: usize = 256 << 10;

/// `cases` cases, unless `PROPTEST_CASES` says otherwise; no failure files
/// written into the source tree.
fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        failure_persistence: None,
        max_shrink_iters: 512,
        ..ProptestConfig::default()
    }
}

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

/// [`exercise_now`] on a thread of its own, awaited for at most [`CASE_LIMIT`].
fn exercise(src: &str) {
    assert!(src.len() <= MAX_INPUT, "inputs are bounded");
    let owned = src.to_string();
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        exercise_now(&owned);
        let _ = tx.send(());
    });
    match rx.recv_timeout(CASE_LIMIT) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Timeout) => panic!(
            "no answer within {CASE_LIMIT:?} (a hang) for {} bytes starting {:?}",
            src.len(),
            src.chars().take(200).collect::<String>()
        ),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(payload) = handle.join() {
                std::panic::resume_unwind(payload);
            }
        }
    }
}

/// Everything a caller might do with a parse result.
fn exercise_now(src: &str) {
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
    /// Repeat a line up to `.1` times, up to [`MAX_FLOOD`] bytes in all.
    Flood(usize, u16),
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
        Mutation::Flood(i, times) => {
            let i = i % n;
            let line = lines.get(i).copied().unwrap_or("");
            let room = MAX_FLOOD.saturating_sub(src.len()) / (line.len() + 1);
            let mut out: Vec<&str> = lines.clone();
            for _ in 0..usize::from(*times).min(room) {
                out.insert(i, line);
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

/// Modules that are large or deep where a parser might recurse, scan
/// quadratically or allocate by a declared size: nested blocks, long
/// identifiers and numbers, many parameters, instructions and declarations,
/// huge array lengths and alignments.
fn large_module() -> impl Strategy<Value = String> {
    let header = ".version 8.7\n.target sm_90a\n.address_size 64\n";
    prop_oneof![
        (1usize..60_000).prop_map(move |d| format!(
            "{header}.visible .entry k()\n{{\n{}ret;\n{}}}\n",
            "{\n".repeat(d),
            "}\n".repeat(d)
        )),
        (1usize..200_000).prop_map(move |d| format!(
            "{header}.visible .entry k()\n{}\n",
            "{".repeat(d)
        )),
        (1usize..200_000).prop_map(move |n| format!(
            "{header}.visible .entry {}()\n{{\nret;\n}}\n",
            "k".repeat(n)
        )),
        (1usize..10_000).prop_map(move |n| {
            let params: Vec<String> = (0..n).map(|i| format!(".param .u64 p{i}")).collect();
            format!(
                "{header}.visible .entry k(\n{}\n)\n{{\nret;\n}}\n",
                params.join(",\n")
            )
        }),
        (1usize..10_000).prop_map(move |n| format!(
            "{header}.visible .entry k()\n{{\n.reg .b32 %r<{n}>;\n{}ret;\n}}\n",
            "add.s32 %r1, %r1, 1;\n".repeat(n)
        )),
        (
            prop::sample::select(&["0", "1", "3", "4294967295", "4294967296", "18446744073709551615", "99999999999999999999999"][..]),
            prop::sample::select(&["0", "1", "7", "4294967296", "18446744073709551615", "99999999999999999999"][..]),
        )
            .prop_map(move |(align, len)| format!(
                "{header}.global .align {align} .b8 g[{len}];\n.visible .entry k(.param .align {align} .b8 p[{len}])\n{{\n.shared .align {align} .b8 s[{len}];\n.reg .b32 %r<{len}>;\nret;\n}}\n"
            )),
    ]
}

proptest! {
    #![proptest_config(config(512))]

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

proptest! {
    #![proptest_config(config(32))]

    #[test]
    fn large_and_deep_modules_do_not_panic_or_hang(src in large_module()) {
        exercise(&src);
    }

    #[test]
    fn flooded_fixtures_do_not_panic_or_hang(
        which in 0..FIXTURES.len(),
        line in any::<usize>(),
        times in any::<u16>(),
        muts in prop::collection::vec(mutation(), 0..3),
    ) {
        let src = FIXTURES.get(which).copied().unwrap_or("");
        let mut src = apply(src, &Mutation::Flood(line, times));
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
            exercise_now(src.get(..floor_boundary(src, end)).unwrap_or(""));
        }
    }
}

#[test]
fn fixtures_parse_unmutated() {
    for src in FIXTURES {
        assert!(parse(src).is_ok());
    }
}
