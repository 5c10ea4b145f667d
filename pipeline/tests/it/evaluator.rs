//! Issue 45: the one evaluator's CPU part, as every command calls it.

use ptxbench::arch::Arch;
use ptxbench::candidate::Candidate;
use ptxbench::engine::evaluator::{Evaluator, Job, Prepared, Work};
use ptxbench::engine::{Protocol, Verdict};
use ptxbench::record::TaskObject;

use crate::{root, suite};

fn job() -> Job {
    Job {
        arch: Arch::Sm90a,
        seed: 7,
        protocol: Protocol::default(),
        workloads: vec!["M129".into()],
        no_timing: true,
    }
}

#[test]
fn issue_45_a_checked_candidate_gets_a_request_with_its_counted_copy() {
    let suite = suite();
    let task = suite.get("gemm_n4096_k4096").expect("task");
    let object = TaskObject::from_suite(&suite, task).expect("object");
    let dir = root().join("tasks/candidates/triton_gemm_tma");
    let cand = Candidate::from_files(&dir.join("kernel.ptx"), &dir.join("plan.yaml")).expect("c");
    let Prepared { report, work } = Evaluator::prepare(Ok(&cand), task, &object, &job());
    assert!(report.ok(), "{:?}", report.failure);
    let Work::Evaluate(req) = work else {
        panic!("a checked candidate is evaluated")
    };
    assert_eq!((req.seed, req.no_timing), (7, true));
    assert_eq!(req.workloads, ["M129"]);
    assert_eq!(Some(&req.ptx), report.ptx.as_ref());
    let counted = req
        .counted
        .as_ref()
        .expect("a counted copy for a wgmma task");
    assert!(
        counted.families.iter().any(|f| f == "wgmma"),
        "{:?}",
        counted.families
    );
    assert!(
        counted.work.is_some(),
        "the other arithmetic is counted too"
    );
    assert_eq!(req.no_counted_copy, None);
}

#[test]
fn issue_45_a_candidate_the_static_check_fails_is_decided_on_the_cpu() {
    let suite = suite();
    let task = suite.get("gemm_n4096_k4096").expect("task");
    let object = TaskObject::from_suite(&suite, task).expect("object");
    let Prepared { report, work } =
        Evaluator::prepare(Err("no code block".into()), task, &object, &job());
    assert!(!report.ok());
    let Work::Decided(o) = work else {
        panic!("decided without a GPU")
    };
    assert_eq!(o.verdict, Verdict::Extraction);
    assert!(o.message.contains("no code block"), "{}", o.message);
}
