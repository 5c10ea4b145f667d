//! The committed GPU evidence keeps its promises: every zoo member and every known-bad kernel
//! got the verdict its run list expects, none of the zoo earns "correct with arch", and the
//! positive control (Triton's TMA + wgmma GEMM) does, on every task.

use std::path::Path;

use serde_json::Value;

use crate::root;

/// (evaluation, task) -> result JSON, for every result of a committed run folder.
pub fn results(run: &str) -> Vec<Value> {
    let dir = root().join("artifacts/runs").join(run);
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).expect("committed run folder") {
        let p = e.expect("entry").path();
        if p.extension().is_some_and(|x| x == "json") {
            out.push(serde_json::from_slice(&std::fs::read(&p).expect("read")).expect("json"));
        }
    }
    out
}

fn expected(list: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(list).expect("run list");
    let v: Value = serde_saphyr::from_str(&text).expect("yaml");
    v["evaluations"]
        .as_array()
        .expect("evaluations")
        .iter()
        .map(|e| {
            (
                e["name"].as_str().expect("name").to_string(),
                e["expect"].as_str().expect("expect").to_string(),
            )
        })
        .collect()
}

pub fn family(r: &Value, name: &str) -> Value {
    r["outcome"]["evidence"]["families"]
        .as_array()
        .and_then(|f| f.iter().find(|x| x["family"] == name).cloned())
        .unwrap_or(Value::Null)
}

#[test]
fn every_expected_verdict_was_met_on_the_h200() {
    for (run, list) in [
        ("zoo-sm90a", "tasks/runs/zoo-sm90a.yaml"),
        ("engine-sm90a", "tasks/runs/engine-sm90a.yaml"),
        ("reference-sm90a", "tasks/runs/reference-sm90a.yaml"),
        ("multigpu-sm90a", "tasks/runs/multigpu-sm90a.yaml"),
    ] {
        let rs = results(run);
        for (name, want) in expected(&root().join(list)) {
            let mine: Vec<&Value> = rs
                .iter()
                .filter(|r| r["evaluation"] == name.as_str())
                .collect();
            assert!(!mine.is_empty(), "{run}: no committed result for {name}");
            for r in mine {
                assert_eq!(
                    r["outcome"]["verdict"],
                    want.as_str(),
                    "{run}: {name} on {}",
                    r["task"]
                );
            }
        }
    }
}

#[test]
fn no_zoo_member_earns_correct_with_arch() {
    for r in results("zoo-sm90a") {
        let name = r["evaluation"].as_str().expect("name").to_string();
        let wgmma = family(&r, "wgmma");
        assert_ne!(wgmma["status"], "dynamic_present", "{name}: {wgmma}");
        if r["outcome"]["verdict"] == "correct" {
            // The dead-branch and discarded wgmma are in the binary or source, and never run.
            assert_eq!(wgmma["dynamic_count"], 0, "{name}: {wgmma}");
            assert_eq!(r["outcome"]["dynamic"]["method"], "ptx-splice", "{name}");
        }
    }
    let dead = results("zoo-sm90a")
        .into_iter()
        .find(|r| r["evaluation"] == "zoo-dead-branch-wgmma")
        .expect("member");
    let wgmma = family(&dead, "wgmma");
    assert!(
        wgmma["static_count"].as_u64().expect("count") > 0,
        "HGMMA is in the SASS: {wgmma}"
    );
    assert_eq!(wgmma["status"], "dynamic_not_executed");
}

#[test]
fn the_positive_control_is_correct_with_arch_everywhere() {
    let tma: Vec<Value> = results("engine-sm90a")
        .into_iter()
        .filter(|r| r["evaluation"] == "triton-gemm-tma")
        .collect();
    assert_eq!(tma.len(), 17);
    for r in &tma {
        assert_eq!(
            r["outcome"]["evidence"]["status"], "dynamic_present",
            "{}",
            r["task"]
        );
        for f in ["wgmma", "tma"] {
            assert!(
                family(r, f)["dynamic_count"].as_u64().expect("count") > 0,
                "{} {f}",
                r["task"]
            );
        }
    }
    // Triton's pointer GEMM runs wgmma but loads without TMA: correct, not correct with arch.
    for r in results("engine-sm90a")
        .into_iter()
        .filter(|r| r["evaluation"] == "triton-gemm-ptr")
    {
        assert_eq!(r["outcome"]["verdict"], "correct");
        assert_eq!(family(&r, "wgmma")["status"], "dynamic_present");
        assert_eq!(family(&r, "tma")["status"], "sass_absent");
    }
}
