//! Launch plans (`ptxbench::candidate::plan` and `bind`): mutated real plans of
//! `tasks/candidates/`, generated plans with hostile expressions, YAML token soup, deep
//! nesting, alias bombs and random bytes are parsed against the plan's real task; a plan that
//! parses is bound to the candidate's real PTX and resolved for every workload. Each step
//! returns a value or problems that name a field.

use std::sync::{Arc, OnceLock};

use proptest::prelude::*;

use ptxbench::arch::Arch;
use ptxbench::candidate::bind;
use ptxbench::candidate::plan::{LaunchPlan, PlanError};
use ptxbench::task::{Suite, Task};
use ptxbench_ptx::Module;

use crate::mutate::{self, YAML_TOKENS};
use crate::{bounded, config};

/// A candidate of `tasks/candidates/` with one of the tasks its run lists measure it on.
const CANDIDATES: &[(&str, &str, &str)] = &[
    ("triton_gemm_tma", "plan.yaml", "gemm_n7168_k5120"),
    ("triton_gemm_ptr", "plan.yaml", "gemm_n128_k2048"),
    ("nvcc_simt_gemm", "plan.yaml", "gemm_n7168_k5120"),
    ("nvcc_simt_gemm_fp8", "plan.yaml", "gemm_fp8_n7168_k5120"),
    (
        "nvcc_simt_attention_fwd",
        "plan.causal.yaml",
        "mha_with_lse_d64_causal",
    ),
    ("nvcc_simt_attention_bwd", "plan.yaml", "mha_bwd_d96"),
    (
        "nvcc_simt_attention_decode",
        "plan.yaml",
        "gqa_paged_decode_h32_kv8_d128_ps1",
    ),
    (
        "triton_attn_decode",
        "plan.yaml",
        "gqa_paged_decode_h32_kv8_d128_ps1",
    ),
];

/// A plan fixture: its text, its task and its PTX (as text and parsed).
pub struct Fixture {
    pub plan: String,
    pub ptx: String,
    pub task: Task,
    pub module: Module,
}

/// Every [`CANDIDATES`] entry, read once.
pub fn fixtures() -> &'static [Arc<Fixture>] {
    static ALL: OnceLock<Vec<Arc<Fixture>>> = OnceLock::new();
    ALL.get_or_init(|| {
        let suite = Suite::load(&crate::repo().join("tasks")).expect("the suite loads");
        CANDIDATES
            .iter()
            .map(|(dir, plan, task)| {
                let ptx = crate::read(&format!("tasks/candidates/{dir}/kernel.ptx"));
                Arc::new(Fixture {
                    plan: crate::read(&format!("tasks/candidates/{dir}/{plan}")),
                    task: suite.get(task).expect("the task is in the suite").clone(),
                    module: ptxbench_ptx::parse(&ptx).expect("the candidate's PTX parses"),
                    ptx,
                })
            })
            .collect()
    })
}

/// Parses `text` as a plan for fixture `which`'s task; binds and resolves a plan that parses.
/// Returns whether the plan was accepted all the way.
fn exercise(which: usize, text: String) -> bool {
    let fx = Arc::clone(&fixtures()[which % fixtures().len()]);
    bounded("launch plan", move || {
        match LaunchPlan::parse_from(&text, &fx.task, "plan.yaml") {
            Err(PlanError { problems }) => {
                assert!(!problems.is_empty(), "a refusal says why");
                for p in &problems {
                    assert!(!p.field.is_empty() && !p.reason.is_empty(), "{p}");
                }
                false
            }
            Ok(plan) => {
                let mut ok = true;
                for arch in Arch::ALL {
                    let problems = bind::check_module(&plan, &fx.module, arch);
                    assert!(problems.iter().all(|p| !p.field.is_empty()));
                    if !problems.is_empty() {
                        ok = false;
                        continue;
                    }
                    for w in &fx.task.workloads {
                        match bind::resolve(&plan, &fx.module, &fx.task, w, arch) {
                            Ok(launches) => assert_eq!(launches.len(), plan.launches.len()),
                            Err(problems) => {
                                assert!(!problems.is_empty());
                                ok = false;
                            }
                        }
                    }
                }
                ok
            }
        }
    })
}

/// Expression text a plan field may get: sensible, extreme or nonsense.
fn expression() -> impl Strategy<Value = String> {
    prop::sample::select(
        &[
            "1",
            "0",
            "-1",
            "M",
            "ceil_div(M, 128)",
            "ceil_div(M, 0)",
            "M * N * K * 1024",
            "9223372036854775807",
            "-9223372036854775808",
            "4294967296",
            "2147483648",
            "65536",
            "1024",
            "232448",
            "1e12",
            "0.5",
            "M / 0",
            "M % 0",
            "round_up(M, -1)",
            "max(M)",
            "min(1, 2, 3)",
            "unknown",
            "\"M\"",
            "M = 1",
            "(((((((((((((((((((((((((((((((M)))))))))))))))))))))))))))))))",
        ][..],
    )
    .prop_map(|s| format!("\"{s}\""))
}

/// A grid, block or cluster list of 0 to 4 expressions.
fn dim() -> impl Strategy<Value = String> {
    prop::collection::vec(expression(), 0..5).prop_map(|v| format!("[{}]", v.join(", ")))
}

/// A plan in the structure of a real one, with generated values in every field.
fn structured_plan() -> impl Strategy<Value = String> {
    let param = prop_oneof![
        Just("null".to_string()),
        prop::sample::select(&["A", "B", "C", "O", "LSE", "Q", "nope", ""][..])
            .prop_map(|t| format!("{{tensor: \"{t}\"}}")),
        (expression(), prop::sample::select(&["u32", "s64", "f32", "u8", "b32", "", "u128"][..]))
            .prop_map(|(e, t)| format!("{{scalar: {e}, type: \"{t}\"}}")),
        prop::sample::select(&["ws", "other"][..]).prop_map(|w| format!("{{workspace: {w}}}")),
        (
            prop::sample::select(&["A", "B", "ws", "x"][..]),
            prop::collection::vec(expression(), 0..7),
            prop::collection::vec(expression(), 0..7),
            prop::collection::vec(expression(), 0..7),
            prop::sample::select(&["none", "32B", "64B", "128B", "256B"][..]),
        )
            .prop_map(|(t, d, s, b, sw)| {
                format!(
                    "{{tensor_map: {{tensor: {t}, dims: [{}], strides: [{}], box: [{}], swizzle: {sw}}}}}",
                    d.join(", "),
                    s.join(", "),
                    b.join(", ")
                )
            }),
        Just("{tensor: A, scalar: 1}".to_string()),
        Just("{}".to_string()),
    ];
    let launch = (
        prop::sample::select(&["gemm_tma", "gemm", "k", "", "gemm_tma\u{0}"][..]),
        dim(),
        dim(),
        prop::option::of(expression()),
        prop::option::of(dim()),
        any::<bool>(),
        prop::collection::vec(param, 0..24),
    )
        .prop_map(|(entry, grid, block, smem, cluster, npc, params)| {
            let mut s = format!("  - entry: \"{entry}\"\n    grid: {grid}\n    block: {block}\n");
            if let Some(m) = smem {
                s.push_str(&format!("    shared_mem: {m}\n"));
            }
            if let Some(c) = cluster {
                s.push_str(&format!(
                    "    cluster: {c}\n    non_portable_cluster: {npc}\n"
                ));
            }
            s.push_str("    params:\n");
            for p in params {
                s.push_str(&format!("      - {p}\n"));
            }
            s
        });
    (
        prop::collection::vec(launch, 0..20),
        prop::collection::vec(
            (
                prop::sample::select(&["ws", "ws", "A", "9x", ""][..]),
                expression(),
                prop::sample::select(&["zero", "poison", "random"][..]),
            ),
            0..4,
        ),
    )
        .prop_map(|(launches, workspaces)| {
            let mut s = String::from("launches:\n");
            for l in launches {
                s.push_str(&l);
            }
            if !workspaces.is_empty() {
                s.push_str("workspaces:\n");
                for (n, b, i) in workspaces {
                    s.push_str(&format!("  - {{name: \"{n}\", bytes: {b}, init: {i}}}\n"));
                }
            }
            s
        })
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn mutated_real_plans_are_checked(
        which in 0..CANDIDATES.len(),
        edits in mutate::edits(YAML_TOKENS, 6),
    ) {
        let text = mutate::apply_all(&fixtures()[which].plan, &edits);
        exercise(which, text);
    }

    #[test]
    fn generated_plans_are_checked(which in 0..CANDIDATES.len(), text in structured_plan()) {
        exercise(which, text);
    }

    #[test]
    fn yaml_soup_and_random_bytes_are_refused_or_checked(
        which in 0..CANDIDATES.len(),
        text in prop_oneof![
            mutate::random_text(),
            mutate::token_soup(YAML_TOKENS),
            mutate::nesting_and_aliases(),
        ],
    ) {
        exercise(which, text);
    }
}

/// The unmutated fixtures are accepted, so the properties above start from plans that bind.
#[test]
fn the_plan_fixtures_bind() {
    for (i, (dir, plan, _)) in CANDIDATES.iter().enumerate() {
        let fx = Arc::clone(&fixtures()[i]);
        let parsed =
            LaunchPlan::parse(&fx.plan, &fx.task).unwrap_or_else(|e| panic!("{dir}/{plan}: {e}"));
        let problems = bind::check_module(&parsed, &fx.module, Arch::Sm90a);
        assert!(problems.is_empty(), "{dir}/{plan}: {problems:?}");
        let w = fx.task.workloads.first().expect("a workload");
        assert!(
            bind::resolve(&parsed, &fx.module, &fx.task, w, Arch::Sm90a).is_ok(),
            "{dir}/{plan}"
        );
    }
}

/// A plan binding 30,000 parameters to 30,000 workspaces is checked in linear time: looking
/// each name up by scanning the list of workspaces (when validating the plan and again per
/// parameter and workload) took 55 s for `ptxbench check` in a debug build.
#[test]
fn issue_41_many_workspaces_and_parameters_are_checked_in_linear_time() {
    const N: usize = 30_000;
    let params: Vec<String> = (0..N).map(|i| format!(".param .u64 p{i}")).collect();
    let ptx = format!(
        ".version 8.7\n.target sm_90a\n.address_size 64\n.visible .entry k(\n{}\n)\n{{\nret;\n}}\n",
        params.join(",\n")
    );
    let mut plan = String::from(
        "launches:\n  - entry: k\n    grid: [1]\n    block: [1]\n    params:\n      - {tensor: C}\n",
    );
    for i in 1..N {
        plan.push_str(&format!("      - {{workspace: w{i}}}\n"));
    }
    plan.push_str("workspaces:\n");
    for i in 1..N {
        plan.push_str(&format!("  - {{name: w{i}, bytes: 1}}\n"));
    }
    plan.push_str("  - {name: w7, bytes: 2}\n");
    let task = fixtures()[2].task.clone();
    let problems = crate::bounded_for(
        std::time::Duration::from_secs(30),
        "large plan",
        move || {
            let module = ptxbench_ptx::parse(&ptx).expect("parses");
            let err = LaunchPlan::parse(&plan, &task).expect_err("w7 is declared twice");
            let twice: Vec<String> = err.problems.iter().map(|p| p.to_string()).collect();
            plan.truncate(plan.rfind("  - {name: w7").expect("the repeated line"));
            let parsed = LaunchPlan::parse(&plan, &task).expect("parses");
            assert!(bind::check_module(&parsed, &module, Arch::Sm90a).is_empty());
            for w in &task.workloads {
                let launches =
                    bind::resolve(&parsed, &module, &task, w, Arch::Sm90a).expect("resolves");
                assert_eq!(launches[0].params.len(), N);
            }
            twice
        },
    );
    assert_eq!(
        problems,
        vec!["workspaces[6].name: workspace `w7` is declared twice".to_string()]
    );
}
