//! Records and runs: the typed store objects that every measured number traces back to.
//!
//! A [`Record`] is one evaluation of one candidate on one task on one device; it names by
//! digest the bytes it was made from (kernel source, PTX, plan, cubin, prompt, response) and
//! holds the engine's [`Outcome`]. A [`RunObject`] lists the records of one run list. Both are
//! canonical JSON with `schema` first (see `store::object`); digests of things that are not
//! store objects (task and suite hashes) sit under `_hash` keys.

pub mod outcome;
pub mod stats;

use serde::{Deserialize, Serialize};

use crate::arch::Arch;
use crate::digest::Digest;
pub use outcome::{
    BaselineInfo, Comparison, DynamicCounts, KernelInfo, Outcome, OutputCheck, Protocol, Stats,
    Timing, Trial, Verdict, WorkloadResult,
};

pub const RECORD_SCHEMA: &str = "ptxbench.record/1";
pub const RUN_SCHEMA: &str = "ptxbench.run/1";

/// What a record is for on the leaderboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// A submission: shown on the leaderboard.
    #[default]
    Entry,
    /// A known-bad kernel that proves the harness classifies it; listed on its own page.
    HarnessTest,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub schema: String,
    /// Display name of the submission (a model, a compiler, a reference kernel).
    pub entry: String,
    pub role: Role,
    #[serde(default)]
    pub model: Option<String>,
    pub task: String,
    pub task_hash: Digest,
    pub suite_hash: Digest,
    pub arch: Arch,
    /// Always "measured" for records (reported data lives in import objects).
    pub provenance: String,
    #[serde(default)]
    pub kernel_source_digest: Option<Digest>,
    #[serde(default)]
    pub ptx_digest: Option<Digest>,
    pub plan_digest: Digest,
    #[serde(default)]
    pub cubin_digest: Option<Digest>,
    #[serde(default)]
    pub prompt_digest: Option<Digest>,
    #[serde(default)]
    pub response_digest: Option<Digest>,
    /// 0-based turn within its trajectory.
    #[serde(default)]
    pub turn: Option<u32>,
    /// The record of the trajectory's previous turn.
    #[serde(default)]
    pub previous_digest: Option<Digest>,
    pub seed: u64,
    pub protocol: Protocol,
    pub workloads_selected: Vec<String>,
    #[serde(default)]
    pub expected: Option<Verdict>,
    pub verdict: Verdict,
    pub min_speedup: Option<f64>,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunObject {
    pub schema: String,
    pub name: String,
    pub arch: Arch,
    /// The run list (YAML) the run was made from.
    pub list_digest: Digest,
    pub suite_hash: Digest,
    /// Sorted by (entry, task) of the records.
    pub record_digests: Vec<Digest>,
}
