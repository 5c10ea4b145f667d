//! Prompt rendering: deterministic, snapshot-tested, one per (task, arch, variant).
//!
//! Snapshots live in tests/fixtures/prompts/; `PTXBENCH_BLESS=1 cargo test` rewrites them.

use ptxbench::arch::Arch;
use ptxbench::prompt::{Variant, render};

use crate::{fixture, suite};

const SNAPSHOTS: &[(&str, Arch)] = &[
    ("gemm_n7168_k5120", Arch::Sm90a),
    ("mha_with_lse_d128_causal", Arch::Sm90a),
    ("mha_bwd_d64", Arch::Sm100a),
];

#[test]
fn prompts_match_their_snapshots() {
    let suite = suite();
    let bless = std::env::var_os("PTXBENCH_BLESS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for (id, arch) in SNAPSHOTS {
        let task = suite.get(id).expect("task exists");
        for v in Variant::ALL {
            let text = render(task, *arch, v).expect("renders");
            let path = fixture(&format!("prompts/{id}.{arch}.v{}.md", v.number()));
            if bless {
                std::fs::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
                std::fs::write(&path, &text).expect("write snapshot");
            } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                stale.push(path.display().to_string());
            }
        }
    }
    assert!(
        stale.is_empty(),
        "prompts differ from snapshots (PTXBENCH_BLESS=1 to accept): {stale:?}"
    );
}

#[test]
fn every_task_renders_every_variant_for_every_arch_the_same_way_twice() {
    let suite = suite();
    for task in &suite.tasks {
        for t in &task.targets {
            let mut previous = String::new();
            for v in Variant::ALL {
                let a = render(task, t.arch, v).expect("renders");
                assert_eq!(
                    a,
                    render(task, t.arch, v).expect("renders"),
                    "{} not deterministic",
                    task.id
                );
                assert!(
                    a.contains(&format!(".target {}", t.arch)),
                    "{}: response format names the target",
                    task.id
                );
                for o in &task.outputs {
                    assert!(
                        a.contains(&format!("`{}`", o.name)),
                        "{}: output {} missing",
                        task.id,
                        o.name
                    );
                }
                // Each variant extends the one before it.
                assert!(
                    a.len() > previous.len(),
                    "{} v{} is not longer than v{}",
                    task.id,
                    v.number(),
                    v.number() - 1
                );
                previous = a;
            }
        }
    }
}

#[test]
fn a_missing_target_is_an_error() {
    let suite = suite();
    let task = suite.get("gemm_n7168_k5120").expect("task");
    assert!(render(task, Arch::Sm90a, Variant::new(1).expect("1")).is_ok());
    assert!(Variant::new(7).is_err());
}
