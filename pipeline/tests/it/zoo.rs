//! The committed GPU evidence keeps its promises: every zoo member and every known-bad kernel
//! got the verdict its run list expects; no SIMT zoo member earns "correct with arch"; the
//! token wgmma + TMA member does by the paper's definition but not "correct on target"; the
//! output caches do not pay; and the positive control (Triton's TMA + wgmma GEMM) does, on
//! every task.

use ptxbench::evidence::EvidenceStatus;
use ptxbench::record::{ON_TARGET_BYTE_SHARE, ON_TARGET_MMA_SHARE, ON_TARGET_OTHER_SHARE, Verdict};
use ptxbench::runner::list::RunList;

use crate::published::{Published, results};
use crate::root;

/// Zoo members whose target instructions really run on every workload: the token member (one
/// m64n8k16 per CTA), the ignored and integer wgmma members (K/64 of them per CTA), the
/// reference GEMM with L2 evict_last hints, and the decode whose TMA boxes lie mostly outside
/// the cache (the decode requires TMA only).
const WGMMA_RUNS: [&str; 5] = [
    "zoo-token-wgmma-tma",
    "zoo-ignored-wgmma",
    "zoo-integer-wgmma",
    "zoo-evict-last-wgmma",
    "zoo-oob-tma-decode",
];

/// Published records whose verdict differs from what their run list expects, each with the
/// reason it was accepted. Reviewed by hand: the test fails if any other record deviates.
///
/// None at present. An earlier engine run had one: Triton's TMA GEMM on `gemm_n5376_k21504`
/// (K = 21,504) broke suite 1.1.0's `|d| <= 0.01 + 0.01 |ref|` by one of 47.5M outputs of one
/// checked timed launch, as tensor-core accumulation at this K can without any fault; suite
/// 1.2.0 scales the atol of the large-K GEMM tasks with K (tasks/generate.py), and the
/// republished run is correct there.
const KNOWN_DEVIATIONS: [(&str, &str, &str, Verdict); 0] = [];

fn known_deviation(run: &str, r: &Published) -> Option<Verdict> {
    KNOWN_DEVIATIONS
        .iter()
        .find(|(k_run, e, t, _)| *k_run == run && *e == r.evaluation && *t == r.record.task)
        .map(|d| d.3)
}

fn member<'a>(zoo: &'a [Published], name: &str) -> Vec<&'a Published> {
    let v: Vec<&Published> = zoo.iter().filter(|r| r.evaluation == name).collect();
    assert!(!v.is_empty(), "no published record of {name}");
    v
}

#[test]
fn every_expected_verdict_was_met_on_the_h200() {
    for run in [
        "zoo-sm90a",
        "engine-sm90a",
        "reference-sm90a",
        "multigpu-sm90a",
        "suite-v2-sm90a",
    ] {
        let rs = results(run);
        let (list, _) =
            RunList::load(&root().join(format!("tasks/runs/{run}.yaml"))).expect("run list");
        for e in &list.evaluations {
            let want = e
                .expect
                .expect("every committed evaluation says what it expects");
            let mine: Vec<_> = rs.iter().filter(|r| r.evaluation == e.name).collect();
            assert!(!mine.is_empty(), "{run}: no published record of {}", e.name);
            for r in mine {
                let want = known_deviation(run, r).unwrap_or(want);
                assert_eq!(r.record.verdict, want, "{run}: {}", r.label());
                assert_eq!(r.record.outcome.verdict, want, "{run}: {}", r.label());
            }
        }
    }
}

#[test]
fn no_simt_zoo_member_earns_correct_with_arch() {
    let zoo = results("zoo-sm90a");
    for r in zoo
        .iter()
        .filter(|r| !WGMMA_RUNS.contains(&r.evaluation.as_str()))
    {
        assert_ne!(r.record.correct_with_arch(), Some(true), "{}", r.label());
        // A member that failed before it ran has no evidence at all.
        let Some(wgmma) = r.family("wgmma") else {
            assert_ne!(r.record.verdict, Verdict::Correct, "{}", r.label());
            continue;
        };
        assert_ne!(
            wgmma.status,
            EvidenceStatus::DynamicPresent,
            "{}",
            r.label()
        );
        if r.record.verdict == Verdict::Correct {
            // The dead-branch and discarded wgmma are in the binary or source, and never run.
            assert_eq!(wgmma.dynamic_count, Some(0), "{}", r.label());
            let dynamic = r.record.outcome.dynamic.as_ref().expect("dynamic counts");
            assert_eq!(dynamic.method, "ptx-splice", "{}", r.label());
        }
    }
    let dead = zoo
        .iter()
        .find(|r| r.evaluation == "zoo-dead-branch-wgmma")
        .expect("member");
    let wgmma = dead.family("wgmma").expect("wgmma evidence");
    assert!(wgmma.static_count > 0, "HGMMA is in the SASS: {wgmma:?}");
    assert_eq!(wgmma.status, EvidenceStatus::DynamicNotExecuted);
}

#[test]
fn the_token_member_is_correct_with_arch_but_not_on_target() {
    let zoo = results("zoo-sm90a");
    for r in member(&zoo, "zoo-token-wgmma-tma") {
        assert_eq!(r.record.verdict, Verdict::Correct, "{}", r.label());
        assert_eq!(r.record.correct_with_arch(), Some(true), "{}", r.label());
        // One m64n8k16 per 128-thread CTA over N = 4096 columns: 2*64*8*16 / (2*4096*4096)
        // of the FLOPs per row of CTAs, i.e. exactly 1/64 of the task's FLOPs.
        let share = r.record.mma_flop_share().expect("measured");
        assert!((share - 1.0 / 64.0).abs() < 1e-6, "{}: {share}", r.label());
        assert_eq!(r.record.correct_on_target(), Some(false), "{}", r.label());
    }
    for r in member(&zoo, "zoo-evict-last-wgmma") {
        assert_eq!(r.record.correct_on_target(), Some(true), "{}", r.label());
        assert!(r.record.mma_flop_share().expect("measured") >= ON_TARGET_MMA_SHARE);
    }
}

/// The hole the MMA share leaves: wgmma worth all of the task's FLOPs on a tile the kernel then
/// ignores, beside the SIMT loop that does the work. The MMA share alone would pass it; the
/// other arithmetic counted in the same copy (the FMA loop, 2*M*N*K FLOPs) fails it. Every
/// kernel whose wgmma does the work keeps its other share far below the bound.
#[test]
fn ignored_wgmma_worth_all_the_flops_is_not_on_target() {
    let zoo = results("zoo-sm90a");
    for r in member(&zoo, "zoo-ignored-wgmma") {
        assert_eq!(r.record.verdict, Verdict::Correct, "{}", r.label());
        assert_eq!(r.record.correct_with_arch(), Some(true), "{}", r.label());
        let mma = r.record.mma_flop_share().expect("measured");
        assert!((mma - 1.0).abs() < 1e-6, "{}: {mma}", r.label());
        // At least the FMA loop's 2*M*N*K. Integrity v3 weighed its integer address multiplies
        // at 6e-4 of the task's FLOPs (1.0006 on the H200); since integrity v4 every integer
        // and logic instruction of the loop counts too (3.3 on the H100).
        let other = r.record.other_flop_share().expect("measured");
        assert!(other >= 1.0, "{}: {other}", r.label());
        assert_eq!(r.record.correct_on_target(), Some(false), "{}", r.label());
    }
    let mut honest = 0;
    for run in ["zoo-sm90a", "reference-sm90a", "suite-v2-sm90a"] {
        for r in results(run) {
            let Some(mma) = r.record.mma_flop_share() else {
                continue;
            };
            let decoration = ["zoo-ignored-wgmma", "zoo-integer-wgmma"];
            if mma < ON_TARGET_MMA_SHARE || decoration.contains(&r.evaluation.as_str()) {
                continue;
            }
            honest += 1;
            // Far below the bound: at most 0.039 under integrity v4's complete count on the H100
            // (Triton's causal d64 and fp8 forwards; the wgmma GEMM at N=128, M=93: 0.034).
            let other = r.record.other_flop_share().expect("counted");
            assert!(
                other < ON_TARGET_OTHER_SHARE / 2.0,
                "{}: {other}",
                r.label()
            );
            // (Triton's pointer GEMM loads without TMA: not correct with arch.)
            if r.record.correct_with_arch() == Some(true) {
                assert_eq!(r.record.correct_on_target(), Some(true), "{}", r.label());
            }
        }
    }
    // The hand-written and Triton wgmma kernels of the reference and suite-v2 runs, and the
    // zoo's evict_last GEMM.
    assert!(honest >= 30, "{honest}");
}

/// Issue 45: state kept in module memory (a "second launch" counter, output caches keyed on a
/// fingerprint or on the pointers) is refused before anything runs: it is how a kernel would
/// tell a fresh module (the counted copy) from the timed one.
#[test]
fn issue_45_module_state_is_refused_at_the_static_check() {
    let zoo = results("zoo-sm90a");
    for name in [
        "zoo-second-launch",
        "zoo-fingerprint-cache",
        "zoo-pointer-cache",
    ] {
        for r in member(&zoo, name) {
            assert_eq!(r.record.verdict, Verdict::Compilation, "{}", r.label());
            assert!(
                r.record
                    .outcome
                    .message
                    .contains("module-scope `.global` variable"),
                "{}: {}",
                r.label(),
                r.record.outcome.message
            );
        }
    }
}

/// Issue 45: the GEMM done in integer fixed point beside wgmma on an ignored tile. Its integer
/// multiplies are counted as other arithmetic, so it is not on target.
#[test]
fn issue_45_integer_arithmetic_beside_ignored_wgmma_is_not_on_target() {
    let zoo = results("zoo-sm90a");
    for r in member(&zoo, "zoo-integer-wgmma") {
        assert_eq!(r.record.verdict, Verdict::Correct, "{}", r.label());
        assert_eq!(r.record.correct_with_arch(), Some(true), "{}", r.label());
        let mma = r.record.mma_flop_share().expect("measured");
        assert!(mma >= ON_TARGET_MMA_SHARE, "{}: {mma}", r.label());
        let other = r.record.other_flop_share().expect("measured");
        assert!(other > ON_TARGET_OTHER_SHARE, "{}: {other}", r.label());
        assert_eq!(r.record.correct_on_target(), Some(false), "{}", r.label());
    }
}

/// Issue 45: P rounded to e4m3 for the P V product stays inside attention's elementwise rule
/// but not inside suite 1.3.0's bound on the relative L2 error.
#[test]
fn issue_45_an_e4m3_pv_product_fails_the_norm_bound() {
    let zoo = results("zoo-sm90a");
    for r in member(&zoo, "zoo-e4m3-pv") {
        assert_eq!(r.record.verdict, Verdict::Numerical, "{}", r.label());
        let m = &r.record.outcome.message;
        assert!(m.contains("O: relative L2 error"), "{}: {m}", r.label());
        // The elementwise rule alone passed: no element outside it.
        let o = r.record.outcome.workloads[0].trials[0]
            .outputs
            .iter()
            .find(|o| o.output == "O")
            .expect("O checked");
        assert_eq!(o.comparison.violations, 0, "{}", r.label());
        assert!(o.comparison.relative_l2 > 0.008, "{}", r.label());
    }
}

/// Issue 45: the counted copy runs as a checked trial of every workload, and the record keeps
/// each workload's shares.
#[test]
fn issue_45_target_work_is_counted_in_a_checked_trial_of_every_workload() {
    let mut counted = 0;
    for run in ["zoo-sm90a", "reference-sm90a"] {
        for r in results(run) {
            let o = &r.record.outcome;
            if o.verdict != Verdict::Correct || o.dynamic.is_none() {
                continue;
            }
            counted += 1;
            for w in &o.workloads {
                assert!(
                    w.trials.iter().any(|t| t.counted && t.passed),
                    "{}: {} has no checked counted trial",
                    r.label(),
                    w.workload
                );
            }
            if o.workloads.len() > 1 {
                let names: Vec<&str> = o
                    .dynamic_workloads
                    .iter()
                    .map(|d| d.workload.as_str())
                    .collect();
                let want: Vec<&str> = o.workloads.iter().map(|w| w.workload.as_str()).collect();
                assert_eq!(names, want, "{}", r.label());
            }
        }
    }
    assert!(counted >= 40, "{counted}");
}

#[test]
fn every_timed_workload_has_an_interval_checked_launches_and_a_floor() {
    for run in ["zoo-sm90a", "reference-sm90a"] {
        for r in results(run) {
            for w in &r.record.outcome.workloads {
                let Some(t) = &w.timing else { continue };
                let [lo, hi] = t.speedup_ci95.expect("an interval");
                let s = t.speedup.expect("a speedup");
                assert!(lo <= s && s <= hi, "{}: {lo} {s} {hi}", r.label());
                assert!(t.stop_reason.is_some(), "{}", r.label());
                assert_eq!(t.checked_launches.len(), 3, "{}", r.label());
                let f = t.floor.as_ref().expect("the H200 is in the peak table");
                assert!(t.candidate.median_ms >= f.floor_ms, "{}", r.label());
            }
        }
    }
}

#[test]
fn the_positive_control_is_correct_with_arch_everywhere() {
    let engine = results("engine-sm90a");
    let tma: Vec<_> = engine
        .iter()
        .filter(|r| r.evaluation == "triton-gemm-tma")
        .collect();
    // Every GEMM task, once per GPU the published list ran on.
    let per_gpu = crate::published::per_gpu(tma.iter().copied());
    assert!(!per_gpu.is_empty());
    assert!(per_gpu.values().all(|&n| n == 17), "{per_gpu:?}");
    for r in &tma {
        let evidence = r.record.outcome.evidence.as_ref().expect("evidence");
        assert_eq!(
            evidence.status,
            EvidenceStatus::DynamicPresent,
            "{}",
            r.label()
        );
        assert_eq!(r.record.correct_with_arch(), Some(true), "{}", r.label());
        for f in ["wgmma", "tma"] {
            let count = r.family(f).and_then(|x| x.dynamic_count);
            assert!(count.is_some_and(|n| n > 0), "{} {f}", r.label());
        }
    }
    // Triton's pointer GEMM runs wgmma but loads without TMA: correct, not correct with arch.
    let ptr: Vec<_> = engine
        .iter()
        .filter(|r| r.evaluation == "triton-gemm-ptr")
        .collect();
    assert!(!ptr.is_empty());
    for r in ptr {
        assert_eq!(r.record.verdict, Verdict::Correct, "{}", r.label());
        let status = |f: &str| r.family(f).map(|x| x.status);
        assert_eq!(status("wgmma"), Some(EvidenceStatus::DynamicPresent));
        assert_eq!(status("tma"), Some(EvidenceStatus::SassAbsent));
    }
}

/// Issue 45: a kernel on the reference's wgmma path for M <= 128 and on mma.sync above is
/// graded on its worst performance workload. Counted at M70 alone it would be on target.
#[test]
fn issue_45_a_path_that_changes_with_the_shape_is_graded_on_the_worst_workload() {
    let zoo = results("zoo-sm90a");
    for r in member(&zoo, "zoo-shape-switch") {
        assert_eq!(r.record.verdict, Verdict::Correct, "{}", r.label());
        let o = &r.record.outcome;
        let share = |name: &str| {
            o.dynamic_workloads
                .iter()
                .find(|d| d.workload == name)
                .unwrap_or_else(|| panic!("{}: no counts of {name}", r.label()))
        };
        let small = share("M70");
        assert!(
            small.mma_flop_share.expect("measured") >= ON_TARGET_MMA_SHARE,
            "{}: {small:?}",
            r.label()
        );
        assert!(small.other_flop_share.expect("measured") < ON_TARGET_OTHER_SHARE);
        let large = share("M232");
        assert_eq!(large.mma_flop_share, Some(0.0), "{}", r.label());
        // mma.sync's 2*M*N*K over a padded 240 rows, plus the integer address arithmetic.
        assert!(
            large.other_flop_share.expect("measured") >= 1.0,
            "{}",
            r.label()
        );
        assert_eq!(r.record.mma_flop_share(), Some(0.0), "{}", r.label());
        assert_eq!(r.record.correct_with_arch(), Some(false), "{}", r.label());
        assert_eq!(r.record.correct_on_target(), Some(false), "{}", r.label());
    }
}

/// Issue 45: TMA boxes that hang past the tensor's end are counted only for the part inside
/// it. The decode's boxes span about the task's compulsory bytes and read a sixteenth of them.
#[test]
fn issue_45_tma_bytes_outside_the_tensor_are_not_counted() {
    let zoo = results("zoo-sm90a");
    for r in member(&zoo, "zoo-oob-tma-decode") {
        assert_eq!(r.record.verdict, Verdict::Correct, "{}", r.label());
        for d in &r.record.outcome.dynamic_workloads {
            let boxed: f64 = d
                .sites
                .iter()
                .filter_map(|s| Some(s.count as f64 * s.bytes_per_execution? as f64))
                .sum();
            let read: u64 = d.sites.iter().filter_map(|s| s.in_bounds_bytes).sum();
            assert!(boxed > 0.0, "{}: {d:?}", r.label());
            // 4 of each box's 64 rows lie inside the cache.
            assert!(
                (read as f64 / boxed - 1.0 / 16.0).abs() < 1e-9,
                "{}: {read} of {boxed}",
                r.label()
            );
            let share = d.tma_byte_share.expect("measured");
            assert!(share < 0.1, "{}: {share}", r.label());
            // Weighed at the full box, the share would have passed.
            assert!(
                share * 16.0 >= ON_TARGET_BYTE_SHARE,
                "{}: {share}",
                r.label()
            );
        }
        assert_eq!(r.record.correct_with_arch(), Some(true), "{}", r.label());
        assert_eq!(r.record.correct_on_target(), Some(false), "{}", r.label());
    }
}

/// Issue 45: a kernel that overwrites an input on some launches is stopped by the inputs'
/// comparison, in a trial or after a timed launch; the library never runs on its leftovers.
#[test]
fn issue_45_an_input_rewritten_on_some_launches_is_a_verdict() {
    let zoo = results("zoo-sm90a");
    for r in member(&zoo, "zoo-input-rewrite") {
        assert_eq!(r.record.verdict, Verdict::Numerical, "{}", r.label());
        let m = &r.record.outcome.message;
        assert!(
            m.contains("changed") && m.contains("of the input B")
                || m.contains("bytes of the inputs were modified"),
            "{}: {m}",
            r.label()
        );
    }
}
