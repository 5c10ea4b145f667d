//! The one versioned schema of what PTXBench measures: the typed store objects that every
//! measured number traces back to, as the engine emits them, the store holds them, the site
//! reads them and tests build them.
//!
//! - [`Record`] (`ptxbench.record/2`): one evaluation of one candidate on one task on one
//!   device. It names by digest the bytes it was made from (kernel source, PTX, plan, cubin,
//!   prompt, response, and the task definition as a [`TaskObject`]) and holds the engine's
//!   [`Outcome`] ([`outcome`]).
//! - [`RunObject`] (`ptxbench.run/1`): the records of one run list.
//! - [`TaskObject`] (`ptxbench.task/1`) and [`SuiteObject`] (`ptxbench.suite/1`): the task
//!   definitions records were measured against ([`task`]), so a record's closure re-runs it.
//!
//! All are canonical JSON with `schema` first (see `store::object`); digests of things that are
//! not store objects (the task and suite hashes of `crate::task`) sit under `_hash` keys.
//! Older stored versions are read through one adapter ([`v1`]): [`decode_record`] is the only
//! way bytes become a [`Record`].

pub mod device;
pub mod evidence;
pub mod hardware;
pub mod measured;
pub mod outcome;
pub mod provenance;
pub mod stats;
pub mod task;
pub mod v1;

use serde::{Deserialize, Serialize};

use crate::arch::Arch;
use crate::digest::Digest;
use crate::store::{Store, StoreError};
use evidence::EvidenceStatus;
pub use outcome::{
    BaselineInfo, BetweenRuns, ClockSamples, Comparison, CountedSite, Direction, DynamicCounts,
    Floor, KernelInfo, Outcome, OutputCheck, PeakClass, Protocol, SiteCount, Stage, Stats,
    StopReason, Timing, Trial, Verdict, WorkloadResult,
};
pub use provenance::Provenance;
pub use task::{SUITE_SCHEMA, SuiteObject, TASK_SCHEMA, TaskObject};

/// The schema new records are written with.
pub const RECORD_SCHEMA: &str = "ptxbench.record/2";
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

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Entry => "entry",
            Role::HarnessTest => "harness-test",
        }
    }
}

/// One evaluation. Every key is written (absent values as `null`), and an unknown key is a
/// decoding error, so nothing stored is silently dropped.
///
/// Invariant of records written as `ptxbench.record/2`: `task_digest` and `suite_digest` are
/// set. They are `None` only in records read through the [`v1`] adapter, whose `schema` keeps
/// `ptxbench.record/1` (such a value is never stored again; see [`put_record`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// The schema the object was stored under.
    pub schema: String,
    /// Display name of the submission (a model, a compiler, a reference kernel).
    pub entry: String,
    pub role: Role,
    pub model: Option<String>,
    /// The evaluation of the run list that made it (`None` for records of `generate`).
    pub evaluation: Option<String>,
    pub task: String,
    /// `Task::digest()` of the validated task it was measured against.
    pub task_hash: Digest,
    /// The [`TaskObject`] holding that task's definition.
    pub task_digest: Option<Digest>,
    /// `Suite::digest()` of the suite the task belonged to.
    pub suite_hash: Digest,
    /// The [`SuiteObject`] of that suite (its version, every task).
    pub suite_digest: Option<Digest>,
    pub arch: Arch,
    /// Always "measured" for records (reported data lives in import objects).
    pub provenance: String,
    pub kernel_source_digest: Option<Digest>,
    pub ptx_digest: Option<Digest>,
    pub plan_digest: Digest,
    pub cubin_digest: Option<Digest>,
    pub prompt_digest: Option<Digest>,
    pub response_digest: Option<Digest>,
    /// 0-based turn within its trajectory.
    pub turn: Option<u32>,
    /// The record of the trajectory's previous turn.
    pub previous_digest: Option<Digest>,
    /// The base seed every trial's inputs derive from.
    pub seed: u64,
    /// The seed was given (by a service client, a run list's `seed` or `--seed`, a generation
    /// manifest) rather than drawn when the evaluation ran: whoever gave it could know every
    /// input, timing pairs included, in advance. Such records are shown, never ranked. Absent in
    /// the JSON when false, so records made before it keep their bytes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub seed_given: bool,
    pub protocol: Protocol,
    pub workloads_selected: Vec<String>,
    /// Evaluated for correctness and evidence only (no timing was asked for); absent in the
    /// JSON when false, so records made before it keep their bytes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub correctness_only: bool,
    pub expected: Option<Verdict>,
    pub verdict: Verdict,
    pub min_speedup: Option<f64>,
    pub outcome: Outcome,
}

impl Record {
    pub fn is_correct(&self) -> bool {
        self.verdict == Verdict::Correct
    }

    pub fn is_harness_test(&self) -> bool {
        self.role == Role::HarnessTest
    }

    /// The name of the GPU it was measured on, where the record gives one.
    pub fn gpu_name(&self) -> Option<&str> {
        self.outcome.device.as_ref().map(|d| d.name.as_str())
    }

    /// The schema version it was stored under (1 for records read through the v1 adapter).
    pub fn stored_version(&self) -> u32 {
        self.schema
            .rsplit_once('/')
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0)
    }

    /// The smallest speedup over the performance workloads, wherever the record keeps it.
    pub fn min_speedup(&self) -> Option<f64> {
        self.min_speedup.or(self.outcome.min_speedup)
    }

    /// Correct with the target instructions shown to execute: `None` when that was not
    /// measured (no evidence, or no dynamic method covered a family the SASS holds).
    pub fn correct_with_arch(&self) -> Option<bool> {
        let ev = self.outcome.evidence.as_ref()?;
        if ev.families.is_empty() {
            return None;
        }
        if !self.is_correct() {
            return Some(false);
        }
        if ev.all_dynamic_present() {
            return Some(true);
        }
        let failed = ev.families.iter().any(|f| {
            matches!(
                f.status,
                EvidenceStatus::SassAbsent | EvidenceStatus::DynamicNotExecuted
            )
        });
        if failed { Some(false) } else { None }
    }

    /// Executed target-MMA FLOPs over the task's FLOPs on the counted workload.
    pub fn mma_flop_share(&self) -> Option<f64> {
        self.outcome.dynamic.as_ref()?.mma_flop_share
    }

    /// FLOPs of the arithmetic outside the target families over the task's FLOPs on the
    /// counted workload (absent in records made before it was counted).
    pub fn other_flop_share(&self) -> Option<f64> {
        self.outcome.dynamic.as_ref()?.other_flop_share
    }

    /// Bytes loaded by TMA over the task's input bytes on the counted workload.
    pub fn tma_byte_share(&self) -> Option<f64> {
        self.outcome.dynamic.as_ref()?.tma_byte_share
    }

    /// The stricter grade, "correct on target": correct with arch (every required family
    /// executed) *and* at least [`ON_TARGET_MMA_SHARE`] of the task's FLOPs executed on the
    /// target MMA unit, so a token wgmma around SIMT math does not count, *and* at most
    /// [`ON_TARGET_OTHER_SHARE`] of them in arithmetic outside the target families, so that
    /// wgmma run on tiles the kernel then ignores, beside SIMT math that does the work, does
    /// not count either. `None` when a part it needs was not measured (records made before
    /// the other arithmetic was counted cannot pass, only fail on their MMA share).
    ///
    /// A task that requires no MMA family (paged decode: memory-bound) is graded on its bytes
    /// instead: at least [`ON_TARGET_BYTE_SHARE`] of its compulsory input bytes loaded by TMA,
    /// so that a token TMA copy around ordinary loads does not count either.
    /// Whether a timed workload's hardware counters disagree with its counted copy (see
    /// `evidence::hardware`).
    pub fn hardware_disagrees(&self) -> bool {
        self.outcome
            .workloads
            .iter()
            .filter_map(|w| w.timing.as_ref()?.hardware.as_ref())
            .any(|h| h.disagrees())
    }

    pub fn correct_on_target(&self) -> Option<bool> {
        let mma_required = self
            .outcome
            .evidence
            .as_ref()?
            .families
            .iter()
            .any(|f| f.family == "wgmma" || f.family == "tcgen05");
        // The timed launches the GPU's counters read must have done what the counted ones did.
        if self.hardware_disagrees() {
            return Some(false);
        }
        match self.correct_with_arch()? {
            false => Some(false),
            true if mma_required => {
                if self.mma_flop_share()? < ON_TARGET_MMA_SHARE {
                    return Some(false);
                }
                Some(self.other_flop_share()? <= ON_TARGET_OTHER_SHARE)
            }
            true => Some(self.tma_byte_share()? >= ON_TARGET_BYTE_SHARE),
        }
    }
}

/// For tasks that require no MMA family: the share of the compulsory input bytes that must
/// arrive by TMA for "correct on target" (10% slack, as for the MMA share).
pub const ON_TARGET_BYTE_SHARE: f64 = 0.9;

/// The share of a task's FLOPs that must run on the target MMA instructions for "correct on
/// target". Padded tiles, masked causal tiles and recomputation count as executed work (so a
/// share can pass 1); 10% slack lets a kernel finish ragged edges another way.
pub const ON_TARGET_MMA_SHARE: f64 = 0.9;

/// The most of a task's FLOPs that arithmetic outside the target families (SIMT FMA, add,
/// mul, `mma.sync`, ...) may do for "correct on target" on a task that requires an MMA family.
/// A wgmma GEMM's epilogue is under 1% of its FLOPs and an attention kernel's softmax a few %;
/// a kernel that does a tenth of its math elsewhere is no longer a tensor-core kernel.
pub const ON_TARGET_OTHER_SHARE: f64 = 0.1;

/// The records of one run list. Decoding is strict (unknown keys are errors).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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

/// Why stored bytes are not a record or run this version can read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("object {digest} is not JSON: {message}")]
    NotJson { digest: Digest, message: String },
    #[error("object {digest} is a `{found}` object, not a {expected}")]
    WrongSchema {
        digest: Digest,
        found: String,
        expected: &'static str,
    },
    #[error("{schema} object {digest} does not decode: {message}")]
    Decode {
        digest: Digest,
        schema: String,
        message: String,
    },
    #[error(
        "refusing to store a record whose schema is `{schema}`: only {RECORD_SCHEMA} records are written"
    )]
    OldSchema { schema: String },
}

/// The `schema` of a JSON object, or a [`RecordError::WrongSchema`] naming what it was.
fn schema_of(
    digest: &Digest,
    value: &serde_json::Value,
    expected: &'static str,
) -> Result<String, RecordError> {
    let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    if schema.split('/').next() != expected.split('/').next() {
        return Err(RecordError::WrongSchema {
            digest: *digest,
            found: if schema.is_empty() {
                "plain JSON".to_string()
            } else {
                schema.to_string()
            },
            expected,
        });
    }
    Ok(schema.to_string())
}

/// Parses an object's JSON, refusing one over [`crate::store::object::MAX_OBJECT_BYTES`] before
/// it is parsed (parsing holds about 20 times its size).
fn parse_json(digest: &Digest, bytes: &[u8]) -> Result<serde_json::Value, RecordError> {
    too_large(digest, bytes)?;
    serde_json::from_slice(bytes).map_err(|e| RecordError::NotJson {
        digest: *digest,
        message: e.to_string(),
    })
}

/// Gives back the spare capacity a streaming parse leaves in a record's lists (it cannot know
/// their lengths, so a list of one workload holds room for four): about 100 MiB over the 100,000
/// records of a large site.
fn trim(r: &mut Record) {
    let o = &mut r.outcome;
    o.kernels.shrink_to_fit();
    o.seconds.shrink_to_fit();
    o.workloads.shrink_to_fit();
    for w in &mut o.workloads {
        w.trials.shrink_to_fit();
        for t in &mut w.trials {
            t.outputs.shrink_to_fit();
        }
        if let Some(t) = w.timing.as_mut() {
            t.baseline_check.shrink_to_fit();
            t.checked_launches.shrink_to_fit();
        }
    }
    r.workloads_selected.shrink_to_fit();
}

/// Decodes the bytes of the record `digest`, of any stored version, into the current type.
/// The error of an object over [`crate::store::object::MAX_OBJECT_BYTES`], if it is one.
fn too_large(digest: &Digest, bytes: &[u8]) -> Result<(), RecordError> {
    if bytes.len() > crate::store::object::MAX_OBJECT_BYTES {
        return Err(RecordError::NotJson {
            digest: *digest,
            message: crate::store::object::ObjectError::TooLarge { bytes: bytes.len() }.to_string(),
        });
    }
    Ok(())
}

pub fn decode_record(digest: &Digest, bytes: &[u8]) -> Result<Record, RecordError> {
    too_large(digest, bytes)?;
    // A record of the current schema (canonical JSON starts with its schema field) is read
    // straight into its type; anything else, or anything that fails to, takes the general
    // path below, which gives the error. A site loads 100,000 of them; going through a
    // `Value` tree doubles the work.
    if bytes.starts_with(format!("{{\"schema\":\"{RECORD_SCHEMA}\"").as_bytes())
        && let Ok(mut record) = serde_json::from_slice::<Record>(bytes)
    {
        trim(&mut record);
        return Ok(record);
    }
    let value = parse_json(digest, bytes)?;
    let schema = schema_of(digest, &value, RECORD_SCHEMA)?;
    let decoded = match schema.as_str() {
        RECORD_SCHEMA => serde_json::from_value(value).map_err(|e| e.to_string()),
        v1::RECORD_SCHEMA_V1 => v1::decode(value),
        _ => Err(format!(
            "this version of ptxbench reads {} and {RECORD_SCHEMA}",
            v1::RECORD_SCHEMA_V1
        )),
    };
    decoded.map_err(|message| RecordError::Decode {
        digest: *digest,
        schema,
        message,
    })
}

/// Decodes the bytes of the run object `digest`.
pub fn decode_run(digest: &Digest, bytes: &[u8]) -> Result<RunObject, RecordError> {
    decode_exactly(digest, bytes, RUN_SCHEMA)
}

/// The record `digest` from `store` (re-hashed), of any stored version.
pub fn load_record(store: &Store, digest: &Digest) -> Result<Record, RecordError> {
    decode_record(digest, &store.get(digest)?)
}

/// The run object `digest` from `store` (re-hashed).
pub fn load_run(store: &Store, digest: &Digest) -> Result<RunObject, RecordError> {
    decode_run(digest, &store.get(digest)?)
}

/// What [`decode_object`] found in an object of this module's kinds.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    Record(Box<Record>),
    Run(RunObject),
    Task(TaskObject),
    Suite(SuiteObject),
}

/// Decodes `bytes` if they are a record, run, task or suite object (`None` for any other
/// blob), through the same adapters every reader uses. `verify` and `show` call it so that a
/// stored object this version cannot read is reported, not met later.
pub fn decode_object(digest: &Digest, bytes: &[u8]) -> Option<Result<Decoded, RecordError>> {
    let kind = |k: &str| bytes.starts_with(format!("{{\"schema\":\"{k}/").as_bytes());
    Some(if kind("ptxbench.record") {
        decode_record(digest, bytes).map(|r| Decoded::Record(Box::new(r)))
    } else if kind("ptxbench.run") {
        decode_run(digest, bytes).map(Decoded::Run)
    } else if kind("ptxbench.task") {
        decode_exactly(digest, bytes, TASK_SCHEMA).map(Decoded::Task)
    } else if kind("ptxbench.suite") {
        decode_exactly(digest, bytes, SUITE_SCHEMA).map(Decoded::Suite)
    } else {
        return None;
    })
}

/// The records, runs, task and suite objects among `digests` that do not decode (objects that
/// cannot be read are left to `store::verify`, which reports them).
pub fn undecodable(
    store: &Store,
    digests: impl IntoIterator<Item = Digest>,
) -> Vec<(Digest, RecordError)> {
    let mut out = Vec::new();
    for d in digests {
        let Ok(bytes) = store.get(&d) else { continue };
        if let Some(Err(e)) = decode_object(&d, &bytes) {
            out.push((d, e));
        }
    }
    out
}

/// Decodes an object that has one version, `schema`.
fn decode_exactly<T: serde::de::DeserializeOwned>(
    digest: &Digest,
    bytes: &[u8],
    schema: &'static str,
) -> Result<T, RecordError> {
    let value = parse_json(digest, bytes)?;
    let found = schema_of(digest, &value, schema)?;
    let message = if found == schema {
        match serde_json::from_value(value) {
            Ok(t) => return Ok(t),
            Err(e) => e.to_string(),
        }
    } else {
        format!("this version of ptxbench reads {schema}")
    };
    Err(RecordError::Decode {
        digest: *digest,
        schema: found,
        message,
    })
}

/// Stores a record of the current schema (everything it references must be stored already).
pub fn put_record(store: &Store, record: &Record) -> Result<Digest, RecordError> {
    if record.schema != RECORD_SCHEMA {
        return Err(RecordError::OldSchema {
            schema: record.schema.clone(),
        });
    }
    Ok(store.put_object(record)?)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::evidence::{FamilyEvidence, TargetEvidence};
    use super::*;

    fn record(verdict: Verdict, statuses: &[EvidenceStatus]) -> Record {
        let mut r = sample(verdict);
        r.outcome.evidence = Some(TargetEvidence {
            arch: Arch::Sm90a,
            status: EvidenceStatus::DynamicPresent,
            families: statuses
                .iter()
                .map(|s| FamilyEvidence {
                    family: "f".into(),
                    sass_patterns: Vec::new(),
                    status: *s,
                    static_count: 1,
                    static_opcodes: Vec::new(),
                    dynamic_count: Some(1),
                    method: None,
                })
                .collect(),
            disassembler: String::new(),
            notes: Vec::new(),
        });
        r
    }

    /// A record of `verdict` with placeholder digests, for tests.
    pub(crate) fn sample(verdict: Verdict) -> Record {
        let d = Digest::of(b"x");
        Record {
            schema: RECORD_SCHEMA.into(),
            entry: "e".into(),
            role: Role::Entry,
            model: None,
            evaluation: None,
            task: "t".into(),
            task_hash: d,
            task_digest: Some(d),
            suite_hash: d,
            suite_digest: Some(d),
            arch: Arch::Sm90a,
            provenance: "measured".into(),
            kernel_source_digest: None,
            ptx_digest: None,
            plan_digest: d,
            cubin_digest: None,
            prompt_digest: None,
            response_digest: None,
            turn: None,
            previous_digest: None,
            seed: 1,
            seed_given: false,
            protocol: Protocol::default(),
            workloads_selected: Vec::new(),
            correctness_only: false,
            expected: None,
            verdict,
            min_speedup: None,
            outcome: Outcome::failed(verdict, Stage::Done, ""),
        }
    }

    #[test]
    fn the_direct_decode_agrees_with_the_general_one() {
        let d = Digest::of(b"r");
        let mut r = record(Verdict::Correct, &[EvidenceStatus::DynamicPresent]);
        r.min_speedup = Some(0.8125);
        r.turn = Some(2);
        let bytes = serde_json::to_vec(&r).expect("json");
        assert!(bytes.starts_with(format!("{{\"schema\":\"{RECORD_SCHEMA}\"").as_bytes()));
        let general: Record = serde_json::from_value(parse_json(&d, &bytes).expect("parse"))
            .expect("decode through a value");
        assert_eq!(decode_record(&d, &bytes).expect("decode"), general);
        assert_eq!(general, r);
        // What the direct read refuses (a repeated key) still gets the general path's answer.
        let text = String::from_utf8(bytes).expect("utf-8");
        let repeated = text.replacen("\"entry\":\"e\"", "\"entry\":\"x\",\"entry\":\"e\"", 1);
        assert_ne!(repeated, text);
        assert!(serde_json::from_str::<Record>(&repeated).is_err());
        assert_eq!(decode_record(&d, repeated.as_bytes()).expect("decode"), r);
        // And a broken record is still an error naming its digest.
        let broken = text.replacen("\"verdict\":", "\"verdikt\":", 1);
        let e = decode_record(&d, broken.as_bytes()).expect_err("no verdict");
        assert!(e.to_string().contains(&d.to_string()), "{e}");
    }

    #[test]
    fn correct_with_arch_needs_every_family_executed() {
        use EvidenceStatus::*;
        let with = |v, s: &[EvidenceStatus]| record(v, s).correct_with_arch();
        assert_eq!(
            with(Verdict::Correct, &[DynamicPresent, DynamicPresent]),
            Some(true)
        );
        assert_eq!(
            with(Verdict::Correct, &[DynamicPresent, SassAbsent]),
            Some(false)
        );
        assert_eq!(with(Verdict::Correct, &[DynamicPresent, StaticOnly]), None);
        assert_eq!(with(Verdict::Numerical, &[DynamicPresent]), Some(false));
        assert_eq!(with(Verdict::Correct, &[]), None);
        let mut none = record(Verdict::Correct, &[]);
        none.outcome.evidence = None;
        assert_eq!(none.correct_with_arch(), None);
    }

    #[test]
    fn on_target_weighs_mma_flops_or_for_memory_bound_tasks_tma_bytes() {
        let graded_with = |family: &str, mma: Option<f64>, tma: Option<f64>, other: Option<f64>| {
            let mut r = record(Verdict::Correct, &[EvidenceStatus::DynamicPresent]);
            if let Some(ev) = r.outcome.evidence.as_mut() {
                ev.families[0].family = family.into();
            }
            r.outcome.dynamic = Some(DynamicCounts {
                mma_flop_share: mma,
                tma_byte_share: tma,
                other_flop_share: other,
                ..DynamicCounts::default()
            });
            r.correct_on_target()
        };
        let graded = |family: &str, mma, tma| graded_with(family, mma, tma, Some(0.01));
        // An MMA task: the FLOP share decides, whatever TMA moved.
        assert_eq!(graded("wgmma", Some(0.95), Some(0.0)), Some(true));
        assert_eq!(graded("wgmma", Some(1.0 / 64.0), Some(5.0)), Some(false));
        assert_eq!(graded("wgmma", None, Some(5.0)), None);
        // ... and the other arithmetic must stay small: a SIMT kernel with wgmma on ignored
        // tiles worth all the task's FLOPs is not on target.
        assert_eq!(
            graded_with("wgmma", Some(1.0), None, Some(1.0)),
            Some(false)
        );
        assert_eq!(graded_with("wgmma", Some(1.6), None, Some(0.1)), Some(true));
        assert_eq!(
            graded_with("tcgen05", Some(1.6), None, Some(0.11)),
            Some(false)
        );
        // A record made before the other arithmetic was counted can fail, never pass.
        assert_eq!(graded_with("wgmma", Some(1.6), None, None), None);
        assert_eq!(graded_with("wgmma", Some(0.5), None, None), Some(false));
        // A task that requires only TMA (decode): the byte share decides.
        assert_eq!(graded("tma", None, Some(0.97)), Some(true));
        assert_eq!(graded("tma", None, Some(0.01)), Some(false));
        assert_eq!(graded("tma", Some(1.0), None), None);
    }

    #[test]
    fn timed_launches_whose_counters_disagree_cost_on_target() {
        let mut r = record(Verdict::Correct, &[EvidenceStatus::DynamicPresent]);
        if let Some(ev) = r.outcome.evidence.as_mut() {
            ev.families[0].family = "wgmma".into();
        }
        r.outcome.dynamic = Some(DynamicCounts {
            mma_flop_share: Some(1.0),
            other_flop_share: Some(0.01),
            ..DynamicCounts::default()
        });
        let timing: outcome::Timing = serde_json::from_value(serde_json::json!({
            "candidate": {"n": 3, "median_ms": 1.0, "p25_ms": 1.0, "p75_ms": 1.0, "min_ms": 1.0, "max_ms": 1.0},
            "candidate_tflops": 1.0,
            "recheck_passed": true,
        }))
        .expect("timing");
        r.outcome.workloads.push(outcome::WorkloadResult {
            workload: "M8192".into(),
            performance: true,
            trials: Vec::new(),
            timing: Some(timing),
        });
        assert_eq!(r.correct_on_target(), Some(true));
        let agreement = |agrees| hardware::Agreement {
            quantity: "wgmma instructions".into(),
            hardware: 4.0,
            counted: 4000.0,
            lo: 3960.0,
            hi: 4040.0,
            agrees,
        };
        let check = |agrees| hardware::HardwareCheck {
            agreements: vec![vec![agreement(true)], vec![agreement(agrees)]],
            ..hardware::HardwareCheck::default()
        };
        let timed = |r: &mut Record, agrees| {
            r.outcome.workloads[0]
                .timing
                .as_mut()
                .expect("timed")
                .hardware = Some(check(agrees));
        };
        timed(&mut r, true);
        assert_eq!(r.correct_on_target(), Some(true));
        // One measured launch of one workload that did not do the counted work is enough.
        timed(&mut r, false);
        assert!(r.hardware_disagrees());
        assert_eq!(r.correct_on_target(), Some(false));
        assert_eq!(r.correct_with_arch(), Some(true));
    }

    #[test]
    fn a_record_round_trips_and_only_the_current_schema_is_stored() {
        let r = record(Verdict::Correct, &[EvidenceStatus::DynamicPresent]);
        let bytes = serde_json::to_vec(&r).expect("json");
        assert!(bytes.starts_with(b"{\"schema\":\"ptxbench.record/2\""));
        assert_eq!(
            decode_record(&Digest::of(&bytes), &bytes).expect("decodes"),
            r
        );
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = Store::open(tmp.path()).without_sync();
        let mut old = r.clone();
        old.schema = v1::RECORD_SCHEMA_V1.into();
        assert!(matches!(
            put_record(&store, &old),
            Err(RecordError::OldSchema { .. })
        ));
    }
}
