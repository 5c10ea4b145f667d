//! One entry's page (a model of the reported data or a measured submission): its leaderboard
//! rows and per-task metrics per architecture, the paper's own numbers for it as published,
//! and its measured records.

use askama::Template;

use super::leaderboard::{LeaderboardView, TaskTableOn, TaskTableView};
use super::record::RecordsTable;
use super::{Link, Page, badge, format};
use crate::metrics::reported::reported_arch;
use crate::site::context::{Context, EntryInfo, EntryKind};
use crate::site::paths;

#[derive(Debug)]
pub struct EntryView {
    pub display_name: String,
    pub name: String,
    pub organisation: String,
    pub release_date: String,
    /// A word on a release date that stands out (empty: none).
    pub date_note: String,
    /// The model this entry is an ablation of (empty: none).
    pub ablation_of: String,
    pub badges: Vec<&'static str>,
    pub sections: Vec<EntryArch>,
    pub published: Vec<PublishedRow>,
    pub published_sources: String,
    pub record_tables: Vec<RecordsTable>,
    /// Its work not evaluated yet, on every arch.
    pub pending: Option<super::pending::PendingView>,
    /// Whether any of its records was measured (the records heading's badge).
    pub measured: bool,
}

#[derive(Debug)]
pub struct EntryArch {
    pub arch: String,
    pub gpus: String,
    pub leaderboards: Vec<LeaderboardView>,
    pub task_tables: Vec<TaskTableView>,
}

/// One (run, turn limit) row of the paper's tables, as published.
#[derive(Debug)]
pub struct PublishedRow {
    pub run: String,
    pub arch: String,
    pub gpu: String,
    pub task: Link,
    pub workload: String,
    pub turn_limit: String,
    pub correct: String,
    pub best_speedup: String,
    pub correct_with_arch: String,
    pub evidence: String,
    /// The file and line of each table the row joins, linked to the file's stored bytes.
    pub source: Vec<Link>,
}

#[derive(Debug, Template)]
#[template(path = "entry.html")]
pub struct EntryPage<'a> {
    pub page: &'a Page,
    pub v: &'a EntryView,
}

pub fn view(ctx: &Context<'_>, e: &EntryInfo) -> EntryView {
    let from = paths::entry(&e.slug);
    let archs: Vec<&String> = ctx
        .archs
        .iter()
        .filter(|a| e.gpus.keys().any(|(_, ga)| ga == *a))
        .collect();
    let sections = archs
        .iter()
        .map(|a| {
            let gpus = e
                .gpus
                .iter()
                .filter(|((_, ga), _)| ga == *a)
                .map(|((p, _), g)| {
                    let g = g.iter().cloned().collect::<Vec<_>>().join(", ");
                    if g.is_empty() {
                        format!("{p}: GPU not recorded")
                    } else {
                        format!("{p}: {g}")
                    }
                })
                .collect::<Vec<_>>()
                .join("; ");
            EntryArch {
                arch: a.to_string(),
                gpus,
                leaderboards: vec![LeaderboardView::for_entry(
                    ctx,
                    &e.name,
                    a,
                    &from,
                    &format!("lb-{a}"),
                )],
                task_tables: vec![TaskTableView::new(
                    ctx,
                    ctx.metrics
                        .tasks
                        .iter()
                        .filter(|t| t.entry == e.name && &t.arch == *a)
                        .filter(|t| {
                            e.kind == EntryKind::EngineCheck || ctx.listed(&t.entry, t.turn_limit)
                        }),
                    &from,
                    &format!("tasks-{a}"),
                    TaskTableOn::EntryPage,
                )],
            }
        })
        .collect();
    let mut published = Vec::new();
    let mut sources = Vec::new();
    for (rep, rows) in ctx.input.reported.iter().zip(&ctx.published) {
        let mine: Vec<_> = rows.iter().filter(|r| r.model == e.name).collect();
        if mine.is_empty() {
            continue;
        }
        sources.push(rep.label.clone());
        for r in mine {
            let (arch, gpu) = reported_arch(&r.arch).unwrap_or(("?", "?"));
            published.push(PublishedRow {
                run: r.run.clone(),
                arch: arch.to_string(),
                gpu: gpu.to_string(),
                task: Link {
                    text: r.definition.clone(),
                    href: paths::link(&from, &paths::task(&r.definition)),
                },
                workload: r.workload_name.clone(),
                turn_limit: r.turn_limit.to_string(),
                correct: format::count_rate(r.correct, r.n_trajectories),
                best_speedup: format::opt_speedup(r.best_speedup),
                correct_with_arch: match (r.correct_with_arch, r.correct_with_arch_rate) {
                    (Some(c), Some(_)) => format::count_rate(c, r.n_trajectories),
                    _ => format::NONE.to_string(),
                },
                evidence: r.tag_evidence.clone().unwrap_or_default(),
                source: r
                    .lines
                    .iter()
                    .map(|l| Link {
                        text: format!("{}:{}", l.file, l.line),
                        href: rep
                            .data
                            .files
                            .iter()
                            .find(|f| f.name == l.file)
                            .map(|f| {
                                paths::link_parts(&from, &[paths::OBJECTS, &f.content_digest.hex()])
                            })
                            .unwrap_or_default(),
                    })
                    .collect(),
            });
        }
    }
    let records = ctx
        .entry_records
        .get(&e.name)
        .map(Vec::as_slice)
        .unwrap_or_default();
    EntryView {
        display_name: e.display_name.clone(),
        name: e.name.clone(),
        organisation: e.organisation.clone().unwrap_or_default(),
        release_date: e.release_date.clone().unwrap_or_default(),
        date_note: date_note(ctx, e),
        ablation_of: ctx
            .input
            .manifest
            .models
            .get(&e.name)
            .and_then(|m| m.ablation_of.clone())
            .unwrap_or_default(),
        badges: e
            .provenances
            .iter()
            .map(|p| badge(*p))
            .chain((!e.pending.is_empty()).then_some("unevaluated"))
            .collect(),
        pending: super::pending::PendingView::of(ctx, None, Some(&e.name), &from, "pending"),
        measured: e
            .provenances
            .contains(&crate::metrics::Provenance::Measured),
        sections,
        published,
        published_sources: sources.join("; "),
        record_tables: RecordsTable::of(ctx, records, &from, "record-list"),
    }
}

/// A note for a model released more than 300 days before every other dated model: such a
/// date stands out beside its peers (the paper's Gemini 3.1 Pro, 2025-01-31, as published in
/// every file of its release); the page shows it as given and says so.
fn date_note(ctx: &Context<'_>, e: &EntryInfo) -> String {
    use crate::site::plots::parse_date;
    let Some(mine) = e.release_date.as_deref().and_then(parse_date) else {
        return String::new();
    };
    let others: Vec<i64> = ctx
        .entries
        .values()
        .filter(|o| o.name != e.name && o.kind == EntryKind::Model)
        .filter_map(|o| o.release_date.as_deref().and_then(parse_date))
        .collect();
    match others.iter().min() {
        Some(first) if mine + 300 < *first => "More than 300 days before every other model here; shown as the source gives it, not corrected".into(),
        _ => String::new(),
    }
}
