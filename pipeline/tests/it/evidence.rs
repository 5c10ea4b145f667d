//! Target evidence on real cubins: the fixtures compiled here with the pinned ptxas for sm_90a
//! and sm_100a, disassembled with nvdisasm; counters spliced into real PTX and the copies
//! compiled; Nsight Compute's CSV folded in through the CLI.

use ptxbench::arch::Arch;
use ptxbench::engine::Verdict;
use ptxbench::evidence::ncu;
use ptxbench::evidence::sass::{self, SassInventory};
use ptxbench::evidence::{
    EvidenceStatus, ExecutedCounts, StaticSass, assess, correct_with_arch, splice,
};
use ptxbench::toolchain::{self, Tool, ptxas};
use ptxbench_ptx::Family;

use crate::{fixture, ptx_fixture, root, suite};

/// Whether ptxas and nvdisasm are installed; with `PTXBENCH_REQUIRE_CUDA_TOOLS=1` (CI) their
/// absence fails the test instead of skipping it.
fn sass_tools(test: &str) -> bool {
    let missing: Vec<String> = [Tool::Ptxas, Tool::Nvdisasm]
        .into_iter()
        .filter_map(|t| toolchain::locate(t).err().map(|e| e.to_string()))
        .collect();
    crate::tools_present(test, &missing)
}

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn cubin(ptx: &str, arch: Arch) -> Vec<u8> {
    let res = ptxas::compile(ptx, arch).expect("ptxas runs");
    assert!(res.ok, "ptxas -arch={arch} failed:\n{}", res.log);
    res.cubin.expect("a cubin when ptxas succeeds")
}

fn inventory(ptx: &str, arch: Arch) -> SassInventory {
    sass::disassemble(&cubin(ptx, arch)).expect("nvdisasm reads the cubin")
}

const GEMM: &str = "gemm_n7168_k5120";

#[test]
fn hopper_fixture_shows_hgmma_and_utmaldg() {
    if !sass_tools("hopper_fixture_shows_hgmma_and_utmaldg") {
        return;
    }
    let inv = inventory(
        &read(&ptx_fixture("hopper_wgmma_tma.sm_90a.ptx")),
        Arch::Sm90a,
    );
    let bases = inv.bases();
    assert!(bases.get("HGMMA").is_some_and(|n| *n > 0), "{bases:?}");
    assert!(bases.get("UTMALDG").is_some_and(|n| *n > 0), "{bases:?}");
    assert_eq!(inv.functions[0].name, "hopper_wgmma_tma");
    assert!(inv.disassembler.contains("release"), "{}", inv.disassembler);

    let suite = suite();
    let task = suite.get(GEMM).expect("gemm task");
    let target = task.target(Arch::Sm90a).expect("sm_90a target");
    let e = assess(target, &StaticSass::Inventory(inv), None);
    assert_eq!(e.status, EvidenceStatus::StaticOnly, "{e:?}");
    assert!(e.families.iter().all(|f| f.static_count > 0));
    assert!(!correct_with_arch(Verdict::Correct, &e));
}

#[test]
fn blackwell_fixture_shows_utc_and_ldtm() {
    if !sass_tools("blackwell_fixture_shows_utc_and_ldtm") {
        return;
    }
    let inv = inventory(
        &read(&ptx_fixture("blackwell_tcgen05.sm_100a.ptx")),
        Arch::Sm100a,
    );
    let bases = inv.bases();
    assert!(bases.keys().any(|b| b.starts_with("UTC")), "{bases:?}");
    assert!(bases.get("LDTM").is_some_and(|n| *n > 0), "{bases:?}");
    assert!(!bases.contains_key("HGMMA"));

    let suite = suite();
    let task = suite.get(GEMM).expect("gemm task");
    let target = task.target(Arch::Sm100a).expect("sm_100a target");
    let e = assess(target, &StaticSass::Inventory(inv), None);
    let tc = e
        .families
        .iter()
        .find(|f| f.family == "tcgen05")
        .expect("tcgen05 is required on sm_100a");
    assert_eq!(tc.status, EvidenceStatus::StaticOnly);
    assert!(tc.static_opcodes.iter().any(|o| o.starts_with("LDTM")));
}

#[test]
fn simt_gemm_has_no_target_sass() {
    if !sass_tools("simt_gemm_has_no_target_sass") {
        return;
    }
    let inv = inventory(
        &read(&ptx_fixture("gemm_simt_bf16.sm_90a.ptx")),
        Arch::Sm90a,
    );
    let suite = suite();
    let target = suite
        .get(GEMM)
        .and_then(|t| t.target(Arch::Sm90a))
        .expect("sm_90a target");
    let e = assess(target, &StaticSass::Inventory(inv), None);
    assert_eq!(e.status, EvidenceStatus::SassAbsent);
    assert!(
        e.families
            .iter()
            .all(|f| f.status == EvidenceStatus::SassAbsent && f.static_count == 0)
    );
}

/// Splices counters into real PTX, re-parses the copy, compiles it for `arch` and checks the
/// target opcodes are still in its SASS next to the counters' atomics.
fn splice_compiles(ptx: &str, arch: Arch, families: &[Family], proving: &[&str]) {
    let s = splice(ptx, families).expect("splices");
    assert!(s.sites.iter().all(|n| *n > 0), "sites {:?}", s.sites);
    let before = ptxbench_ptx::inventory(&ptxbench_ptx::parse(ptx).expect("parses"));
    let after = ptxbench_ptx::inventory(&ptxbench_ptx::parse(&s.ptx).expect("copy parses"));
    assert_eq!(before.by_family, after.by_family);
    let added: u64 = s.sites.iter().sum();
    // The in-bounds bytes of each tile-mode TMA load: a load of its shape, 16 instructions per
    // coordinate, and the add to its counter.
    let copy = ptxbench_ptx::parse(&s.ptx).expect("copy parses");
    let in_bounds = copy
        .instructions()
        .filter(|i| i.operands.contains("%ptxbench_tb"))
        .count();
    if families.contains(&Family::Tma) {
        let slots = s.tma_bytes.as_ref().map_or(0, |b| b.sites.len());
        assert!(slots > 0, "no TMA load got an in-bounds counter");
        assert!(in_bounds >= slots * 18, "{in_bounds} for {slots} loads");
    }
    assert_eq!(
        after.total - before.total,
        usize::try_from(added).expect("fits") + in_bounds
    );
    let inv = inventory(&s.ptx, arch);
    let bases = inv.bases();
    for p in proving {
        assert!(
            bases.keys().any(|b| ptxbench::task::glob_match(p, b)),
            "{p} missing after splicing: {bases:?}"
        );
    }
    assert!(
        bases.contains_key("RED") || bases.contains_key("REDG") || bases.contains_key("ATOMG"),
        "no atomic in the copy's SASS: {bases:?}"
    );
}

#[test]
fn spliced_hopper_fixture_compiles_for_sm_90a() {
    if !sass_tools("spliced_hopper_fixture_compiles_for_sm_90a") {
        return;
    }
    splice_compiles(
        &read(&ptx_fixture("hopper_wgmma_tma.sm_90a.ptx")),
        Arch::Sm90a,
        &[Family::Wgmma, Family::Tma],
        &["*GMMA*", "UTMALDG"],
    );
}

#[test]
fn spliced_triton_gemm_compiles_for_sm_90a() {
    if !sass_tools("spliced_triton_gemm_compiles_for_sm_90a") {
        return;
    }
    splice_compiles(
        &read(&root().join("tasks/candidates/triton_gemm_tma/kernel.ptx")),
        Arch::Sm90a,
        &[Family::Wgmma, Family::Tma],
        &["*GMMA*", "UTMALDG", "UTMASTG"],
    );
}

#[test]
fn spliced_blackwell_fixture_compiles_for_sm_100a() {
    if !sass_tools("spliced_blackwell_fixture_compiles_for_sm_100a") {
        return;
    }
    splice_compiles(
        &read(&ptx_fixture("blackwell_tcgen05.sm_100a.ptx")),
        Arch::Sm100a,
        &[Family::Tcgen05, Family::Tma],
        &["UTC*", "LDTM", "UTMALDG"],
    );
}

/// Every committed PTX (hand-written references, Triton, nvcc's SIMT builds) gets a counted
/// copy that also counts other arithmetic, and ptxas compiles that copy for sm_90a: the copy
/// the engine runs for MMA tasks must never fail on a real kernel.
#[test]
fn every_committed_ptx_has_a_work_counting_copy_ptxas_compiles() {
    if !sass_tools("every_committed_ptx_has_a_work_counting_copy_ptxas_compiles") {
        return;
    }
    let mut files: Vec<std::path::PathBuf> = ["tasks/reference", "tasks/candidates"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root().join(d)).expect("folder"))
        .filter_map(Result::ok)
        .map(|e| e.path().join("kernel.ptx"))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(files.len() >= 20, "{files:?}");
    for p in &files {
        let ptx = read(p);
        let s = ptxbench::evidence::splice_counting_work(&ptx, &[Family::Wgmma, Family::Tma])
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let w = s.work.as_ref().expect("work counted");
        // Attention (softmax) and SIMT kernels do floating-point arithmetic; the bf16 GEMMs'
        // epilogues only convert, so theirs may have none.
        let name = p.display().to_string();
        if name.contains("attn") || name.contains("simt") {
            assert!(w.sites > 0, "{name}: no arithmetic counted");
        }
        let families =
            ptxbench_ptx::inventory(&ptxbench_ptx::parse(&ptx).expect("parses")).by_family;
        let has = |f: Family| families.get(&f).is_some_and(|n| *n > 0);
        let after = inventory(&s.ptx, Arch::Sm90a).bases();
        assert_eq!(
            has(Family::Wgmma),
            after.keys().any(|b| b.ends_with("GMMA")),
            "{name}: {after:?}"
        );
        assert_eq!(
            has(Family::Tma),
            after.contains_key("UTMALDG") || after.contains_key("UTMASTG"),
            "{name}: {after:?}"
        );
    }
}

#[test]
fn every_ptx_fixture_splices_or_has_nothing_to_count() {
    let dir = root().join("pipeline/ptx/tests/fixtures");
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixture folder")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .collect();
    entries.sort();
    assert!(entries.len() >= 5);
    for p in entries {
        let ptx = read(&p);
        let s = splice(
            &ptx,
            &[Family::Wgmma, Family::Tma, Family::Tcgen05, Family::Mma],
        )
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        ptxbench_ptx::parse(&s.ptx).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    }
}

#[test]
fn ncu_csv_fixture_gives_dynamic_present() {
    let csv = read(&fixture("evidence/ncu_gemm_tma.sm_90a.csv"));
    let report = ncu::parse_source_csv(&csv).expect("parses");
    assert_eq!(report.kernels.len(), 1);
    let k = &report.kernels[0];
    assert_eq!(k.kernel.as_deref(), Some("gemm_tma"));
    assert!(k.executed_bases().get("HGMMA").is_some_and(|n| *n > 0));
    let ExecutedCounts::SassOpcodes { counts, .. } = report.dynamic_counts() else {
        panic!("ncu gives per-opcode counts");
    };
    assert!(counts.keys().any(|o| o.starts_with("UTMALDG")));

    if !sass_tools("ncu_csv_fixture_gives_dynamic_present") {
        return;
    }
    let inv = inventory(
        &read(&root().join("tasks/candidates/triton_gemm_tma/kernel.ptx")),
        Arch::Sm90a,
    );
    // The fixture profiles this very kernel (ncu adds the padding NOPs to nvdisasm's listing).
    assert!(k.rows >= inv.functions[0].instructions);
    let hgmma_rows = csv.lines().filter(|l| l.contains("HGMMA")).count() as u64;
    assert_eq!(inv.bases().get("HGMMA"), Some(&hgmma_rows));
    assert!(report.counts_threads());
    let suite = suite();
    let target = suite
        .get(GEMM)
        .and_then(|t| t.target(Arch::Sm90a))
        .expect("sm_90a target");
    let dynamic = report.dynamic_counts();
    let e = assess(target, &StaticSass::Inventory(inv.clone()), Some(&dynamic));
    assert_eq!(e.status, EvidenceStatus::DynamicPresent, "{e:?}");
    assert!(correct_with_arch(Verdict::Correct, &e));

    // The same profile with the HGMMA rows never issued.
    let idle: String = csv
        .lines()
        .map(|l| {
            if l.contains("HGMMA") {
                let cut = l
                    .rfind(",\"")
                    .and_then(|j| l[..j].rfind(",\""))
                    .expect("2 counts");
                format!("{},\"0\",\"0\"", &l[..cut])
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let idle = ncu::parse_source_csv(&idle)
        .expect("parses")
        .dynamic_counts();
    let e = assess(target, &StaticSass::Inventory(inv), Some(&idle));
    assert_eq!(e.families[0].status, EvidenceStatus::DynamicNotExecuted);
    assert_eq!(e.status, EvidenceStatus::DynamicNotExecuted);
}

#[test]
fn cli_folds_ncu_counts_into_the_report() {
    if !sass_tools("cli_folds_ncu_counts_into_the_report") {
        return;
    }
    let csv = fixture("evidence/ncu_gemm_tma.sm_90a.csv");
    let csv = csv.to_str().expect("utf-8 path");
    let (code, out, err) = crate::ptxbench(&[
        "evidence",
        "tasks/candidates/triton_gemm_tma",
        "--task",
        GEMM,
        "--ncu-csv",
        csv,
        "--json",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["evidence"]["status"], "dynamic_present", "{out}");
    assert_eq!(v["evidence"]["families"][0]["method"], "ncu");

    let (code, out, err) = crate::ptxbench(&[
        "evidence",
        "tasks/candidates/triton_gemm_tma",
        "--task",
        GEMM,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("status: static_only"), "{out}");

    let (code, out, _) = crate::ptxbench(&[
        "evidence",
        "tasks/candidates/triton_gemm_tma",
        "--task",
        GEMM,
        "--kernel-regex",
    ]);
    assert_eq!(code, 0);
    assert_eq!(out.trim(), "^(gemm_tma)$");
}

#[test]
fn check_reports_the_sass_inventory() {
    if !crate::cuda_tools("check_reports_the_sass_inventory")
        || !sass_tools("check_reports_the_sass_inventory")
    {
        return;
    }
    let (code, out, err) = crate::ptxbench(&[
        "check",
        "tasks/candidates/triton_gemm_tma",
        "--task",
        GEMM,
        "--json",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let sass = v["sass"].as_array().expect("a sass array");
    let hopper = sass
        .iter()
        .find(|s| s["arch"] == "sm_90a")
        .expect("an sm_90a inventory");
    let req = &hopper["result"]["Ok"]["required"];
    assert_eq!(req[0]["family"], "wgmma", "{hopper}");
    assert!(req[0]["count"].as_u64().is_some_and(|n| n > 0), "{hopper}");
}

/// Integrity v4, class 4: TMA bytes were credited for any in-bounds byte of any bound map.
/// Now only a map over a task input laid over that input's own storage earns credit; every
/// committed kernel the reference and suite-v2 runs evaluate still does, on every workload,
/// and maps over a workspace, with overlapping strides or a wrong element size do not.
#[test]
fn issue_57_tma_credit_goes_only_to_maps_over_the_tasks_inputs() {
    use ptxbench::candidate::bind::{self, ResolvedParam};
    use ptxbench::candidate::plan::LaunchPlan;
    use ptxbench::engine::counting::credit_refusal;
    let suite = crate::suite();
    let mut credited = 0;
    for list in [
        "tasks/runs/reference-sm90a.yaml",
        "tasks/runs/suite-v2-sm90a.yaml",
        "tasks/runs/reference-v2-sm90a.yaml",
    ] {
        let path = crate::root().join(list);
        let dir = path.parent().expect("folder").to_path_buf();
        let v: serde_json::Value =
            serde_saphyr::from_str(&std::fs::read_to_string(&path).expect("list")).expect("yaml");
        for e in v["evaluations"].as_array().expect("evaluations") {
            let kernel = dir.join(e["kernel"].as_str().expect("kernel"));
            if kernel.extension().is_none_or(|x| x != "ptx") {
                continue;
            }
            let plan_path = dir.join(e["plan"].as_str().expect("plan"));
            let cand =
                ptxbench::candidate::Candidate::from_files(&kernel, &plan_path).expect("candidate");
            let module = ptxbench_ptx::parse(&cand.kernel).expect("PTX parses");
            for pattern in e["tasks"].as_array().expect("tasks") {
                let pattern = pattern.as_str().expect("pattern");
                for task in suite
                    .tasks
                    .iter()
                    .filter(|t| ptxbench::task::glob_match(pattern, t.id.as_str()))
                {
                    let plan = LaunchPlan::parse_from(&cand.plan, task, "plan").expect("plan");
                    for w in &task.workloads {
                        let launches =
                            bind::resolve(&plan, &module, task, w, ptxbench::arch::Arch::Sm90a)
                                .unwrap_or_else(|p| panic!("{}: {p:?}", kernel.display()));
                        let env = task.bindings(w);
                        for l in &launches {
                            for p in &l.params {
                                let ResolvedParam::TensorMap { map, .. } = p else {
                                    continue;
                                };
                                if task.inputs.iter().all(|t| t.name != map.tensor) {
                                    continue; // a store map over an output: no load credit asked
                                }
                                assert_eq!(
                                    credit_refusal(&map.tensor, &map.desc, task, &env),
                                    None,
                                    "{} on {} {}",
                                    kernel.display(),
                                    task.id,
                                    w.name
                                );
                                credited += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(credited > 100, "{credited} maps checked");

    // The refusals, on the hand-written GEMM's map over A at M=129.
    let task = suite.get("gemm_n4096_k4096").expect("task");
    let w = task.workload("M129").expect("workload");
    let env = task.bindings(w);
    let desc = |dims: Vec<u64>, strides: Vec<u64>, dtype| {
        ptxbench::cuda::TensorMapDesc::new(
            dtype,
            dims,
            strides,
            vec![64, 64],
            vec![1, 1],
            Interleave::None,
            Swizzle::None,
            L2Promotion::None,
            OobFill::Zero,
        )
        .expect("a valid map")
    };
    use ptxbench::candidate::plan::{Interleave, L2Promotion, OobFill, Swizzle};
    use ptxbench::task::DType;
    let own = desc(vec![4096, 129], vec![8192], DType::Bf16.into());
    assert_eq!(credit_refusal("A", &own, task, &env), None);
    let why = credit_refusal("ws", &own, task, &env).expect("a workspace");
    assert!(why.contains("not an input"), "{why}");
    let overlapping = desc(vec![4096, 129], vec![16], DType::Bf16.into());
    let why = credit_refusal("A", &overlapping, task, &env).expect("overlapping rows");
    assert!(why.contains("stride 16 bytes"), "{why}");
    let twice = desc(vec![4096, 258], vec![8192], DType::Bf16.into());
    assert!(
        credit_refusal("A", &twice, task, &env).is_some(),
        "past the tensor"
    );
    let bytes = desc(vec![8192, 129], vec![8192], DType::E4m3.into());
    assert!(
        credit_refusal("A", &bytes, task, &env).is_some(),
        "another element size"
    );
}

/// Issue 61 item 2: the CTA clock probe goes into the reference GEMM and into its counted copy,
/// and ptxas takes both (the site-cost variants compile; the GPU measures them).
#[test]
fn issue_61_the_clock_probe_compiles_into_the_kernel_and_its_counted_copy() {
    if !crate::cuda_tools("issue_61_the_clock_probe_compiles_into_the_kernel_and_its_counted_copy")
    {
        return;
    }
    let suite = crate::suite();
    let task = suite.get("gemm_n7168_k5120").expect("task");
    let ptx = std::fs::read_to_string(crate::root().join("tasks/reference/wgmma_gemm/kernel.ptx"))
        .expect("reads");
    let arch = ptxbench::arch::Arch::Sm90a;
    let counted = ptxbench::engine::target_evidence::counted_copy(task, arch, &ptx)
        .expect("splices")
        .expect("the task counts its targets");
    for (name, text) in [
        ("kernel", ptx.as_str()),
        ("counted copy", counted.ptx.as_str()),
    ] {
        let probed = ptxbench::evidence::cta_clock::probe(text).expect("probes");
        assert!(probed.contains("red.global.max.u64"), "{name}");
        ptxbench::cuda::driver::whole_program(&probed, arch)
            .unwrap_or_else(|e| panic!("{name}: ptxas refused the probed copy: {e}"));
    }
}
