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
//! 2. one of [`DRIVER_BUILTINS`] (`vprintf`, `__assertfail`, `malloc`,
//!    `free`): fine. `ptxas` resolves these itself in whole-program mode
//!    (checked with CUDA 13.0), so they need no device runtime or other
//!    module. `malloc`/`free` use the driver's device heap, which is bounded
//!    by `cudaLimitMallocHeapSize`; they are allowed, not flagged;
//! 3. a device-runtime function (name starting with `cuda` after any leading
//!    underscores: `cudaLaunchDevice[V2]`, `cudaGetParameterBuffer[V2]`,
//!    `cudaGraphLaunch`, `cudaCGGet*`, `cudaDeviceSynchronize`, and the
//!    `__cudaCDP2*` names CUDA 12+ nvcc emits for `kernel<<<...>>>` in device
//!    code): [`SafetyKind::DeviceRuntimeCall`];
//! 4. declared `.extern` (to come from another module at link time):
//!    [`SafetyKind::ExternCall`];
//! 5. anything else (a prototype without a body, or no declaration at
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
pub const DRIVER_BUILTINS: &[&str] = &["vprintf", "__assertfail", "malloc", "free"];

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
}

impl SafetyKind {
    /// Stable lowercase name (as serialised).
    pub fn as_str(self) -> &'static str {
        match self {
            SafetyKind::NoEntry => "no_entry",
            SafetyKind::DeviceRuntimeCall => "device_runtime_call",
            SafetyKind::ExternCall => "extern_call",
            SafetyKind::UndefinedCall => "undefined_call",
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
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
