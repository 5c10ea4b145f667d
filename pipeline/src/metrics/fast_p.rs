//! The fast_p curve (as KernelBench and FlashInfer-Bench draw it): for each p, the fraction of
//! trajectories that are correct and whose speedup (the smallest over the workloads) exceeds
//! p, at the largest turn limit. Like [`super::OverallMetrics::fast`] it is a macro average
//! over the entry's tasks timed against a library (a task with a composed baseline is left
//! out), so at every p of [`super::FAST_P`] the curve equals that column.

use std::collections::BTreeMap;

use super::{Provenance, SpeedupPoint, TURN_LIMITS, TaskMetrics};

/// One entry's fast_p curve on one architecture and GPU: `points[i]` is fast_p at `ps[i]`.
#[derive(Debug, Clone, PartialEq)]
pub struct FastCurve {
    pub provenance: Provenance,
    pub entry: String,
    pub arch: String,
    /// The GPU of its rows (empty: not recorded).
    pub gpu: String,
    /// Tasks averaged over.
    pub tasks: usize,
    pub points: Vec<(f64, f64)>,
}

/// The values of p a curve is drawn at: `0, step, 2·step, …, max` (computed from the index,
/// so no rounding error accumulates).
pub fn p_grid(max: f64, steps: u32) -> Vec<f64> {
    (0..=steps)
        .map(|i| max * f64::from(i) / f64::from(steps))
        .collect()
}

/// The fast_p curve of every (provenance, entry, GPU) on `arch`, in key order, at each p of
/// `ps`.
/// p = 0 counts every correct trajectory (timed or not), as `fast_0.0` does.
pub fn fast_p_curves(
    tasks: &[TaskMetrics],
    speedups: &[SpeedupPoint],
    arch: &str,
    ps: &[f64],
) -> Vec<FastCurve> {
    let limit = TURN_LIMITS[TURN_LIMITS.len() - 1];
    // (provenance, entry, GPU) → task → (trajectories, correct, sorted speedups)
    type PerTask<'a> = BTreeMap<&'a str, (u32, u32, Vec<f64>)>;
    let mut groups: BTreeMap<(Provenance, &str, &str), PerTask<'_>> = BTreeMap::new();
    for t in tasks.iter().filter(|t| {
        t.arch == arch && t.turn_limit == limit && t.trajectories > 0 && !t.composed_baseline
    }) {
        groups
            .entry((t.provenance, t.entry.as_str(), t.gpu.as_str()))
            .or_default()
            .insert(t.task.as_str(), (t.trajectories, t.correct, Vec::new()));
    }
    for s in speedups
        .iter()
        .filter(|s| s.arch == arch && s.turn_limit == limit)
    {
        if let Some((_, _, v)) = groups
            .get_mut(&(s.provenance, s.entry.as_str(), s.gpu.as_str()))
            .and_then(|g| g.get_mut(s.task.as_str()))
        {
            v.push(s.speedup);
        }
    }
    groups
        .into_iter()
        .map(|((provenance, entry, gpu), mut per_task)| {
            for (_, _, v) in per_task.values_mut() {
                v.sort_by(f64::total_cmp);
            }
            let n = per_task.len();
            let points = ps
                .iter()
                .map(|&p| {
                    let sum: f64 = per_task
                        .values()
                        .map(|(trajectories, correct, v)| {
                            let hits = if p == 0.0 {
                                *correct as usize
                            } else {
                                v.len() - v.partition_point(|s| *s <= p)
                            };
                            hits as f64 / f64::from(*trajectories)
                        })
                        .sum();
                    (p, sum / n as f64)
                })
                .collect();
            FastCurve {
                provenance,
                entry: entry.to_string(),
                arch: arch.to_string(),
                gpu: gpu.to_string(),
                tasks: n,
                points,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{FAST_P, Sample, Samples, compute};

    fn sample(task: &str, traj: &str, turn: u32, speedup: Option<f64>) -> Sample {
        Sample {
            provenance: Provenance::Measured,
            entry: "m".into(),
            arch: "sm_90a".into(),
            gpu: "NVIDIA H200".into(),
            task: task.into(),
            trajectory: traj.into(),
            turn,
            correct: speedup.is_some(),
            correct_with_arch: None,
            correct_on_target: None,
            mma_flop_share: None,
            speedup_min_ci95: None,
            speedup_best_ci95: None,
            speedup_min: speedup,
            speedup_best: speedup,
            peak_fraction: None,
            composed_baseline: false,
        }
    }

    #[test]
    fn the_curve_agrees_with_the_fast_columns() {
        let mut s = Samples::default();
        s.extend([
            sample("a", "1", 0, Some(0.7)),
            sample("a", "2", 0, None),
            sample("a", "2", 1, Some(1.2)),
            sample("a", "3", 0, None),
            sample("b", "1", 0, Some(2.5)),
            sample("b", "2", 0, Some(1.0)),
        ]);
        let m = compute(s).expect("computes");
        let curves = fast_p_curves(&m.tasks, &m.speedups, "sm_90a", &FAST_P);
        assert_eq!(curves.len(), 1);
        let limit = TURN_LIMITS[TURN_LIMITS.len() - 1];
        let overall = m
            .overall
            .iter()
            .find(|o| o.turn_limit == limit)
            .expect("overall row");
        for (i, (p, v)) in curves[0].points.iter().enumerate() {
            assert_eq!(*p, FAST_P[i]);
            assert!(
                (v - overall.fast[i]).abs() < 1e-12,
                "p = {p}: {v} vs {}",
                overall.fast[i]
            );
        }
        // p = 1.0: task a 1/3 (1.2), task b 1/2 (2.5; 1.0 is not faster).
        assert!((curves[0].points[3].1 - (1.0 / 3.0 + 0.5) / 2.0).abs() < 1e-12);
    }

    #[test]
    fn the_grid_ends_on_its_maximum() {
        let g = p_grid(2.0, 100);
        assert_eq!(g.len(), 101);
        assert_eq!(g[0], 0.0);
        assert_eq!(g[50], 1.0);
        assert_eq!(g[100], 2.0);
    }
}
