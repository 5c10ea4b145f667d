//! Unit tests on small hand-written PTX snippets: one test per construct the
//! parser must handle, error positions for malformed input, and the safety
//! rules.

use ptxbench_ptx::{
    CallTarget, Family, FunctionKind, Module, ParamType, ParseErrorKind, SafetyKind, StateSpace,
    inventory, parse, safety_issues,
};

const HEADER: &str = ".version 8.7\n.target sm_90a\n.address_size 64\n";

fn ok(src: &str) -> Module {
    parse(src).unwrap_or_else(|e| panic!("{e}\n--- source ---\n{src}"))
}

/// Parses `body` as the body of kernel `k` after a standard header.
fn kernel(body: &str) -> Module {
    ok(&format!("{HEADER}.visible .entry k()\n{{\n{body}\n}}\n"))
}

fn err(src: &str) -> (u32, u32, ParseErrorKind) {
    let e = parse(src).expect_err("must not parse");
    (e.line, e.column, e.kind)
}

#[test]
fn module_directives() {
    let m = ok(".version 9.0\n.target sm_90a, texmode_independent\n.address_size 64\n");
    assert_eq!(m.version, Some((9, 0)));
    assert_eq!(m.targets, ["sm_90a", "texmode_independent"]);
    assert_eq!(m.address_size, Some(64));
    assert!(m.functions.is_empty());
    let m = ok(".version 8.8 .target sm_100a .address_size 32");
    assert_eq!(
        (m.version, m.targets.as_slice(), m.address_size),
        (Some((8, 8)), &["sm_100a".to_string()][..], Some(32))
    );
}

#[test]
fn entries_funcs_and_linkage() {
    let m = ok(&format!(
        "{HEADER}\
         .visible .entry a() {{ ret; }}\n\
         .entry b {{ ret; }}\n\
         .weak .func c() {{ ret; }}\n\
         .extern .func d(.param .b32 x);\n\
         .func (.param .b32 r) e(.param .b32 x) {{ st.param.b32 [r], 1; ret; }}\n\
         .func f;\n"
    ));
    let got: Vec<_> = m
        .functions
        .iter()
        .map(|f| (f.name.as_str(), f.kind, f.linkage.as_deref(), f.has_body))
        .collect();
    assert_eq!(
        got,
        [
            ("a", FunctionKind::Entry, Some("visible"), true),
            ("b", FunctionKind::Entry, None, true),
            ("c", FunctionKind::Func, Some("weak"), true),
            ("d", FunctionKind::Func, Some("extern"), false),
            ("e", FunctionKind::Func, None, true),
            ("f", FunctionKind::Func, None, false),
        ]
    );
    let names: Vec<_> = m.entries().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(m.entry("c").is_none());
    let e = m.function("e").expect("e");
    assert_eq!((e.returns.len(), e.params.len()), (1, 1));
    assert_eq!(e.returns[0].name, "r");
    assert_eq!(m.functions[0].line, 4);
}

#[test]
fn parameter_attributes_sizes_and_alignment() {
    let m = ok(&format!(
        "{HEADER}.visible .entry k(\n\
         .param .u64 .ptr .global .align 16 p,\n\
         .param .align 64 .b8 tmap[128],\n\
         .param .u32 n,\n\
         .param .f32 v[4],\n\
         .param .align 8 .b8 s[12],\n\
         .param .f16 h,\n\
         .param .b128 w,\n\
         .param .texref t\n\
         ) {{ ret; }}\n"
    ));
    let k = m.entry("k").expect("k");
    let got: Vec<_> = k
        .params
        .iter()
        .map(|p| (p.name.as_str(), p.ty, p.size_bytes(), p.alignment()))
        .collect();
    use ParamType::*;
    assert_eq!(
        got,
        [
            ("p", U64, 8, 8),
            ("tmap", B8, 128, 64),
            ("n", U32, 4, 4),
            ("v", F32, 16, 4),
            ("s", B8, 12, 8),
            ("h", F16, 2, 2),
            ("w", B128, 16, 16),
            ("t", TexRef, 8, 8),
        ]
    );
    let p = &k.params[0];
    assert_eq!(
        p.state_space_attr.as_deref(),
        Some(".ptr .global .align 16")
    );
    assert_eq!((p.align, p.ptr_align), (None, Some(16)));
    assert_eq!(k.params[1].align, Some(64));
    assert_eq!(k.params[1].array_len, Some(128));
    // 8 | pad to 64: 64..192 | 192..196 | 196..212 | pad to 216: 216..228 | 228..230 | pad to 240: 240..256 | 256..264
    assert_eq!(k.param_bytes(), 264);
}

#[test]
fn func_register_parameters() {
    let m = ok(&format!(
        "{HEADER}.func (.reg .b32 r) f(.reg .pred p, .reg .b64 q) {{ ret; }}\n"
    ));
    let f = m.function("f").expect("f");
    assert!(f.returns[0].is_reg && f.params.iter().all(|p| p.is_reg));
    assert_eq!(f.params[0].ty, ParamType::Pred);
}

#[test]
fn performance_directives() {
    let m = ok(&format!(
        "{HEADER}.visible .entry k()\n\
         .maxntid 256, 1, 1\n\
         .reqntid 128\n\
         .minnctapersm 2\n\
         .maxnreg 168\n\
         .explicitcluster\n\
         .reqnctapercluster 2, 1, 1\n\
         .maxclusterrank 8\n\
         .pragma \"nounroll\";\n\
         {{ ret; }}\n\
         .func g() .noreturn {{ trap; }}\n"
    ));
    let k = m.entry("k").expect("k");
    let got: Vec<_> = k
        .directives
        .iter()
        .map(|d| (d.name.as_str(), d.values.clone()))
        .collect();
    assert_eq!(
        got,
        [
            ("maxntid", vec![256, 1, 1]),
            ("reqntid", vec![128]),
            ("minnctapersm", vec![2]),
            ("maxnreg", vec![168]),
            ("explicitcluster", vec![]),
            ("reqnctapercluster", vec![2, 1, 1]),
            ("maxclusterrank", vec![8]),
            ("pragma", vec![]),
        ]
    );
    assert_eq!(k.directive("pragma").expect("pragma").strings, ["nounroll"]);
    let g = m.function("g").expect("g");
    assert_eq!(g.directives[0].name, "noreturn");
}

#[test]
fn module_level_declarations() {
    let m = ok(&format!(
        "{HEADER}\
         .extern .shared .align 16 .b8 smem[];\n\
         .global .align 4 .u32 table[3] = {{1, 2, 3}};\n\
         .visible .const .align 8 .f64 c = 0d3FF0000000000000;\n\
         .shared .align 8 .b8 tile[4][32];\n\
         .global .v4 .f32 vecs[2];\n\
         .global .u64 ptr = generic(table);\n\
         .global .attribute(.managed) .align 4 .u32 managed_x;\n\
         .global .texref tex0;\n"
    ));
    let g = &m.globals;
    assert_eq!(g.len(), 8);
    assert_eq!(
        (g[0].space, g[0].linkage.as_deref(), g[0].align),
        (StateSpace::Shared, Some("extern"), Some(16))
    );
    assert_eq!(g[0].variables[0].dims, [None]);
    assert_eq!(g[0].size_bytes(), None);
    assert_eq!(g[1].variables[0].initializer.as_deref(), Some("{1, 2, 3}"));
    assert_eq!(g[1].size_bytes(), Some(12));
    assert_eq!(
        (g[2].space, g[2].linkage.as_deref()),
        (StateSpace::Const, Some("visible"))
    );
    assert_eq!(
        g[2].variables[0].initializer.as_deref(),
        Some("0d3FF0000000000000")
    );
    assert_eq!(g[3].size_bytes(), Some(128));
    assert_eq!((g[4].vector, g[4].size_bytes()), (Some(4), Some(32)));
    assert_eq!(
        g[5].variables[0].initializer.as_deref(),
        Some("generic(table)")
    );
    assert_eq!(
        (g[6].ty.as_str(), g[6].variables[0].name.as_str()),
        ("u32", "managed_x")
    );
    assert_eq!(g[7].ty, "texref");
}

#[test]
fn body_declarations() {
    let m = kernel(
        ".reg .b32 %r<100>;\n\
         .reg .pred p, q;\n\
         .reg .f32 %f<4>, %acc;\n\
         .shared .align 16 .b8 buf[1024];\n\
         .local .align 8 .b8 __local_depot0[8];\n\
         .const .u32 limit = 7;\n\
         .extern .shared .align 128 .b8 dyn[];\n\
         ret;",
    );
    let k = m.entry("k").expect("k");
    let d = &k.declarations;
    assert_eq!(d.len(), 7);
    assert_eq!(
        (d[0].space, d[0].ty.as_str(), d[0].variables[0].count),
        (StateSpace::Reg, "b32", Some(100))
    );
    assert_eq!(d[1].variables.len(), 2);
    assert_eq!(d[2].variables[1].name, "%acc");
    assert_eq!(d[3].size_bytes(), Some(1024));
    assert_eq!(d[4].space, StateSpace::Local);
    assert_eq!(d[6].linkage.as_deref(), Some("extern"));
    assert_eq!(k.static_shared_bytes(), 1024);
    assert_eq!(k.instructions.len(), 1);
}

#[test]
fn predicates_labels_and_opcodes() {
    let m = kernel(
        ".reg .pred %p<3>;\n\
         LBB0_1:\n\
         @%p1 bra LBB0_2;\n\
         @!%p2 bra.uni LBB0_1;\n\
         $L__BB0_2: LBB0_2: mov.u32 %r1, %tid.x;\n\
         wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%f1, %f2}, %rd1, %rd2, p, 1, 1, 0, 1;\n\
         ret;",
    );
    let k = m.entry("k").expect("k");
    assert_eq!(k.labels, ["LBB0_1", "$L__BB0_2", "LBB0_2"]);
    let got: Vec<_> = k
        .instructions
        .iter()
        .map(|i| {
            (
                i.predicate.as_deref(),
                i.opcode.as_str(),
                i.operands.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (Some("%p1"), "bra", "LBB0_2"),
            (Some("!%p2"), "bra.uni", "LBB0_1"),
            (None, "mov.u32", "%r1, %tid.x"),
            (
                None,
                "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
                "{%f1, %f2}, %rd1, %rd2, p, 1, 1, 0, 1"
            ),
            (None, "ret", ""),
        ]
    );
    assert_eq!(k.instructions[0].line, 8);
}

#[test]
fn nested_scopes_count_and_declare() {
    let m = kernel(
        "mov.u32 %r1, 0;\n\
         // begin inline asm\n\
         {\n\
         .reg .pred P1;\n\
         LAB_WAIT:\n\
         mbarrier.try_wait.parity.shared::cta.b64 P1, [%r2], %r3;\n\
         @P1 bra DONE;\n\
         bra LAB_WAIT;\n\
         DONE:\n\
         { .reg .b32 tmp; mov.b64 {tmp, %r18}, %rd4; }\n\
         }\n\
         // end inline asm\n\
         ret;",
    );
    let k = m.entry("k").expect("k");
    let depths: Vec<_> = k
        .instructions
        .iter()
        .map(|i| (i.opcode.as_str(), i.depth))
        .collect();
    assert_eq!(
        depths,
        [
            ("mov.u32", 0),
            ("mbarrier.try_wait.parity.shared::cta.b64", 1),
            ("bra", 1),
            ("bra", 1),
            ("mov.b64", 2),
            ("ret", 0),
        ]
    );
    assert_eq!(k.instructions[4].operands, "{tmp, %r18}, %rd4");
    assert_eq!(k.declarations.len(), 2);
    assert_eq!(inventory(&m).count(Family::Mbarrier), 1);
}

#[test]
fn debug_directives_comments_and_dwarf() {
    let src = format!(
        "//\n// Generated by NVIDIA NVVM Compiler\n//\n{HEADER}\
         /* a block\n comment */\n\
         .visible .entry k()\n{{\n\
         .loc 1 9 0\n\
         .loc 1 10 5, function_name $L__info_string0, inlined_at 1 9 0\n\
         add.s32 %r1, /* inline */ %r2, 1; // trailing\n\
         ret;\n}}\n\
         .file 1 \"/src/x.cu\"\n\
         .file 2 \"/src/with \\\"quotes\\\".h\", 1700000000, 1234\n\
         .section .debug_str\n{{\n$L__info_string0:\n.b8 95,90,0\n}}\n\
         .section .debug_info {{ .b32 10 {{ .b8 1 }} .b64 $L__func_begin0 }}\n\
         @@DWARF .section .debug_abbrev, \"\", @progbits\n\
         @@DWARF .byte 1, 17\n\
         .section .debug_macinfo {{ }}\n\
         .section .debug_loc, \"\", @progbits\n{{ .b8 0 }}\n"
    );
    let m = ok(&src);
    let k = m.entry("k").expect("k");
    assert_eq!(k.instructions.len(), 2);
    assert_eq!(k.instructions[0].operands, "%r1, %r2, 1");
    assert_eq!(m.functions.len(), 1);
}

#[test]
fn calls_and_prototypes() {
    let m = ok(&format!(
        "{HEADER}\
         .func (.param .b32 r) f(.param .b32 a) {{ st.param.b32 [r], 0; ret; }}\n\
         .func g() {{ ret; }}\n\
         .visible .entry k() {{\n\
         .reg .b64 %rd<3>;\n\
         {{ .param .b32 param0; .param .b32 retval0;\n\
         call.uni (retval0), \n\tf, \n\t(\n\tparam0\n\t);\n\
         }}\n\
         call g;\n\
         call.uni g, ();\n\
         mov.u64 %rd1, f;\n\
         prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);\n\
         {{ .param .b32 param0; .param .b32 retval0;\n\
         call (retval0), %rd1, (param0), prototype_0;\n\
         }}\n\
         ret;\n}}\n"
    ));
    let k = m.entry("k").expect("k");
    let targets: Vec<_> = k
        .instructions
        .iter()
        .filter_map(|i| i.call_target())
        .collect();
    assert_eq!(
        targets,
        [
            CallTarget::Direct("f".into()),
            CallTarget::Direct("g".into()),
            CallTarget::Direct("g".into()),
            CallTarget::Indirect("%rd1".into()),
        ]
    );
    assert_eq!(k.instructions[0].operands, "(retval0), f, ( param0 )");
    assert!(k.labels.contains(&"prototype_0".to_string()));
    assert!(safety_issues(&m).is_empty());
}

#[test]
fn error_unterminated_body_points_at_the_open_brace() {
    let src = format!("{HEADER}.visible .entry k()\n{{\n  mov.u32 %r1, 0;\n");
    assert_eq!(err(&src), (5, 1, ParseErrorKind::UnterminatedBlock));
    // The innermost scope still open at the end is reported.
    let src = format!("{HEADER}.visible .entry k()\n{{\n  mov.u32 %r1, 0;\n  {{\n  ret;\n");
    assert_eq!(err(&src), (7, 3, ParseErrorKind::UnterminatedBlock));
    // A `}` closing the inner scope leaves the body itself open.
    let src = format!("{HEADER}.visible .entry k()\n{{\n  mov.u32 %r1, 0;\n  {{\n  ret;\n}}\n");
    assert_eq!(err(&src), (5, 1, ParseErrorKind::UnterminatedBlock));
    let src = format!("{HEADER}.section .debug_str\n{{\n.b8 1\n");
    assert_eq!(err(&src), (5, 1, ParseErrorKind::UnterminatedBlock));
}

#[test]
fn error_unclosed_parameter_list() {
    let src =
        format!("{HEADER}.visible .entry k(\n  .param .u64 a,\n  .param .u32 n\n{{\n  ret;\n}}\n");
    let e = parse(&src).expect_err("must fail");
    assert_eq!(
        (e.line, e.column, e.kind),
        (7, 1, ParseErrorKind::UnterminatedParamList)
    );
    assert_eq!(
        e.to_string(),
        "line 7, column 1: expected `,` or `)` in parameter list, found `{`"
    );
    let src = format!("{HEADER}.visible .entry k(\n  .param .u64 a");
    assert_eq!(err(&src), (4, 18, ParseErrorKind::UnterminatedParamList));
}

#[test]
fn error_bad_version() {
    assert_eq!(err(".version 9\n"), (1, 10, ParseErrorKind::BadVersion));
    assert_eq!(
        err("\n\n  .version sm_90\n"),
        (3, 12, ParseErrorKind::BadVersion)
    );
    assert_eq!(err(".version 9.x\n"), (1, 10, ParseErrorKind::BadVersion));
    assert_eq!(err(".version"), (1, 9, ParseErrorKind::BadVersion));
    let e = parse(".version 9").expect_err("must fail");
    assert_eq!(
        e.to_string(),
        "line 1, column 10: expected MAJOR.MINOR after `.version`, found `9`"
    );
}

#[test]
fn error_other_malformed_inputs() {
    // Instruction running into the closing brace without `;`.
    let src = format!("{HEADER}.entry k()\n{{\n  ret\n}}\n");
    assert_eq!(err(&src), (7, 1, ParseErrorKind::MissingSemicolon));
    // Unknown directive at module level.
    assert_eq!(
        err(&format!("{HEADER}.bogus 1\n")),
        (4, 1, ParseErrorKind::UnknownDirective)
    );
    // Unknown directive between signature and body.
    assert_eq!(
        err(&format!("{HEADER}.entry k() .maxntd 1 {{ ret; }}\n")),
        (4, 12, ParseErrorKind::UnknownDirective)
    );
    // Stray token at module level.
    assert_eq!(
        err(&format!("{HEADER}ret;\n")),
        (4, 1, ParseErrorKind::UnexpectedToken)
    );
    // Number too large.
    assert_eq!(
        err(".address_size 99999999999\n"),
        (1, 15, ParseErrorKind::BadNumber)
    );
    // Unterminated comment and string.
    assert_eq!(
        err(&format!("{HEADER}/* open")),
        (4, 1, ParseErrorKind::UnterminatedComment)
    );
    assert_eq!(
        err(&format!("{HEADER}.file 1 \"x.cu\n")),
        (4, 9, ParseErrorKind::UnterminatedString)
    );
    // Parameter without a type.
    assert_eq!(
        err(&format!("{HEADER}.entry k(.param .align 8 p) {{ ret; }}\n")),
        (4, 26, ParseErrorKind::UnexpectedToken)
    );
}

#[test]
fn safety_rules() {
    let issues =
        |src: &str| -> Vec<SafetyKind> { safety_issues(&ok(src)).iter().map(|i| i.kind).collect() };

    // No kernel at all; a declared-only entry does not count.
    assert_eq!(issues(HEADER), [SafetyKind::NoEntry]);
    assert_eq!(
        issues(&format!("{HEADER}.func f() {{ ret; }}\n.entry k();\n")),
        [SafetyKind::NoEntry]
    );

    // Prototype without body, and no declaration at all.
    let src = format!(
        "{HEADER}.func helper(.param .b32 a);\n.entry k() {{ call helper, (1); call nowhere; ret; }}\n"
    );
    let found = safety_issues(&ok(&src));
    assert_eq!(
        found.iter().map(|i| i.kind).collect::<Vec<_>>(),
        [SafetyKind::UndefinedCall, SafetyKind::UndefinedCall]
    );
    assert!(
        found[0].message.contains("prototype at line 4"),
        "{}",
        found[0].message
    );
    assert!(
        found[1].message.contains("`nowhere` is not declared")
            || found[1]
                .message
                .contains("`nowhere`, which is not declared")
    );

    // A prototype followed by the definition is fine.
    let src = format!("{HEADER}.func f();\n.entry k() {{ call f; ret; }}\n.func f() {{ ret; }}\n");
    assert!(issues(&src).is_empty());

    // Driver builtins are allowed, declared or not; the device heap is not (integrity v4: it
    // outlives every launch).
    let src =
        format!("{HEADER}.entry k() {{ call __assertfail, (1); call vprintf, (1, 2); ret; }}\n");
    assert!(issues(&src).is_empty());
    let src = format!(
        "{HEADER}.extern .func (.param .b64 r) malloc(.param .b64 n);\n\
         .extern .func free(.param .b64 p);\n\
         .entry k() {{ call.uni (r), malloc, (8); call.uni free, (r); ret; }}\n"
    );
    assert_eq!(
        issues(&src),
        [SafetyKind::DeviceHeap, SafetyKind::DeviceHeap]
    );

    // Device-runtime names, including through an address taken for an indirect call.
    let src = format!(
        "{HEADER}.extern .func (.param .b32 r) cudaDeviceSynchronize();\n\
         .extern .func (.param .b32 r) cudaGraphLaunch(.param .b64 g, .param .b64 s);\n\
         .entry k() {{\n\
         call.uni (r), cudaDeviceSynchronize, ();\n\
         mov.u64 %rd1, cudaGraphLaunch;\n\
         call (r), %rd1, (1, 2), proto;\n\
         call.uni cudaCGGetIntrinsicHandle, (1);\n\
         ret; }}\n"
    );
    let found = safety_issues(&ok(&src));
    let got: Vec<_> = found.iter().map(|i| (i.line, i.kind)).collect();
    assert_eq!(
        got,
        [
            (7, SafetyKind::DeviceRuntimeCall),
            (8, SafetyKind::DeviceRuntimeCall),
            (10, SafetyKind::DeviceRuntimeCall)
        ]
    );
    assert!(
        found[1]
            .message
            .contains("takes the address of `cudaGraphLaunch`")
    );

    // Extern declared but never used is fine; a defined function with a
    // device-runtime-looking name is just a function.
    let src = format!(
        "{HEADER}.extern .func unused();\n.func cudaLooksLikeRuntime() {{ ret; }}\n\
         .entry k() {{ call cudaLooksLikeRuntime; ret; }}\n"
    );
    assert!(issues(&src).is_empty());
}

#[test]
fn parse_error_is_a_std_error() {
    fn takes_error<E: std::error::Error>(_: &E) {}
    let e = parse(".version x").expect_err("must fail");
    takes_error(&e);
}
