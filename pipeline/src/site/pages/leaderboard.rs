//! The metric tables several pages share: the leaderboard (one row per entry, source and turn
//! limit, over all tasks) and the per-task table (one row per entry, task, source and turn
//! limit). Rows carry `data-*` keys for the page script's filters.

use super::{Cell, Link, badge};
use crate::metrics::{FAST_P, OverallMetrics, PASS_K, Provenance, TaskMetrics};
use crate::site::context::Context;
use crate::site::paths;

/// The turn limit the filters select when a page loads (single-shot: every source has it).
pub const DEFAULT_TURN: &str = "1";

#[derive(Debug, Clone)]
pub struct LeaderboardView {
    /// The table's element id (unique on its page).
    pub id: String,
    pub rows: Vec<LeaderboardRow>,
    pub turn_default: &'static str,
}

#[derive(Debug, Clone)]
pub struct LeaderboardRow {
    pub entry: Link,
    pub provenance: &'static str,
    pub gpu: String,
    pub turn_limit: String,
    /// Lowercase text the name filter matches.
    pub text: String,
    pub tasks: Cell,
    pub trajectories: Cell,
    pub correctness: Cell,
    pub correct_with_arch: Cell,
    pub pass: Vec<Cell>,
    pub fast: Cell,
    pub geomean: Cell,
    pub best: Cell,
    pub min: Cell,
    pub peak: Cell,
}

/// Rate of a correct-with-arch value: measured data without evidence says "not measured".
fn cwa_cell(p: Provenance, rate: Option<f64>) -> Cell {
    match rate {
        Some(r) => Cell::percent(Some(r)),
        None if p == Provenance::Measured => Cell::not_measured(),
        None => Cell::percent(None),
    }
}

fn peak_cell(p: Provenance, x: Option<f64>) -> Cell {
    match (p, x) {
        (Provenance::Reported, None) => Cell {
            text: "not reported".into(),
            v: String::new(),
        },
        _ => Cell::percent(x),
    }
}

/// Index of p = 1.0 in [`FAST_P`].
fn fast_one() -> usize {
    FAST_P.iter().position(|p| *p == 1.0).unwrap_or(0)
}

/// Leaderboard order: by turn limit, then best correctness, then best geometric-mean speedup,
/// then name and source (a total order, so pages are stable).
fn rank(a: &OverallMetrics, b: &OverallMetrics) -> std::cmp::Ordering {
    let speed = |o: &OverallMetrics| o.geomean_speedup.unwrap_or(-1.0);
    a.turn_limit
        .cmp(&b.turn_limit)
        .then(b.correctness_rate.total_cmp(&a.correctness_rate))
        .then(speed(b).total_cmp(&speed(a)))
        .then(a.entry.cmp(&b.entry))
        .then(a.provenance.cmp(&b.provenance))
}

impl LeaderboardView {
    /// The leaderboard of `arch` as seen from page `from`.
    pub fn new(ctx: &Context<'_>, arch: &str, from: &str, id: &str) -> LeaderboardView {
        let mut ranked: Vec<&OverallMetrics> = ctx
            .metrics
            .overall
            .iter()
            .filter(|o| o.arch == arch)
            .collect();
        ranked.sort_by(|a, b| rank(a, b));
        let rows = ranked.into_iter().map(|o| row(ctx, o, from)).collect();
        LeaderboardView {
            id: id.to_string(),
            rows,
            turn_default: DEFAULT_TURN,
        }
    }

    /// One entry's rows on `arch` (its page).
    pub fn for_entry(
        ctx: &Context<'_>,
        entry: &str,
        arch: &str,
        from: &str,
        id: &str,
    ) -> LeaderboardView {
        let rows = ctx
            .metrics
            .overall
            .iter()
            .filter(|o| o.arch == arch && o.entry == entry)
            .map(|o| row(ctx, o, from))
            .collect();
        LeaderboardView {
            id: id.to_string(),
            rows,
            turn_default: "all",
        }
    }
}

fn entry_link(ctx: &Context<'_>, name: &str, from: &str) -> Link {
    match ctx.entry(name) {
        Some(e) => Link {
            text: e.display_name.clone(),
            href: paths::link(from, &paths::entry(&e.slug)),
        },
        None => Link {
            text: name.to_string(),
            href: String::new(),
        },
    }
}

fn row(ctx: &Context<'_>, o: &OverallMetrics, from: &str) -> LeaderboardRow {
    let entry = entry_link(ctx, &o.entry, from);
    LeaderboardRow {
        text: entry.text.to_lowercase(),
        entry,
        provenance: badge(o.provenance),
        gpu: ctx.gpus(&o.entry, o.provenance, &o.arch),
        turn_limit: o.turn_limit.to_string(),
        tasks: Cell {
            text: format!("{}/{}", o.tasks_solved, o.tasks),
            v: o.tasks_solved.to_string(),
        },
        trajectories: Cell::count(o.trajectories),
        correctness: Cell::percent(Some(o.correctness_rate)),
        correct_with_arch: cwa_cell(o.provenance, o.correct_with_arch_rate),
        pass: o.pass_at.iter().map(|p| Cell::percent(*p)).collect(),
        fast: Cell::percent(Some(o.fast[fast_one()])),
        geomean: Cell::speedup(o.geomean_speedup),
        best: Cell::speedup(o.best_speedup),
        min: Cell::speedup(o.min_speedup),
        peak: peak_cell(o.provenance, o.peak_fraction),
    }
}

/// Column headers of the pass@k and fast_p columns.
pub fn pass_headers() -> Vec<String> {
    PASS_K.iter().map(|k| format!("pass@{k}")).collect()
}

pub fn fast_headers() -> Vec<String> {
    FAST_P.iter().map(|p| format!("fast{p:?}")).collect()
}

#[derive(Debug, Clone)]
pub struct TaskTableView {
    pub id: String,
    pub rows: Vec<TaskRow>,
    pub turn_default: &'static str,
    pub pass_headers: Vec<String>,
    pub fast_headers: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct TaskRow {
    pub task: Link,
    pub entry: Link,
    pub provenance: &'static str,
    pub turn_limit: String,
    pub text: String,
    pub trajectories: Cell,
    pub correct: Cell,
    pub correct_with_arch: Cell,
    pub pass: Vec<Cell>,
    pub fast: Vec<Cell>,
    pub geomean: Cell,
    pub best: Cell,
    pub min: Cell,
    pub peak: Cell,
}

impl TaskTableView {
    pub fn new<'m>(
        ctx: &Context<'_>,
        rows: impl Iterator<Item = &'m TaskMetrics>,
        from: &str,
        id: &str,
    ) -> TaskTableView {
        let rows = rows
            .map(|t| {
                let entry = entry_link(ctx, &t.entry, from);
                TaskRow {
                    text: format!("{} {}", entry.text.to_lowercase(), t.task),
                    task: Link {
                        text: t.task.clone(),
                        href: paths::link(from, &paths::task(&t.task)),
                    },
                    entry,
                    provenance: badge(t.provenance),
                    turn_limit: t.turn_limit.to_string(),
                    trajectories: Cell::count(t.trajectories),
                    correct: Cell::count_rate(t.correct, t.trajectories),
                    correct_with_arch: match t.correct_with_arch {
                        Some(c) => Cell::count_rate(c, t.trajectories),
                        None => cwa_cell(t.provenance, None),
                    },
                    pass: t.pass_at().iter().map(|p| Cell::percent(*p)).collect(),
                    fast: t
                        .fast_rates()
                        .iter()
                        .map(|f| Cell::percent(Some(*f)))
                        .collect(),
                    geomean: Cell::speedup(t.geomean_speedup),
                    best: Cell::speedup(t.best_speedup),
                    min: Cell::speedup(t.min_speedup),
                    peak: peak_cell(t.provenance, t.peak_fraction),
                }
            })
            .collect();
        TaskTableView {
            id: id.to_string(),
            rows,
            turn_default: DEFAULT_TURN,
            pass_headers: pass_headers(),
            fast_headers: fast_headers(),
        }
    }
}
