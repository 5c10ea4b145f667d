//! Tests over the real suite (`tasks/`), the bad-input fixtures
//! (`pipeline/tests/fixtures/tasks/`) and the YAML round trip.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::*;
use crate::arch::Arch;

fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tasks")
}

fn load_suite() -> Suite {
    Suite::load(&suite_dir()).unwrap_or_else(|e| panic!("{e}"))
}

fn load_file(path: &Path) -> Result<Task, Vec<Problem>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let name = path.file_name().expect("a file name");
    parse_task(&text, path, Path::new(name))
}

/// Copies `suite.yaml` and the family directories of the real suite into a temporary dir.
fn copy_suite() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    for entry in walkdir::WalkDir::new(suite_dir()).max_depth(2) {
        let entry = entry.expect("walk");
        let rel = entry
            .path()
            .strip_prefix(suite_dir())
            .expect("under the suite");
        let top = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().to_string());
        let keep = matches!(
            top.as_deref(),
            Some(
                "suite.yaml"
                    | "gemm"
                    | "attention_fwd"
                    | "attention_bwd"
                    | "attention_fwd_fp8"
                    | "attention_decode"
                    | "attention_prefill"
                    | "attention_mla_decode"
                    | "gdn_prefill"
            )
        );
        if !keep {
            continue;
        }
        let to = tmp.path().join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&to).expect("mkdir");
        } else {
            std::fs::copy(entry.path(), &to).expect("copy");
        }
    }
    tmp
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).expect("read");
    assert!(text.contains(from), "{} lacks {from:?}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).expect("write");
}

// ---- the real suite ----

#[test]
fn the_real_suite_loads_without_problems() {
    let problems = check_dir(&suite_dir());
    assert!(
        problems.is_empty(),
        "{}",
        problems
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
    let suite = load_suite();
    assert_eq!(suite.version, "1.5.0");
    let count = |f| suite.of_family(f).count();
    assert_eq!(count(TaskFamily::Gemm), 17);
    assert_eq!(count(TaskFamily::GemmFp8), 1);
    assert_eq!(count(TaskFamily::AttentionFwd), 8);
    assert_eq!(count(TaskFamily::AttentionBwd), 6);
    assert_eq!(count(TaskFamily::AttentionFwdFp8), 2);
    assert_eq!(count(TaskFamily::AttentionDecode), 1);
    assert_eq!(count(TaskFamily::AttentionPrefill), 5);
    assert_eq!(count(TaskFamily::AttentionMlaDecode), 1);
    assert_eq!(count(TaskFamily::GdnPrefill), 2);
    let ids: Vec<&str> = suite.tasks.iter().map(|t| t.id.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted, "tasks are sorted by id");
    assert!(suite.get("gemm_n7168_k5120").is_some());
    assert!(suite.get("nope").is_none());
}

#[test]
fn the_suite_has_the_papers_workloads() {
    let suite = load_suite();
    let uuids: usize = suite
        .tasks
        .iter()
        .flat_map(|t| &t.workloads)
        .filter(|w| w.uuid.is_some())
        .count();
    // 82 GEMM, 14 attention forward and 24 attention backward rows in the paper's CSVs, and
    // the two fp8 attention rows of its code release at L = 4096, and the workloads of its two
    // Qwen runs on paged and ragged prefill, and the six selected workloads of each of its two
    // GDN prefill definitions (gdn_problems.csv).
    assert_eq!(uuids, 82 + 14 + 24 + 2 + 2 + 12);
    for t in &suite.tasks {
        for w in t.workloads_of(WorkloadKind::Performance) {
            if t.family == TaskFamily::AttentionFwd || t.family == TaskFamily::AttentionBwd {
                assert_eq!((w.axes["B"], w.axes["H"]), (4, 48), "{} {}", t.id, w.name);
            }
        }
        if t.family == TaskFamily::AttentionFwd {
            let s: Vec<i64> = t
                .workloads_of(WorkloadKind::Performance)
                .map(|w| w.axes["S"])
                .collect();
            assert_eq!(s, [2048, 4096], "{}", t.id);
        }
    }
    let headline = suite.get("gemm_n7168_k5120").expect("headline task");
    let m8192 = headline.workload("M8192").expect("M=8192");
    assert_eq!(
        m8192.uuid.as_deref(),
        Some("94920358-01a8-4c5b-9209-3103fd490e94")
    );
    let d96 = suite.get("mha_with_lse_d96").expect("d96");
    assert_eq!(
        d96.workload("B4_H48_S2048").map(|w| w.uuid.clone()),
        Some(None)
    );
    let bwd96 = suite.get("mha_bwd_d96_causal").expect("bwd d96");
    assert_eq!(bwd96.workloads_of(WorkloadKind::Performance).count(), 6);
}

#[test]
fn bytes_are_the_compulsory_traffic() {
    for t in &load_suite().tasks {
        for w in &t.workloads {
            let b = t.bindings(w);
            let tensors: u64 = t
                .inputs
                .iter()
                .chain(&t.outputs)
                .map(|x| t.size_bytes(x, &b).expect("sizes"))
                .sum();
            // A paged (GQA or MLA) decode reads only the pages its sequences own, not the
            // spare ones.
            let unused = match t.problem(w).expect("sizes") {
                crate::task::ProblemSize::Decode(d) => {
                    2 * (d.pages - d.tokens) * d.page_size * d.kv_heads * d.head_dim * 2
                }
                crate::task::ProblemSize::Prefill(p) => match p.paged {
                    Some((pages, ps)) => {
                        2 * (pages - p.kv_tokens) * ps * p.kv_heads * p.head_dim * 2
                    }
                    None => 0,
                },
                crate::task::ProblemSize::MlaDecode(d) => {
                    (d.pages - d.tokens) * d.page_size * (d.ckv_dim + d.pe_dim) * 2
                }
                _ => 0,
            };
            let tensors = tensors - unused;
            assert_eq!(
                t.bytes_of(w).expect("bytes"),
                tensors as f64,
                "{} {}",
                t.id,
                w.name
            );
        }
    }
}

#[test]
fn flops_reproduce_the_measured_baseline_rates() {
    // (task, workload, library ms, TFLOP/s) from docs/baselines-h200-2026-11-30.csv.
    let cases = [
        ("gemm_n7168_k5120", "M8192", 0.7347, 818.5),
        ("mha_with_lse_d128", "B4_H48_S4096", 2.5464, 647.7),
        ("mha_with_lse_d128_causal", "B4_H48_S4096", 1.4062, 586.4),
        ("mha_bwd_d128", "B4_H48_S4096", 7.9882, 516.2),
        ("mha_bwd_d128_causal", "B4_H48_S4096", 4.4719, 461.0),
    ];
    let suite = load_suite();
    for (id, w, ms, tflops) in cases {
        let t = suite.get(id).expect("task");
        let w = t.workload(w).expect("workload");
        let flops = t.flops_of(w).expect("flops");
        let rate = flops / (ms * 1e-3) / 1e12;
        assert!(
            (rate - tflops).abs() / tflops < 2e-3,
            "{id}: {rate} vs {tflops}"
        );
    }
}

#[test]
fn every_task_targets_hopper_and_blackwell() {
    for t in &load_suite().tasks {
        let families = |arch| -> Vec<&str> {
            t.target(arch)
                .map(|x| x.required.iter().map(|f| f.family.as_str()).collect())
                .unwrap_or_default()
        };
        if t.family == TaskFamily::AttentionDecode {
            // Memory-bound: the copy engine is the instruction that matters (see the task).
            assert_eq!(families(Arch::Sm90a), ["tma"], "{}", t.id);
            assert_eq!(families(Arch::Sm100a), ["tma"], "{}", t.id);
            continue;
        }
        assert_eq!(families(Arch::Sm90a), ["wgmma", "tma"], "{}", t.id);
        assert_eq!(families(Arch::Sm100a), ["tcgen05", "tma"], "{}", t.id);
        let wgmma = &t.target(Arch::Sm90a).expect("hopper").required[0];
        assert!(wgmma.matches("HGMMA.64x256x16.F32.BF16"));
        assert!(!wgmma.matches("HMMA.16816.F32.BF16"));
        let tc = &t.target(Arch::Sm100a).expect("blackwell").required[0];
        assert!(tc.matches("UTCHMMA") && tc.matches("LDTM"));
    }
}

#[test]
fn correctness_workloads_are_small_and_tile_unfriendly() {
    for t in &load_suite().tasks {
        let correctness: Vec<&Workload> = t.workloads_of(WorkloadKind::Correctness).collect();
        assert!(correctness.len() >= 2, "{}", t.id);
        assert!(
            correctness
                .iter()
                .any(|w| w.axes.values().any(|v| v % 64 != 0 && *v > 64)),
            "{}: a correctness workload with a partial tile beyond the first",
            t.id
        );
        for w in correctness {
            assert!(
                w.axes.values().all(|v| *v <= 512),
                "{} {}: small",
                t.id,
                w.name
            );
        }
    }
}

#[test]
fn backward_tasks_derive_o_and_lse() {
    let suite = load_suite();
    let t = suite.get("mha_bwd_d64").expect("bwd");
    assert_eq!(t.input_distribution("O"), None);
    assert_eq!(t.input_distribution("LSE"), None);
    assert!(matches!(
        t.input_distribution("dO"),
        Some(Distribution::Spiky { .. })
    ));
    let fp8 = suite.get("gemm_fp8_n7168_k5120").expect("fp8");
    assert_eq!(
        fp8.input_distribution("scale_a"),
        Some(&Distribution::Uniform { lo: 0.5, hi: 2.0 })
    );
    assert!(matches!(
        fp8.input_distribution("A"),
        Some(Distribution::Randn { .. })
    ));
}

#[test]
fn describe_shows_the_whole_task() {
    let suite = load_suite();
    let text = describe(suite.get("mha_with_lse_d128_causal").expect("task"));
    for needle in [
        "mha_with_lse_d128_causal",
        "LSE",
        "allclose",
        "B4_H48_S4096",
        "sm_100a",
    ] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
}

// ---- digests ----

#[test]
fn the_suite_digest_is_stable_and_follows_every_change() {
    let a = load_suite();
    let b = load_suite();
    assert_eq!(a.digest(), b.digest());
    assert_eq!(a.tasks[0].digest(), b.tasks[0].digest());

    let tmp = copy_suite();
    let copy = Suite::load(tmp.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        copy.digest(),
        a.digest(),
        "the directory is not part of the digest"
    );

    // Comments and formatting are not part of the task.
    let file = tmp.path().join("gemm/gemm_n128_k2048.yaml");
    edit(&file, "schema: 1\n", "# a comment\nschema:   1\n");
    assert_eq!(Suite::load(tmp.path()).expect("loads").digest(), a.digest());

    // A tolerance is.
    edit(&file, "rtol: 0.01", "rtol: 0.011");
    let changed = Suite::load(tmp.path()).expect("loads");
    assert_ne!(changed.digest(), a.digest());
    let id = "gemm_n128_k2048";
    assert_ne!(
        changed.get(id).map(Task::digest),
        a.get(id).map(Task::digest)
    );
    let other = "gemm_n7168_k5120";
    assert_eq!(
        changed.get(other).map(Task::digest),
        a.get(other).map(Task::digest)
    );

    // So is the version.
    edit(&tmp.path().join("suite.yaml"), "1.5.0", "1.5.1");
    assert_ne!(
        Suite::load(tmp.path()).expect("loads").digest(),
        changed.digest()
    );
}

#[test]
fn tasks_round_trip_through_yaml() {
    for t in &load_suite().tasks {
        let yaml = t.to_yaml().expect("serializes");
        let back = Task::from_yaml(&yaml, &t.source).unwrap_or_else(|p| {
            panic!("{}: {p:?}\n{yaml}", t.id);
        });
        assert_eq!(&back, t);
        assert_eq!(back.digest(), t.digest());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn edited_tasks_round_trip_with_their_digest(
        title in "[^\\n\\r]{0,40}",
        description in "(\\PC|\\n){0,120}",
        reference in "(\\PC|\\n){0,80}",
        operation in "[^\n\r]{0,40}",
        axis_note in "[^\n\r]{0,40}",
        rtol in 1e-6f64..0.99,
        std in 1e-3f64..1e3,
        m in 1i64..1_000_000,
    ) {
        let good = fixtures().join("good.yaml");
        let mut t = load_file(&good).expect("good fixture");
        // As validation leaves them: title trimmed, texts without trailing whitespace.
        t.title = format!("t {title}").trim().to_string();
        t.description = format!("d {description}").trim_end().to_string();
        t.reference = format!("r {reference}").trim_end().to_string();
        // These two are written inside flow maps, where quoting rules differ.
        t.baseline.operation = format!("o {operation}").trim().to_string();
        t.axes[0].description = axis_note.trim().to_string();
        t.outputs[0].tolerance = Some(Tolerance::Allclose { rtol, atol: rtol / 2.0 });
        t.distribution = Distribution::Randn { std };
        if let Some(w) = t.workloads.iter_mut().find(|w| w.name == "M64") {
            w.axes.insert("M".into(), m.max(129));
        }
        let yaml = t.to_yaml().expect("serializes");
        let back = Task::from_yaml(&yaml, &t.source);
        prop_assert!(back.is_ok(), "{:?}\n{}", back.err(), yaml);
        let back = back.expect("checked");
        prop_assert_eq!(&back, &t);
        prop_assert_eq!(back.digest(), t.digest());
    }
}

// ---- bad input ----

#[test]
fn the_good_fixture_is_valid() {
    let t = load_file(&fixtures().join("good.yaml")).unwrap_or_else(|p| panic!("{p:?}"));
    assert_eq!(t.id.as_str(), "good");
}

/// Each fixture in `bad/` and a field that must be among its problems, with a word of the
/// reason.
const BAD: &[(&str, &str, &str)] = &[
    ("yaml_syntax", "", "line 13"),
    ("duplicate_key", "outputs.C.tolerance.rtol", "given twice"),
    (
        "unknown_field",
        "outputs.C.tolerance.rtoll",
        "unknown field",
    ),
    ("missing_field", "flops", "missing"),
    ("wrong_type", "outputs.C.tolerance.rtol", "invalid type"),
    ("bad_schema", "schema", "schema 1"),
    ("id_mismatch", "id", "does not match the file name"),
    ("unknown_family", "family", "unknown family"),
    ("family_op_mismatch", "op.kind", "does not belong"),
    ("missing_op_flag", "op.transpose_b", "needs"),
    ("foreign_op_flag", "op.causal", "not a field"),
    ("zero_const_axis", "axes.N.value", "positive"),
    ("bad_axis_type", "axes.M.type", "unknown axis type"),
    ("unused_axis", "axes.L", "no tensor"),
    ("unknown_dtype", "inputs.A.dtype", "unknown dtype"),
    (
        "undeclared_axis",
        "inputs.A.shape[1]",
        "neither a declared axis",
    ),
    ("tensor_name_clash", "outputs.A", "also an input"),
    ("signature_mismatch", "outputs.C.shape[1]", "same axis"),
    ("signature_dtype", "inputs.B.dtype", "bf16 or f16"),
    (
        "missing_tolerance",
        "outputs.C.tolerance",
        "needs a tolerance",
    ),
    ("negative_tolerance", "outputs.C.tolerance.rtol", "positive"),
    ("loose_tolerance", "outputs.C.tolerance.max", "below 1"),
    (
        "tolerance_field_for_other_metric",
        "outputs.C.tolerance.max",
        "not used",
    ),
    ("tolerance_on_input", "inputs.A.tolerance", "only outputs"),
    (
        "distribution_on_output",
        "outputs.C.distribution",
        "only inputs",
    ),
    (
        "bad_spike_prob",
        "distribution.spike_prob",
        "between 0 and 1",
    ),
    ("zero_std", "distribution.std", "positive"),
    ("bad_uniform", "inputs.A.distribution.hi", "greater than lo"),
    (
        "unknown_distribution",
        "distribution.kind",
        "unknown distribution",
    ),
    ("unknown_baseline", "baseline.library", "unknown library"),
    ("bad_formula", "flops", "`Q`"),
    ("formula_not_positive", "bytes", "must be positive"),
    (
        "workload_missing_axis",
        "workloads[0].axes",
        "missing a value",
    ),
    ("workload_const_axis", "workloads[1].axes.N", "const axis"),
    ("workload_not_positive", "workloads[0].axes.M", "positive"),
    (
        "duplicate_workload_name",
        "workloads[1].name",
        "also the name",
    ),
    ("duplicate_workload_axes", "workloads[1]", "same axes"),
    (
        "bad_workload_kind",
        "workloads[1].kind",
        "unknown workload kind",
    ),
    ("no_correctness", "workloads", "correctness"),
    ("bad_uuid", "workloads[3].uuid", "not a uuid"),
    ("duplicate_uuid", "workloads[3].uuid", "also the uuid"),
    ("unknown_arch", "targets.sm_89", "unknown arch"),
    ("duplicate_arch", "targets.sm_90a", "given twice"),
    (
        "unknown_target_family",
        "targets.sm_90a.required[0].family",
        "unknown instruction family",
    ),
    (
        "wrong_arch_family",
        "targets.sm_90a.required[0].family",
        "does not exist on sm_90a",
    ),
    (
        "duplicate_target_family",
        "targets.sm_90a.required[2].family",
        "twice",
    ),
    (
        "bad_sass_pattern",
        "targets.sm_90a.required[0].sass[0]",
        "not a SASS opcode pattern",
    ),
    (
        "empty_sass",
        "targets.sm_90a.required[0].sass",
        "at least one",
    ),
    ("multiple_problems", "inputs.A.dtype", "unknown dtype"),
    ("multiple_problems", "baseline.library", "unknown library"),
    (
        "multiple_problems",
        "targets.sm_90a.required[0].sass[0]",
        "not a SASS",
    ),
];

#[test]
fn each_bad_fixture_names_its_file_and_field() {
    let dir = fixtures().join("bad");
    let mut seen = std::collections::BTreeSet::new();
    for (case, field, reason) in BAD {
        seen.insert(*case);
        let path = dir.join(format!("{case}.yaml"));
        let problems = match load_file(&path) {
            Ok(_) => panic!("{case}: loaded, but it is broken"),
            Err(p) => p,
        };
        let shown: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        assert!(
            problems.iter().all(|p| p.file == path),
            "{case}: every problem names the file: {shown:#?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.field == *field && p.reason.contains(reason)),
            "{case}: no problem at `{field}` saying `{reason}`: {shown:#?}"
        );
        if *case != "multiple_problems" && *case != "tensor_name_clash" {
            assert!(
                problems.len() <= 2,
                "{case}: one defect, one report: {shown:#?}"
            );
        }
    }
    // Every fixture file is covered by the table.
    for entry in std::fs::read_dir(&dir).expect("bad/") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .to_string();
        let case = name.trim_end_matches(".yaml");
        assert!(seen.contains(case), "{name} has no expectation in BAD");
    }
}

#[test]
fn a_broken_suite_reports_every_problem_in_every_file() {
    let tmp = copy_suite();
    let root = tmp.path();
    let bad = fixtures().join("bad");
    for case in ["unknown_dtype", "bad_sass_pattern"] {
        std::fs::copy(
            bad.join(format!("{case}.yaml")),
            root.join(format!("gemm/{case}.yaml")),
        )
        .expect("copy");
    }
    // A valid task in the wrong family directory, and a task file outside any.
    std::fs::copy(
        fixtures().join("good.yaml"),
        root.join("attention_fwd/good.yaml"),
    )
    .expect("copy");
    std::fs::copy(fixtures().join("good.yaml"), root.join("good.yaml")).expect("copy");
    // Non-family directories are not read.
    std::fs::create_dir_all(root.join("candidates/x")).expect("mkdir");
    std::fs::write(root.join("candidates/x/plan.yaml"), "not: [a task").expect("write");
    std::fs::write(root.join("candidates/plan.yaml"), "not: [a task").expect("write");

    let err = Suite::load(root).expect_err("broken");
    let has = |file: &str, field: &str| {
        err.problems
            .iter()
            .any(|p| p.file == root.join(file) && p.field == field)
    };
    assert!(has("gemm/unknown_dtype.yaml", "inputs.A.dtype"), "{err}");
    assert!(
        has(
            "gemm/bad_sass_pattern.yaml",
            "targets.sm_90a.required[0].sass[0]"
        ),
        "{err}"
    );
    assert!(has("attention_fwd/good.yaml", "family"), "{err}");
    assert!(has("good.yaml", ""), "{err}");
    assert_eq!(err.problems.len(), 4, "{err}");
    assert_eq!(check_dir(root), err.problems);
    assert!(err.to_string().contains("4 problem(s)"), "{err}");
}

#[test]
fn a_suite_needs_its_header_and_unique_uuids() {
    let tmp = copy_suite();
    let root = tmp.path();
    edit(
        &root.join("suite.yaml"),
        "version: \"1.5.0\"",
        "version: \"1.0\"",
    );
    edit(
        &root.join("gemm/gemm_n128_k2048.yaml"),
        "6458ded0-a0d3-4382-abcd-f2815b852ae9",
        "3817345d-2b16-47dc-ae55-710bf42cfd86",
    );
    let problems = check_dir(root);
    let fields: Vec<(String, String)> = problems
        .iter()
        .map(|p| {
            let file = p.file.strip_prefix(root).unwrap_or(&p.file);
            (file.display().to_string(), p.field.clone())
        })
        .collect();
    assert!(
        fields.contains(&("suite.yaml".into(), "version".into())),
        "{fields:?}"
    );
    assert!(
        fields
            .iter()
            .any(|(f, field)| f.ends_with(".yaml") && field.ends_with(".uuid")),
        "{fields:?}"
    );
    std::fs::remove_file(root.join("suite.yaml")).expect("rm");
    assert!(
        check_dir(root)
            .iter()
            .any(|p| p.file == root.join("suite.yaml"))
    );
}

/// The engine reads sizes through axis roles: a task whose axes have other names than the
/// suite's (M, N, K; B, H, S, D) gets the same problem sizes, never zeros.
#[test]
fn axis_roles_follow_the_shapes_not_the_axis_names() {
    let path = suite_dir().join("attention_fwd/mha_with_lse_d128.yaml");
    let text = std::fs::read_to_string(&path).expect("read");
    let original = parse_task(&text, &path, Path::new("mha_with_lse_d128.yaml")).expect("valid");
    let w = original
        .workloads_of(WorkloadKind::Performance)
        .next()
        .expect("a performance workload");
    let want = original.problem(w).expect("sizes");
    // Rename every axis (word-bounded) to a name the engine has never seen.
    let mut renamed = text.clone();
    for (from, to) in [
        ("B", "batch_n"),
        ("H", "heads_n"),
        ("S", "seq_len"),
        ("D", "dim"),
    ] {
        renamed = renamed
            .replace(&format!("[{from},"), &format!("[{to},"))
            .replace(&format!(" {from},"), &format!(" {to},"))
            .replace(&format!(" {from}]"), &format!(" {to}]"))
            .replace(&format!("\n  {from}:"), &format!("\n  {to}:"))
            .replace(&format!("{{{from}:"), &format!("{{{to}:"))
            .replace(&format!(", {from}:"), &format!(", {to}:"))
            .replace(&format!("*{from}"), &format!("*{to}"))
            .replace(&format!("{from}*"), &format!("{to}*"));
    }
    assert_ne!(renamed, text);
    let task = parse_task(&renamed, &path, Path::new("mha_with_lse_d128.yaml"))
        .unwrap_or_else(|p| panic!("renamed task invalid: {p:?}"));
    assert!(task.axis("seq_len").is_some() && task.axis("S").is_none());
    let w = task.workload(&w.name).expect("same workload");
    assert_eq!(task.problem(w).expect("sizes"), want);
    let dims = want.attention().expect("attention");
    assert_eq!((dims.batch, dims.heads, dims.head_dim), (4, 48, 128));
}

#[test]
fn a_workload_too_large_for_a_gpu_is_a_problem() {
    let path = suite_dir().join("gemm/gemm_n4096_k4096.yaml");
    let text = std::fs::read_to_string(&path).expect("read");
    // M = 2^31: A alone is 16 TiB.
    let huge = text.replacen("axes: {M: 129}", "axes: {M: 2147483648}", 1);
    assert_ne!(huge, text, "fixture line not found");
    let problems =
        parse_task(&huge, &path, Path::new("gemm_n4096_k4096.yaml")).expect_err("too large");
    let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert!(
        text.iter()
            .any(|p| p.contains("the harness allows at most")),
        "{text:?}"
    );
}

#[test]
fn issue_41_an_axis_value_beyond_64_bits_is_out_of_range_not_a_float() {
    let tmp = copy_suite();
    let file = tmp.path().join("gemm/gemm_n128_k2048.yaml");
    edit(&file, "axes: {M: 1}", "axes: {M: 18446744073709551616}");
    let err = Suite::load(tmp.path()).expect_err("refused");
    let p = err
        .problems
        .iter()
        .find(|p| p.file == file && p.field == "workloads[0].axes.M")
        .unwrap_or_else(|| panic!("no problem at the axis: {err}"));
    assert!(
        p.reason
            .contains("18446744073709551616 is out of range for an integer axis")
            && !p.reason.contains("floating"),
        "{p}"
    );
    edit(&file, "axes: {M: 18446744073709551616}", "axes: {M: 1.5}");
    let err = Suite::load(tmp.path()).expect_err("refused");
    assert!(
        err.problems
            .iter()
            .any(|p| p.field == "workloads[0].axes.M" && p.reason.contains("not an integer")),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn issue_41_a_symlinked_task_file_is_reported_not_skipped() {
    let tmp = copy_suite();
    let root = tmp.path();
    let file = root.join("gemm/gemm_n128_k2048.yaml");
    let elsewhere = root.join("gemm_n128_k2048.elsewhere");
    std::fs::rename(&file, &elsewhere).expect("move");
    std::os::unix::fs::symlink(&elsewhere, &file).expect("symlink");
    let err = Suite::load(root).expect_err("a linked task file is a problem");
    assert_eq!(err.problems.len(), 1, "{err}");
    assert_eq!(err.problems[0].file, file);
    assert!(err.problems[0].reason.contains("symbolic link"), "{err}");
    assert_eq!(check_dir(root), err.problems);
}

/// A FIFO or a folder named like a task file in a family folder is a problem naming it and
/// what it is; it was skipped, and a suite of only such files said no more than "the suite
/// has no tasks".
#[cfg(unix)]
#[test]
fn issue_41_a_fifo_or_folder_named_like_a_task_file_is_reported() {
    let tmp = copy_suite();
    let root = tmp.path();
    let fifo = root.join("gemm/fifo.yaml");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
    let folder = root.join("gemm/folder.yaml");
    std::fs::create_dir(&folder).expect("mkdir");
    let err = Suite::load(root).expect_err("both are problems");
    let found: Vec<(&Path, &str)> = err
        .problems
        .iter()
        .map(|p| (p.file.as_path(), p.reason.as_str()))
        .collect();
    assert_eq!(
        found,
        vec![
            (
                fifo.as_path(),
                "is a FIFO (named pipe); a task file must be a plain file"
            ),
            (
                folder.as_path(),
                "is a folder; a task file must be a plain file"
            ),
        ]
    );
}

/// Runs `f` on a thread with a 2 MiB stack (what `std::thread::spawn` gives) and waits at most
/// `limit` for it.
fn on_small_thread<T: Send + 'static>(
    limit: std::time::Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let _ = tx.send(f());
        })
        .expect("spawn");
    rx.recv_timeout(limit)
        .unwrap_or_else(|e| panic!("no answer within {limit:?}: {e}"))
}

/// Collections nested hundreds deep are refused at [`document::MAX_DEPTH`] levels, naming the
/// line, on a thread with a 2 MiB stack; serde-saphyr's default depth of 64 overflowed it in
/// a debug build, aborting the process.
#[test]
fn issue_41_deep_nesting_is_refused_within_a_small_stack() {
    let block: String = (0..390)
        .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
        .collect();
    let flow_seq = format!("{}{}", "[".repeat(20_000), "]".repeat(20_000));
    let flow_map = "{a: ".repeat(20_000) + &"}".repeat(20_000);
    for text in [block, flow_seq, flow_map] {
        let problems = on_small_thread(std::time::Duration::from_secs(30), move || {
            Task::from_yaml(&text, Path::new("gemm/deep.yaml")).expect_err("refused")
        });
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].reason.contains("YAML syntax error at line"),
            "{problems:?}"
        );
    }
    // Fifteen levels, more than any task file needs, still read.
    let tree = document::parse("targets: [{required: [{sass: [[[[[[[[[[x]]]]]]]]]]}]}]\n");
    assert!(tree.is_ok(), "{tree:?}");
}

/// A map with 100,000 keys is checked for repeated keys by a set: the scan of the keys before
/// each one took 49 s for `tasks check` on such a file in a debug build.
#[test]
fn issue_41_repeated_keys_of_a_large_map_are_found_in_linear_time() {
    let mut text: String = (0..100_000).map(|i| format!("k{i}: 1\n")).collect();
    text.push_str("k5: 2\n");
    let problems = on_small_thread(std::time::Duration::from_secs(20), move || {
        Task::from_yaml(&text, Path::new("gemm/keys.yaml")).expect_err("refused")
    });
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].field, "k5");
    assert!(problems[0].reason.contains("line 100001"), "{problems:?}");
}
