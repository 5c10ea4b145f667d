//! Parses every committed fixture (real nvcc 13.0 output plus two
//! hand-written modules) and checks entries, parameters, performance
//! directives, family counts and safety findings against what the PTX
//! files actually contain.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ptxbench_ptx::{
    CallTarget, Family, FunctionKind, Module, ParamType, SafetyKind, StateSpace,
    function_inventory, inventory, parse, safety_issues,
};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn read(name: &str) -> String {
    let path = fixture_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn load(name: &str) -> Module {
    parse(&read(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn all_fixtures(ext: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixture_dir())
        .expect("fixture dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(ext))
        .collect();
    names.sort();
    names
}

fn families(m: &Module) -> BTreeMap<Family, usize> {
    inventory(m).by_family
}

#[test]
fn every_fixture_parses_and_lines_point_at_the_instruction() {
    let names = all_fixtures(".ptx");
    assert_eq!(names.len(), 9, "{names:?}");
    for name in names {
        let src = read(&name);
        let lines: Vec<&str> = src.lines().collect();
        let m = parse(&src).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(m.version.is_some(), "{name}");
        assert_eq!(m.address_size, Some(64), "{name}");
        for f in &m.functions {
            let header = lines.get(f.line as usize - 1).copied().unwrap_or("");
            assert!(
                header.contains(".entry") || header.contains(".func"),
                "{name}: {header}"
            );
            for ins in &f.instructions {
                let line = lines.get(ins.line as usize - 1).copied().unwrap_or("");
                assert!(
                    line.contains(&ins.opcode),
                    "{name}:{}: `{}` not on `{line}`",
                    ins.line,
                    ins.opcode
                );
            }
        }
    }
}

#[test]
fn every_source_has_its_ptx_and_a_regen_line() {
    let regen = read("regen.sh");
    let ptx = all_fixtures(".ptx");
    for src in all_fixtures(".cu") {
        let stem = src.trim_end_matches(".cu");
        assert!(
            regen.contains(&format!("build {src} ")),
            "regen.sh does not build {src}"
        );
        assert!(
            ptx.iter().any(|p| p.starts_with(&format!("{stem}.sm_"))),
            "no PTX for {src}"
        );
    }
}

#[test]
fn committed_fixtures_name_sources_by_relative_paths() {
    // `.file` directives must carry relative names: an absolute one would be a path of the
    // machine that generated the fixture.
    for name in all_fixtures("") {
        let text = read(&name);
        for line in text.lines().filter(|l| l.trim_start().starts_with(".file")) {
            let quoted = line.split('"').nth(1).unwrap_or("");
            assert!(!quoted.starts_with('/'), "{name}: {line}");
        }
    }
}

#[test]
fn simt_gemm_has_no_arch_specific_families() {
    let m = load("gemm_simt_bf16.sm_90a.ptx");
    assert_eq!(m.version, Some((9, 0)));
    assert_eq!(m.targets, ["sm_90a"]);
    let names: Vec<_> = m.entries().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["gemm_simt_bf16"]);
    let k = m.entry("gemm_simt_bf16").expect("entry");
    assert_eq!(k.linkage.as_deref(), Some("visible"));
    let tys: Vec<_> = k.params.iter().map(|p| p.ty).collect();
    use ParamType::*;
    assert_eq!(tys, [U64, U64, U64, U32, U32, U32]);
    assert_eq!(k.param_bytes(), 36);
    assert_eq!(k.directive("maxntid").expect("maxntid").values, [256, 1, 1]);
    assert_eq!(k.directives.len(), 1);
    assert_eq!(k.static_shared_bytes(), 2048);
    assert!(families(&m).is_empty());
    let inv = inventory(&m);
    assert_eq!(inv.total, 123);
    assert_eq!(inv.opcode_count("ld.shared"), 32);
    assert_eq!(inv.opcode_count("bar.sync"), 2);
    assert_eq!(inv.opcode_count("ld.global.nc"), 2);
    assert!(safety_issues(&m).is_empty());
}

#[test]
fn hopper_fixture_has_wgmma_tma_and_mbarrier() {
    let m = load("hopper_wgmma_tma.sm_90a.ptx");
    let k = m.entry("hopper_wgmma_tma").expect("entry");
    assert_eq!(k.params.len(), 4);
    for p in &k.params[..2] {
        // CUDA 13's CUtensorMap is alignas(128); nvcc passes it as .b8[128].
        assert_eq!(
            (p.ty, p.array_len, p.size_bytes(), p.alignment()),
            (ParamType::B8, Some(128), 128, 128)
        );
    }
    assert_eq!(k.params[2].size_bytes(), 8);
    assert_eq!(k.params[3].size_bytes(), 4);
    assert_eq!(k.param_bytes(), 268);
    assert_eq!(k.directive("maxntid").expect("maxntid").values, [384, 1, 1]);
    assert_eq!(
        k.directive("minnctapersm").expect("minnctapersm").values,
        [1]
    );
    assert!(
        k.directive("explicitcluster")
            .expect("explicitcluster")
            .values
            .is_empty()
    );
    assert_eq!(
        k.directive("reqnctapercluster")
            .expect("cluster dims")
            .values,
        [2, 1, 1]
    );
    assert_eq!(k.static_shared_bytes(), 8192 + 8192 + 8);

    let want = BTreeMap::from([
        (Family::Wgmma, 20),
        (Family::Tma, 10),
        (Family::Mbarrier, 16),
        (Family::Setmaxnreg, 2),
        (Family::Stmatrix, 1),
        (Family::Cluster, 2),
        (Family::FenceProxyAsync, 1),
        (Family::Elect, 1),
        (Family::Griddepcontrol, 2),
    ]);
    assert_eq!(families(&m), want);
    let inv = inventory(&m);
    assert_eq!(inv.total, 262);
    for (key, n) in [
        ("wgmma.mma_async", 5),
        ("wgmma.fence", 5),
        ("wgmma.commit_group", 5),
        ("wgmma.wait_group", 5),
        ("mbarrier.init", 1),
        ("mbarrier.arrive.expect_tx", 5),
        ("mbarrier.try_wait", 10),
        ("cp.async.bulk.tensor", 10),
        ("setmaxnreg.inc", 1),
        ("setmaxnreg.dec", 1),
        ("barrier.cluster.arrive", 1),
        ("barrier.cluster.wait", 1),
    ] {
        assert_eq!(inv.opcode_count(key), n, "{key}");
    }
    assert_eq!(function_inventory(k), inv);

    // Inline-asm scopes: the wgmma and the try_wait loops sit in `{ }` with
    // their own `.reg` declarations and labels.
    let mma = k
        .instructions
        .iter()
        .find(|i| i.opcode.starts_with("wgmma.mma_async"))
        .expect("wgmma.mma_async");
    assert_eq!(
        mma.opcode,
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"
    );
    assert_eq!(mma.depth, 1);
    assert!(
        mma.operands.starts_with("{%f609, %f608,"),
        "{}",
        mma.operands
    );
    assert!(
        mma.operands.ends_with("%rd13, p, 1, 1, 0, 0"),
        "{}",
        mma.operands
    );
    assert!(k.labels.iter().any(|l| l == "LAB_WAIT"));
    let guarded = k
        .instructions
        .iter()
        .find(|i| i.predicate.as_deref() == Some("P1"))
        .expect("@P1 bra DONE");
    assert_eq!(
        (guarded.opcode.as_str(), guarded.operands.as_str()),
        ("bra", "DONE")
    );
    assert!(
        k.declarations
            .iter()
            .any(|d| d.variables.iter().any(|v| v.name == "%px"))
    );
    assert!(safety_issues(&m).is_empty());
}

#[test]
fn blackwell_fixture_has_tcgen05_and_a_64_aligned_tensor_map() {
    let m = load("blackwell_tcgen05.sm_100a.ptx");
    assert_eq!(m.targets, ["sm_100a"]);
    let k = m.entry("blackwell_tcgen05").expect("entry");
    let tmap = &k.params[0];
    assert_eq!(
        (tmap.size_bytes(), tmap.alignment(), tmap.align),
        (128, 64, Some(64))
    );
    let bias = &k.params[1];
    assert_eq!(bias.state_space_attr.as_deref(), Some(".ptr .align 1"));
    assert_eq!(
        (bias.ptr_align, bias.align, bias.alignment()),
        (Some(1), None, 8)
    );
    assert_eq!(k.param_bytes(), 152);
    assert_eq!(k.directive("maxntid").expect("maxntid").values, [128]);
    assert_eq!(
        k.directive("minnctapersm").expect("minnctapersm").values,
        [1]
    );
    let want = BTreeMap::from([
        (Family::Tma, 1),
        (Family::BulkCopy, 2),
        (Family::Mbarrier, 5),
        (Family::Tcgen05, 11),
    ]);
    assert_eq!(families(&m), want);
    let inv = inventory(&m);
    for key in [
        "tcgen05.alloc",
        "tcgen05.dealloc",
        "tcgen05.relinquish_alloc_permit",
        "tcgen05.mma",
        "tcgen05.commit",
        "tcgen05.ld",
        "tcgen05.wait",
        "cp.async.bulk",
        "cp.async.bulk.prefetch",
        "cp.async.bulk.tensor",
    ] {
        assert_eq!(inv.opcode_count(key), 1, "{key}");
    }
    assert_eq!(inv.opcode_count("tcgen05.fence"), 4);
    let negated = k
        .instructions
        .iter()
        .find(|i| i.predicate.as_deref() == Some("!P1"))
        .expect("@!P1 bra");
    assert_eq!(negated.operands, "WAIT_0");
    assert!(safety_issues(&m).is_empty());
}

#[test]
fn ampere_fixture_has_cp_async_ldmatrix_and_mma() {
    let m = load("ampere_mma.sm_80.ptx");
    assert_eq!(m.targets, ["sm_80"]);
    let want = BTreeMap::from([
        (Family::Ldmatrix, 2),
        (Family::Mma, 1),
        (Family::CpAsync, 4),
    ]);
    assert_eq!(families(&m), want);
    let k = m.entry("ampere_mma").expect("entry");
    assert_eq!(k.directive("maxntid").expect("maxntid").values, [32, 1, 1]);
    assert_eq!(k.static_shared_bytes(), 768);
}

#[test]
fn printf_fixture_calls_the_vprintf_builtin_and_carries_debug_sections() {
    let src = read("printf_kernel.sm_90a.ptx");
    assert!(src.contains(".section\t.debug_info") && src.contains(".loc\t1 "));
    let m = load("printf_kernel.sm_90a.ptx");
    assert_eq!(m.targets, ["sm_90a", "debug"]);
    let vprintf = m.function("vprintf").expect("vprintf prototype");
    assert_eq!(
        (vprintf.kind, vprintf.has_body),
        (FunctionKind::Func, false)
    );
    assert_eq!(vprintf.linkage.as_deref(), Some("extern"));
    assert_eq!(vprintf.returns.len(), 1);
    assert_eq!(vprintf.params.len(), 2);
    assert_eq!(m.entries().count(), 1);
    assert_eq!(m.globals.len(), 1);
    let s = &m.globals[0];
    assert_eq!(
        (s.space, s.align, s.ty.as_str()),
        (StateSpace::Global, Some(1), "b8")
    );
    assert_eq!(s.variables[0].name, "$str");
    assert_eq!(s.variables[0].dims, [Some(20)]);
    assert!(
        s.variables[0]
            .initializer
            .as_deref()
            .is_some_and(|i| i.starts_with("{116, 104,"))
    );
    let k = m.entry("hello_printf").expect("entry");
    let call = k
        .instructions
        .iter()
        .find(|i| i.mnemonic() == "call")
        .expect("call");
    assert_eq!(
        call.call_target(),
        Some(CallTarget::Direct("vprintf".into()))
    );
    assert_eq!(call.operands, "(retval0), vprintf, ( param0, param1 )");
    assert!(k.declarations.iter().any(|d| d.space == StateSpace::Local));
    assert!(families(&m).is_empty());
    // vprintf itself is fine; taking the address of the writable `.global` format string is
    // module state a kernel could keep between launches (issue 45), and is refused.
    let issues = safety_issues(&m);
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(issues[0].kind, SafetyKind::ModuleState);
    assert!(issues[0].message.contains("$str"), "{}", issues[0].message);
}

#[test]
fn noinline_fixture_has_a_func_with_a_return_value() {
    let m = load("noinline_call.sm_90a.ptx");
    let f = m.function("_Z9scale_addfff").expect("func");
    assert_eq!(
        (f.kind, f.has_body, f.linkage.as_deref()),
        (FunctionKind::Func, true, None)
    );
    assert_eq!(f.returns.len(), 1);
    assert_eq!(
        (f.returns[0].name.as_str(), f.returns[0].ty),
        ("func_retval0", ParamType::B32)
    );
    assert_eq!(f.params.len(), 3);
    assert!(m.entry("_Z9scale_addfff").is_none());
    let k = m.entry("axpy_noinline").expect("entry");
    assert_eq!(k.params[2].ty, ParamType::F32);
    assert_eq!(
        k.directive("minnctapersm").expect("minnctapersm").values,
        [4]
    );
    let call = k
        .instructions
        .iter()
        .find(|i| i.mnemonic() == "call")
        .expect("call");
    assert_eq!(call.opcode, "call.uni");
    assert_eq!(
        call.call_target(),
        Some(CallTarget::Direct("_Z9scale_addfff".into()))
    );
    assert_eq!(call.depth, 1);
    assert!(safety_issues(&m).is_empty());
}

#[test]
fn nvcc_device_launch_is_rejected() {
    let m = load("device_launch_cdp.sm_90a.ptx");
    assert_eq!(m.entries().count(), 2);
    let issues = safety_issues(&m);
    let got: Vec<_> = issues.iter().map(|i| (i.line, i.kind)).collect();
    assert_eq!(
        got,
        [
            (100, SafetyKind::DeviceRuntimeCall),
            (122, SafetyKind::DeviceRuntimeCall)
        ]
    );
    assert!(issues[0].message.contains("__cudaCDP2GetParameterBufferV2"));
    assert!(issues[1].message.contains("__cudaCDP2LaunchDeviceV2"));
}

#[test]
fn handwritten_device_launch_is_rejected() {
    let m = load("device_launch_handwritten.ptx");
    let k = m.entry("launcher").expect("entry");
    assert_eq!(k.directive("reqntid").expect("reqntid").values, [32, 1, 1]);
    let proto = m.function("cudaGetParameterBufferV2").expect("prototype");
    assert_eq!(proto.params[1].size_bytes(), 12);
    assert_eq!(proto.params[1].alignment(), 4);
    let issues = safety_issues(&m);
    let got: Vec<_> = issues.iter().map(|i| (i.line, i.kind)).collect();
    assert_eq!(
        got,
        [
            (54, SafetyKind::DeviceRuntimeCall),
            (64, SafetyKind::DeviceRuntimeCall)
        ]
    );
    assert!(
        issues[1].message.contains("cudaLaunchDeviceV2"),
        "{}",
        issues[1].message
    );
}

#[test]
fn undefined_extern_call_is_rejected_but_vprintf_is_not() {
    let m = load("undefined_call.ptx");
    let issues = safety_issues(&m);
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(
        (issues[0].line, issues[0].kind),
        (34, SafetyKind::ExternCall)
    );
    assert!(issues[0].message.contains("helper_elsewhere"));
}

#[test]
fn results_serialize_to_json() {
    let m = load("hopper_wgmma_tma.sm_90a.ptx");
    let inv = serde_json::to_value(inventory(&m)).expect("json");
    assert_eq!(inv["by_family"]["wgmma"], 20);
    assert_eq!(inv["by_family"]["fence_proxy_async"], 1);
    assert_eq!(inv["by_opcode"]["cp.async.bulk.tensor"], 10);
    let module = serde_json::to_value(&m).expect("json");
    assert_eq!(module["functions"][0]["kind"], "entry");
    assert_eq!(module["functions"][0]["params"][0]["ty"], "b8");
    let issues = serde_json::to_value(safety_issues(&load("undefined_call.ptx"))).expect("json");
    assert_eq!(issues[0]["kind"], "extern_call");
}
