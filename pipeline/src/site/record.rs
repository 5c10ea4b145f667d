//! The site's own view of `ptxbench.record/1` and `ptxbench.run/1` objects: every field the
//! pages show, decoded leniently (`#[serde(default)]` wherever a value may be absent, unknown
//! fields ignored, verdicts and roles kept as text) so that small additions to the record
//! schema never break the leaderboard.

use serde::Deserialize;

use crate::digest::Digest;

/// The role of a record that puts it on the leaderboard.
pub const ROLE_ENTRY: &str = "entry";
/// The role of a known-bad kernel that tests the harness (never on the leaderboard).
pub const ROLE_HARNESS_TEST: &str = "harness-test";

/// A record as stored.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RecordDoc {
    pub schema: String,
    /// Display name of the submission.
    pub entry: String,
    /// `entry` or `harness-test`.
    pub role: String,
    pub model: Option<String>,
    pub task: String,
    pub task_hash: Option<Digest>,
    pub suite_hash: Option<Digest>,
    pub arch: String,
    pub provenance: Option<String>,
    pub kernel_source_digest: Option<Digest>,
    pub ptx_digest: Option<Digest>,
    pub plan_digest: Option<Digest>,
    pub cubin_digest: Option<Digest>,
    pub prompt_digest: Option<Digest>,
    pub response_digest: Option<Digest>,
    /// 0-based turn within its trajectory.
    pub turn: Option<u32>,
    /// The record of the trajectory's previous turn.
    pub previous_digest: Option<Digest>,
    pub seed: Option<u64>,
    pub protocol: Option<ProtocolDoc>,
    pub workloads_selected: Vec<String>,
    pub expected: Option<String>,
    pub verdict: String,
    pub min_speedup: Option<f64>,
    pub outcome: OutcomeDoc,
    /// Target evidence, if a record carries it at the top level (else see `outcome`).
    pub evidence: Option<EvidenceDoc>,
}

impl RecordDoc {
    /// The record's target evidence, wherever it is kept.
    pub fn target_evidence(&self) -> Option<&EvidenceDoc> {
        self.outcome.evidence.as_ref().or(self.evidence.as_ref())
    }

    /// Correct with the target instructions shown to execute: `None` when that was not
    /// measured (no evidence, or no dynamic method covered a family the SASS holds).
    pub fn correct_with_arch(&self) -> Option<bool> {
        let ev = self.target_evidence()?;
        if ev.families.is_empty() {
            return None;
        }
        if !self.is_correct() {
            return Some(false);
        }
        if ev.families.iter().all(|f| f.status == "dynamic_present") {
            return Some(true);
        }
        if ev
            .families
            .iter()
            .any(|f| f.status == "sass_absent" || f.status == "dynamic_not_executed")
        {
            return Some(false);
        }
        None
    }

    pub fn is_correct(&self) -> bool {
        self.verdict == "correct"
    }

    pub fn is_harness_test(&self) -> bool {
        self.role == ROLE_HARNESS_TEST
    }

    /// Every text blob the record names, with what it holds.
    pub fn text_blobs(&self) -> impl Iterator<Item = (BlobKind, Digest)> + '_ {
        [
            (BlobKind::Prompt, self.prompt_digest),
            (BlobKind::Response, self.response_digest),
            (BlobKind::KernelSource, self.kernel_source_digest),
            (BlobKind::Ptx, self.ptx_digest),
            (BlobKind::Plan, self.plan_digest),
        ]
        .into_iter()
        .filter_map(|(k, d)| d.map(|d| (k, d)))
    }
}

/// What a text blob of a record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BlobKind {
    Prompt,
    Response,
    KernelSource,
    Ptx,
    Plan,
}

impl BlobKind {
    pub fn label(self) -> &'static str {
        match self {
            BlobKind::Prompt => "Prompt",
            BlobKind::Response => "Response",
            BlobKind::KernelSource => "Kernel source (CUDA C++)",
            BlobKind::Ptx => "PTX",
            BlobKind::Plan => "Launch plan",
        }
    }

    /// The record field that names it.
    pub fn field(self) -> &'static str {
        match self {
            BlobKind::Prompt => "prompt_digest",
            BlobKind::Response => "response_digest",
            BlobKind::KernelSource => "kernel_source_digest",
            BlobKind::Ptx => "ptx_digest",
            BlobKind::Plan => "plan_digest",
        }
    }

    /// An id for anchors.
    pub fn anchor(self) -> &'static str {
        match self {
            BlobKind::Prompt => "prompt",
            BlobKind::Response => "response",
            BlobKind::KernelSource => "source",
            BlobKind::Ptx => "ptx",
            BlobKind::Plan => "plan",
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ProtocolDoc {
    pub trials: u32,
    pub warmup: u32,
    pub iterations: u32,
    pub rotations: u32,
    pub max_timing_seconds: f64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct OutcomeDoc {
    pub verdict: String,
    pub stage: String,
    pub message: String,
    pub jit_log: String,
    pub kernels: Vec<KernelDoc>,
    pub workloads: Vec<WorkloadDoc>,
    pub device: Option<DeviceDoc>,
    pub baseline: Option<BaselineDoc>,
    pub harness_compiler: String,
    pub min_speedup: Option<f64>,
    pub seconds: Vec<(String, f64)>,
    pub evidence: Option<EvidenceDoc>,
}

/// Target evidence: per required family, the SASS found and the executions counted.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct EvidenceDoc {
    pub arch: String,
    /// The weakest family status.
    pub status: String,
    pub families: Vec<FamilyEvidenceDoc>,
    pub disassembler: String,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct FamilyEvidenceDoc {
    pub family: String,
    pub sass_patterns: Vec<String>,
    /// `source_missing`, `inspection_failed`, `sass_absent`, `dynamic_not_executed`,
    /// `static_only` or `dynamic_present`.
    pub status: String,
    pub static_count: u64,
    pub static_opcodes: Vec<String>,
    pub dynamic_count: Option<u64>,
    pub method: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct KernelDoc {
    pub entry: String,
    pub attributes: KernelAttributesDoc,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct KernelAttributesDoc {
    pub registers: i64,
    pub static_shared_bytes: i64,
    pub local_bytes: i64,
    pub max_threads_per_block: i64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct WorkloadDoc {
    pub workload: String,
    pub performance: bool,
    pub trials: Vec<TrialDoc>,
    pub timing: Option<TimingDoc>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TrialDoc {
    pub seed: u64,
    pub outputs: Vec<OutputDoc>,
    pub guard_bytes_changed: u64,
    pub input_bytes_changed: u64,
    pub passed: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct OutputDoc {
    pub output: String,
    pub tolerance: String,
    pub comparison: ComparisonDoc,
    pub passed: bool,
    pub failure: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ComparisonDoc {
    pub elements: u64,
    pub violations: u64,
    pub non_finite: u64,
    pub max_abs_error: Option<f64>,
    pub relative_l2: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TimingDoc {
    pub candidate: Option<StatsDoc>,
    pub baseline: Option<StatsDoc>,
    pub speedup: Option<f64>,
    pub candidate_tflops: Option<f64>,
    pub baseline_tflops: Option<f64>,
    pub recheck_passed: Option<bool>,
    /// The baseline's own outputs against the fp32 reference (absent in older records).
    pub baseline_check: Vec<OutputDoc>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct StatsDoc {
    pub n: u64,
    #[serde(deserialize_with = "number_or_nan")]
    pub median_ms: f64,
    #[serde(deserialize_with = "number_or_nan")]
    pub p25_ms: f64,
    #[serde(deserialize_with = "number_or_nan")]
    pub p75_ms: f64,
    #[serde(deserialize_with = "number_or_nan")]
    pub min_ms: f64,
    #[serde(deserialize_with = "number_or_nan")]
    pub max_ms: f64,
}

/// JSON has no NaN (serde_json writes `null` for it): read `null` back as NaN.
fn number_or_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct DeviceDoc {
    pub name: String,
    pub compute_capability: (i32, i32),
    pub sm_count: i64,
    pub memory_bytes: u64,
    pub driver_api_version: i64,
    pub sm_clock_khz: i64,
    pub memory_clock_khz: i64,
    pub driver_library: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct BaselineDoc {
    pub provider: String,
    pub version: String,
    pub library: String,
    /// What the baseline is, in words (absent in older records).
    pub label: Option<String>,
    /// The engine the library chose (absent in older records).
    pub engine: Option<String>,
}

/// A run as stored.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RunDoc {
    pub schema: String,
    pub name: String,
    pub arch: String,
    pub list_digest: Option<Digest>,
    pub suite_hash: Option<Digest>,
    pub record_digests: Vec<Digest>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn correct_with_arch_needs_every_family_executed() {
        let with = |verdict: &str, statuses: &[&str]| {
            let fams: Vec<String> = statuses
                .iter()
                .map(|s| format!(r#"{{"family":"f","status":"{s}","dynamic_count":1}}"#))
                .collect();
            let json = format!(
                r#"{{"schema":"ptxbench.record/1","verdict":"{verdict}","outcome":{{"evidence":{{"families":[{}]}}}}}}"#,
                fams.join(",")
            );
            serde_json::from_str::<RecordDoc>(&json)
                .expect("decodes")
                .correct_with_arch()
        };
        assert_eq!(
            with("correct", &["dynamic_present", "dynamic_present"]),
            Some(true)
        );
        assert_eq!(
            with("correct", &["dynamic_present", "sass_absent"]),
            Some(false)
        );
        assert_eq!(with("correct", &["dynamic_present", "static_only"]), None);
        assert_eq!(with("numerical", &["dynamic_present"]), Some(false));
        assert_eq!(with("correct", &[]), None);
        let none: RecordDoc = serde_json::from_str(r#"{"verdict":"correct"}"#).expect("decodes");
        assert_eq!(none.correct_with_arch(), None);
    }

    #[test]
    fn decodes_a_minimal_record_and_ignores_unknown_fields() {
        let json = r#"{"schema":"ptxbench.record/1","entry":"e","role":"entry","task":"t",
            "arch":"sm_90a","verdict":"numerical","some_new_field":{"x":1},
            "outcome":{"verdict":"numerical","new":true}}"#;
        let r: RecordDoc = serde_json::from_str(json).expect("decodes");
        assert_eq!(r.verdict, "numerical");
        assert!(!r.is_correct() && !r.is_harness_test());
        assert!(r.outcome.workloads.is_empty());
        assert_eq!(r.text_blobs().count(), 0);
    }
}
