//! Samples: the unit every metric counts. One sample is one evaluated candidate, i.e. one turn
//! of one trajectory, measured here or reported by someone else.

use polars::prelude::*;

pub use crate::record::provenance::Provenance;

/// One evaluated candidate.
///
/// Invariants (kept by [`Sample::new`]'s callers through [`Samples::push`]): speedups and the
/// peak fraction are present only on correct samples, and are finite and positive;
/// `speedup_min <= speedup_best`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub provenance: Provenance,
    /// The model or entry name.
    pub entry: String,
    /// `sm_90a`, `sm_100a`.
    pub arch: String,
    /// The GPU the sample was measured on: the device name its record holds (`NVIDIA H200`),
    /// or for reported data the GPU the source declares (`H100`); empty: not recorded. Part of
    /// every key, so speedups measured on two GPUs are never pooled.
    pub gpu: String,
    pub task: String,
    /// Names the trajectory within (provenance, entry, arch, GPU, task): turns of one trajectory
    /// share it.
    pub trajectory: String,
    /// 0-based turn within the trajectory (a record without turns is turn 0).
    pub turn: u32,
    pub correct: bool,
    /// Correct and the target instructions were shown to execute; `None`: not measured.
    pub correct_with_arch: Option<bool>,
    /// The stricter grade: correct with arch and at least
    /// [`crate::record::ON_TARGET_MMA_SHARE`] of the FLOPs on the target MMA; `None`: not
    /// measured (always for reported data).
    pub correct_on_target: Option<bool>,
    /// Executed target-MMA FLOPs over the task's FLOPs (kept on correct samples only).
    pub mma_flop_share: Option<f64>,
    /// 95% interval of `speedup_min`: the smallest lower and the smallest upper bound over the
    /// workloads (kept with `speedup_min` only).
    pub speedup_min_ci95: Option<[f64; 2]>,
    /// The smallest speedup over the performance workloads.
    pub speedup_min: Option<f64>,
    /// The largest speedup over the performance workloads.
    pub speedup_best: Option<f64>,
    /// 95% interval of `speedup_best`: the largest lower and the largest upper bound over the
    /// workloads (kept with `speedup_best` only).
    pub speedup_best_ci95: Option<[f64; 2]>,
    /// The best fraction of the measured peak over the performance workloads.
    pub peak_fraction: Option<f64>,
    /// The speedups are over a composed baseline (library products and harness kernels where
    /// no library has the op), not over a library's own kernel: they are reported per task and
    /// never pooled with library speedups.
    pub composed_baseline: bool,
}

/// Text values of one key column, interned: each distinct value gets a code.
#[derive(Debug, Default)]
struct Interner {
    codes: std::collections::HashMap<String, u32>,
    values: Vec<String>,
}

impl Interner {
    fn code(&mut self, value: String) -> u32 {
        if let Some(c) = self.codes.get(&value) {
            return *c;
        }
        let c = u32::try_from(self.values.len()).expect("fewer than 2^32 distinct keys");
        self.codes.insert(value.clone(), c);
        self.values.push(value);
        c
    }

    /// The values sorted, and for each code of insertion order its rank among them: the
    /// frame holds ranks, so ordering by a key column orders by its text.
    fn sorted(self) -> (Vec<String>, Vec<u32>) {
        let mut order: Vec<u32> = (0..self.values.len() as u32).collect();
        order.sort_by(|a, b| self.values[*a as usize].cmp(&self.values[*b as usize]));
        let mut rank = vec![0u32; order.len()];
        for (r, c) in order.iter().enumerate() {
            rank[*c as usize] = r as u32;
        }
        let mut values = self.values;
        let sorted = order
            .iter()
            .map(|c| std::mem::take(&mut values[*c as usize]))
            .collect();
        (sorted, rank)
    }
}

/// The text behind the key codes of a samples frame: code `i` of a column is its `i`-th
/// value in sorted order.
#[derive(Debug, Default, Clone)]
pub struct Keys {
    pub entry: Vec<String>,
    pub arch: Vec<String>,
    pub gpu: Vec<String>,
    pub task: Vec<String>,
    pub trajectory: Vec<String>,
}

/// Samples in columns, ready for a Polars frame. Text keys are interned into `u32` codes in
/// sorted order (grouping and sorting on integers is several times faster than on strings,
/// and the order is the same). Pushing enforces [`Sample`]'s invariants by dropping speedups
/// of incorrect samples and non-finite or non-positive values.
#[derive(Debug, Default)]
pub struct Samples {
    provenance: Vec<u32>,
    entry: Vec<u32>,
    arch: Vec<u32>,
    gpu: Vec<u32>,
    task: Vec<u32>,
    trajectory: Vec<u32>,
    entries: Interner,
    archs: Interner,
    gpus: Interner,
    tasks: Interner,
    trajectories: Interner,
    turn: Vec<u32>,
    correct: Vec<bool>,
    correct_with_arch: Vec<Option<bool>>,
    correct_on_target: Vec<Option<bool>>,
    mma_flop_share: Vec<Option<f64>>,
    speedup_min_lo: Vec<Option<f64>>,
    speedup_min_hi: Vec<Option<f64>>,
    speedup_min: Vec<Option<f64>>,
    speedup_best: Vec<Option<f64>>,
    speedup_best_lo: Vec<Option<f64>>,
    speedup_best_hi: Vec<Option<f64>>,
    ln_speedup_min: Vec<Option<f64>>,
    peak_fraction: Vec<Option<f64>>,
    composed: Vec<bool>,
}

fn positive(x: Option<f64>) -> Option<f64> {
    x.filter(|v| v.is_finite() && *v > 0.0)
}

/// The code of a provenance in a samples frame (the order of [`Provenance`]).
pub fn provenance_code(p: Provenance) -> u32 {
    match p {
        Provenance::Measured => 0,
        Provenance::Reported => 1,
    }
}

pub fn provenance_of_code(c: u32) -> Option<Provenance> {
    match c {
        0 => Some(Provenance::Measured),
        1 => Some(Provenance::Reported),
        _ => None,
    }
}

impl Samples {
    pub fn with_capacity(n: usize) -> Samples {
        Samples {
            provenance: Vec::with_capacity(n),
            entry: Vec::with_capacity(n),
            arch: Vec::with_capacity(n),
            gpu: Vec::with_capacity(n),
            task: Vec::with_capacity(n),
            trajectory: Vec::with_capacity(n),
            turn: Vec::with_capacity(n),
            correct: Vec::with_capacity(n),
            correct_with_arch: Vec::with_capacity(n),
            correct_on_target: Vec::with_capacity(n),
            mma_flop_share: Vec::with_capacity(n),
            speedup_min_lo: Vec::with_capacity(n),
            speedup_min_hi: Vec::with_capacity(n),
            speedup_min: Vec::with_capacity(n),
            speedup_best: Vec::with_capacity(n),
            speedup_best_lo: Vec::with_capacity(n),
            speedup_best_hi: Vec::with_capacity(n),
            ln_speedup_min: Vec::with_capacity(n),
            peak_fraction: Vec::with_capacity(n),
            composed: Vec::with_capacity(n),
            ..Samples::default()
        }
    }

    pub fn len(&self) -> usize {
        self.turn.len()
    }

    pub fn is_empty(&self) -> bool {
        self.turn.is_empty()
    }

    pub fn push(&mut self, s: Sample) {
        let keep = |x: Option<f64>| if s.correct { positive(x) } else { None };
        let mut min = keep(s.speedup_min);
        let mut best = keep(s.speedup_best);
        // An interval bounds the value it came with: none where the value was made up here.
        let mut best_measured = best.is_some();
        match (min, best) {
            (Some(a), None) => best = Some(a),
            (None, Some(b)) => min = Some(b),
            (Some(a), Some(b)) if a > b => {
                (min, best) = (Some(b), Some(a));
                best_measured = false;
            }
            _ => {}
        }
        self.provenance.push(provenance_code(s.provenance));
        self.entry.push(self.entries.code(s.entry));
        self.arch.push(self.archs.code(s.arch));
        self.gpu.push(self.gpus.code(s.gpu));
        self.task.push(self.tasks.code(s.task));
        self.trajectory.push(self.trajectories.code(s.trajectory));
        self.turn.push(s.turn);
        self.correct.push(s.correct);
        self.correct_with_arch
            .push(s.correct_with_arch.map(|a| a && s.correct));
        self.correct_on_target
            .push(s.correct_on_target.map(|a| a && s.correct));
        self.mma_flop_share.push(
            s.mma_flop_share
                .filter(|x| s.correct && x.is_finite() && *x >= 0.0),
        );
        // The interval goes with the speedup it bounds (dropped when the speedup was).
        let ci = s
            .speedup_min_ci95
            .filter(|[lo, hi]| min.is_some() && lo.is_finite() && hi.is_finite() && lo <= hi);
        self.speedup_min_lo.push(ci.map(|c| c[0]));
        self.speedup_min_hi.push(ci.map(|c| c[1]));
        self.speedup_min.push(min);
        self.speedup_best.push(best);
        let best_ci = s
            .speedup_best_ci95
            .filter(|[lo, hi]| best_measured && lo.is_finite() && hi.is_finite() && lo <= hi);
        self.speedup_best_lo.push(best_ci.map(|c| c[0]));
        self.speedup_best_hi.push(best_ci.map(|c| c[1]));
        self.ln_speedup_min.push(min.map(f64::ln));
        self.peak_fraction.push(keep(s.peak_fraction));
        self.composed.push(s.composed_baseline);
    }

    pub fn extend(&mut self, samples: impl IntoIterator<Item = Sample>) {
        for s in samples {
            self.push(s);
        }
    }

    /// The samples as a frame with columns `provenance, entry, arch, gpu, task, trajectory` (codes,
    /// see [`Keys`]), `turn, correct, correct_with_arch, speedup_min, speedup_best,
    /// ln_speedup_min, peak_fraction, composed`; and the text of the codes.
    pub fn into_frame(self) -> PolarsResult<(DataFrame, Keys)> {
        let height = self.len();
        let recode = |codes: Vec<u32>, interner: Interner| -> (Vec<u32>, Vec<String>) {
            let (values, rank) = interner.sorted();
            (
                codes.into_iter().map(|c| rank[c as usize]).collect(),
                values,
            )
        };
        let (entry, entries) = recode(self.entry, self.entries);
        let (arch, archs) = recode(self.arch, self.archs);
        let (gpu, gpus) = recode(self.gpu, self.gpus);
        let (task, tasks) = recode(self.task, self.tasks);
        let (trajectory, trajectories) = recode(self.trajectory, self.trajectories);
        let frame = DataFrame::new(
            height,
            vec![
                Column::new("provenance".into(), self.provenance),
                Column::new("entry".into(), entry),
                Column::new("arch".into(), arch),
                Column::new("gpu".into(), gpu),
                Column::new("task".into(), task),
                Column::new("trajectory".into(), trajectory),
                Column::new("turn".into(), self.turn),
                Column::new("correct".into(), self.correct),
                Column::new("correct_with_arch".into(), self.correct_with_arch),
                Column::new("correct_on_target".into(), self.correct_on_target),
                Column::new("mma_flop_share".into(), self.mma_flop_share),
                Column::new("speedup_min".into(), self.speedup_min),
                Column::new("speedup_min_lo".into(), self.speedup_min_lo),
                Column::new("speedup_min_hi".into(), self.speedup_min_hi),
                Column::new("speedup_best".into(), self.speedup_best),
                Column::new("speedup_best_lo".into(), self.speedup_best_lo),
                Column::new("speedup_best_hi".into(), self.speedup_best_hi),
                Column::new("ln_speedup_min".into(), self.ln_speedup_min),
                Column::new("peak_fraction".into(), self.peak_fraction),
                Column::new("composed".into(), self.composed),
            ],
        )?;
        Ok((
            frame,
            Keys {
                entry: entries,
                arch: archs,
                gpu: gpus,
                task: tasks,
                trajectory: trajectories,
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interned_codes_follow_text_order() {
        let mut i = Interner::default();
        let codes: Vec<u32> = ["b", "a", "c", "a"]
            .iter()
            .map(|s| i.code(s.to_string()))
            .collect();
        assert_eq!(codes, [0, 1, 2, 1]);
        let (values, rank) = i.sorted();
        assert_eq!(values, ["a", "b", "c"]);
        assert_eq!(
            codes.iter().map(|c| rank[*c as usize]).collect::<Vec<_>>(),
            [1, 0, 2, 0]
        );
    }
}
