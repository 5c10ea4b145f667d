//! Target evidence as a record keeps it: per required instruction family, the SASS found in
//! the cubin and the executions a dynamic method counted (see `evidence` for how it is made).

use serde::{Deserialize, Serialize};

use crate::arch::Arch;

/// The paper's evidence status values, plus `StaticOnly`.
///
/// Variants are declared from weakest to strongest evidence; [`EvidenceStatus::rank`] and `Ord`
/// follow that order, so the status of a whole target is the minimum over its families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceStatus {
    /// There is no compiled code to inspect (no PTX, or ptxas failed): nothing can be said.
    SourceMissing,
    /// The code exists but the inspection could not be made (no nvdisasm, nvdisasm failed).
    InspectionFailed,
    /// The cubin was disassembled and no opcode matches the family's patterns.
    SassAbsent,
    /// The opcodes are in the SASS, and a dynamic method ran and counted zero executions.
    DynamicNotExecuted,
    /// The opcodes are in the SASS; no dynamic method has run (or none covered this family).
    StaticOnly,
    /// The opcodes are in the SASS and a dynamic method counted at least one execution.
    DynamicPresent,
}

impl EvidenceStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            EvidenceStatus::SourceMissing => "source_missing",
            EvidenceStatus::InspectionFailed => "inspection_failed",
            EvidenceStatus::SassAbsent => "sass_absent",
            EvidenceStatus::DynamicNotExecuted => "dynamic_not_executed",
            EvidenceStatus::StaticOnly => "static_only",
            EvidenceStatus::DynamicPresent => "dynamic_present",
        }
    }
}

impl std::fmt::Display for EvidenceStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How executed counts were obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DynamicMethod {
    /// Nsight Compute per-SASS-instruction counts, as the paper: `thread_inst_executed_true`
    /// (threads with a true guard) where collected, else `inst_executed` (warps).
    Ncu,
    /// Atomic counters spliced into a copy of the PTX before each target instruction
    /// (thread-level issue counts of the PTX instruction; see `evidence::splice`).
    SplicedCounters,
}

/// The evidence for one required family.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FamilyEvidence {
    pub family: String,
    pub sass_patterns: Vec<String>,
    pub status: EvidenceStatus,
    /// Matching SASS instructions in the cubin (0 when it could not be inspected).
    pub static_count: u64,
    /// The full SASS mnemonics that matched, sorted.
    pub static_opcodes: Vec<String>,
    /// Executions counted by `method` (thread-level; ncu falls back to warps without
    /// `thread_inst_executed_true`).
    pub dynamic_count: Option<u64>,
    pub method: Option<DynamicMethod>,
}

/// The evidence for a task's target on one architecture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetEvidence {
    pub arch: Arch,
    /// The weakest family status (`SourceMissing` when the target requires nothing).
    pub status: EvidenceStatus,
    pub families: Vec<FamilyEvidence>,
    /// The disassembler's version line, empty when none ran.
    pub disassembler: String,
    /// How the evidence was gathered and what limits it (method caveats, failures).
    pub notes: Vec<String>,
}

impl TargetEvidence {
    /// Whether every required family was seen executing.
    pub fn all_dynamic_present(&self) -> bool {
        !self.families.is_empty()
            && self
                .families
                .iter()
                .all(|f| f.status == EvidenceStatus::DynamicPresent)
    }
}
