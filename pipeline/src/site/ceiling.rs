//! Per-task ceilings, as KernelBench's leaderboard shows them: for each (arch, GPU, task) and
//! each timed performance workload, the library's time, the best reference kernel and the best
//! model, each with the record it comes from; and per task the best smallest-over-workloads
//! speedup of the references and of the models.
//!
//! Only measured records of role `entry` count (harness tests never do). The library time of a
//! workload is the median over the records of the baseline's median, taken as the lower median
//! so that it is one record's own number (sorted by time, then digest). "Best" is the largest
//! paired speedup among correct records (any turn), ties broken by digest, so the choice never
//! depends on load order. GPUs are kept apart: a time on an H100 and one on an H200 are
//! different ceilings.

use std::collections::BTreeMap;

use crate::digest::Digest;
use crate::task::{Suite, WorkloadKind};

use super::entries::{EntryInfo, EntryKind};
use super::input::LoadedRecord;
use super::rates::{FlopTable, workload_rates};

/// The ceilings of one task on one GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskCeiling {
    pub arch: String,
    /// The GPU's name as the records give it (empty: not recorded).
    pub gpu: String,
    pub task: String,
    /// In the task's workload order (then by name for workloads the suite does not list).
    pub workloads: Vec<WorkloadCeiling>,
    /// Best smallest-over-workloads speedup of a reference kernel.
    pub reference: Option<Best>,
    /// Best smallest-over-workloads speedup of a model.
    pub model: Option<Best>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadCeiling {
    pub workload: String,
    /// FLOPs of one run (from the suite's formula), where known.
    pub flops: Option<f64>,
    pub library: Option<LibraryTime>,
    pub reference: Option<Best>,
    pub model: Option<Best>,
}

/// The library's time on a workload.
#[derive(Debug, Clone, PartialEq)]
pub struct LibraryTime {
    /// The lower median over records of the baseline's median time.
    pub ms: f64,
    /// How many records timed the library on this workload.
    pub records: usize,
    /// The record whose baseline median it is (an index into `SiteInput::records`).
    pub record: usize,
    /// What the library is, as that record names it: its label, else provider and version
    /// (`cuBLASLt 130100`; never the library's file path).
    pub library: String,
}

/// The best correct record of a kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Best {
    /// An index into `SiteInput::records`.
    pub record: usize,
    pub entry: String,
    pub speedup: f64,
    /// 95% interval of the speedup, where the record has one (per workload: its own; over the
    /// workloads: only when every workload has one, as for the leaderboard's column).
    pub ci95: Option<[f64; 2]>,
    /// The candidate's median time (per workload only).
    pub ms: Option<f64>,
}

/// Ceilings of every (arch, task, GPU) with a measured record, sorted by that key.
#[derive(Debug, Clone, Default)]
pub struct Ceilings {
    pub tasks: Vec<TaskCeiling>,
}

impl Ceilings {
    /// The ceilings of `task` on `arch` (one per GPU).
    pub fn of<'c>(&'c self, arch: &'c str, task: &'c str) -> impl Iterator<Item = &'c TaskCeiling> {
        self.tasks
            .iter()
            .filter(move |c| c.arch == arch && c.task == task)
    }

    /// The ceilings on `arch`, by task then GPU.
    pub fn on<'c>(&'c self, arch: &'c str) -> impl Iterator<Item = &'c TaskCeiling> {
        self.tasks.iter().filter(move |c| c.arch == arch)
    }
}

/// Replaces `slot` when `candidate` is better: a larger speedup, then the smaller digest.
fn keep_best(slot: &mut Option<(Best, Digest)>, candidate: Best, digest: Digest) {
    let better = match slot {
        None => true,
        Some((b, d)) => match candidate.speedup.total_cmp(&b.speedup) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Equal => digest < *d,
            std::cmp::Ordering::Less => false,
        },
    };
    if better {
        *slot = Some((candidate, digest));
    }
}

#[derive(Default)]
struct WorkloadAcc {
    baselines: Vec<(f64, Digest, usize)>,
    reference: Option<(Best, Digest)>,
    model: Option<(Best, Digest)>,
}

#[derive(Default)]
struct TaskAcc {
    workloads: BTreeMap<String, WorkloadAcc>,
    reference: Option<(Best, Digest)>,
    model: Option<(Best, Digest)>,
}

/// Computes the ceilings of `records` (entries' kinds from `entries`; an entry not there
/// counts as a reference, as [`EntryKind`] defaults).
pub fn ceilings(
    records: &[LoadedRecord],
    suite: &Suite,
    flops: &FlopTable,
    entries: &BTreeMap<String, EntryInfo>,
) -> Ceilings {
    let mut acc: BTreeMap<(String, String, String), TaskAcc> = BTreeMap::new();
    for (i, r) in records.iter().enumerate() {
        let rec = &r.record;
        if rec.is_harness_test() {
            continue;
        }
        let task = suite.get(&rec.task);
        let rates: Vec<_> = workload_rates(rec, flops)
            .into_iter()
            .filter(|w| {
                task.and_then(|t| t.workload(&w.workload))
                    .is_none_or(|wl| wl.kind == WorkloadKind::Performance)
            })
            .collect();
        if rates.is_empty() {
            continue;
        }
        let gpu = rec.gpu_name().unwrap_or_default().to_string();
        let t = acc
            .entry((rec.arch.to_string(), rec.task.clone(), gpu))
            .or_default();
        let kind = entries
            .get(&rec.entry)
            .map_or(EntryKind::Reference, |e| e.kind);
        let correct = rec.is_correct();
        for w in &rates {
            let timing = rec
                .outcome
                .workloads
                .iter()
                .find(|x| x.workload == w.workload)
                .and_then(|x| x.timing.as_ref());
            let wa = t.workloads.entry(w.workload.clone()).or_default();
            if let Some(b) = timing.and_then(|t| t.baseline.as_ref())
                && b.median_ms.is_finite()
                && b.median_ms > 0.0
            {
                wa.baselines.push((b.median_ms, r.digest, i));
            }
            if let (true, Some(s)) = (correct, w.speedup) {
                let best = Best {
                    record: i,
                    entry: rec.entry.clone(),
                    speedup: s,
                    ci95: w.speedup_ci95,
                    ms: timing.map(|t| t.candidate.median_ms),
                };
                let slot = match kind {
                    EntryKind::Model | EntryKind::Ablation => &mut wa.model,
                    EntryKind::Reference | EntryKind::EngineCheck => &mut wa.reference,
                };
                keep_best(slot, best, r.digest);
            }
        }
        let speedups: Vec<f64> = rates.iter().filter_map(|w| w.speedup).collect();
        let min = speedups.iter().copied().min_by(f64::total_cmp);
        if let (true, Some(min)) = (correct, min) {
            let ci = (speedups.len() == rates.len())
                .then(|| {
                    rates
                        .iter()
                        .map(|w| w.speedup_ci95)
                        .collect::<Option<Vec<_>>>()
                })
                .flatten()
                .and_then(|cis| {
                    let lo = cis.iter().map(|c| c[0]).min_by(f64::total_cmp)?;
                    let hi = cis.iter().map(|c| c[1]).min_by(f64::total_cmp)?;
                    Some([lo, hi])
                });
            let best = Best {
                record: i,
                entry: rec.entry.clone(),
                speedup: min,
                ci95: ci,
                ms: None,
            };
            let slot = match kind {
                EntryKind::Model | EntryKind::Ablation => &mut t.model,
                EntryKind::Reference | EntryKind::EngineCheck => &mut t.reference,
            };
            keep_best(slot, best, r.digest);
        }
    }
    let tasks = acc
        .into_iter()
        .map(|((arch, task, gpu), t)| {
            let order = |w: &str| {
                suite
                    .get(&task)
                    .and_then(|x| x.workloads.iter().position(|wl| wl.name == w))
                    .unwrap_or(usize::MAX)
            };
            let mut workloads: Vec<WorkloadCeiling> = t
                .workloads
                .into_iter()
                .map(|(name, mut w)| {
                    w.baselines
                        .sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                    let library = (!w.baselines.is_empty()).then(|| {
                        let (ms, _, record) = w.baselines[(w.baselines.len() - 1) / 2];
                        let library = records[record]
                            .record
                            .outcome
                            .baseline
                            .as_ref()
                            .map(|b| {
                                b.label
                                    .clone()
                                    .unwrap_or_else(|| format!("{} {}", b.provider, b.version))
                            })
                            .unwrap_or_default();
                        LibraryTime {
                            ms,
                            records: w.baselines.len(),
                            record,
                            library,
                        }
                    });
                    WorkloadCeiling {
                        flops: flops.get(&task, &name),
                        workload: name,
                        library,
                        reference: w.reference.map(|b| b.0),
                        model: w.model.map(|b| b.0),
                    }
                })
                .collect();
            workloads.sort_by(|a, b| {
                order(&a.workload)
                    .cmp(&order(&b.workload))
                    .then(a.workload.cmp(&b.workload))
            });
            TaskCeiling {
                arch,
                gpu,
                task,
                workloads,
                reference: t.reference.map(|b| b.0),
                model: t.model.map(|b| b.0),
            }
        })
        .collect();
    Ceilings { tasks }
}

impl TaskCeiling {
    /// The headline workload: the one with the most FLOPs (then the last in task order).
    pub fn headline(&self) -> Option<&WorkloadCeiling> {
        self.workloads
            .iter()
            .filter(|w| w.library.is_some())
            .max_by(|a, b| a.flops.unwrap_or(0.0).total_cmp(&b.flops.unwrap_or(0.0)))
    }
}
