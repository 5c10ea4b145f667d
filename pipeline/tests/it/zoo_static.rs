//! The zoo on the CPU: every zoo plan passes the static check for sm_90a with the instructions
//! its trick needs in the SASS (the GPU verdicts are in `zoo.rs`).

use std::path::PathBuf;
use std::time::Duration;

use ptxbench::arch::Arch;
use ptxbench::candidate::Candidate;
use ptxbench::check::{CheckOptions, CheckReport, check};
use ptxbench::evidence::sass;
use ptxbench::evidence::splice;
use ptxbench::toolchain::{self, Tool};
use ptxbench_ptx::Family;
use serde_json::Value;

use crate::{root, suite};

const ZOO: &str = "tasks/runs/zoo-sm90a.yaml";
/// The members for integrity v4 (their GPU run publishes beside the zoo's).
const ZOO_V4: &str = "tasks/runs/zoo-v4-sm90a.yaml";

/// Every evaluation of the zoo run list: (name, kernel file, plan file, first task), paths
/// resolved from the list's folder as `ptxbench run` resolves them.
fn members() -> Vec<(String, PathBuf, PathBuf, String)> {
    members_of(ZOO)
}

fn members_of(list: &str) -> Vec<(String, PathBuf, PathBuf, String)> {
    let list = root().join(list);
    let dir = list.parent().expect("tasks/runs").to_path_buf();
    let v: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&list).expect("run list")).expect("yaml");
    v["evaluations"]
        .as_array()
        .expect("evaluations")
        .iter()
        .map(|e| {
            let path = |k: &str| dir.join(e[k].as_str().expect("a path"));
            (
                e["name"].as_str().expect("name").to_string(),
                path("kernel"),
                path("plan"),
                e["tasks"][0].as_str().expect("a task").to_string(),
            )
        })
        .collect()
}

fn member(name: &str) -> (Candidate, String) {
    let (_, kernel, plan, task) = members()
        .into_iter()
        .chain(members_of(ZOO_V4))
        .find(|(n, ..)| n == name)
        .unwrap_or_else(|| panic!("{name} is not in {ZOO}"));
    (Candidate::from_files(&kernel, &plan).expect("loads"), task)
}

/// The static check of a member on its (first) task, compiled for sm_90a only.
fn checked(name: &str) -> CheckReport {
    let suite = suite();
    let (candidate, task) = member(name);
    let task = suite.get(&task).expect("task exists");
    check(
        &candidate,
        task,
        &CheckOptions {
            arch: Arch::Sm90a,
            compile_for: vec![Arch::Sm90a],
        },
    )
}

/// Whether ptxas, NVRTC and nvdisasm are installed (see [`crate::tools_present`]).
fn sass_tools(test: &str) -> bool {
    if !crate::cuda_tools(test) {
        return false;
    }
    let missing: Vec<String> = toolchain::locate(Tool::Nvdisasm)
        .err()
        .map(|e| e.to_string())
        .into_iter()
        .collect();
    crate::tools_present(test, &missing)
}

/// nvdisasm's listing of the sm_90a cubin the check made.
fn listing(r: &CheckReport) -> String {
    let cubin = r
        .ptxas
        .iter()
        .find(|p| p.arch == Arch::Sm90a)
        .and_then(|p| p.result.as_ref().ok())
        .and_then(|p| p.cubin.clone())
        .expect("an sm_90a cubin");
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("kernel.cubin");
    std::fs::write(&file, cubin).expect("write");
    let nvdisasm = toolchain::locate(Tool::Nvdisasm).expect("nvdisasm");
    let limits = ptxbench::sandbox::Limits {
        wall: Duration::from_secs(60),
        memory: 8 << 30,
    };
    let out = toolchain::run(
        &nvdisasm,
        &["-c".as_ref(), file.as_os_str()],
        limits,
        Some(dir.path()),
    )
    .expect("nvdisasm runs");
    assert!(out.status.success(), "nvdisasm failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The instruction texts of a listing (address comments and trailing encodings removed).
fn instructions(listing: &str) -> Vec<&str> {
    listing
        .lines()
        .filter_map(|l| {
            let (addr, rest) = l.trim().strip_prefix("/*")?.split_once("*/")?;
            let ok = !addr.is_empty() && addr.chars().all(|c| c.is_ascii_hexdigit());
            ok.then(|| rest.split("/*").next().unwrap_or("").trim())
        })
        .filter(|t| !t.is_empty())
        .collect()
}

/// Global loads whose memory descriptor is not the default one (`ULDC.64 URn, c[0x0][0x208]`):
/// on sm_90 that is how an L2 cache policy (`ld ... .L2::cache_hint`) reaches the SASS. Each
/// uniform register remembers whether the last instruction (in listing order) that wrote it
/// loaded the default descriptor.
fn policy_loads(listing: &str) -> usize {
    let mut default = [false; 256];
    let mut n = 0;
    for insn in instructions(listing) {
        let Some(op) = sass::instruction_mnemonic(insn) else {
            continue;
        };
        let operands = insn.split_once(op).map_or("", |(_, r)| r);
        if sass::base_mnemonic(op) == "LDG" {
            let desc = operands
                .split_once("desc[UR")
                .and_then(|(_, r)| r.split_once(']'))
                .and_then(|(d, _)| d.parse::<usize>().ok())
                .expect("an LDG names its descriptor");
            n += usize::from(!default[desc]);
            continue;
        }
        let dest = operands.split(',').next().unwrap_or("").trim();
        if let Some(reg) = dest
            .strip_prefix("UR")
            .and_then(|r| r.parse::<usize>().ok())
        {
            let is_default = op == "ULDC.64" && operands.contains("c[0x0][0x208]");
            let width = if op.ends_with(".64") { 2 } else { 1 };
            for d in default.iter_mut().skip(reg).take(width) {
                *d = is_default;
            }
        }
    }
    n
}

/// Members that keep state in module memory a kernel writes: refused at the static check.
const MODULE_STATE: [&str; 3] = [
    "zoo-second-launch",
    "zoo-fingerprint-cache",
    "zoo-pointer-cache",
];

#[test]
fn every_zoo_plan_passes_the_static_check_for_sm_90a() {
    if !crate::cuda_tools("every_zoo_plan_passes_the_static_check_for_sm_90a") {
        return;
    }
    for (name, ..) in members() {
        let r = checked(&name);
        if name == "zoo-oversized-shared" {
            // Refused before it runs: more shared memory than a Hopper block may have.
            let why = r.failure.as_ref().expect("fails").reasons.join("; ");
            assert!(why.contains("shared_mem"), "{why}");
            continue;
        }
        if MODULE_STATE.contains(&name.as_str()) {
            let why = r.failure.as_ref().expect("refused").reasons.join("; ");
            assert!(
                why.contains("module-scope `.global` variable"),
                "{name}: {why}"
            );
            continue;
        }
        assert!(r.ok(), "{name}: {:?}", r.failure);
        let hopper = r.ptxas[0].result.as_ref().expect("ptxas found");
        assert!(
            r.ptxas[0].arch == Arch::Sm90a && hopper.ok,
            "{name}: {}",
            hopper.log
        );
    }
}

#[test]
fn the_token_member_has_one_wgmma_and_one_tma_site() {
    if !sass_tools("the_token_member_has_one_wgmma_and_one_tma_site") {
        return;
    }
    let r = checked("zoo-token-wgmma-tma");
    assert!(r.ok(), "{:?}", r.failure);
    assert!(r.required.iter().all(|q| q.count > 0), "{:?}", r.required);
    // The one tensor map binds A with a 64 x 64 box.
    let m232 = r
        .workloads
        .iter()
        .find(|w| w.workload == "M232")
        .expect("M232");
    assert_eq!(m232.launches[0].grid, [32, 232, 1]);
    let hopper = r.ptxas[0].result.as_ref().expect("ptxas found");
    assert_eq!(
        hopper.resources[0].shared_bytes,
        64 * 128 + 8,
        "tile + mbarrier"
    );
    let sass = sass::parse_listing(&listing(&r));
    let ops = |want: &str| -> u64 {
        sass.iter()
            .map(|f| f.opcodes.get(want).copied().unwrap_or(0))
            .sum()
    };
    // One instruction site each: the m64n8k16 (2 * 64 * 8 * 16 FLOPs per CTA of 128 outputs,
    // 1/64 of the task's FLOPs) and one 8 KB box.
    assert_eq!(ops("HGMMA.64x8x16.F32.BF16"), 1);
    assert_eq!(ops("UTMALDG.2D"), 1);
    // The harness's counters splice in next to both, and the copy still compiles to them.
    let ptx = r.ptx.as_ref().expect("NVRTC's PTX");
    let s = splice::splice(ptx, &[Family::Wgmma, Family::Tma]).expect("splices");
    let res = toolchain::ptxas::compile(&s.ptx, Arch::Sm90a).expect("ptxas runs");
    assert!(res.ok, "{}", res.log);
    let inv = sass::disassemble(&res.cubin.expect("cubin")).expect("nvdisasm");
    let bases = inv.bases();
    for op in ["HGMMA", "UTMALDG"] {
        assert_eq!(bases.get(op), Some(&1), "{bases:?}");
    }
    assert!(
        bases.contains_key("RED") || bases.contains_key("REDG") || bases.contains_key("ATOMG"),
        "{bases:?}"
    );
}

#[test]
fn the_ignored_wgmma_member_shows_its_simt_math_in_the_work_copy() {
    if !sass_tools("the_ignored_wgmma_member_shows_its_simt_math_in_the_work_copy") {
        return;
    }
    let r = checked("zoo-ignored-wgmma");
    assert!(r.ok(), "{:?}", r.failure);
    assert!(r.required.iter().all(|q| q.count > 0), "{:?}", r.required);
    let ptx = r.ptx.as_ref().expect("NVRTC's PTX");
    let s = splice::splice_counting_work(ptx, &[Family::Wgmma, Family::Tma]).expect("splices");
    let w = s.work.as_ref().expect("work counted");
    assert_eq!(w.functions, ["gemm_ignored_wgmma"]);
    // The FMA of the SIMT loop is counted (2 FLOPs a thread); the wgmma is a target site.
    assert!(s.ptx.contains("%ptxbench_work, 2; fma.rn.f32"), "{}", s.ptx);
    assert_eq!(s.sites, vec![1, 1]);
    let res = toolchain::ptxas::compile(&s.ptx, Arch::Sm90a).expect("ptxas runs");
    assert!(res.ok, "{}", res.log);
    let bases = sass::disassemble(&res.cubin.expect("cubin"))
        .expect("nvdisasm")
        .bases();
    for op in ["HGMMA", "UTMALDG", "FFMA"] {
        assert!(bases.contains_key(op), "{op}: {bases:?}");
    }
}

#[test]
fn issue_45_the_cache_members_keep_their_outputs_in_module_memory_and_are_refused() {
    if !sass_tools("issue_45_the_cache_members_keep_their_outputs_in_module_memory_and_are_refused")
    {
        return;
    }
    for name in ["zoo-fingerprint-cache", "zoo-pointer-cache"] {
        let r = checked(name);
        let why = r.failure.as_ref().expect("refused").reasons.join("; ");
        assert!(
            why.contains("`cache_out`") || why.contains("`cache_key`"),
            "{why}"
        );
        assert!(r.required.iter().all(|q| q.count == 0), "{:?}", r.required);
        // Four slots of M x N bf16 for M up to 232 on N = 4096: 7.6 MB of `__device__` memory.
        let ptx = r.ptx.as_ref().expect("NVRTC's PTX");
        let decl = ptx
            .lines()
            .find(|l| l.contains(".global") && l.contains("cache_out["))
            .expect("the module-global store");
        assert!(
            decl.contains(&format!("cache_out[{}]", 4 * 232 * 4096 * 2)),
            "{decl}"
        );
    }
}

#[test]
fn the_l2_members_carry_their_hints_into_the_sass() {
    if !sass_tools("the_l2_members_carry_their_hints_into_the_sass") {
        return;
    }
    // One kernel for the three plans (mode is a parameter): control, hinted loads, prefetches.
    let r = checked("zoo-l2-evict-last-loads");
    assert!(r.ok(), "{:?}", r.failure);
    let ptx = r.ptx.as_ref().expect("NVRTC's PTX");
    for want in [
        "createpolicy.fractional.L2::evict_last.b64",
        "ld.global.nc.L2::cache_hint.b16",
        "prefetch.global.L2::evict_last",
    ] {
        assert!(ptx.contains(want), "{want} not in the PTX");
    }
    let text = listing(&r);
    let sass = sass::parse_listing(&text);
    let ops = |want: &str| -> u64 {
        sass.iter()
            .map(|f| f.opcodes.get(want).copied().unwrap_or(0))
            .sum()
    };
    // prefetch.global.L2::evict_last is CCTL.E.PML2 (a plain L2 prefetch is CCTL.E.PF2).
    assert!(ops("CCTL.E.PML2") > 0, "{sass:?}");
    assert!(
        policy_loads(&text) > 0,
        "no LDG through a cache-policy descriptor"
    );
    // The detector's negative control: kernel.cu's loads all use the default descriptor.
    let plain = checked("zoo-correct-slow");
    let plain_text = listing(&plain);
    assert!(plain_text.contains("LDG.E"), "kernel.cu loads");
    assert_eq!(policy_loads(&plain_text), 0);
    assert!(!plain_text.contains("CCTL"));

    // The reference GEMM with hints: every TMA load carries the policy's descriptor; the
    // reference's own loads carry none.
    let hinted = listing(&checked("zoo-evict-last-wgmma"));
    let tma: Vec<&str> = instructions(&hinted)
        .into_iter()
        .filter(|i| sass::instruction_mnemonic(i).is_some_and(|m| m.starts_with("UTMALDG")))
        .collect();
    assert!(!tma.is_empty());
    assert!(tma.iter().all(|i| i.contains("desc[UR")), "{tma:?}");
    let suite = suite();
    let reference = check(
        &Candidate::load(&root().join("tasks/reference/wgmma_gemm")).expect("loads"),
        suite.get("gemm_n4096_k4096").expect("task"),
        &CheckOptions {
            arch: Arch::Sm90a,
            compile_for: vec![Arch::Sm90a],
        },
    );
    let plain_tma: Vec<String> = instructions(&listing(&reference))
        .into_iter()
        .filter(|i| sass::instruction_mnemonic(i).is_some_and(|m| m.starts_with("UTMALDG")))
        .map(str::to_string)
        .collect();
    assert_eq!(plain_tma.len(), tma.len());
    assert!(
        plain_tma.iter().all(|i| !i.contains("desc[")),
        "{plain_tma:?}"
    );
}

/// Integrity v4, class 1 (memory that survives the timing loop): the device heap and a tensor
/// map passed by pointer both outlived the checked launches; both members are refused at the
/// static check, each for its own reason.
#[test]
fn issue_57_state_outside_the_plan_is_refused() {
    if !sass_tools("issue_57_state_outside_the_plan_is_refused") {
        return;
    }
    use ptxbench::engine::Verdict;
    let expected: std::collections::BTreeMap<String, Verdict> = {
        let (list, _) = ptxbench::runner::list::RunList::load(&root().join(ZOO_V4)).expect("list");
        list.evaluations
            .iter()
            .map(|e| (e.name.clone(), e.expect.expect("an expected verdict")))
            .collect()
    };
    for (name, reason) in [
        ("zoo-device-heap", "allocates from the device heap"),
        ("zoo-pointer-map", "passed by value only"),
    ] {
        let r = checked(name);
        let failure = r
            .failure
            .as_ref()
            .unwrap_or_else(|| panic!("{name} refused"));
        let why = failure.reasons.join("; ");
        assert!(why.contains(reason), "{name}: {why}");
        assert_eq!(
            ptxbench::check::static_outcome(&r).map(|o| o.verdict),
            expected.get(name).copied(),
            "{name}: the run list's expected verdict, decided on the CPU: {why}"
        );
    }
}

/// Integrity v4, class 3: a GEMM done with `div.approx` by a reciprocal, `cvt` to fixed point
/// and `add.s64` counted as no work beside an ignored wgmma. Every one of those instructions
/// in its loop now carries a count in the work copy.
#[test]
fn issue_57_the_division_member_shows_its_math_in_the_work_copy() {
    if !sass_tools("issue_57_the_division_member_shows_its_math_in_the_work_copy") {
        return;
    }
    let r = checked("zoo-division-wgmma");
    assert!(r.ok(), "{:?}", r.failure);
    let ptx = r.ptx.as_ref().expect("NVRTC's PTX");
    let s = splice::splice_counting_work(ptx, &[Family::Wgmma, Family::Tma]).expect("splices");
    let w = s.work.as_ref().expect("work counted");
    assert_eq!(w.functions, ["gemm_division_wgmma"]);
    // No floating-point FMA, mul or add in the loop: the products are divisions.
    assert!(!ptx.contains("fma.rn.f32"), "{ptx}");
    for op in ["div.approx", "rcp.rn.f32", "cvt.rni.s64.f32", "add.s64"] {
        // The candidate's own instructions (not the TMA byte count the copy adds).
        let lines: Vec<&str> = s
            .ptx
            .lines()
            .filter(|l| l.contains(op) && !l.contains("%ptxbench_tb"))
            .collect();
        let counted = lines
            .iter()
            .all(|l| l.contains(&format!("%ptxbench_work, 1; {op}")));
        assert!(!lines.is_empty() && counted, "{op} is counted:\n{}", s.ptx);
    }
}

/// Integrity v4, class 4: a TMA map over a workspace earned byte credit like one over the task's
/// input. The member passes the static check, and its map earns none on any workload.
#[test]
fn issue_57_a_map_over_a_workspace_earns_no_tma_credit() {
    if !sass_tools("issue_57_a_map_over_a_workspace_earns_no_tma_credit") {
        return;
    }
    use ptxbench::candidate::bind::ResolvedParam;
    let r = checked("zoo-workspace-map");
    assert!(r.ok(), "{:?}", r.failure);
    let suite = suite();
    let task = suite.get("gemm_n4096_k4096").expect("task");
    let mut maps = 0;
    for wl in &r.workloads {
        let w = task.workload(&wl.workload).expect("workload");
        let env = task.bindings(w);
        for l in &wl.launches {
            for p in &l.params {
                let ResolvedParam::TensorMap { map, .. } = p else {
                    continue;
                };
                let why =
                    ptxbench::engine::counting::credit_refusal(&map.tensor, &map.desc, task, &env)
                        .expect("no credit");
                assert!(why.contains("`decoy`, which is not an input"), "{why}");
                maps += 1;
            }
        }
    }
    assert_eq!(maps, r.workloads.len());
}

/// Integrity v4, class 2: a kernel that times a load of its own line of A and takes wgmma when
/// it finds L2 warm, FMAs when it finds it cold. It passes the static check with both paths in
/// its SASS, and the work copy counts the FMA path's every FMA, so a counted trial that starts
/// cold (as every launch does under one set of conditions) shows that path's work.
#[test]
fn issue_57_the_cold_switch_member_has_both_paths_and_its_fma_path_is_counted() {
    if !sass_tools("issue_57_the_cold_switch_member_has_both_paths_and_its_fma_path_is_counted") {
        return;
    }
    let r = checked("zoo-cold-switch");
    assert!(r.ok(), "{:?}", r.failure);
    let listing = listing(&r);
    assert!(listing.contains("HGMMA"), "wgmma path in the SASS");
    assert!(listing.contains("UTMALDG"), "TMA path in the SASS");
    let ptx = r.ptx.as_ref().expect("the PTX");
    // The probe: a timed L2 load before either path.
    assert!(
        ptx.contains("%clock64") && ptx.contains("ld.global.cg.u32"),
        "{ptx}"
    );
    let s = splice::splice_counting_work(ptx, &[Family::Wgmma, Family::Tma]).expect("splices");
    let fmas: Vec<&str> = s.ptx.lines().filter(|l| l.contains("fma.rn.f32")).collect();
    assert!(!fmas.is_empty());
    assert!(
        fmas.iter()
            .all(|l| l.contains("%ptxbench_work, 2; fma.rn.f32")),
        "every FMA of the cold path is counted:\n{}",
        fmas.join("\n")
    );
}
