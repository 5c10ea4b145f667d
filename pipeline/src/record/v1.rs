//! The adapter for records stored as `ptxbench.record/1`: the one place that knows their shape.
//!
//! A v1 record is decoded leniently (keys it may lack default to absent) and converted into the
//! current [`Record`]: it did not store its task definition, so `task_digest` and
//! `suite_digest` are `None` (a reader looks the definition up by `task_hash`, see
//! `record::task`), and `schema` keeps `ptxbench.record/1`. Its outcome is read with the current
//! [`Outcome`] types, whose later additions default when absent; a change to them that a v1
//! outcome cannot decode into belongs here, as a conversion.

use serde::Deserialize;

use super::{Outcome, Protocol, Record, Role, Verdict};
use crate::arch::Arch;
use crate::digest::Digest;

pub const RECORD_SCHEMA_V1: &str = "ptxbench.record/1";

/// A record as `ptxbench.record/1` stored it. Unknown keys are errors (so that a key this
/// adapter does not carry over is noticed, not dropped).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordV1 {
    schema: String,
    entry: String,
    role: Role,
    #[serde(default)]
    model: Option<String>,
    task: String,
    task_hash: Digest,
    suite_hash: Digest,
    arch: Arch,
    provenance: String,
    #[serde(default)]
    kernel_source_digest: Option<Digest>,
    #[serde(default)]
    ptx_digest: Option<Digest>,
    plan_digest: Digest,
    #[serde(default)]
    cubin_digest: Option<Digest>,
    #[serde(default)]
    prompt_digest: Option<Digest>,
    #[serde(default)]
    response_digest: Option<Digest>,
    #[serde(default)]
    turn: Option<u32>,
    #[serde(default)]
    previous_digest: Option<Digest>,
    seed: u64,
    protocol: Protocol,
    workloads_selected: Vec<String>,
    #[serde(default)]
    expected: Option<Verdict>,
    verdict: Verdict,
    #[serde(default)]
    min_speedup: Option<f64>,
    outcome: Outcome,
}

impl From<RecordV1> for Record {
    fn from(r: RecordV1) -> Record {
        Record {
            schema: r.schema,
            entry: r.entry,
            role: r.role,
            model: r.model,
            evaluation: None,
            task: r.task,
            task_hash: r.task_hash,
            task_digest: None,
            suite_hash: r.suite_hash,
            suite_digest: None,
            arch: r.arch,
            provenance: r.provenance,
            kernel_source_digest: r.kernel_source_digest,
            ptx_digest: r.ptx_digest,
            plan_digest: r.plan_digest,
            cubin_digest: r.cubin_digest,
            prompt_digest: r.prompt_digest,
            response_digest: r.response_digest,
            turn: r.turn,
            previous_digest: r.previous_digest,
            seed: r.seed,
            seed_given: false,
            protocol: r.protocol,
            workloads_selected: r.workloads_selected,
            correctness_only: false,
            expected: r.expected,
            verdict: r.verdict,
            min_speedup: r.min_speedup,
            outcome: r.outcome,
        }
    }
}

/// What a v1 outcome may lack (early writers left empty parts out), and the value it means.
fn outcome_defaults() -> [(&'static str, serde_json::Value); 9] {
    use serde_json::{Value, json};
    [
        ("stage", json!("")),
        ("message", json!("")),
        ("jit_log", json!("")),
        ("kernels", json!([])),
        ("workloads", json!([])),
        ("device", Value::Null),
        ("baseline", Value::Null),
        ("harness_compiler", json!("")),
        ("min_speedup", Value::Null),
    ]
}

/// Converts the JSON of a v1 record into the current type.
pub(super) fn decode(mut value: serde_json::Value) -> Result<Record, String> {
    if let Some(outcome) = value.get_mut("outcome").and_then(|o| o.as_object_mut()) {
        for (key, default) in outcome_defaults() {
            outcome.entry(key).or_insert(default);
        }
        outcome
            .entry("seconds")
            .or_insert_with(|| serde_json::json!([]));
    }
    serde_json::from_value::<RecordV1>(value)
        .map(Record::from)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::decode_record;

    /// The smallest v1 record: the keys v1 writers left out when empty are absent.
    fn minimal_v1() -> serde_json::Value {
        let d = Digest::of(b"x").to_string();
        serde_json::json!({
            "schema": "ptxbench.record/1", "entry": "e", "role": "harness-test", "task": "t",
            "task_hash": d, "suite_hash": d, "arch": "sm_90a", "provenance": "measured",
            "plan_digest": d, "seed": 7,
            "protocol": {"trials": 1, "warmup": 1, "iterations": 1, "rotations": 1,
                         "max_timing_seconds": 1.0},
            "workloads_selected": [], "verdict": "numerical",
            "outcome": {"verdict": "numerical", "stage": "correctness", "message": "m",
                        "jit_log": "", "kernels": [], "workloads": [], "device": null,
                        "baseline": null, "harness_compiler": "", "min_speedup": null,
                        "seconds": []}
        })
    }

    #[test]
    fn a_v1_record_converts_without_a_task_object() {
        let bytes = serde_json::to_vec(&minimal_v1()).expect("json");
        let r = decode_record(&Digest::of(&bytes), &bytes).expect("a v1 record decodes");
        assert_eq!(r.schema, RECORD_SCHEMA_V1);
        assert_eq!(r.stored_version(), 1);
        assert_eq!((r.task_digest, r.suite_digest), (None, None));
        assert_eq!(
            (r.seed, r.verdict, r.role),
            (7, Verdict::Numerical, Role::HarnessTest)
        );
        assert!(r.previous_digest.is_none() && r.turn.is_none());
    }

    #[test]
    fn an_unknown_v1_key_is_an_error_naming_it() {
        let mut v = minimal_v1();
        v["surprise"] = serde_json::json!(1);
        let bytes = serde_json::to_vec(&v).expect("json");
        let e = decode_record(&Digest::of(&bytes), &bytes).expect_err("unknown key");
        assert!(e.to_string().contains("surprise"), "{e}");
    }

    #[test]
    fn the_adapter_is_for_v1_only() {
        // A v1 outcome may leave empty parts out; a v2 one may not.
        let mut v = minimal_v1();
        v["outcome"] = serde_json::json!({"verdict": "numerical"});
        let bytes = serde_json::to_vec(&v).expect("json");
        let r = decode_record(&Digest::of(&bytes), &bytes).expect("v1 is lenient");
        assert!(
            r.outcome.workloads.is_empty() && r.outcome.stage == crate::record::Stage::Unrecorded
        );
        v["schema"] = serde_json::json!(crate::record::RECORD_SCHEMA);
        let bytes = serde_json::to_vec(&v).expect("json");
        let e = decode_record(&Digest::of(&bytes), &bytes).expect_err("v2 is strict");
        assert!(e.to_string().contains("ptxbench.record/2"), "{e}");
        let other = br#"{"schema":"ptxbench.run/1"}"#;
        let e = decode_record(&Digest::of(other), other).expect_err("not a record");
        assert!(e.to_string().contains("not a ptxbench.record"), "{e}");
    }

    /// Every record the committed store holds in this version reads through the adapter.
    #[test]
    fn every_committed_v1_record_reads() {
        let store = crate::store::Store::open(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../artifacts"),
        );
        let mut read = 0;
        for d in store.list().expect("the committed store lists") {
            let bytes = store.get(&d).expect("readable");
            if bytes.starts_with(b"{\"schema\":\"ptxbench.record/1\"") {
                let r = decode_record(&d, &bytes).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(r.stored_version(), 1, "{d}");
                read += 1;
            }
        }
        assert!(read >= 300, "only {read} v1 records in the committed store");
    }
}
