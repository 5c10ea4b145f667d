//! One architecture's page: its leaderboard, the best speedup per task and entry as a
//! matrix, and the plots.

use std::collections::BTreeSet;

use askama::Template;

use super::ceilings::CeilingSummary;
use super::leaderboard::{FULL_SUITE_ANCHOR, LeaderboardView, Scope};
use super::{Cell, Link, Page, PlotView, badge};
use crate::metrics::{Provenance, TURN_LIMITS};
use crate::site::context::{Context, EntryKind};
use crate::site::paths;
use crate::site::plots::Plot;

#[derive(Debug)]
pub struct ArchView {
    pub arch: String,
    pub gpus: String,
    /// The one-line leader statement (empty: no model on this arch).
    pub leader: String,
    pub primary: &'static str,
    /// The models' table (over the core tasks), then the references'.
    pub leaderboards: Vec<LeaderboardView>,
    /// Which tasks the models' default table is over, and why.
    pub core: String,
    /// The models over the full suite (the second view); `None` when it is the default table.
    pub full_suite: Vec<LeaderboardView>,
    pub full_anchor: &'static str,
    pub ceilings: CeilingSummary,
    pub matrix: Matrix,
    pub plots: Vec<PlotView>,
    pub undated: Vec<String>,
    /// Entries on this arch whose work is not evaluated yet.
    pub pending: Option<super::pending::PendingView>,
    /// Said when no model has a measured row on this arch (empty otherwise).
    pub no_model_measured: String,
}

/// Best speedup (at the largest turn limit) for every entry, GPU and task: one row per
/// (source, entry, GPU).
#[derive(Debug)]
pub struct Matrix {
    pub id: String,
    /// What the reported and the measured numbers are, and on which GPUs (empty: one source).
    pub note: String,
    pub limit: u32,
    pub tasks: Vec<Link>,
    pub rows: Vec<MatrixRow>,
}

#[derive(Debug)]
pub struct MatrixRow {
    pub entry: Link,
    pub provenance: &'static str,
    /// The GPU of the row's numbers (empty: not recorded).
    pub gpu: String,
    pub text: String,
    pub cells: Vec<Cell>,
}

#[derive(Debug, Template)]
#[template(path = "arch.html")]
pub struct ArchPage<'a> {
    pub page: &'a Page,
    pub v: &'a ArchView,
}

pub fn view(ctx: &Context<'_>, arch: &str, plots: &[Plot]) -> ArchView {
    let from = paths::arch(arch);
    let limit = TURN_LIMITS[TURN_LIMITS.len() - 1];
    let rows: Vec<_> = ctx
        .metrics
        .tasks
        .iter()
        .filter(|t| t.arch == arch && t.turn_limit == limit)
        .collect();
    let tasks: Vec<&str> = rows
        .iter()
        .map(|t| t.task.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // The engine's simple kernels are listed with the harness tests, not here.
    let series: Vec<(Provenance, &str, &str)> = rows
        .iter()
        .filter(|t| {
            ctx.entry(&t.entry)
                .is_none_or(|e| e.kind != EntryKind::EngineCheck)
        })
        .map(|t| (t.provenance, t.entry.as_str(), t.gpu.as_str()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let matrix_rows = series
        .iter()
        .map(|(p, e, gpu)| {
            let (text, href) = match ctx.entry(e) {
                Some(info) => (
                    info.display_name.clone(),
                    paths::link(&from, &paths::entry(&info.slug)),
                ),
                None => (e.to_string(), String::new()),
            };
            MatrixRow {
                text: text.to_lowercase(),
                entry: Link { text, href },
                provenance: badge(*p),
                gpu: gpu.to_string(),
                cells: tasks
                    .iter()
                    .map(|t| {
                        let m = rows.iter().find(|r| {
                            r.provenance == *p && r.entry == *e && r.gpu == *gpu && r.task == *t
                        });
                        let entry_task =
                            || super::leaderboard::entry_task_href(ctx, e, (arch, gpu), t, &from);
                        match m {
                            // Its evidence: the best record (measured), the entry's task rows
                            // (reported).
                            Some(m) if m.min_speedup.is_some() => {
                                let href = match ctx.best_record(e, arch, gpu, t, limit) {
                                    Some(r) if *p == Provenance::Measured => {
                                        paths::link(&from, &paths::record(&r.digest))
                                    }
                                    _ => entry_task(),
                                };
                                Cell::speedup(m.min_speedup).linked(href)
                            }
                            Some(m) => Cell {
                                text: format!("0/{}", m.trajectories),
                                v: "0".into(),
                                ..Cell::default()
                            }
                            .linked(entry_task()),
                            None => Cell::default(),
                        }
                    })
                    .collect(),
            }
        })
        .collect();
    let mut undated: Vec<String> = series
        .iter()
        .filter(|(_, e, _)| {
            ctx.entry(e)
                .is_none_or(|i| i.kind == EntryKind::Model && i.release_date.is_none())
        })
        .map(|(_, e, _)| e.to_string())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    undated.sort();
    let caption = |name: &str| -> &str {
        if name.contains("best-speedup") {
            "Each point is the best speedup of an entry on a task over all its correct trajectories (correct trajectories only; a task with none has no point). The line at 1× is the library."
        } else if name.contains("fast-p") {
            "fast_p for p from 0 to 2: per model, the fraction of its trajectories (macro average over its tasks) that are correct and whose speedup, the smallest over the workloads, exceeds p; at p = 0 every correct trajectory counts. The vertical line at p = 1 is the library; dotted lines are the reference kernels. The leaderboard's fast column is fast1.0 (faster than the library on every workload); the per-task tables and the results download give fast0.5, fast0.8, fast1.0 and fast1.5. Hover a point for its value."
        } else if name.contains("rates-by-turn-limit") {
            "Macro average over tasks. A trajectory is correct at turn limit L when any of its first L turns is correct. Entries whose target evidence was not measured have no correct-with-arch line."
        } else if name.contains("release-date") {
            "One point per (model, task): best speedup at the largest turn limit, at the model's release date (the manifest's, from the paper's model_release_dates.csv), coloured by model; each model is named in the legend and, where there is room, beside its best point. The paper's ablations are not models and are left out. Gemini 3.1 Pro's 2025-01-31 is the paper's date as published (2025-0131 in every file of its release), a year before its peers; it is shown as published, not corrected. Hover a point for its model, task and value."
        } else {
            "Quartile boxes, median line and min–max whiskers of the speedups of correct trajectories."
        }
    };
    let captions = |name: &str| -> String {
        let mut caption = caption(name).to_string();
        if name.contains("best-speedup") || name.contains("release-date") {
            caption.push_str(if name.contains("-measured") {
                " Vertical bars are the 95% intervals of the measured speedups (from the largest lower and the largest upper bound over the workloads); hover a point for its interval in numbers."
            } else {
                " The paper reports no intervals, so none are drawn."
            });
        }
        caption
    };
    ArchView {
        arch: arch.to_string(),
        gpus: crate::arch::Arch::ALL
            .iter()
            .find(|x| x.as_str() == arch)
            .map(|x| x.gpus().to_string())
            .unwrap_or_default(),
        leader: super::leaderboard::leader_statement(ctx, arch),
        pending: super::pending::PendingView::of(ctx, Some(arch), None, &from, "pending"),
        no_model_measured: super::index::no_model_measured(ctx, Some(arch)),
        primary: super::leaderboard::PRIMARY_STATEMENT,
        leaderboards: super::leaderboard::tables(ctx, arch, &from),
        core: super::leaderboard::core_statement(ctx, arch),
        full_suite: if super::leaderboard::default_scope(ctx, arch) == Scope::Core {
            super::leaderboard::full_suite_tables(ctx, arch, &from)
        } else {
            Vec::new()
        },
        full_anchor: FULL_SUITE_ANCHOR,
        ceilings: CeilingSummary::new(ctx, arch, &from),
        matrix: Matrix {
            note: unlike_sources(ctx, arch),
            id: format!("matrix-{arch}"),
            limit,
            tasks: tasks
                .iter()
                .map(|t| Link {
                    text: t.to_string(),
                    href: paths::link(&from, &paths::task(t)),
                })
                .collect(),
            rows: matrix_rows,
        },
        plots: plots
            .iter()
            .map(|p| PlotView::new(p, &from, captions(&p.name)))
            .collect(),
        undated,
    }
}

/// Where reported and measured numbers share a table of `arch`: they are not the same
/// quantity, and the sentence that says so (empty when only one source has rows).
pub fn unlike_sources(ctx: &Context<'_>, arch: &str) -> String {
    let gpus = |p: Provenance| {
        let set: BTreeSet<String> = ctx
            .entries
            .values()
            .filter_map(|e| e.gpus.get(&(p, arch.to_string())))
            .flatten()
            .cloned()
            .collect();
        set.into_iter().collect::<Vec<_>>().join(", ")
    };
    let has = |p: Provenance| {
        ctx.entries
            .values()
            .any(|e| e.gpus.contains_key(&(p, arch.to_string())))
    };
    if !has(Provenance::Reported) || !has(Provenance::Measured) {
        return String::new();
    }
    let or_unrecorded = |g: String| {
        if g.is_empty() {
            "GPU not recorded".to_string()
        } else {
            g
        }
    };
    format!(
        "Reported and measured numbers here are not the same quantity: a reported number is the paper's speedup at its one headline workload per task, on its GPU ({}); a measured one is the smallest speedup over the task's performance workloads (2 to 5), on the GPU its record names ({}). Each is against the library on its own GPU.",
        or_unrecorded(gpus(Provenance::Reported)),
        or_unrecorded(gpus(Provenance::Measured)),
    )
}
