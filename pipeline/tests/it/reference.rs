//! The committed reference-kernel evidence (tasks/reference/, run on the H200 and the H100 as
//! tasks/runs/reference-sm90a.yaml) is about the committed PTX, and every hand-written kernel is
//! correct with arch: wgmma and TMA executed, on every workload of every task it ran.

use ptxbench::digest::Digest;
use ptxbench::record::Verdict;
use ptxbench::runner::list::RunList;

use crate::published::results;
use crate::root;

#[test]
fn every_reference_kernel_is_correct_with_arch_on_every_workload() {
    let suite = crate::suite();
    let refs: Vec<_> = results("reference-sm90a")
        .into_iter()
        .filter(|r| r.evaluation.starts_with("wgmma-"))
        .collect();
    // 17 bf16 GEMM tasks, the fp8 GEMM, 4 forward and 4 backward attention tasks, once per
    // GPU the published list ran on.
    let per_gpu = crate::published::per_gpu(refs.iter());
    assert!(!per_gpu.is_empty());
    assert!(per_gpu.values().all(|&n| n == 26), "{per_gpu:?}");
    for r in &refs {
        assert_eq!(r.record.verdict, Verdict::Correct, "{}", r.label());
        assert_eq!(r.record.correct_with_arch(), Some(true), "{}", r.label());
        for f in ["wgmma", "tma"] {
            let count = r.family(f).and_then(|x| x.dynamic_count);
            assert!(count.is_some_and(|n| n > 0), "{}: {f}", r.label());
        }
        let task = suite.get(&r.record.task).expect("in the suite");
        for w in &task.workloads {
            assert!(
                r.record
                    .outcome
                    .workloads
                    .iter()
                    .any(|x| x.workload == w.name),
                "{}: {} not run",
                r.label(),
                w.name
            );
        }
    }
}

#[test]
fn the_measured_ptx_is_the_committed_ptx() {
    let path = root().join("tasks/runs/reference-sm90a.yaml");
    let (list, _) = RunList::load(&path).expect("list");
    let rs = results("reference-sm90a");
    for e in &list.evaluations {
        let bytes = std::fs::read(path.parent().expect("dir").join(&e.kernel)).expect("kernel");
        for r in rs.iter().filter(|r| r.evaluation == e.name) {
            assert_eq!(
                r.record.ptx_digest,
                Some(Digest::of(&bytes)),
                "{}: {} changed since its run",
                r.label(),
                e.kernel.display()
            );
        }
    }
}

#[test]
fn the_multi_gpu_run_used_both_gpus() {
    // `ptxbench run` on a 2-GPU host: one worker thread per GPU, each record names its GPU.
    let ordinals: std::collections::BTreeSet<usize> = results("multigpu-sm90a")
        .iter()
        .map(|r| r.record.outcome.device.as_ref().expect("a device").ordinal)
        .collect();
    assert_eq!(ordinals.into_iter().collect::<Vec<_>>(), vec![0, 1]);
}
