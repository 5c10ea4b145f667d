//! Auditing a record: compare a fresh evaluation of the same bytes with what was recorded.
//!
//! The comparison is a pure function of the stored record and the new outcome, so it is
//! tested on the CPU; `ptxbench audit` supplies the new outcome from this machine's GPU.
//! Agreement means: the same verdict; the same pass/fail per workload; each re-measured
//! speedup inside the recorded spread (the ratio range the recorded interquartile ranges of
//! candidate and baseline allow, widened by a tolerance for machine-to-machine noise); and
//! the environment differences are listed so a reader can judge the rest.

use std::fmt::Write as _;

use serde::Serialize;

use crate::engine::{Outcome, Timing};
use crate::record::Record;

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
        let mut o = Outcome::failed(verdict, "done", "");
        o.workloads = vec![WorkloadResult {
            workload: "M8192".into(),
            performance: true,
            trials: vec![Trial {
                seed: 1,
                outputs: vec![],
                guard_bytes_changed: 0,
                input_bytes_changed: 0,
                passed,
            }],
            timing: Some(Timing {
                candidate: stats(cand_ms, 0.01),
                baseline: Some(stats(1.0, 0.01)),
                baseline_check: Vec::new(),
                speedup: Some(1.0 / cand_ms),
                speedup_ci95: None,
                stop_reason: None,
                candidate_tflops: 0.0,
                baseline_tflops: None,
                checked_launches: Vec::new(),
                recheck_passed: true,
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
        let d = crate::digest::Digest::of(b"x");
        Record {
            schema: crate::record::RECORD_SCHEMA.into(),
            entry: "e".into(),
            role: crate::record::Role::Entry,
            model: None,
            task: "t".into(),
            task_hash: d,
            suite_hash: d,
            arch: crate::arch::Arch::Sm90a,
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
            protocol: crate::engine::Protocol::default(),
            workloads_selected: vec![],
            expected: None,
            verdict: o.verdict,
            min_speedup: None,
            outcome: o,
        }
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
}
