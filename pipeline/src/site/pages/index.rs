//! The overview page: what the leaderboard measures, and each architecture's leaderboard.

use askama::Template;

use super::leaderboard::{LeaderboardView, leader_statement, tables};
use super::{Link, Page};
use crate::site::context::Context;
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
        })
        .collect();
    IndexView {
        archs,
        measured_records: ctx.input.records.len() - ctx.harness.len() - ctx.unevaluated.len(),
        unevaluated_records: ctx.unevaluated.len(),
        harness_records: ctx.harness.len(),
        reported_sources: ctx.input.reported.iter().map(|r| r.label.clone()).collect(),
        methodology: paths::link(from, paths::METHODOLOGY),
        harness: paths::link(from, paths::HARNESS_TESTS),
        primary: super::leaderboard::PRIMARY_STATEMENT,
    }
}
