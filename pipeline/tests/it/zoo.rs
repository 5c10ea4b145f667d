//! The committed GPU evidence keeps its promises: every zoo member and every known-bad kernel
//! got the verdict its run list expects, none of the zoo earns "correct with arch", and the
//! positive control (Triton's TMA + wgmma GEMM) does, on every task.

use ptxbench::evidence::EvidenceStatus;
use ptxbench::record::Verdict;
use ptxbench::runner::list::RunList;

use crate::published::results;
use crate::root;

#[test]
fn every_expected_verdict_was_met_on_the_h200() {
    for run in [
        "zoo-sm90a",
        "engine-sm90a",
        "reference-sm90a",
        "multigpu-sm90a",
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
                assert_eq!(r.record.verdict, want, "{run}: {}", r.label());
                assert_eq!(r.record.outcome.verdict, want, "{run}: {}", r.label());
            }
        }
    }
}

#[test]
fn no_zoo_member_earns_correct_with_arch() {
    let zoo = results("zoo-sm90a");
    for r in &zoo {
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
fn the_positive_control_is_correct_with_arch_everywhere() {
    let engine = results("engine-sm90a");
    let tma: Vec<_> = engine
        .iter()
        .filter(|r| r.evaluation == "triton-gemm-tma")
        .collect();
    assert_eq!(tma.len(), 17);
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
