//! The overview page: what the leaderboard measures, and each architecture's leaderboard.

use askama::Template;

use super::leaderboard::{LeaderboardView, leader_statement, tables};
use super::pending::PendingView;
use super::{Link, Page};
use crate::metrics::Provenance;
use crate::site::context::{Context, EntryKind};
use crate::site::paths;

#[derive(Debug)]
pub struct IndexView {
    pub archs: Vec<ArchSummary>,
    pub measured_records: usize,
    pub harness_records: usize,
    /// Records `generate --no-eval` made: checked, never run.
    pub unevaluated_records: usize,
    pub reported_sources: Vec<String>,
    pub methodology: String,
    pub harness: String,
    pub primary: &'static str,
    /// Said when no model has a measured row anywhere (empty otherwise).
    pub no_model_measured: String,
}

#[derive(Debug)]
pub struct ArchSummary {
    pub arch: String,
    pub gpus: String,
    pub page: Link,
    /// The one-line leader statement (empty: no model on this arch).
    pub leader: String,
    /// The models' table, then the references' (looped over so the shared table template
    /// sees each as `lb`).
    pub leaderboards: Vec<LeaderboardView>,
    /// Which tasks the models' table is over.
    pub core: String,
    /// The full-suite table on the arch page (empty: the default table is the full suite).
    pub full_suite: String,
    /// Entries on this arch whose work is not evaluated yet.
    pub pending: Option<PendingView>,
    /// Said when no model has a measured row on this arch (empty otherwise).
    pub no_model_measured: String,
}

#[derive(Debug, Template)]
#[template(path = "index.html")]
pub struct IndexPage<'a> {
    pub page: &'a Page,
    pub v: &'a IndexView,
}

pub fn view(ctx: &Context<'_>) -> IndexView {
    let from = paths::INDEX;
    let archs = ctx
        .archs
        .iter()
        .map(|a| ArchSummary {
            arch: a.clone(),
            gpus: crate::arch::Arch::ALL
                .iter()
                .find(|x| x.as_str() == a)
                .map(|x| x.gpus().to_string())
                .unwrap_or_default(),
            page: Link {
                text: format!("{a} leaderboard, per-task results and plots"),
                href: paths::link(from, &paths::arch(a)),
            },
            leader: leader_statement(ctx, a),
            leaderboards: tables(ctx, a, from),
            core: super::leaderboard::core_statement(ctx, a),
            full_suite: if super::leaderboard::default_scope(ctx, a)
                == super::leaderboard::Scope::Core
            {
                paths::link(
                    from,
                    &format!(
                        "{}#{}",
                        paths::arch(a),
                        super::leaderboard::FULL_SUITE_ANCHOR
                    ),
                )
            } else {
                String::new()
            },
            pending: PendingView::of(ctx, Some(a), None, from, &format!("pending-{a}")),
            no_model_measured: no_model_measured(ctx, Some(a)),
        })
        .collect();
    // Graded records of entries whose other answers are not evaluated: not measured rows yet.
    let held_back: usize = ctx
        .entries
        .values()
        .flat_map(|e| e.pending.values())
        .map(|p| p.graded)
        .sum();
    // The engine's simple kernels are listed with the harness tests, never on a leaderboard.
    let engine_checks: usize = ctx
        .entries
        .values()
        .filter(|e| e.kind == EntryKind::EngineCheck)
        .filter_map(|e| ctx.entry_records.get(&e.name))
        .map(Vec::len)
        .sum();
    IndexView {
        archs,
        measured_records: ctx.input.records.len()
            - ctx.harness.len()
            - ctx.unevaluated.len()
            - held_back
            - engine_checks,
        unevaluated_records: ctx.unevaluated.len(),
        harness_records: ctx.harness.len() + engine_checks,
        reported_sources: ctx.input.reported.iter().map(|r| r.label.clone()).collect(),
        methodology: paths::link(from, paths::METHODOLOGY),
        harness: paths::link(from, paths::HARNESS_TESTS),
        primary: super::leaderboard::PRIMARY_STATEMENT,
        no_model_measured: no_model_measured(ctx, None),
    }
}

/// What the measured rows are when none is a model's, on `arch` (every arch when `None`):
/// the reference kernels' and the harness tests' records; empty when a model was measured.
pub fn no_model_measured(ctx: &Context<'_>, arch: Option<&str>) -> String {
    let on = |a: &str| arch.is_none_or(|x| x == a);
    let measured_model = ctx.entries.values().any(|e| {
        e.kind == EntryKind::Model
            && e.gpus
                .keys()
                .any(|(p, a)| *p == Provenance::Measured && on(a))
    });
    if measured_model {
        return String::new();
    }
    let of_kind = |kinds: &[EntryKind]| {
        ctx.entry_records
            .iter()
            .filter(|(name, _)| ctx.entry(name).is_some_and(|e| kinds.contains(&e.kind)))
            .flat_map(|(_, rs)| rs.iter())
            .filter(|&&i| {
                let r = &ctx.input.records[i].record;
                on(r.arch.as_str()) && crate::site::context::is_evaluated(r)
            })
            .count()
    };
    let references = of_kind(&[EntryKind::Reference]);
    let engine = of_kind(&[EntryKind::EngineCheck]);
    let harness = ctx
        .harness
        .iter()
        .filter(|&&i| on(ctx.input.records[i].record.arch.as_str()))
        .count();
    let pending = ctx
        .entries
        .values()
        .filter(|e| e.pending.keys().any(|a| on(a)))
        .count();
    let whose = match arch {
        Some(a) => format!(" on {a}"),
        None => String::new(),
    };
    let what = if references + engine + harness == 0 {
        "no record here was evaluated on a GPU".to_string()
    } else {
        format!(
            "every measured record is a reference kernel's (hand-written or compiler-made: {references}), one of the engine's simple kernels' ({engine}) or a harness test's ({harness})"
        )
    };
    let mut s = format!(
        "No model has been measured here yet{whose}: {what}. Every model's number is the paper's, reported as published."
    );
    if pending > 0 {
        s.push_str(&format!(
            " {pending} {} answers generated here but not yet evaluated (listed as such, in no rate).",
            if pending == 1 { "entry has" } else { "entries have" }
        ));
    }
    s
}
