//! Auditing a record: compare a fresh evaluation of the same bytes with what was recorded.
//!
//! The comparison is a pure function of the stored record and the new outcome, so it is
//! tested on the CPU; `ptxbench audit` supplies the new outcome from this machine's GPU.
//! Agreement means: the same verdict; the same pass/fail per workload; each re-measured
//! speedup inside the recorded spread (the ratio range the recorded interquartile ranges of
//! candidate and baseline allow, widened by a tolerance for machine-to-machine noise); and
//! the environment differences are listed so a reader can judge the rest.
//!
//! The task comes from the store, never from a checkout: [`task_of`] loads the record's task
//! object (or, for a `ptxbench.record/1` that did not name one, the stored task object that
//! validated to its task hash), so `audit` works from the store alone.

use std::fmt::Write as _;

use serde::Serialize;

use crate::digest::Digest;
use crate::engine::{Outcome, Timing};
use crate::record::task::{TaskObjectError, find_task};
use crate::record::{Record, TaskObject};
use crate::store::Store;
use crate::task::Task;

/// The task a record is re-run against, as the store holds it.
#[derive(Debug, Clone)]
pub struct AuditTask {
    /// The task object it came from.
    pub digest: Digest,
    /// The object as the worker gets it (its task hash what this ptxbench validates it to).
    pub object: TaskObject,
    pub task: Task,
    /// Set when this ptxbench validates the stored definition to another task hash than the
    /// record names: the definition is the same bytes; the validator changed.
    pub revalidated: Option<String>,
}

/// Why the task of a record could not be had from the store.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("record {record} names task object {task_digest}: {source}")]
    TaskObject {
        record: Digest,
        task_digest: Digest,
        #[source]
        source: Box<TaskObjectError>,
    },
    #[error("record {record} ({schema}) does not name its task object, and {source}")]
    NotStored {
        record: Digest,
        schema: String,
        #[source]
        source: Box<TaskObjectError>,
    },
    #[error(transparent)]
    Mismatch(Box<Mismatch>),
    #[error("task object {task_digest} of record {record}: {source}")]
    Invalid {
        record: Digest,
        task_digest: Digest,
        #[source]
        source: Box<TaskObjectError>,
    },
}

/// A record and the task object it names disagree on what the task is.
#[derive(Debug, thiserror::Error)]
#[error(
    "record {record} is of task {task} with task hash {task_hash}, but task object {task_digest} holds task {found} with task hash {found_hash}"
)]
pub struct Mismatch {
    pub record: Digest,
    pub task: String,
    pub task_hash: Digest,
    pub task_digest: Digest,
    pub found: String,
    pub found_hash: Digest,
}

/// The task record `digest` was measured against, from `store` alone.
pub fn task_of(store: &Store, digest: &Digest, record: &Record) -> Result<AuditTask, AuditError> {
    let (task_digest, object) = match record.task_digest {
        Some(d) => {
            let object = TaskObject::load(store, &d).map_err(|source| AuditError::TaskObject {
                record: *digest,
                task_digest: d,
                source: Box::new(source),
            })?;
            (d, object)
        }
        None => find_task(store, &record.task, &record.task_hash).map_err(|source| {
            AuditError::NotStored {
                record: *digest,
                schema: record.schema.clone(),
                source: Box::new(with_hint(source, record)),
            }
        })?,
    };
    if object.id != record.task || object.task_hash != record.task_hash {
        return Err(AuditError::Mismatch(Box::new(Mismatch {
            record: *digest,
            task: record.task.clone(),
            task_hash: record.task_hash,
            task_digest,
            found: object.id,
            found_hash: object.task_hash,
        })));
    }
    let task = object.validate().map_err(|source| AuditError::Invalid {
        record: *digest,
        task_digest,
        source: Box::new(source),
    })?;
    let now = task.digest();
    let revalidated = (now != record.task_hash).then(|| {
        format!(
            "task hash: recorded {} -> {now} (task object {task_digest}: the same definition, validated by this ptxbench)",
            record.task_hash
        )
    });
    Ok(AuditTask {
        digest: task_digest,
        object: TaskObject {
            task_hash: now,
            ..object
        },
        task,
        revalidated,
    })
}

/// How to store the task a v1 record needs.
fn with_hint(e: TaskObjectError, record: &Record) -> TaskObjectError {
    match e {
        TaskObjectError::NotStored {
            id,
            task_hash,
            root,
            ..
        } => TaskObjectError::NotStored {
            id,
            task_hash,
            root,
            hint: format!(
                ": store the suite it was measured against (suite hash {}) with `ptxbench tasks store --tasks DIR` from a checkout of that suite",
                record.suite_hash
            ),
        },
        other => other,
    }
}

/// Relative widening of the recorded speedup range before a re-measurement counts as off.
pub const SPEEDUP_TOLERANCE: f64 = 0.05;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkloadAudit {
    pub workload: String,
    pub recorded_passed: bool,
    pub now_passed: Option<bool>,
    pub recorded_speedup: Option<f64>,
    /// The range the recorded spread allows, widened by [`SPEEDUP_TOLERANCE`].
    pub allowed: Option<(f64, f64)>,
    pub now_speedup: Option<f64>,
    pub agrees: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditReport {
    pub recorded_verdict: String,
    pub now_verdict: String,
    pub workloads: Vec<WorkloadAudit>,
    /// `field: recorded -> now` for every environment field that differs.
    pub environment_differences: Vec<String>,
    pub agrees: bool,
}

/// The speedup range a recorded timing supports: slowest baseline over fastest candidate
/// quartile and the reverse.
pub fn speedup_range(t: &Timing) -> Option<(f64, f64)> {
    let b = t.baseline.as_ref()?;
    let c = &t.candidate;
    let lo = b.p25_ms / c.p75_ms;
    let hi = b.p75_ms / c.p25_ms;
    Some((
        lo * (1.0 - SPEEDUP_TOLERANCE),
        hi * (1.0 + SPEEDUP_TOLERANCE),
    ))
}

/// Compares a record with a fresh outcome of the same evaluation.
pub fn compare(record: &Record, now: &Outcome) -> AuditReport {
    let mut workloads = Vec::new();
    for w in &record.outcome.workloads {
        let fresh = now.workloads.iter().find(|x| x.workload == w.workload);
        let recorded_passed = w.trials.iter().all(|t| t.passed);
        let now_passed = fresh.map(|f| f.trials.iter().all(|t| t.passed));
        let recorded_speedup = w.timing.as_ref().and_then(|t| t.speedup);
        let allowed = w.timing.as_ref().and_then(speedup_range);
        let now_speedup = fresh
            .and_then(|f| f.timing.as_ref())
            .and_then(|t| t.speedup);
        let speed_ok = match (allowed, now_speedup) {
            (Some((lo, hi)), Some(s)) => (lo..=hi).contains(&s),
            (None, _) => true,
            (Some(_), None) => false,
        };
        workloads.push(WorkloadAudit {
            workload: w.workload.clone(),
            recorded_passed,
            now_passed,
            recorded_speedup,
            allowed,
            now_speedup,
            agrees: now_passed == Some(recorded_passed) && speed_ok,
        });
    }
    let mut environment_differences = Vec::new();
    if let (Some(a), Some(b)) = (&record.outcome.device, &now.device) {
        let mut diff = |field: &str, x: String, y: String| {
            if x != y {
                environment_differences.push(format!("{field}: {x} -> {y}"));
            }
        };
        diff("gpu", a.name.clone(), b.name.clone());
        diff(
            "compute capability",
            format!("{:?}", a.compute_capability),
            format!("{:?}", b.compute_capability),
        );
        diff(
            "driver API",
            a.driver_api_version.to_string(),
            b.driver_api_version.to_string(),
        );
        diff("SMs", a.sm_count.to_string(), b.sm_count.to_string());
        diff(
            "peak SM clock kHz",
            a.sm_clock_khz.to_string(),
            b.sm_clock_khz.to_string(),
        );
    } else if now.device.is_none() {
        environment_differences.push("no GPU ran the re-evaluation".into());
    }
    if let (Some(a), Some(b)) = (&record.outcome.baseline, &now.baseline)
        && a.version != b.version
    {
        environment_differences.push(format!(
            "{} version: {} -> {}",
            a.provider, a.version, b.version
        ));
    }
    if record.outcome.harness_compiler != now.harness_compiler {
        environment_differences.push(format!(
            "harness compiler: {} -> {}",
            record.outcome.harness_compiler, now.harness_compiler
        ));
    }
    let agrees = record.verdict == now.verdict && workloads.iter().all(|w| w.agrees);
    AuditReport {
        recorded_verdict: record.verdict.as_str().into(),
        now_verdict: now.verdict.as_str().into(),
        workloads,
        environment_differences,
        agrees,
    }
}

/// The report for a terminal.
pub fn render(r: &AuditReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "verdict: recorded {} / now {}",
        r.recorded_verdict, r.now_verdict
    );
    for w in &r.workloads {
        let sp = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
        let _ = writeln!(
            s,
            "  {:<16} passed {} / {}   speedup {} / {}{}   {}",
            w.workload,
            w.recorded_passed,
            w.now_passed.map_or("-".into(), |p| p.to_string()),
            sp(w.recorded_speedup),
            sp(w.now_speedup),
            w.allowed.map_or(String::new(), |(lo, hi)| format!(
                " (allowed {lo:.3}..{hi:.3})"
            )),
            if w.agrees { "ok" } else { "DIFFERS" }
        );
    }
    for d in &r.environment_differences {
        let _ = writeln!(s, "environment differs: {d}");
    }
    let _ = writeln!(
        s,
        "{}",
        if r.agrees {
            "audit: the record is reproduced"
        } else {
            "audit: the record is NOT reproduced"
        }
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Stats, Trial, Verdict, WorkloadResult};

    fn stats(median: f64, spread: f64) -> Stats {
        Stats {
            n: 20,
            median_ms: median,
            p25_ms: median - spread,
            p75_ms: median + spread,
            min_ms: median - 2.0 * spread,
            max_ms: median + 2.0 * spread,
        }
    }

    fn outcome(verdict: Verdict, passed: bool, cand_ms: f64) -> Outcome {
        let mut o = Outcome::failed(verdict, crate::record::Stage::Done, "");
        o.workloads = vec![WorkloadResult {
            workload: "M8192".into(),
            performance: true,
            trials: vec![Trial {
                seed: 1,
                outputs: vec![],
                guard_bytes_changed: 0,
                input_bytes_changed: 0,
                passed,
                counted: false,
            }],
            timing: Some(Timing {
                candidate: stats(cand_ms, 0.01),
                baseline: Some(stats(1.0, 0.01)),
                baseline_check: Vec::new(),
                speedup: Some(1.0 / cand_ms),
                speedup_ci95: None,
                speedup_ci95_within: None,
                between_runs: None,
                stop_reason: None,
                candidate_tflops: 0.0,
                baseline_tflops: None,
                checked_launches: Vec::new(),
                recheck_passed: true,
                hardware: None,
                floor: None,
                floor_fraction: None,
                clocks: None,
                state_before: None,
                state_after: None,
            }),
        }];
        o
    }

    fn record(o: Outcome) -> Record {
        let mut r = crate::record::tests::sample(o.verdict);
        r.outcome = o;
        r
    }

    #[test]
    fn a_faithful_rerun_agrees() {
        let r = record(outcome(Verdict::Correct, true, 2.0));
        let report = compare(&r, &outcome(Verdict::Correct, true, 2.02));
        assert!(report.agrees, "{}", render(&report));
    }

    #[test]
    fn a_slower_rerun_or_another_verdict_differs() {
        let r = record(outcome(Verdict::Correct, true, 2.0));
        let slow = compare(&r, &outcome(Verdict::Correct, true, 2.6));
        assert!(!slow.agrees && !slow.workloads[0].agrees);
        let wrong = compare(&r, &outcome(Verdict::Numerical, false, 2.0));
        assert!(!wrong.agrees);
        assert!(render(&wrong).contains("NOT reproduced"));
    }

    /// The task of a record comes from the store: by its task object, or (a v1 record) by its
    /// task hash; a task the store lacks is an error naming the hash.
    #[test]
    fn the_task_comes_from_the_store_alone() {
        let tasks = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks");
        let suite = crate::task::Suite::load(&tasks).expect("the committed suite");
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = Store::open(tmp.path()).without_sync();
        let stored = crate::record::task::store_suite(&store, &suite).expect("stored");
        let t = &suite.tasks[0];
        let mut r = crate::record::tests::sample(Verdict::Correct);
        r.task = t.id.to_string();
        r.task_hash = t.digest();
        r.task_digest = stored.task(t.id.as_str());
        let d = Digest::of(b"record");
        let found = task_of(&store, &d, &r).expect("by task object");
        assert_eq!(
            (found.task.clone(), found.revalidated.clone()),
            (t.clone(), None)
        );
        r.task_digest = None;
        r.schema = crate::record::v1::RECORD_SCHEMA_V1.into();
        assert_eq!(
            task_of(&store, &d, &r).expect("by task hash").digest,
            found.digest
        );
        r.task_hash = Digest::of(b"another suite's task");
        let e = task_of(&store, &d, &r).expect_err("not stored").to_string();
        assert!(
            e.contains(&r.task_hash.to_string()) && e.contains(&d.to_string()),
            "{e}"
        );
        assert!(e.contains("ptxbench tasks store"), "{e}");
        r.task_digest = Some(found.digest);
        let e = task_of(&store, &d, &r)
            .expect_err("another task hash")
            .to_string();
        assert!(e.contains(&found.digest.to_string()), "{e}");
    }
}
