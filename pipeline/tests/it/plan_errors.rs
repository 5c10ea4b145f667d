//! Each way a launch plan can be wrong gets a problem that names the field and says why.

use ptxbench::arch::Arch;
use ptxbench::candidate::bind::{check_module, resolve};
use ptxbench::candidate::plan::LaunchPlan;

use crate::suite;

const GOOD: &str = r#"
launches:
  - entry: gemm_simt_bf16
    grid: ["ceil_div(N, 16)", "ceil_div(M, 16)"]
    block: [16, 16]
    params:
      - {tensor: A}
      - {tensor: B}
      - {tensor: C}
      - {scalar: M, type: u32}
      - {scalar: N, type: u32}
      - {scalar: K, type: u32}
"#;

fn simt_ptx() -> ptxbench_ptx::Module {
    let text =
        std::fs::read_to_string(crate::ptx_fixture("gemm_simt_bf16.sm_90a.ptx")).expect("fixture");
    ptxbench_ptx::parse(&text).expect("parses")
}

/// All problems of `plan` against the SIMT GEMM PTX on every workload of gemm_n7168_k5120.
fn problems(plan: &str) -> Vec<String> {
    problems_with(plan, &simt_ptx())
}

fn problems_with(plan: &str, module: &ptxbench_ptx::Module) -> Vec<String> {
    let suite = suite();
    let task = suite.get("gemm_n7168_k5120").expect("task");
    let plan = match LaunchPlan::parse(plan, task) {
        Ok(p) => p,
        Err(e) => return e.problems.iter().map(ToString::to_string).collect(),
    };
    let static_problems = check_module(&plan, module, Arch::Sm90a);
    if !static_problems.is_empty() {
        return static_problems.iter().map(ToString::to_string).collect();
    }
    let mut out = Vec::new();
    for w in &task.workloads {
        if let Err(p) = resolve(&plan, module, task, w, Arch::Sm90a) {
            out.extend(p.iter().map(ToString::to_string));
        }
    }
    out
}

fn assert_problem(plan: &str, field: &str, reason: &str) {
    let ps = problems(plan);
    assert!(
        ps.iter()
            .any(|p| p.starts_with(field) && p.contains(reason)),
        "expected `{field}: ...{reason}...`, got {ps:#?}"
    );
}

#[test]
fn the_good_plan_has_no_problem() {
    assert_eq!(problems(GOOD), Vec::<String>::new());
}

#[test]
fn yaml_errors_and_unknown_fields() {
    assert_problem("launches: [", "plan YAML", "");
    assert_problem(&GOOD.replace("block:", "blok:"), "plan YAML", "blok");
}

#[test]
fn parameter_count_type_and_names() {
    assert_problem(
        &GOOD.replace("      - {scalar: K, type: u32}\n", ""),
        "launches[0].params",
        "5 bindings for `gemm_simt_bf16`, which declares 6",
    );
    assert_problem(
        &GOOD.replace("{scalar: M, type: u32}", "{tensor: A}"),
        "launches[0].params[3]",
        "64-bit address",
    );
    assert_problem(
        &GOOD.replace("{scalar: M, type: u32}", "{scalar: M, type: u64}"),
        "launches[0].params[3]",
        "u64 scalar is 8 bytes",
    );
    assert_problem(
        &GOOD.replace("{scalar: M, type: u32}", "{scalar: M, type: f32}"),
        "launches[0].params[3]",
        "use a integer type",
    );
    assert_problem(
        &GOOD.replace("{tensor: A}", "{name: a_ptr, tensor: A}"),
        "launches[0].params[0].name",
        "is `gemm_simt_bf16_param_0`",
    );
    assert_problem(
        &GOOD.replace("{scalar: M, type: u32}", "{scalar: M}"),
        "launches[0].params[3].type",
        "needs a type",
    );
    assert_problem(
        &GOOD.replace("{scalar: M, type: u32}", "{scalar: M, type: u33}"),
        "launches[0].params[3].type",
        "unknown scalar type",
    );
    assert_problem(
        &GOOD.replace("{tensor: A}", "{tensor: A, scalar: M}"),
        "launches[0].params[0]",
        "exactly one of",
    );
    assert_problem(
        &GOOD.replace("{tensor: A}", "{tensor: X}"),
        "launches[0].params[0].tensor",
        "no tensor `X`",
    );
    assert_problem(
        &GOOD.replace(
            "{scalar: M, type: u32}",
            "{tensor_map: {tensor: A, dims: [K, M], strides: [\"K*2\"], box: [64, 64]}}",
        ),
        "launches[0].params[3]",
        "a tensor map is a 128-byte parameter",
    );
}

#[test]
fn entries_outputs_and_expressions() {
    assert_problem(
        &GOOD.replace("entry: gemm_simt_bf16", "entry: gemm"),
        "launches[0].entry",
        "no `.entry gemm` (entries: gemm_simt_bf16)",
    );
    assert_problem(
        &GOOD.replace("{tensor: C}", "{tensor: B}"),
        "launches",
        "output `C` is bound to no parameter",
    );
    assert_problem(
        &GOOD.replace("ceil_div(N, 16)", "ceil_div(Q, 16)"),
        "launches[0].grid[0]",
        "`Q`",
    );
    assert_problem(
        &GOOD.replace("ceil_div(N, 16)", "foo(N)"),
        "plan YAML",
        "foo",
    );
    assert_problem(
        &GOOD.replace(
            "{scalar: M, type: u32}",
            "{scalar: \"M*100000000\", type: u32}",
        ),
        "launches[0].params[3]",
        "does not fit in u32",
    );
}

#[test]
fn limits_of_the_architecture() {
    assert_problem(
        &GOOD.replace("block: [16, 16]", "block: [32, 33]"),
        "launches[0].block",
        "1056 threads per block; at most 1024",
    );
    assert_problem(
        &GOOD.replace("block: [16, 16]", "block: [16, 16]\n    shared_mem: 300000"),
        "launches[0].shared_mem",
        "outside 0..=232448",
    );
    assert_problem(
        &GOOD.replace("block: [16, 16]", "block: [16, 16]\n    shared_mem: 231000"),
        "launches[0].shared_mem",
        "exceed the 232448 bytes",
    );
    assert_problem(
        &GOOD.replace("block: [16, 16]", "block: [16, 16]\n    cluster: [4, 4]"),
        "launches[0].cluster",
        "a cluster of 16 blocks; at most 8",
    );
    assert_problem(
        &GOOD.replace("block: [16, 16]", "block: [16, 16]\n    cluster: [1, 2]"),
        "launches[0].cluster",
        "is not a multiple of cluster",
    );
    assert_problem(
        &GOOD.replace("\"ceil_div(M, 16)\"", "\"M - M\""),
        "launches[0].grid[1]",
        "= 0, outside 1..=65535",
    );
}

#[test]
fn module_directives_are_checked() {
    let text =
        std::fs::read_to_string(crate::ptx_fixture("gemm_simt_bf16.sm_90a.ptx")).expect("fixture");
    let m =
        ptxbench_ptx::parse(&text.replace(".target sm_90a", ".target sm_100a")).expect("parses");
    let ps = problems_with(GOOD, &m);
    assert!(
        ps.iter()
            .any(|p| p.starts_with("ptx.target") && p.contains("cannot run on sm_90a")),
        "{ps:?}"
    );
    let m = ptxbench_ptx::parse(&text.replace(".version 9.0", ".version 7.8")).expect("parses");
    let ps = problems_with(GOOD, &m);
    assert!(
        ps.iter()
            .any(|p| p.starts_with("ptx.version") && p.contains("needs 8.0")),
        "{ps:?}"
    );
    let m = ptxbench_ptx::parse(&text.replacen("\n{\n", "\n.reqntid 256\n{\n", 1)).expect("parses");
    let ps = problems_with(GOOD, &m);
    assert!(
        ps.iter()
            .any(|p| p.starts_with("launches[0].block") && p.contains(".reqntid")),
        "{ps:?}"
    );
}

#[test]
fn tensor_maps_are_checked_against_tma_rules_and_the_tensor() {
    let tma =
        std::fs::read_to_string(crate::root().join("tasks/candidates/triton_gemm_tma/plan.yaml"))
            .expect("plan");
    let ptx =
        std::fs::read_to_string(crate::root().join("tasks/candidates/triton_gemm_tma/kernel.ptx"))
            .expect("ptx");
    let m = ptxbench_ptx::parse(&ptx).expect("parses");
    assert_eq!(problems_with(&tma, &m), Vec::<String>::new());
    let bad = |from: &str, to: &str| problems_with(&tma.replacen(from, to, 1), &m);
    let has = |ps: Vec<String>, field: &str, reason: &str| {
        assert!(
            ps.iter()
                .any(|p| p.starts_with(field) && p.contains(reason)),
            "want {field} {reason}: {ps:#?}"
        );
    };
    has(
        bad(
            "box: [64, 128], swizzle: 128B",
            "box: [128, 128], swizzle: 128B",
        ),
        "launches[0].params[0].tensor_map.box[0]",
        "128B swizzle allows at most 128",
    );
    has(
        bad("strides: [\"K*2\"]", "strides: [\"K*2+8\"]"),
        "launches[0].params[0].tensor_map.strides[0]",
        "multiples of 16",
    );
    has(
        bad("dims: [K, M]", "dims: [K, \"M+1\"]"),
        "launches[0].params[0].tensor_map.dims",
        "the map spans",
    );
    has(
        bad(
            "box: [64, 128], swizzle: 128B",
            "box: [64, 300], swizzle: 128B",
        ),
        "launches[0].params[0].tensor_map.box[1]",
        "outside 1..=256",
    );
    has(
        bad("swizzle: 128B", "swizzle: 96B"),
        "launches[0].params[0].tensor_map.swizzle",
        "is not one of",
    );
    has(
        bad("strides: [\"K*2\"], box", "strides: [], box"),
        "launches[0].params[0].tensor_map.strides",
        "needs 1",
    );
}
