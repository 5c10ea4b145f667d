//! PTX front end for PTXBench: parses PTX modules as nvcc and LLMs write
//! them, counts instructions by architecture-specific family (wgmma, TMA,
//! mbarrier, tcgen05, ...), and screens modules for code that cannot be
//! loaded safely by the benchmark (device-side launches, calls to functions
//! from elsewhere, no kernel). Guarantees: [`parse`], [`inventory`] and
//! [`safety_issues`] never panic, whatever the input text.
//!
//! ```
//! let src = ".version 8.0\n.target sm_90a\n.address_size 64\n\
//!            .visible .entry k(.param .u64 p)\n.maxntid 128, 1, 1\n{\n  wgmma.fence.sync.aligned;\n  ret;\n}\n";
//! let m = ptxbench_ptx::parse(src).expect("valid PTX");
//! let k = m.entry("k").expect("kernel k");
//! assert_eq!(k.params[0].size_bytes(), 8);
//! let inv = ptxbench_ptx::inventory(&m);
//! assert_eq!(inv.count(ptxbench_ptx::Family::Wgmma), 1);
//! assert!(ptxbench_ptx::safety_issues(&m).is_empty());
//! ```

mod error;
mod family;
mod inventory;
mod lexer;
mod module;
mod parser;
mod safety;

pub use error::{ParseError, ParseErrorKind};
pub use family::{Family, UnknownFamily, family_of};
pub use inventory::{Inventory, OPERATION_PATHS, function_inventory, inventory, opcode_key};
pub use module::{
    CallTarget, Declaration, Function, FunctionKind, Instruction, Module, Param, ParamType,
    PerfDirective, StateSpace, Variable,
};
pub use parser::parse;
pub use safety::{
    DRIVER_BUILTINS, SafetyIssue, SafetyKind, is_device_runtime, is_driver_builtin, safety_issues,
};
