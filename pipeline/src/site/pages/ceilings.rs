//! The ceiling tables: on a task's page, per GPU and workload, the library's time, the best
//! reference kernel and the best model; on an arch page, one compact row per task and GPU.
//! Every number links to the record it comes from (reported numbers to the entry's rows).

use super::{Cell, Link, format};
use crate::metrics::{Provenance, TURN_LIMITS};
use crate::site::ceiling::{Best, TaskCeiling};
use crate::site::context::{Context, EntryKind};
use crate::site::paths;

/// A task's ceilings on one (arch, GPU).
#[derive(Debug, Clone)]
pub struct CeilingTable {
    pub id: String,
    pub caption: String,
    pub rows: Vec<CeilingRow>,
    /// The smallest-over-workloads row under the workloads.
    pub overall: CeilingRow,
}

#[derive(Debug, Clone)]
pub struct CeilingRow {
    pub workload: String,
    pub gflop: String,
    pub library: Cell,
    pub reference: Cell,
    pub model: Cell,
}

/// The arch page's compact table: one row per task and GPU.
#[derive(Debug, Clone)]
pub struct CeilingSummary {
    pub id: String,
    pub rows: Vec<SummaryRow>,
    /// Whether the reported column is shown (the arch has reported data).
    pub reported: bool,
    pub reported_gpu: String,
    pub limit: u32,
}

#[derive(Debug, Clone)]
pub struct SummaryRow {
    pub task: Link,
    pub gpu: String,
    pub library: Cell,
    pub reference: Cell,
    pub model: Cell,
    pub reported: Cell,
}

fn record_href(ctx: &Context<'_>, from: &str, i: usize) -> String {
    paths::link(from, &paths::record(&ctx.input.records[i].digest))
}

fn display_name(ctx: &Context<'_>, entry: &str) -> String {
    ctx.entry(entry)
        .map_or_else(|| entry.to_string(), |e| e.display_name.clone())
}

/// A best record's cell: its speedup, linked; the note names the entry (and time, interval).
fn best_cell(ctx: &Context<'_>, from: &str, b: Option<&Best>, none: &str) -> Cell {
    let Some(b) = b else {
        return Cell {
            text: none.to_string(),
            ..Cell::default()
        };
    };
    let mut note = display_name(ctx, &b.entry);
    if let Some(ms) = b.ms {
        note = format!("{} · {note}", format::millis(ms));
    }
    if let Some(ci) = b.ci95 {
        note = format!("{note} · {}", format::interval(ci));
    }
    Cell::speedup(Some(b.speedup))
        .linked(record_href(ctx, from, b.record))
        .with_note(note)
}

/// The text of a ceiling that has no correct record of its kind.
const NO_REFERENCE: &str = "no correct reference";
const NO_MODEL: &str = "no correct model";

impl CeilingTable {
    pub fn new(ctx: &Context<'_>, c: &TaskCeiling, from: &str) -> CeilingTable {
        let gpu = if c.gpu.is_empty() {
            "GPU not recorded".to_string()
        } else {
            c.gpu.clone()
        };
        let rows = c
            .workloads
            .iter()
            .map(|w| CeilingRow {
                workload: w.workload.clone(),
                gflop: w
                    .flops
                    .map_or_else(|| format::NONE.into(), |f| format::grouped(f / 1e9, 1)),
                library: match &w.library {
                    Some(l) => Cell {
                        text: format::millis(l.ms),
                        v: format::sort_key(Some(l.ms)),
                        ..Cell::default()
                    }
                    .linked(record_href(ctx, from, l.record))
                    .with_note(format!(
                        "{}median of {} record{}",
                        if l.library.is_empty() {
                            String::new()
                        } else {
                            format!("{} · ", l.library)
                        },
                        format::count(l.records as u64),
                        if l.records == 1 { "" } else { "s" }
                    )),
                    None => Cell::text(format::NONE),
                },
                reference: best_cell(ctx, from, w.reference.as_ref(), NO_REFERENCE),
                model: best_cell(ctx, from, w.model.as_ref(), NO_MODEL),
            })
            .collect();
        CeilingTable {
            id: format!("ceilings-{}-{}", c.arch, paths::slug(&c.gpu)),
            caption: format!(
                "Ceilings of {} on {} ({gpu}): per performance workload, the library's time and the best correct reference kernel and model by paired speedup",
                c.task, c.arch
            ),
            rows,
            overall: CeilingRow {
                workload: "smallest over the workloads".into(),
                gflop: String::new(),
                library: Cell::text("1×"),
                reference: best_cell(ctx, from, c.reference.as_ref(), NO_REFERENCE),
                model: best_cell(ctx, from, c.model.as_ref(), NO_MODEL),
            },
        }
    }
}

/// The best reported model on (arch, task) at the largest turn limit: its smallest-over-
/// workloads speedup (the paper reports one workload per task), linked to its rows.
pub fn reported_best(ctx: &Context<'_>, arch: &str, task: &str, from: &str) -> Option<Cell> {
    let limit = TURN_LIMITS[TURN_LIMITS.len() - 1];
    let best = ctx
        .metrics
        .tasks
        .iter()
        .filter(|t| {
            t.provenance == Provenance::Reported
                && t.arch == arch
                && t.task == task
                && t.turn_limit == limit
                && ctx
                    .entry(&t.entry)
                    .is_some_and(|e| e.kind == EntryKind::Model)
        })
        .filter_map(|t| t.min_speedup.map(|s| (s, t)))
        .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.entry.cmp(&a.1.entry)))?;
    let (s, t) = best;
    let href =
        super::leaderboard::entry_task_href(ctx, &t.entry, (arch, t.gpu.as_str()), task, from);
    Some(
        Cell::speedup(Some(s))
            .linked(href)
            .with_note(display_name(ctx, &t.entry)),
    )
}

/// The GPU the paper's results on `arch` were measured on (empty: none).
pub fn reported_gpu(arch: &str) -> String {
    ["hopper", "blackwell"]
        .into_iter()
        .filter_map(crate::metrics::reported::reported_arch)
        .find(|(a, _)| *a == arch)
        .map_or_else(String::new, |(_, gpu)| gpu.to_string())
}

impl CeilingSummary {
    pub fn new(ctx: &Context<'_>, arch: &str, from: &str) -> CeilingSummary {
        let limit = TURN_LIMITS[TURN_LIMITS.len() - 1];
        let reported = ctx
            .metrics
            .tasks
            .iter()
            .any(|t| t.provenance == Provenance::Reported && t.arch == arch);
        let mut rows: Vec<SummaryRow> = ctx
            .ceilings
            .on(arch)
            .map(|c| {
                let library = match c
                    .headline()
                    .and_then(|w| w.library.as_ref().map(|l| (w, l)))
                {
                    Some((w, l)) => Cell {
                        text: format::millis(l.ms),
                        v: format::sort_key(Some(l.ms)),
                        ..Cell::default()
                    }
                    .linked(record_href(ctx, from, l.record))
                    .with_note(w.workload.clone()),
                    None => Cell::text(format::NONE),
                };
                SummaryRow {
                    task: Link {
                        text: c.task.clone(),
                        href: paths::link(from, &format!("{}#ceilings", paths::task(&c.task))),
                    },
                    gpu: c.gpu.clone(),
                    library,
                    reference: best_cell(ctx, from, c.reference.as_ref(), NO_REFERENCE),
                    model: best_cell(ctx, from, c.model.as_ref(), NO_MODEL),
                    reported: reported_best(ctx, arch, &c.task, from)
                        .unwrap_or_else(|| Cell::text(format::NONE)),
                }
            })
            .collect();
        // Tasks with reported results only: a row with the paper's number alone.
        if reported {
            let mut only: Vec<&str> = ctx
                .metrics
                .tasks
                .iter()
                .filter(|t| t.provenance == Provenance::Reported && t.arch == arch)
                .map(|t| t.task.as_str())
                .filter(|t| ctx.ceilings.of(arch, t).next().is_none())
                .collect();
            only.sort_unstable();
            only.dedup();
            for t in only {
                rows.push(SummaryRow {
                    task: Link {
                        text: t.to_string(),
                        href: paths::link(from, &paths::task(t)),
                    },
                    // No GPU measured it: the GPU column, like the measured ones, says so.
                    gpu: format::NONE.to_string(),
                    library: Cell::text("not measured"),
                    reference: Cell::text("not measured"),
                    model: Cell::text("not measured"),
                    reported: reported_best(ctx, arch, t, from)
                        .unwrap_or_else(|| Cell::text(format::NONE)),
                });
            }
            rows.sort_by(|a, b| a.task.text.cmp(&b.task.text).then(a.gpu.cmp(&b.gpu)));
        }
        let reported_gpu = reported_gpu(arch);
        CeilingSummary {
            id: format!("ceilings-{arch}"),
            rows,
            reported,
            reported_gpu,
            limit,
        }
    }
}
