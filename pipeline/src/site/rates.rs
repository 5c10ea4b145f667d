//! Rates of a record's timed workloads: speedups and TFLOP/s from the task's FLOP formula.

use std::collections::BTreeMap;

use crate::record::Record;

/// One timed performance workload of a record, with rates from the task's FLOP formula.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadRate {
    pub workload: String,
    pub speedup: Option<f64>,
    /// 95% bootstrap interval of the paired speedup, where the record has one.
    pub speedup_ci95: Option<[f64; 2]>,
    pub candidate_tflops: Option<f64>,
    pub baseline_tflops: Option<f64>,
}

/// TFLOP/s of one run of `flops` taking `ms` milliseconds.
fn tflops(flops: f64, ms: f64) -> Option<f64> {
    (ms.is_finite() && ms > 0.0 && flops.is_finite()).then(|| flops / ms / 1e9)
}

/// FLOPs of one run of every workload of the suite, evaluated once (a formula evaluation per
/// record and workload would dominate a large site's build). By task, then workload.
#[derive(Debug, Clone, Default)]
pub struct FlopTable(BTreeMap<String, BTreeMap<String, f64>>);

impl FlopTable {
    pub fn new(suite: &crate::task::Suite) -> FlopTable {
        let mut m: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
        for t in &suite.tasks {
            for w in &t.workloads {
                if let Ok(f) = t.flops_of(w) {
                    m.entry(t.id.to_string())
                        .or_default()
                        .insert(w.name.clone(), f);
                }
            }
        }
        FlopTable(m)
    }

    pub fn get(&self, task: &str, workload: &str) -> Option<f64> {
        self.0.get(task)?.get(workload).copied()
    }
}

/// The timed workloads of `record`, rates computed with its task's FLOP formula.
pub fn workload_rates(record: &Record, flops: &FlopTable) -> Vec<WorkloadRate> {
    let mut out = Vec::new();
    for w in &record.outcome.workloads {
        let Some(t) = &w.timing else { continue };
        let flops = flops.get(&record.task, &w.workload);
        let cand = Some(t.candidate.median_ms);
        let base = t.baseline.as_ref().map(|s| s.median_ms);
        out.push(WorkloadRate {
            workload: w.workload.clone(),
            speedup: t.speedup.filter(|s| s.is_finite() && *s > 0.0).or_else(|| {
                match (cand, base) {
                    (Some(c), Some(b)) if c > 0.0 && b > 0.0 => Some(b / c),
                    _ => None,
                }
            }),
            speedup_ci95: t.speedup_ci95,
            candidate_tflops: flops.zip(cand).and_then(|(f, ms)| tflops(f, ms)),
            baseline_tflops: flops.zip(base).and_then(|(f, ms)| tflops(f, ms)),
        });
    }
    out
}
