//! The aggregation: samples → trajectories → per-task metrics → per-entry metrics, for each
//! turn limit, as Polars lazy queries. Results are sorted by their keys, so the same samples
//! always give the same metrics in the same order.

use polars::prelude::*;

use super::estimator::{geometric_mean_from_logs, pass_at_k};
use super::sample::{Keys, Provenance, Samples, provenance_of_code};
use super::{FAST_P, MetricsError, PASS_K, TURN_LIMITS};

/// Metrics of one (provenance, entry, arch, GPU, task) at one turn limit.
///
/// A trajectory counts as correct when any of its turns below the limit is correct; its
/// speedup is the best over those correct turns.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskMetrics {
    pub provenance: Provenance,
    pub entry: String,
    pub arch: String,
    /// The GPU of its samples ([`super::Sample::gpu`]; empty: not recorded).
    pub gpu: String,
    pub task: String,
    pub turn_limit: u32,
    pub trajectories: u32,
    pub correct: u32,
    /// Trajectories correct with the target instructions shown to execute; `None` when no
    /// trajectory of the group had that evidence measured.
    pub correct_with_arch: Option<u32>,
    /// Trajectories correct on target (the stricter grade: correct with arch and at least
    /// [`crate::record::ON_TARGET_MMA_SHARE`] of the FLOPs on the target MMA); `None` when no
    /// trajectory of the group had it measured.
    pub correct_on_target: Option<u32>,
    /// Mean over correct trajectories (with it measured) of their best executed-MMA FLOP share.
    pub mma_flop_share: Option<f64>,
    /// The most turns any trajectory of the group used (at most the limit).
    pub turns_seen: u32,
    /// Best speedup over correct trajectories, on their best workload.
    pub best_speedup: Option<f64>,
    /// Best over correct trajectories of the smallest speedup over the workloads.
    pub min_speedup: Option<f64>,
    /// 95% interval of `min_speedup` (of the trajectory that has it), where measured.
    pub min_speedup_ci95: Option<[f64; 2]>,
    /// 95% interval of `best_speedup` (of the trajectory that has it), where measured.
    pub best_speedup_ci95: Option<[f64; 2]>,
    /// Geometric mean of the trajectories' speedups (smallest over the workloads), over the
    /// correct trajectories that have one.
    pub geomean_speedup: Option<f64>,
    /// Correct trajectories that have a speedup.
    pub timed: u32,
    /// For each p of [`FAST_P`], trajectories correct and faster than p times the library.
    pub fast: [u32; FAST_P.len()],
    /// Best fraction of the measured peak over correct trajectories.
    pub peak_fraction: Option<f64>,
    /// Sum of the logarithms behind `geomean_speedup` (for pooling).
    pub ln_speedup_sum: f64,
    /// The task's speedups are over a composed baseline (no library has the op): shown here,
    /// left out of every speedup pooled over tasks ([`OverallMetrics`]).
    pub composed_baseline: bool,
}

impl TaskMetrics {
    pub fn correctness_rate(&self) -> f64 {
        ratio(self.correct, self.trajectories)
    }

    pub fn correct_with_arch_rate(&self) -> Option<f64> {
        self.correct_with_arch.map(|c| ratio(c, self.trajectories))
    }

    pub fn correct_on_target_rate(&self) -> Option<f64> {
        self.correct_on_target.map(|c| ratio(c, self.trajectories))
    }

    /// fast_p as a fraction of all trajectories, for each p of [`FAST_P`].
    pub fn fast_rates(&self) -> [f64; FAST_P.len()] {
        self.fast.map(|f| ratio(f, self.trajectories))
    }

    /// pass@k for each k of [`PASS_K`] (`None` where k exceeds the trajectories).
    pub fn pass_at(&self) -> [Option<f64>; PASS_K.len()] {
        PASS_K.map(|k| pass_at_k(self.trajectories, self.correct, k))
    }
}

/// Metrics of one (provenance, entry, arch, GPU) over all its tasks at one turn limit. Rates are
/// macro averages over tasks (each task weighs the same); speedup maxima are over tasks; the
/// geometric mean pools every timed correct trajectory. The speedup metrics (best, min and
/// their interval, the geometric mean, fast_p) are over the tasks timed against a library's own
/// kernel: a task whose baseline is composed ([`TaskMetrics::composed_baseline`]) counts in the
/// rates and the task counts, never in a pooled speedup.
#[derive(Debug, Clone, PartialEq)]
pub struct OverallMetrics {
    pub provenance: Provenance,
    pub entry: String,
    pub arch: String,
    /// The GPU of its tasks' samples (empty: not recorded).
    pub gpu: String,
    pub turn_limit: u32,
    pub tasks: u32,
    /// Tasks with at least one correct trajectory.
    pub tasks_solved: u32,
    pub trajectories: u32,
    pub correct: u32,
    pub correctness_rate: f64,
    /// Mean over the tasks where it was measured; `None` when it was measured for none.
    pub correct_with_arch_rate: Option<f64>,
    /// Mean over the tasks where it was measured; `None` when it was measured for none.
    pub correct_on_target_rate: Option<f64>,
    /// Mean over tasks of the per-task MMA FLOP share, where measured.
    pub mma_flop_share: Option<f64>,
    pub pass_at: [Option<f64>; PASS_K.len()],
    pub fast: [f64; FAST_P.len()],
    pub best_speedup: Option<f64>,
    pub min_speedup: Option<f64>,
    /// 95% interval of `min_speedup`, where measured.
    pub min_speedup_ci95: Option<[f64; 2]>,
    /// The task `min_speedup` was reached on (the first in task order on a tie).
    pub min_speedup_task: Option<String>,
    pub geomean_speedup: Option<f64>,
    pub peak_fraction: Option<f64>,
    pub turns_seen: u32,
    /// Tasks whose speedups were left out of the speedup metrics (a composed baseline).
    pub composed_tasks: u32,
}

/// One correct, timed trajectory's speedup at the largest turn limit (for distributions).
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedupPoint {
    pub provenance: Provenance,
    pub entry: String,
    pub arch: String,
    pub gpu: String,
    pub task: String,
    pub turn_limit: u32,
    /// Smallest over the workloads.
    pub speedup: f64,
}

/// Everything the leaderboard shows, computed once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    /// Sorted by (provenance, entry, arch, GPU, task, turn limit).
    pub tasks: Vec<TaskMetrics>,
    /// Sorted by (provenance, entry, arch, GPU, turn limit).
    pub overall: Vec<OverallMetrics>,
    /// At the largest turn limit, sorted by (provenance, entry, arch, GPU, task, speedup).
    pub speedups: Vec<SpeedupPoint>,
}

fn ratio(a: u32, b: u32) -> f64 {
    if b == 0 {
        0.0
    } else {
        f64::from(a) / f64::from(b)
    }
}

/// What a per-task row is: the GPU is part of it, so no metric pools speedups measured on two
/// GPUs.
const TASK_KEYS: [&str; 6] = ["provenance", "entry", "arch", "gpu", "task", "turn_limit"];

fn cols(names: &[&str]) -> Vec<Expr> {
    names.iter().map(|n| col(*n)).collect()
}

fn fast_name(i: usize) -> String {
    format!("fast_{i}")
}

/// In a group, `name` of the row with the largest `speedup_min` (the largest such value on a
/// tie, so the result does not depend on row order).
fn at_best_min(name: &str) -> Expr {
    at_largest(name, "speedup_min")
}

/// In a group, `name` of the row with the largest `key` (the largest such value on a tie).
fn at_largest(name: &str, key: &str) -> Expr {
    col(name)
        .filter(col(key).eq(col(key).max()))
        .max()
        .alias(name)
}

/// One row per trajectory at turn limit `limit`: correct if any turn below it is.
fn trajectories(samples: LazyFrame, limit: u32) -> LazyFrame {
    samples
        .filter(col("turn").lt(lit(limit)))
        .group_by(cols(&[
            "provenance",
            "entry",
            "arch",
            "gpu",
            "task",
            "trajectory",
        ]))
        .agg([
            col("correct").any(true).alias("correct"),
            col("correct_with_arch")
                .cast(DataType::UInt32)
                .max()
                .alias("correct_with_arch"),
            col("correct_on_target")
                .cast(DataType::UInt32)
                .max()
                .alias("correct_on_target"),
            col("mma_flop_share").max().alias("mma_flop_share"),
            at_best_min("speedup_min_lo"),
            at_best_min("speedup_min_hi"),
            at_largest("speedup_best_lo", "speedup_best"),
            at_largest("speedup_best_hi", "speedup_best"),
            col("speedup_min").max().alias("speedup_min"),
            col("speedup_best").max().alias("speedup_best"),
            col("ln_speedup_min").max().alias("ln_speedup_min"),
            col("peak_fraction").max().alias("peak_fraction"),
            col("turn").max().alias("last_turn"),
            col("composed").any(true).alias("composed"),
        ])
        .with_column(lit(limit).cast(DataType::UInt32).alias("turn_limit"))
}

/// Computes every metric from `samples`.
pub fn compute(samples: Samples) -> Result<Metrics, MetricsError> {
    let (frame, keys) = samples.into_frame()?;
    if frame.height() == 0 {
        return Ok(Metrics::default());
    }
    let lazy = frame.lazy();
    let per_limit: Vec<LazyFrame> = TURN_LIMITS
        .iter()
        .map(|&l| trajectories(lazy.clone(), l))
        .collect();
    // Sorted, so every later sum sees its values in one order: float sums are not
    // associative, and the group-by's own output order varies from run to run.
    let trajectories = concat(per_limit, UnionArgs::default())?
        .sort(
            [
                "provenance",
                "entry",
                "arch",
                "gpu",
                "task",
                "turn_limit",
                "trajectory",
            ],
            SortMultipleOptions::default(),
        )
        .collect()?;

    let mut aggs = vec![
        len().cast(DataType::UInt32).alias("trajectories"),
        col("correct")
            .cast(DataType::UInt32)
            .sum()
            .cast(DataType::UInt32)
            .alias("correct"),
        col("correct_with_arch")
            .count()
            .cast(DataType::UInt32)
            .alias("arch_measured"),
        col("correct_with_arch")
            .sum()
            .cast(DataType::UInt32)
            .alias("correct_with_arch"),
        col("correct_on_target")
            .count()
            .cast(DataType::UInt32)
            .alias("target_measured"),
        col("correct_on_target")
            .sum()
            .cast(DataType::UInt32)
            .alias("correct_on_target"),
        col("mma_flop_share")
            .filter(col("correct"))
            .sort(SortOptions::default())
            .mean()
            .alias("mma_flop_share"),
        at_best_min("speedup_min_lo"),
        at_best_min("speedup_min_hi"),
        at_largest("speedup_best_lo", "speedup_best"),
        at_largest("speedup_best_hi", "speedup_best"),
        (col("last_turn").max().cast(DataType::UInt32) + lit(1u32)).alias("turns_seen"),
        col("speedup_best").max().alias("best_speedup"),
        col("speedup_min").max().alias("min_speedup"),
        col("ln_speedup_min")
            .sort(SortOptions::default())
            .sum()
            .alias("ln_sum"),
        col("ln_speedup_min")
            .count()
            .cast(DataType::UInt32)
            .alias("timed"),
        col("peak_fraction").max().alias("peak_fraction"),
        col("composed").any(true).alias("composed"),
    ];
    for (i, p) in FAST_P.iter().enumerate() {
        let fast = if *p == 0.0 {
            col("correct")
        } else {
            col("correct").and(col("speedup_min").gt(lit(*p)).fill_null(lit(false)))
        };
        aggs.push(
            fast.cast(DataType::UInt32)
                .sum()
                .cast(DataType::UInt32)
                .alias(fast_name(i)),
        );
    }
    let per_task = trajectories
        .clone()
        .lazy()
        .group_by(cols(&TASK_KEYS))
        .agg(aggs)
        .sort(TASK_KEYS, SortMultipleOptions::default())
        .collect()?;
    let tasks = task_rows(&per_task, &keys)?;
    let overall = overall(&tasks)?;
    let speedups = speedup_points(trajectories, &keys)?;
    Ok(Metrics {
        tasks,
        overall,
        speedups,
    })
}

fn str_col<'a>(df: &'a DataFrame, name: &str) -> PolarsResult<&'a StringChunked> {
    df.column(name)?.str()
}

fn u32_col<'a>(df: &'a DataFrame, name: &str) -> PolarsResult<&'a UInt32Chunked> {
    df.column(name)?.u32()
}

fn f64_col<'a>(df: &'a DataFrame, name: &str) -> PolarsResult<&'a Float64Chunked> {
    df.column(name)?.f64()
}

fn provenance_at(c: &StringChunked, i: usize) -> Result<Provenance, MetricsError> {
    let s = c.get(i).unwrap_or_default();
    Provenance::parse(s).ok_or_else(|| MetricsError::Internal(format!("provenance `{s}`")))
}

fn provenance_of(c: &UInt32Chunked, i: usize) -> Result<Provenance, MetricsError> {
    let code = c.get(i).unwrap_or(u32::MAX);
    provenance_of_code(code)
        .ok_or_else(|| MetricsError::Internal(format!("provenance code {code}")))
}

/// The text of key code `i` of column `c`.
fn key_at(values: &[String], c: &UInt32Chunked, i: usize) -> Result<String, MetricsError> {
    let code = c.get(i).unwrap_or(u32::MAX);
    values
        .get(code as usize)
        .cloned()
        .ok_or_else(|| MetricsError::Internal(format!("key code {code}")))
}

fn text_at(c: &StringChunked, i: usize) -> String {
    c.get(i).unwrap_or_default().to_string()
}

fn task_rows(df: &DataFrame, keys: &Keys) -> Result<Vec<TaskMetrics>, MetricsError> {
    let provenance = u32_col(df, "provenance")?;
    let entry = u32_col(df, "entry")?;
    let arch = u32_col(df, "arch")?;
    let gpu = u32_col(df, "gpu")?;
    let task = u32_col(df, "task")?;
    let limit = u32_col(df, "turn_limit")?;
    let n = u32_col(df, "trajectories")?;
    let correct = u32_col(df, "correct")?;
    let arch_measured = u32_col(df, "arch_measured")?;
    let cwa = u32_col(df, "correct_with_arch")?;
    let target_measured = u32_col(df, "target_measured")?;
    let cot = u32_col(df, "correct_on_target")?;
    let mma = f64_col(df, "mma_flop_share")?;
    let lo = f64_col(df, "speedup_min_lo")?;
    let hi = f64_col(df, "speedup_min_hi")?;
    let best_lo = f64_col(df, "speedup_best_lo")?;
    let best_hi = f64_col(df, "speedup_best_hi")?;
    let turns = u32_col(df, "turns_seen")?;
    let best = f64_col(df, "best_speedup")?;
    let min = f64_col(df, "min_speedup")?;
    let ln_sum = f64_col(df, "ln_sum")?;
    let timed = u32_col(df, "timed")?;
    let peak = f64_col(df, "peak_fraction")?;
    let composed = df.column("composed")?.bool()?;
    let fast: Vec<&UInt32Chunked> = (0..FAST_P.len())
        .map(|i| u32_col(df, &fast_name(i)))
        .collect::<PolarsResult<_>>()?;
    let mut out = Vec::with_capacity(df.height());
    for i in 0..df.height() {
        let timed_i = timed.get(i).unwrap_or(0);
        let ln = ln_sum.get(i).unwrap_or(0.0);
        let mut fast_i = [0u32; FAST_P.len()];
        for (slot, c) in fast_i.iter_mut().zip(&fast) {
            *slot = c.get(i).unwrap_or(0);
        }
        out.push(TaskMetrics {
            provenance: provenance_of(provenance, i)?,
            entry: key_at(&keys.entry, entry, i)?,
            arch: key_at(&keys.arch, arch, i)?,
            gpu: key_at(&keys.gpu, gpu, i)?,
            task: key_at(&keys.task, task, i)?,
            turn_limit: limit.get(i).unwrap_or(0),
            trajectories: n.get(i).unwrap_or(0),
            correct: correct.get(i).unwrap_or(0),
            correct_with_arch: (arch_measured.get(i).unwrap_or(0) > 0)
                .then(|| cwa.get(i).unwrap_or(0)),
            correct_on_target: (target_measured.get(i).unwrap_or(0) > 0)
                .then(|| cot.get(i).unwrap_or(0)),
            mma_flop_share: mma.get(i),
            turns_seen: turns.get(i).unwrap_or(0),
            best_speedup: best.get(i),
            min_speedup: min.get(i),
            min_speedup_ci95: lo.get(i).zip(hi.get(i)).map(|(a, b)| [a, b]),
            best_speedup_ci95: best_lo.get(i).zip(best_hi.get(i)).map(|(a, b)| [a, b]),
            geomean_speedup: geometric_mean_from_logs(ln, timed_i),
            timed: timed_i,
            fast: fast_i,
            peak_fraction: peak.get(i),
            ln_speedup_sum: ln,
            composed_baseline: composed.get(i).unwrap_or(false),
        });
    }
    Ok(out)
}

/// The per-task metrics as a frame (one row per task and turn limit), with derived rates. The
/// `gpu` column is empty (null) where no GPU was recorded.
pub fn task_frame(tasks: &[TaskMetrics]) -> PolarsResult<DataFrame> {
    let n = tasks.len();
    let strs = |f: fn(&TaskMetrics) -> &str| -> Vec<String> {
        tasks.iter().map(|t| f(t).to_string()).collect()
    };
    let u32s = |f: fn(&TaskMetrics) -> u32| -> Vec<u32> { tasks.iter().map(f).collect() };
    let opt = |f: &dyn Fn(&TaskMetrics) -> Option<f64>| -> Vec<Option<f64>> {
        tasks.iter().map(f).collect()
    };
    let mut columns = vec![
        Column::new(
            "provenance".into(),
            tasks
                .iter()
                .map(|t| t.provenance.as_str())
                .collect::<Vec<_>>(),
        ),
        Column::new("entry".into(), strs(|t| &t.entry)),
        Column::new("arch".into(), strs(|t| &t.arch)),
        Column::new(
            "gpu".into(),
            gpu_column(tasks.iter().map(|t| t.gpu.as_str())),
        ),
        Column::new("task".into(), strs(|t| &t.task)),
        Column::new("turn_limit".into(), u32s(|t| t.turn_limit)),
        Column::new("trajectories".into(), u32s(|t| t.trajectories)),
        Column::new("correct".into(), u32s(|t| t.correct)),
        Column::new(
            "correctness_rate".into(),
            tasks
                .iter()
                .map(TaskMetrics::correctness_rate)
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "correct_with_arch".into(),
            tasks
                .iter()
                .map(|t| t.correct_with_arch)
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "correct_with_arch_rate".into(),
            opt(&|t| t.correct_with_arch_rate()),
        ),
        Column::new(
            "correct_on_target".into(),
            tasks
                .iter()
                .map(|t| t.correct_on_target)
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "correct_on_target_rate".into(),
            opt(&|t| t.correct_on_target_rate()),
        ),
        Column::new("mma_flop_share".into(), opt(&|t| t.mma_flop_share)),
        Column::new("turns_seen".into(), u32s(|t| t.turns_seen)),
        Column::new("best_speedup".into(), opt(&|t| t.best_speedup)),
        Column::new("min_speedup".into(), opt(&|t| t.min_speedup)),
        Column::new(
            "min_speedup_ci95_lo".into(),
            opt(&|t| t.min_speedup_ci95.map(|c| c[0])),
        ),
        Column::new(
            "min_speedup_ci95_hi".into(),
            opt(&|t| t.min_speedup_ci95.map(|c| c[1])),
        ),
        Column::new("geomean_speedup".into(), opt(&|t| t.geomean_speedup)),
        Column::new("timed".into(), u32s(|t| t.timed)),
        Column::new(
            "ln_speedup_sum".into(),
            tasks.iter().map(|t| t.ln_speedup_sum).collect::<Vec<_>>(),
        ),
        Column::new("peak_fraction".into(), opt(&|t| t.peak_fraction)),
        Column::new(
            "composed_tasks".into(),
            u32s(|t| u32::from(t.composed_baseline)),
        ),
    ];
    for (i, p) in FAST_P.iter().enumerate() {
        columns.push(Column::new(
            fast_column(*p).into(),
            tasks.iter().map(|t| t.fast_rates()[i]).collect::<Vec<_>>(),
        ));
    }
    for (i, k) in PASS_K.iter().enumerate() {
        columns.push(Column::new(
            format!("pass_at_{k}").into(),
            tasks.iter().map(|t| t.pass_at()[i]).collect::<Vec<_>>(),
        ));
    }
    DataFrame::new(n, columns)
}

/// A `gpu` column: the GPU's name, null where none was recorded.
pub fn gpu_column<'a>(gpus: impl Iterator<Item = &'a str>) -> Vec<Option<&'a str>> {
    gpus.map(|g| (!g.is_empty()).then_some(g)).collect()
}

/// The mean of a float column over a group, summed in sorted order: the same values always
/// give the same bits, whatever order the parallel group-by delivers them in.
fn mean_of(name: &str) -> Expr {
    col(name).sort(SortOptions::default()).mean().alias(name)
}

/// The column name of fast_p: `fast_0.0`, `fast_0.5`, `fast_1.0`.
pub fn fast_column(p: f64) -> String {
    format!("fast_{p:?}")
}

/// In a group of per-task rows, `name` of the row with the largest `min_speedup` (see
/// [`at_best_min`]).
fn at_best(name: &str) -> Expr {
    col(name)
        .filter(col("min_speedup").eq(col("min_speedup").max()))
        .max()
        .alias(name)
}

/// The columns of a per-task row that pool into speedup metrics over tasks: a task with a
/// composed baseline has them emptied before pooling (empty values are skipped by every
/// aggregate, and its logarithms and timed count become zero).
fn library_speedups_only(frame: DataFrame) -> LazyFrame {
    let composed = col("composed_tasks").gt(lit(0u32));
    let mut masked: Vec<Expr> = [
        "best_speedup",
        "min_speedup",
        "min_speedup_ci95_lo",
        "min_speedup_ci95_hi",
    ]
    .iter()
    .map(|name| {
        when(composed.clone())
            .then(lit(NULL).cast(DataType::Float64))
            .otherwise(col(*name))
            .alias(*name)
    })
    .collect();
    masked.push(
        when(composed.clone())
            .then(lit(0.0f64))
            .otherwise(col("ln_speedup_sum"))
            .alias("ln_speedup_sum"),
    );
    masked.push(
        when(composed.clone())
            .then(lit(0u32))
            .otherwise(col("timed"))
            .alias("timed"),
    );
    for p in FAST_P {
        let name = fast_column(p);
        masked.push(
            when(composed.clone())
                .then(lit(NULL).cast(DataType::Float64))
                .otherwise(col(name.as_str()))
                .alias(name.as_str()),
        );
    }
    frame.lazy().with_columns(masked)
}

/// The per-entry metrics over the tasks of `tasks` (as [`compute`] makes them from all).
pub fn overall(tasks: &[TaskMetrics]) -> Result<Vec<OverallMetrics>, MetricsError> {
    const KEYS: [&str; 5] = ["provenance", "entry", "arch", "gpu", "turn_limit"];
    let frame = task_frame(tasks)?;
    let mut aggs = vec![
        len().cast(DataType::UInt32).alias("tasks"),
        col("correct")
            .gt(lit(0u32))
            .cast(DataType::UInt32)
            .sum()
            .cast(DataType::UInt32)
            .alias("tasks_solved"),
        col("trajectories")
            .sum()
            .cast(DataType::UInt32)
            .alias("trajectories"),
        col("correct").sum().cast(DataType::UInt32).alias("correct"),
        mean_of("correctness_rate"),
        mean_of("correct_with_arch_rate"),
        mean_of("correct_on_target_rate"),
        mean_of("mma_flop_share"),
        col("best_speedup").max().alias("best_speedup"),
        at_best("min_speedup_ci95_lo"),
        at_best("min_speedup_ci95_hi"),
        col("task")
            .filter(col("min_speedup").eq(col("min_speedup").max()))
            .min()
            .alias("min_speedup_task"),
        col("min_speedup").max().alias("min_speedup"),
        col("ln_speedup_sum")
            .sort(SortOptions::default())
            .sum()
            .alias("ln_sum"),
        col("timed").sum().cast(DataType::UInt32).alias("timed"),
        col("peak_fraction").max().alias("peak_fraction"),
        col("turns_seen").max().alias("turns_seen"),
        col("composed_tasks")
            .sum()
            .cast(DataType::UInt32)
            .alias("composed_tasks"),
    ];
    for p in FAST_P {
        aggs.push(mean_of(&fast_column(p)));
    }
    for k in PASS_K {
        aggs.push(mean_of(&format!("pass_at_{k}")));
    }
    let df = library_speedups_only(frame)
        .group_by(cols(&KEYS))
        .agg(aggs)
        .sort(KEYS, SortMultipleOptions::default())
        .collect()?;
    let provenance = str_col(&df, "provenance")?;
    let entry = str_col(&df, "entry")?;
    let arch = str_col(&df, "arch")?;
    let gpu = str_col(&df, "gpu")?;
    let limit = u32_col(&df, "turn_limit")?;
    let n_tasks = u32_col(&df, "tasks")?;
    let solved = u32_col(&df, "tasks_solved")?;
    let n = u32_col(&df, "trajectories")?;
    let correct = u32_col(&df, "correct")?;
    let rate = f64_col(&df, "correctness_rate")?;
    let cwa = f64_col(&df, "correct_with_arch_rate")?;
    let cot = f64_col(&df, "correct_on_target_rate")?;
    let mma = f64_col(&df, "mma_flop_share")?;
    let lo = f64_col(&df, "min_speedup_ci95_lo")?;
    let hi = f64_col(&df, "min_speedup_ci95_hi")?;
    let min_task = str_col(&df, "min_speedup_task")?;
    let best = f64_col(&df, "best_speedup")?;
    let min = f64_col(&df, "min_speedup")?;
    let ln_sum = f64_col(&df, "ln_sum")?;
    let timed = u32_col(&df, "timed")?;
    let peak = f64_col(&df, "peak_fraction")?;
    let turns = u32_col(&df, "turns_seen")?;
    let composed = u32_col(&df, "composed_tasks")?;
    let fast: Vec<&Float64Chunked> = FAST_P
        .iter()
        .map(|p| f64_col(&df, &fast_column(*p)))
        .collect::<PolarsResult<_>>()?;
    let pass: Vec<&Float64Chunked> = PASS_K
        .iter()
        .map(|k| f64_col(&df, &format!("pass_at_{k}")))
        .collect::<PolarsResult<_>>()?;
    let mut out = Vec::with_capacity(df.height());
    for i in 0..df.height() {
        let mut fast_i = [0.0; FAST_P.len()];
        for (slot, c) in fast_i.iter_mut().zip(&fast) {
            *slot = c.get(i).unwrap_or(0.0);
        }
        let mut pass_i = [None; PASS_K.len()];
        for (slot, c) in pass_i.iter_mut().zip(&pass) {
            *slot = c.get(i);
        }
        out.push(OverallMetrics {
            provenance: provenance_at(provenance, i)?,
            entry: text_at(entry, i),
            arch: text_at(arch, i),
            gpu: text_at(gpu, i),
            turn_limit: limit.get(i).unwrap_or(0),
            tasks: n_tasks.get(i).unwrap_or(0),
            tasks_solved: solved.get(i).unwrap_or(0),
            trajectories: n.get(i).unwrap_or(0),
            correct: correct.get(i).unwrap_or(0),
            correctness_rate: rate.get(i).unwrap_or(0.0),
            correct_with_arch_rate: cwa.get(i),
            correct_on_target_rate: cot.get(i),
            mma_flop_share: mma.get(i),
            pass_at: pass_i,
            fast: fast_i,
            best_speedup: best.get(i),
            min_speedup: min.get(i),
            min_speedup_ci95: lo.get(i).zip(hi.get(i)).map(|(a, b)| [a, b]),
            min_speedup_task: min_task.get(i).map(str::to_string),
            geomean_speedup: geometric_mean_from_logs(
                ln_sum.get(i).unwrap_or(0.0),
                timed.get(i).unwrap_or(0),
            ),
            peak_fraction: peak.get(i),
            turns_seen: turns.get(i).unwrap_or(0),
            composed_tasks: composed.get(i).unwrap_or(0),
        });
    }
    Ok(out)
}

fn speedup_points(trajectories: DataFrame, keys: &Keys) -> Result<Vec<SpeedupPoint>, MetricsError> {
    let limit = TURN_LIMITS[TURN_LIMITS.len() - 1];
    let sort = [
        "provenance",
        "entry",
        "arch",
        "gpu",
        "task",
        "speedup_min",
        "trajectory",
    ];
    let df = trajectories
        .lazy()
        .filter(
            col("turn_limit")
                .eq(lit(limit))
                .and(col("correct"))
                .and(col("speedup_min").is_not_null()),
        )
        .select(cols(&sort))
        .sort(sort, SortMultipleOptions::default())
        .collect()?;
    let provenance = u32_col(&df, "provenance")?;
    let entry = u32_col(&df, "entry")?;
    let arch = u32_col(&df, "arch")?;
    let gpu = u32_col(&df, "gpu")?;
    let task = u32_col(&df, "task")?;
    let speedup = f64_col(&df, "speedup_min")?;
    let mut out = Vec::with_capacity(df.height());
    for i in 0..df.height() {
        out.push(SpeedupPoint {
            provenance: provenance_of(provenance, i)?,
            entry: key_at(&keys.entry, entry, i)?,
            arch: key_at(&keys.arch, arch, i)?,
            gpu: key_at(&keys.gpu, gpu, i)?,
            task: key_at(&keys.task, task, i)?,
            turn_limit: limit,
            speedup: speedup.get(i).unwrap_or(0.0),
        });
    }
    Ok(out)
}
