//! Safety screening of a parsed module before it is loaded and benchmarked:
//! flags code that needs more than the CUDA driver's JIT provides (the
//! device runtime for device-side launches, functions from other modules)
//! and modules with no kernel. Deterministic, never panics; an empty result
//! means no issue was found, not that the code is correct.
//!
//! # What is flagged
//!
//! For every `call` with a named callee, and every other instruction that
//! mentions (takes the address of) a function the module declares but does
//! not define, the callee is classified in this order:
//!
//! 1. defined with a body in this module: fine;
//! 2. `malloc`/`free`: [`SafetyKind::DeviceHeap`]. The driver's device heap
//!    outlives every tensor set and module the harness makes, so a kernel could
//!    keep state there from a checked launch to a timed one (integrity v4);
//!    state belongs in a workspace the plan declares, reset before every launch;
//! 3. one of [`DRIVER_BUILTINS`] (`vprintf`, `__assertfail`): fine. `ptxas`
//!    resolves these itself in whole-program mode (checked with CUDA 13.0), so
//!    they need no device runtime or other module;
//! 4. a device-runtime function (name starting with `cuda` after any leading
//!    underscores: `cudaLaunchDevice[V2]`, `cudaGetParameterBuffer[V2]`,
//!    `cudaGraphLaunch`, `cudaCGGet*`, `cudaDeviceSynchronize`, and the
//!    `__cudaCDP2*` names CUDA 12+ nvcc emits for `kernel<<<...>>>` in device
//!    code): [`SafetyKind::DeviceRuntimeCall`];
//! 5. declared `.extern` (to come from another module at link time):
//!    [`SafetyKind::ExternCall`];
//! 6. anything else (a prototype without a body, or no declaration at
//!    all): [`SafetyKind::UndefinedCall`].
//!
//! A module with no `.entry` that has a body gets [`SafetyKind::NoEntry`]
//! (line 0). Indirect calls (`call %rd1, ...`) are not flagged by
//! themselves: their possible targets are the functions whose address the
//! module takes, and those are checked as above.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::module::{CallTarget, Function, Module};

/// Functions the CUDA driver's PTX JIT resolves without any library.
pub const DRIVER_BUILTINS: &[&str] = &["vprintf", "__assertfail"];

/// The device heap's functions: refused ([`SafetyKind::DeviceHeap`]).
pub const DEVICE_HEAP: &[&str] = &["malloc", "free"];

/// Why a module is unsafe to load in the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SafetyKind {
    /// The module defines no kernel.
    NoEntry,
    /// A call into the CUDA device runtime (device-side launch, device
    /// synchronisation, cooperative-groups grid handles, ...).
    DeviceRuntimeCall,
    /// A call to a function declared `.extern` and not defined here.
    ExternCall,
    /// A call to a function that is neither defined here nor a driver builtin.
    UndefinedCall,
    /// Module-scope `.global` memory used other than by loading from it: it persists from
    /// one launch to the next, so a kernel could tell its first launch from later ones.
    ModuleState,
    /// `malloc`/`free`: the device heap outlives every tensor set and module, so a kernel
    /// could keep state in it from a checked launch to a timed one.
    DeviceHeap,
}

impl SafetyKind {
    /// Stable lowercase name (as serialised).
    pub fn as_str(self) -> &'static str {
        match self {
            SafetyKind::NoEntry => "no_entry",
            SafetyKind::DeviceRuntimeCall => "device_runtime_call",
            SafetyKind::ExternCall => "extern_call",
            SafetyKind::UndefinedCall => "undefined_call",
            SafetyKind::ModuleState => "module_state",
            SafetyKind::DeviceHeap => "device_heap",
        }
    }
}

/// One reason to reject a module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SafetyIssue {
    /// Line of the offending instruction; 0 for whole-module issues.
    pub line: u32,
    pub kind: SafetyKind,
    pub message: String,
}

/// Whether `name` belongs to the CUDA device runtime (see the module docs).
pub fn is_device_runtime(name: &str) -> bool {
    name.trim_start_matches('_').starts_with("cuda")
}

/// Whether `name` is resolved by the driver's JIT without any library.
pub fn is_driver_builtin(name: &str) -> bool {
    DRIVER_BUILTINS.contains(&name)
}

/// How a module declares one function name.
#[derive(Debug, Clone, Copy, Default)]
struct Decl {
    defined: bool,
    declared: bool,
    is_extern: bool,
    line: u32,
}

fn declarations(m: &Module) -> BTreeMap<&str, Decl> {
    let mut out: BTreeMap<&str, Decl> = BTreeMap::new();
    for f in &m.functions {
        let d = out.entry(f.name.as_str()).or_default();
        if !d.declared {
            d.line = f.line;
        }
        d.declared = true;
        d.defined |= f.has_body;
        d.is_extern |= f.linkage.as_deref() == Some("extern");
    }
    out
}

/// Classifies a use of `name`; `None` when it is fine. The text says why,
/// phrased to follow "`name`, which ...".
fn classify(name: &str, decls: &BTreeMap<&str, Decl>) -> Option<(SafetyKind, String)> {
    let d = decls.get(name).copied().unwrap_or_default();
    if DEVICE_HEAP.contains(&name) && !d.defined {
        return Some((
            SafetyKind::DeviceHeap,
            "allocates from the device heap, which outlives every launch: memory that survives \
             from a checked launch to a timed one is refused; keep state in a workspace the plan \
             declares (reset before every launch)"
                .to_string(),
        ));
    }
    if d.defined || is_driver_builtin(name) {
        return None;
    }
    if is_device_runtime(name) {
        return Some((
            SafetyKind::DeviceRuntimeCall,
            "belongs to the CUDA device runtime (device-side launch or synchronisation)"
                .to_string(),
        ));
    }
    if d.is_extern {
        return Some((
            SafetyKind::ExternCall,
            format!(
                "is declared `.extern` at line {} and not defined in this module",
                d.line
            ),
        ));
    }
    let why = if d.declared {
        format!(
            "has a prototype at line {} but no body, and is not a driver builtin",
            d.line
        )
    } else {
        "is not declared and is not a driver builtin".to_string()
    };
    Some((SafetyKind::UndefinedCall, why))
}

/// Identifier-like words of an operand string (no registers, numbers or directives).
fn identifiers(operands: &str) -> impl Iterator<Item = &str> {
    operands
        .split(|c: char| {
            !(c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '%' || c == '.')
        })
        .filter(|w| w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$'))
}

fn function_issues(f: &Function, decls: &BTreeMap<&str, Decl>, out: &mut Vec<SafetyIssue>) {
    for ins in &f.instructions {
        let issue = match ins.call_target() {
            Some(CallTarget::Direct(callee)) => classify(&callee, decls)
                .map(|(kind, why)| (kind, format!("`{}` calls `{callee}`, which {why}", f.name))),
            Some(CallTarget::Indirect(_)) => None,
            None => identifiers(&ins.operands)
                .filter(|w| decls.get(w).is_some_and(|d| !d.defined))
                .find_map(|w| classify(w, decls).map(|(kind, why)| (w, kind, why)))
                .map(|(w, kind, why)| {
                    (
                        kind,
                        format!("`{}` takes the address of `{w}`, which {why}", f.name),
                    )
                }),
        };
        if let Some((kind, message)) = issue {
            out.push(SafetyIssue {
                line: ins.line,
                kind,
                message,
            });
        }
    }
}

/// Every reason to reject `m` (empty when none), in source order, with the
/// whole-module issues first.
pub fn safety_issues(m: &Module) -> Vec<SafetyIssue> {
    let mut out = Vec::new();
    if m.entries().next().is_none() {
        out.push(SafetyIssue {
            line: 0,
            kind: SafetyKind::NoEntry,
            message: "module defines no kernel (`.entry` with a body)".to_string(),
        });
    }
    let decls = declarations(m);
    for f in &m.functions {
        function_issues(f, &decls, &mut out);
    }
    module_state_issues(m, &mut out);
    out
}

/// Module-scope `.global` variables used other than as the address of a load: stored to,
/// updated atomically, or their address taken (`mov`, `cvta`, an initialiser of another
/// variable), after which nothing bounds what writes them. Read-only tables (constant strings
/// Triton emits, lookup tables) stay allowed.
fn module_state_issues(m: &Module, out: &mut Vec<SafetyIssue>) {
    let globals: Vec<(&str, u32)> = m
        .globals
        .iter()
        .filter(|d| d.space == crate::module::StateSpace::Global)
        .flat_map(|d| d.variables.iter().map(move |v| (v.name.as_str(), d.line)))
        .collect();
    if globals.is_empty() {
        return;
    }
    let is_global = |w: &str| globals.iter().any(|(g, _)| *g == w);
    for d in &m.globals {
        for v in &d.variables {
            let init = v.initializer.as_deref().unwrap_or("");
            if let Some(g) = identifiers(init).find(|w| is_global(w)) {
                out.push(SafetyIssue {
                    line: d.line,
                    kind: SafetyKind::ModuleState,
                    message: format!(
                        "`{}` holds the address of the module-scope `.global` variable `{g}`: module-scope memory a kernel can write persists between launches; keep state in a workspace the plan declares",
                        v.name
                    ),
                });
            }
        }
    }
    for f in &m.functions {
        for ins in &f.instructions {
            let Some(g) = identifiers(&ins.operands).find(|w| is_global(w)) else {
                continue;
            };
            // A load from the variable itself (`ld.global.u32 %r1, [table+4];`) only reads it.
            let loads_only = ins.mnemonic() == "ld"
                && ins.operands.split_once('[').is_some_and(|(before, addr)| {
                    !identifiers(before).any(&is_global)
                        && identifiers(addr).all(|w| w == g || !is_global(w))
                });
            if !loads_only {
                out.push(SafetyIssue {
                    line: ins.line,
                    kind: SafetyKind::ModuleState,
                    message: format!(
                        "`{}` uses the module-scope `.global` variable `{g}` other than by loading from it (`{}`): module-scope memory a kernel can write persists between launches, so a kernel could tell its first launch from later ones; keep state in a workspace the plan declares (re-initialised before every launch sequence)",
                        f.name, ins.opcode
                    ),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {

    fn module_state(src: &str) -> Vec<SafetyIssue> {
        let m = crate::parse(src).expect("parses");
        safety_issues(&m)
            .into_iter()
            .filter(|i| i.kind == SafetyKind::ModuleState)
            .collect()
    }

    const HEAD: &str = ".version 8.0\n.target sm_90a\n.address_size 64\n";

    #[test]
    fn issue_45_writable_module_state_is_refused() {
        let writes = [
            "st.global.u32 [flag], 1;",
            "atom.global.add.u32 %r1, [flag], 1;",
            "red.global.add.u32 [flag+4], 1;",
            "mov.u64 %rd1, flag;",
            "cvta.global.u64 %rd1, flag;",
            "ld.global.u32 %r1, [flag]; st.global.u32 [flag], %r1;",
        ];
        for w in writes {
            let src = format!(
                "{HEAD}.global .align 4 .u32 flag[2];\n.visible .entry k() {{ .reg .b32 %r<2>; .reg .b64 %rd<2>; {w} ret; }}\n"
            );
            let issues = module_state(&src);
            assert!(!issues.is_empty(), "not refused: {w}");
            assert!(
                issues[0].message.contains("`flag`"),
                "{}",
                issues[0].message
            );
            assert!(
                issues[0].message.contains("workspace"),
                "{}",
                issues[0].message
            );
        }
        // A pointer to it in another variable's initialiser is an address taken too.
        let src = format!(
            "{HEAD}.global .u32 flag;\n.global .u64 p = flag;\n.visible .entry k() {{ ret; }}\n"
        );
        assert_eq!(module_state(&src).len(), 1);
    }

    #[test]
    fn read_only_tables_and_unused_strings_are_allowed() {
        let src = format!(
            "{HEAD}.global .align 1 .b8 _$_str[4] = {{95, 95, 67, 0}};\n.global .align 4 .u32 table[4] = {{1, 2, 3, 4}};\n.visible .entry k(.param .u64 out) {{ .reg .b32 %r<3>; .reg .b64 %rd<2>; ld.global.u32 %r1, [table+8]; ld.param.u64 %rd1, [out]; st.global.u32 [%rd1], %r1; ret; }}\n"
        );
        assert_eq!(module_state(&src), Vec::new());
    }
    use super::*;

    /// Integrity v4, class 1: the device heap outlived every tensor set and module.
    #[test]
    fn issue_57_the_device_heap_is_refused() {
        let src = ".version 8.0\n.target sm_90a\n.address_size 64\n\
.extern .func (.param .b64 r) malloc(.param .b64 n);\n\
.extern .func free(.param .b64 p);\n\
.visible .entry k()\n{\n.reg .b64 %rd<2>;\n\
{ .param .b64 n; .param .b64 r; st.param.b64 [n], 64; call.uni (r), malloc, (n); ld.param.b64 %rd1, [r]; }\n\
{ .param .b64 p; st.param.b64 [p], %rd1; call.uni free, (p); }\nret;\n}\n";
        let m = crate::parse(src).expect("parses");
        let issues = safety_issues(&m);
        let kinds: Vec<SafetyKind> = issues.iter().map(|i| i.kind).collect();
        assert_eq!(
            kinds,
            [SafetyKind::DeviceHeap, SafetyKind::DeviceHeap],
            "{issues:?}"
        );
        assert!(
            issues[0].message.contains("calls `malloc`"),
            "{}",
            issues[0].message
        );
    }

    #[test]
    fn device_runtime_names() {
        for n in [
            "cudaLaunchDevice",
            "cudaLaunchDeviceV2",
            "cudaGetParameterBuffer",
            "cudaGetParameterBufferV2",
            "cudaGraphLaunch",
            "cudaCGGetIntrinsicHandle",
            "cudaDeviceSynchronize",
            "__cudaCDP2LaunchDeviceV2",
        ] {
            assert!(is_device_runtime(n), "{n}");
        }
        for n in ["vprintf", "malloc", "my_cuda_helper", "_Z3foov"] {
            assert!(!is_device_runtime(n), "{n}");
        }
    }

    #[test]
    fn identifiers_skip_registers_and_numbers() {
        let ids: Vec<_> = identifiers("%rd3, child, [param0+0], 0x10, $L__x").collect();
        assert_eq!(ids, ["child", "param0", "$L__x"]);
    }
}
