//! The committed reference-kernel evidence (tasks/reference/, run on the H200 as
//! tasks/runs/reference-sm90a.yaml) is about the committed PTX, and every hand-written kernel is
//! correct with arch: wgmma and TMA executed, on every workload of every task it ran.

use serde_json::Value;

use crate::root;
use crate::zoo::{family, results};

#[test]
fn every_reference_kernel_is_correct_with_arch_on_every_workload() {
    let suite = crate::suite();
    let refs: Vec<Value> = results("reference-sm90a")
        .into_iter()
        .filter(|r| {
            r["evaluation"]
                .as_str()
                .is_some_and(|n| n.starts_with("wgmma-"))
        })
        .collect();
    // 17 bf16 GEMM tasks, the fp8 GEMM, 4 forward and 4 backward attention tasks.
    assert_eq!(refs.len(), 26);
    for r in &refs {
        let name = format!("{} on {}", r["evaluation"], r["task"]);
        assert_eq!(r["outcome"]["verdict"], "correct", "{name}");
        assert_eq!(
            r["outcome"]["evidence"]["status"], "dynamic_present",
            "{name}"
        );
        for f in ["wgmma", "tma"] {
            assert!(
                family(r, f)["dynamic_count"].as_u64().expect("count") > 0,
                "{name}: {f}"
            );
        }
        let task = suite
            .get(r["task"].as_str().expect("task"))
            .expect("in the suite");
        let ran: Vec<&str> = r["outcome"]["workloads"]
            .as_array()
            .expect("workloads")
            .iter()
            .map(|w| w["workload"].as_str().expect("name"))
            .collect();
        for w in &task.workloads {
            assert!(ran.contains(&w.name.as_str()), "{name}: {} not run", w.name);
        }
    }
}

#[test]
fn the_measured_ptx_is_the_committed_ptx() {
    let list = root().join("tasks/runs/reference-sm90a.yaml");
    let v: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&list).expect("list")).expect("yaml");
    let rs = results("reference-sm90a");
    for e in v["evaluations"].as_array().expect("evaluations") {
        let kernel = e["kernel"].as_str().expect("kernel");
        let bytes = std::fs::read(list.parent().expect("dir").join(kernel)).expect("kernel");
        let digest = blake3::hash(&bytes).to_hex().to_string();
        let name = e["name"].as_str().expect("name");
        for r in rs.iter().filter(|r| r["evaluation"] == name) {
            assert_eq!(
                r["ptx_digest"],
                digest.as_str(),
                "{name}: {kernel} changed since its run"
            );
        }
    }
}

#[test]
fn the_multi_gpu_run_used_both_gpus() {
    // `ptxbench run` on a 2-GPU host: one worker thread per GPU, each result names its GPU.
    let ordinals: std::collections::BTreeSet<u64> = results("multigpu-sm90a")
        .iter()
        .map(|r| r["outcome"]["device"]["ordinal"].as_u64().expect("ordinal"))
        .collect();
    assert_eq!(ordinals.into_iter().collect::<Vec<_>>(), vec![0, 1]);
}
