//! Samples from reported data: the paper's per-turn table (`reasoning_tokens_vs_performance`),
//! one row per (run, trajectory, turn). Every sample is [`Provenance::Reported`].
//!
//! The paper's own aggregates (correctness rate, best speedup, correct-with-arch rate per run
//! and turn limit) follow from these rows; `tests/site` checks that they do, run by run.

use crate::store::reported::ReportedData;

use super::MetricsError;
use super::sample::{Provenance, Sample};

/// The per-turn file of the paper's release.
pub const PER_TURN_TABLE: &str = "reasoning_tokens_vs_performance";

/// The architecture a reported `arch` label stands for, and the GPU it was measured on.
pub fn reported_arch(label: &str) -> Option<(&'static str, &'static str)> {
    match label {
        "hopper" => Some(("sm_90a", "H100")),
        "blackwell" => Some(("sm_100a", "B200")),
        _ => None,
    }
}

/// How reported samples are grouped into tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grouping {
    /// By the task (definition): runs of one model on one task are pooled.
    Task,
    /// By run (`exp_dir`), as the paper's tables are: for checking against them.
    Run,
}

/// One sample per row of the per-turn table; `None` when the import has no such table.
pub fn reported_samples(
    data: &ReportedData,
    grouping: Grouping,
) -> Result<Option<Vec<Sample>>, MetricsError> {
    let Some(table) = data.table(PER_TURN_TABLE) else {
        return Ok(None);
    };
    let file = format!("{PER_TURN_TABLE}.csv");
    let column = |name: &str| -> Result<usize, MetricsError> {
        table.column(name).ok_or_else(|| MetricsError::Reported {
            file: file.clone(),
            row: 1,
            message: format!("no column `{name}`"),
        })
    };
    let c = Columns {
        model: column("model")?,
        arch: column("arch")?,
        definition: column("definition")?,
        exp_dir: column("exp_dir")?,
        trajectory: column("trajectory_id")?,
        turn: column("turn")?,
        correctness: column("correctness")?,
        speedup: column("speedup")?,
        correct_with_arch: column("correct_with_arch")?,
    };
    let mut out = Vec::with_capacity(table.rows.len());
    for (i, row) in table.rows.iter().enumerate() {
        out.push(
            sample(&c, row, grouping).map_err(|message| MetricsError::Reported {
                file: file.clone(),
                row: i + 2,
                message,
            })?,
        );
    }
    Ok(Some(out))
}

struct Columns {
    model: usize,
    arch: usize,
    definition: usize,
    exp_dir: usize,
    trajectory: usize,
    turn: usize,
    correctness: usize,
    speedup: usize,
    correct_with_arch: usize,
}

fn sample(c: &Columns, row: &[String], grouping: Grouping) -> Result<Sample, String> {
    let cell = |i: usize| row.get(i).map(String::as_str).unwrap_or("");
    let (arch, gpu) =
        reported_arch(cell(c.arch)).ok_or_else(|| format!("unknown arch `{}`", cell(c.arch)))?;
    let turn: u32 = cell(c.turn)
        .parse()
        .map_err(|_| format!("turn `{}` is not a whole number", cell(c.turn)))?;
    let correct = cell(c.correctness) == "Correct";
    let speedup = match cell(c.speedup) {
        "" => None,
        s => Some(
            s.parse::<f64>()
                .map_err(|_| format!("speedup `{s}` is not a number"))?,
        ),
    };
    let correct_with_arch = match cell(c.correct_with_arch) {
        "1" => Some(true),
        "0" => Some(false),
        "" => None,
        s => return Err(format!("correct_with_arch `{s}` is not 0 or 1")),
    };
    let run = cell(c.exp_dir);
    let task = match grouping {
        Grouping::Task => cell(c.definition).to_string(),
        Grouping::Run => run.to_string(),
    };
    Ok(Sample {
        provenance: Provenance::Reported,
        entry: cell(c.model).to_string(),
        arch: arch.to_string(),
        gpu: gpu.to_string(),
        task,
        trajectory: format!("{run}/{}", cell(c.trajectory)),
        turn,
        correct,
        correct_with_arch,
        correct_on_target: None,
        mma_flop_share: None,
        speedup_min_ci95: None,
        speedup_best_ci95: None,
        speedup_min: speedup,
        speedup_best: speedup,
        peak_fraction: None,
        // The paper's speedups, over the baselines it names.
        composed_baseline: false,
    })
}

/// A published per-run row whose correct-with-arch count the paper's own per-turn data does
/// not reproduce (no rule over the turns gives all of them): the row as published, and the
/// count its per-turn data gives.
#[derive(Debug, Clone, PartialEq)]
pub struct ArchDisagreement {
    pub row: crate::store::reported::ReportedResult,
    pub per_turn: Option<u32>,
}

/// The published rows of `data` whose correct-with-arch count differs from what its per-turn
/// data gives, in the published rows' order (empty when there is no per-turn table).
pub fn arch_disagreements(data: &ReportedData) -> Result<Vec<ArchDisagreement>, MetricsError> {
    let published = data.results().map_err(|e| MetricsError::Reported {
        file: data.import_digest.to_string(),
        row: 0,
        message: e.to_string(),
    })?;
    let Some(samples) = reported_samples(data, Grouping::Run)? else {
        return Ok(Vec::new());
    };
    let mut all = super::Samples::default();
    all.extend(samples);
    let m = super::compute(all)?;
    let mut out = Vec::new();
    for row in published {
        let Some((arch, _)) = reported_arch(&row.arch) else {
            continue;
        };
        let per_turn = m
            .tasks
            .iter()
            .find(|t| {
                t.entry == row.model
                    && t.arch == arch
                    && t.task == row.run
                    && t.turn_limit == row.turn_limit
            })
            .and_then(|t| t.correct_with_arch);
        if per_turn != row.correct_with_arch {
            out.push(ArchDisagreement { row, per_turn });
        }
    }
    Ok(out)
}
