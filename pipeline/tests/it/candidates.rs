//! The committed candidates through the whole static check, with ptxas and NVRTC for real.

use ptxbench::arch::Arch;
use ptxbench::candidate::Candidate;
use ptxbench::check::{CheckOptions, check};

use crate::{cuda_tools, root, suite};

fn opts() -> CheckOptions {
    CheckOptions {
        arch: Arch::Sm90a,
        compile_for: Arch::ALL.to_vec(),
    }
}

#[test]
fn simt_gemm_in_cuda_cpp_binds_on_every_gemm_workload() {
    if !cuda_tools("simt_gemm_in_cuda_cpp_binds_on_every_gemm_workload") {
        return;
    }
    let suite = suite();
    let c = Candidate::load(&root().join("tasks/candidates/simt/gemm")).expect("loads");
    let task = suite.get("gemm_n7168_k5120").expect("task exists");
    let r = check(&c, task, &opts());
    assert!(r.ok(), "{:?}", r.failure);
    let nvrtc = r.nvrtc.as_ref().expect("compiled with NVRTC");
    assert_eq!(nvrtc.version, "13.0");
    assert_eq!(r.workloads.len(), task.workloads.len());
    // M=70: grid (7168/16, ceil(70/16)) = (448, 5).
    let m70 = r
        .workloads
        .iter()
        .find(|w| w.workload.contains("70"))
        .expect("an M=70 workload");
    assert_eq!(m70.launches[0].grid, [448, 5, 1]);
    // A plain SIMT kernel: the lint warns that wgmma and TMA are absent, without failing it.
    assert!(r.required.iter().all(|q| q.count == 0));
    assert!(
        r.warnings.iter().any(|w| w.contains("wgmma")),
        "{:?}",
        r.warnings
    );
    let ptxas = |a: Arch| {
        r.ptxas
            .iter()
            .find(|p| p.arch == a)
            .expect("ran")
            .result
            .as_ref()
            .expect("ptxas found")
    };
    let hopper = ptxas(Arch::Sm90a);
    assert!(hopper.ok, "{}", hopper.log);
    assert!(hopper.resources[0].registers > 0);
    assert_eq!(hopper.resources[0].shared_bytes, 2 * 16 * 17 * 4);
    // NVRTC compiled for compute_90a: an arch-specific target does not run on Blackwell.
    let blackwell = ptxas(Arch::Sm100a);
    assert!(
        !blackwell.ok
            && blackwell
                .log
                .contains("cannot be compiled to future architecture"),
        "{}",
        blackwell.log
    );
}

#[test]
fn triton_tma_gemm_binds_as_triton_emitted_it() {
    if !cuda_tools("triton_tma_gemm_binds_as_triton_emitted_it") {
        return;
    }
    let suite = suite();
    let c = Candidate::load(&root().join("tasks/candidates/triton_gemm_tma")).expect("loads");
    for id in ["gemm_n7168_k5120", "gemm_n128_k2048"] {
        let task = suite.get(id).expect("task exists");
        let r = check(&c, task, &opts());
        assert!(r.ok(), "{id}: {:?}", r.failure);
        let fam = |f: &str| r.families.get(f).copied().unwrap_or(0);
        assert!(
            fam("wgmma") > 0 && fam("tma") > 0 && fam("mbarrier") > 0,
            "{:?}",
            r.families
        );
        assert!(r.warnings.iter().all(|w| !w.contains("no `wgmma`")));
        // sm_90a PTX compiles for sm_90a and is refused for sm_100a (a warning, not a failure).
        let by_arch = |a: Arch| {
            r.ptxas
                .iter()
                .find(|p| p.arch == a)
                .expect("ran")
                .result
                .as_ref()
                .expect("ptxas found")
                .ok
        };
        assert!(by_arch(Arch::Sm90a));
        assert!(!by_arch(Arch::Sm100a));
    }
}

#[test]
fn triton_pointer_gemm_binds() {
    let suite = suite();
    let c = Candidate::load(&root().join("tasks/candidates/triton_gemm_ptr")).expect("loads");
    let task = suite.get("gemm_n4096_k4096").expect("task exists");
    let r = check(
        &c,
        task,
        &CheckOptions {
            arch: Arch::Sm90a,
            compile_for: vec![],
        },
    );
    assert!(r.ok(), "{:?}", r.failure);
    assert!(r.families.get("wgmma").copied().unwrap_or(0) > 0);
}

#[test]
fn a_response_that_is_cut_off_is_an_extraction_failure() {
    let text = "Here is my kernel:\n```ptx\n.version 8.0\n.target sm_90a\n";
    let err = Candidate::from_response(text).expect_err("truncated");
    assert!(
        err.to_string()
            .contains("ends inside a code block opened on line 2"),
        "{err}"
    );
}

/// A symbolic link in a candidate folder is followed; one to nothing is an error saying that
/// the file is a link and where it points, not that the folder lacks a kernel.
#[cfg(unix)]
#[test]
fn issue_41_a_symlinked_kernel_is_followed_and_a_dangling_one_named() {
    let simt = root().join("tasks/candidates/simt/gemm");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(simt.join("plan.yaml"), dir.path().join("plan.yaml")).expect("copy");
    let kernel = dir.path().join("kernel.cu");
    std::os::unix::fs::symlink(simt.join("kernel.cu"), &kernel).expect("symlink");
    let c = Candidate::load(dir.path()).expect("a link to the kernel loads");
    assert_eq!(
        c.kernel,
        std::fs::read_to_string(simt.join("kernel.cu")).expect("read")
    );
    std::fs::remove_file(&kernel).expect("rm");
    let nowhere = dir.path().join("moved-away.ptx");
    std::os::unix::fs::symlink(&nowhere, dir.path().join("kernel.ptx")).expect("symlink");
    let e = Candidate::load(dir.path()).expect_err("a link to nothing");
    let text = e.to_string();
    assert!(
        text.contains("kernel.ptx")
            && text.contains("symbolic link")
            && text.contains("moved-away.ptx")
            && !text.contains("needs kernel.ptx or kernel.cu"),
        "{text}"
    );
}

/// Every evaluation of the suite-1.4 run list (issue 60) passes the static check on every
/// prefill task it names, NVRTC's and nvcc's builds alike, and every prefill task has a correct
/// SIMT candidate of each build; a ragged plan on a paged task is refused, naming the tensor.
#[test]
fn issue_60_prefill_candidates_pass_the_static_check_on_every_prefill_task() {
    if !cuda_tools("issue_60_prefill_candidates_pass_the_static_check_on_every_prefill_task") {
        return;
    }
    let suite = suite();
    let list = root().join("tasks/runs/suite-v3-sm90a.yaml");
    let dir = list.parent().expect("folder").to_path_buf();
    let v: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&list).expect("list")).expect("yaml");
    let mut correct: Vec<(String, String)> = Vec::new();
    for e in v["evaluations"].as_array().expect("evaluations") {
        let name = e["name"].as_str().expect("name");
        let kernel = dir.join(e["kernel"].as_str().expect("kernel"));
        let plan = dir.join(e["plan"].as_str().expect("plan"));
        let c = Candidate::from_files(&kernel, &plan).expect("candidate");
        for pattern in e["tasks"].as_array().expect("tasks") {
            let pattern = pattern.as_str().expect("pattern");
            let tasks: Vec<_> = suite
                .tasks
                .iter()
                .filter(|t| ptxbench::task::glob_match(pattern, t.id.as_str()))
                .collect();
            assert!(!tasks.is_empty(), "{name}: `{pattern}` names no task");
            for t in tasks {
                let r = check(&c, t, &opts());
                assert!(r.ok(), "{name} on {}: {:?}", t.id, r.failure);
                if e["expect"] == "correct" {
                    correct.push((t.id.to_string(), name.to_string()));
                }
            }
        }
    }
    for t in suite.of_family(ptxbench::task::TaskFamily::AttentionPrefill) {
        for build in ["simt-", "nvcc-simt-"] {
            assert!(
                correct
                    .iter()
                    .any(|(id, n)| id == t.id.as_str() && n.starts_with(build)),
                "{}: no correct {build} candidate",
                t.id
            );
        }
    }
    let ragged = Candidate::from_files(
        &root().join("tasks/candidates/simt/attention_prefill/kernel.cu"),
        &root().join("tasks/candidates/simt/attention_prefill/plan.yaml"),
    )
    .expect("candidate");
    let paged = suite
        .get("gqa_paged_prefill_causal_h32_kv8_d128_ps1")
        .expect("task");
    let r = check(&ragged, paged, &opts());
    assert!(!r.ok());
    assert!(
        format!("{:?}", r.failure).contains("no tensor `k`"),
        "{:?}",
        r.failure
    );
}

/// The MLA decode evaluations of the suite-1.4 run list pass the static check on every MLA
/// task they name: every MLA task has a correct SIMT candidate of each build (NVRTC's and
/// nvcc's) and a known-bad one expected to fail numerically; the SIMT kernel gets one warp per
/// (sequence, head); a GQA decode plan on the MLA task is refused, naming the tensor it lacks.
#[test]
fn mla_decode_candidates_pass_the_static_check_on_every_mla_task() {
    if !cuda_tools("mla_decode_candidates_pass_the_static_check_on_every_mla_task") {
        return;
    }
    let suite = suite();
    let list = root().join("tasks/runs/suite-v3-sm90a.yaml");
    ptxbench::runner::list::RunList::load(&list).expect("the run list loads");
    let dir = list.parent().expect("folder").to_path_buf();
    let v: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&list).expect("list")).expect("yaml");
    let mla: Vec<_> = suite
        .of_family(ptxbench::task::TaskFamily::AttentionMlaDecode)
        .collect();
    assert!(!mla.is_empty(), "the suite has MLA decode tasks");
    let mut seen: Vec<(String, String, String)> = Vec::new();
    for e in v["evaluations"].as_array().expect("evaluations") {
        let name = e["name"].as_str().expect("name");
        let patterns: Vec<&str> = e["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .map(|p| p.as_str().expect("pattern"))
            .collect();
        let tasks: Vec<_> = mla
            .iter()
            .filter(|t| {
                patterns
                    .iter()
                    .any(|p| ptxbench::task::glob_match(p, t.id.as_str()))
            })
            .collect();
        if tasks.is_empty() {
            continue;
        }
        let kernel = dir.join(e["kernel"].as_str().expect("kernel"));
        let plan = dir.join(e["plan"].as_str().expect("plan"));
        let c = Candidate::from_files(&kernel, &plan).expect("candidate");
        for t in tasks {
            let r = check(&c, t, &opts());
            assert!(r.ok(), "{name} on {}: {:?}", t.id, r.failure);
            // batch_size * 16 heads, 8 warps a block.
            let w = r
                .workloads
                .iter()
                .find(|w| w.workload.contains("B128"))
                .expect("a batch-128 workload");
            assert_eq!(w.launches[0].grid, [256, 1, 1], "{name}");
            let expect = e["expect"].as_str().expect("expect").to_string();
            seen.push((t.id.to_string(), name.to_string(), expect));
        }
    }
    each_has_its_engine_tests(&mla, &seen);
    refused_on(
        &root().join("tasks/candidates/simt/attention_decode"),
        mla[0],
        "no tensor `q`",
    );
}

/// The GDN prefill evaluations of the suite-1.4 run list pass the static check on every GDN task
/// they name: every GDN task has a correct SIMT candidate of each build (NVRTC's and nvcc's) and
/// a known-bad one expected to fail numerically; the SIMT kernel gets one block per (sequence,
/// value head); a ragged GQA prefill plan on a GDN task is refused, naming a tensor it lacks.
#[test]
fn gdn_prefill_candidates_pass_the_static_check_on_every_gdn_task() {
    if !cuda_tools("gdn_prefill_candidates_pass_the_static_check_on_every_gdn_task") {
        return;
    }
    let suite = suite();
    let list = root().join("tasks/runs/suite-v3-sm90a.yaml");
    ptxbench::runner::list::RunList::load(&list).expect("the run list loads");
    let dir = list.parent().expect("folder").to_path_buf();
    let v: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&list).expect("list")).expect("yaml");
    let gdn: Vec<_> = suite
        .of_family(ptxbench::task::TaskFamily::GdnPrefill)
        .collect();
    assert_eq!(gdn.len(), 2, "the suite's GDN prefill tasks");
    let mut seen: Vec<(String, String, String)> = Vec::new();
    for e in v["evaluations"].as_array().expect("evaluations") {
        let name = e["name"].as_str().expect("name");
        let patterns: Vec<&str> = e["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .map(|p| p.as_str().expect("pattern"))
            .collect();
        let tasks: Vec<_> = gdn
            .iter()
            .filter(|t| {
                patterns
                    .iter()
                    .any(|p| ptxbench::task::glob_match(p, t.id.as_str()))
            })
            .collect();
        if tasks.is_empty() {
            continue;
        }
        let kernel = dir.join(e["kernel"].as_str().expect("kernel"));
        let plan = dir.join(e["plan"].as_str().expect("plan"));
        let c = Candidate::from_files(&kernel, &plan).expect("candidate");
        for t in tasks {
            let r = check(&c, t, &opts());
            assert!(r.ok(), "{name} on {}: {:?}", t.id, r.failure);
            // num_seqs * num_v_heads blocks on every workload.
            let v_heads = t
                .axis("num_v_heads")
                .and_then(|a| a.value)
                .expect("a const head count");
            for w in &r.workloads {
                let seqs = t
                    .workload(&w.workload)
                    .map(|x| x.axes["num_seqs"])
                    .expect("the workload");
                assert_eq!(
                    w.launches[0].grid,
                    [u32::try_from(seqs * v_heads).expect("fits"), 1, 1],
                    "{name} {}",
                    w.workload
                );
            }
            let expect = e["expect"].as_str().expect("expect").to_string();
            seen.push((t.id.to_string(), name.to_string(), expect));
        }
    }
    each_has_its_engine_tests(&gdn, &seen);
    refused_on(
        &root().join("tasks/candidates/simt/attention_prefill"),
        gdn[0],
        "no tensor `",
    );
}

/// Every task of `tasks` has, among the `seen` (task, evaluation, expected verdict) of its run
/// list, the engine's SIMT candidate (NVRTC and nvcc builds) expected correct and its known-bad
/// variant expected numerical.
fn each_has_its_engine_tests(tasks: &[&ptxbench::task::Task], seen: &[(String, String, String)]) {
    for t in tasks {
        for (build, expect) in [
            ("simt-", "correct"),
            ("nvcc-simt-", "correct"),
            ("simt-", "numerical"),
        ] {
            assert!(
                seen.iter()
                    .any(|(id, n, x)| id == t.id.as_str() && n.starts_with(build) && x == expect),
                "{}: no {build} candidate expected {expect}",
                t.id
            );
        }
    }
}

/// The candidate in `dir` (kernel.cu, plan.yaml), written for another op, fails the static
/// check on `task`, saying `words`.
fn refused_on(dir: &std::path::Path, task: &ptxbench::task::Task, words: &str) {
    let c =
        Candidate::from_files(&dir.join("kernel.cu"), &dir.join("plan.yaml")).expect("candidate");
    let r = check(&c, task, &opts());
    assert!(!r.ok());
    assert!(
        format!("{:?}", r.failure).contains(words),
        "{:?}",
        r.failure
    );
}
