//! The harness-tests page: records of known-bad kernels (role `harness-test`) with the verdict
//! their author expected, the one the harness gave, and the grade and work shares that show a
//! kernel which computes the right numbers still fails on target; then the engine's simple
//! correct kernels (`simt-*`), which show a plain kernel is graded correct and not on target.
//! None of them is ever on a leaderboard.

use std::collections::{BTreeMap, BTreeSet};

use askama::Template;

use super::record::shown_verdict;
use super::{Cell, Link, Page, verdict_class};
use crate::site::context::{Context, EntryKind};
use crate::site::paths;

#[derive(Debug)]
pub struct HarnessView {
    /// The known-bad kernels of one GPU first, then those of runs on several GPUs.
    pub tests: HarnessTable,
    /// The engine's simple correct kernels.
    pub checks: HarnessTable,
    pub agree: usize,
    pub disagree: usize,
}

#[derive(Debug)]
pub struct HarnessTable {
    pub id: &'static str,
    pub rows: Vec<HarnessRow>,
}

/// One record: what it was expected to get, what it got, and the grade behind it.
#[derive(Debug)]
pub struct HarnessRow {
    pub record: Link,
    pub entry: String,
    pub task: Link,
    /// Measured against an earlier definition of its task.
    pub task_changed: bool,
    pub gpus: String,
    pub verdict: String,
    pub verdict_class: &'static str,
    pub expected: String,
    pub agrees: String,
    /// Correct with arch (the paper's grade) and correct on target: yes, no, or not measured.
    pub with_arch: String,
    pub on_target: String,
    pub mma_share: Cell,
    pub other_share: Cell,
    pub text: String,
}

#[derive(Debug, Template)]
#[template(path = "harness.html")]
pub struct HarnessPage<'a> {
    pub page: &'a Page,
    pub v: &'a HarnessView,
}

fn yes_no(x: Option<bool>) -> String {
    match x {
        Some(true) => "yes".into(),
        Some(false) => "no".into(),
        None => "not measured".into(),
    }
}

fn row(ctx: &Context<'_>, several: &BTreeSet<usize>, i: usize) -> HarnessRow {
    let from = paths::HARNESS_TESTS;
    let r = &ctx.input.records[i];
    let doc = &r.record;
    let verdict = shown_verdict(doc);
    let expected = doc.expected.map(|v| v.as_str()).unwrap_or_default();
    let several = r.runs.iter().any(|k| several.contains(k));
    HarnessRow {
        record: Link {
            text: r.digest.short(12),
            href: paths::link(from, &paths::record(&r.digest)),
        },
        entry: doc.entry.clone(),
        task: Link {
            text: doc.task.clone(),
            href: paths::link(from, &paths::task(&doc.task)),
        },
        task_changed: ctx.task_changed(doc),
        gpus: if several { "several" } else { "one" }.into(),
        verdict: verdict.to_string(),
        verdict_class: verdict_class(verdict),
        agrees: match (expected.is_empty(), expected == verdict) {
            (true, _) => String::new(),
            (false, true) => "yes".into(),
            (false, false) => "NO".into(),
        },
        expected: expected.to_string(),
        with_arch: yes_no(doc.correct_with_arch()),
        on_target: yes_no(doc.correct_on_target()),
        mma_share: Cell::percent(doc.mma_flop_share()),
        other_share: Cell::percent(doc.other_flop_share()),
        text: format!("{} {} {verdict}", doc.entry, doc.task).to_lowercase(),
    }
}

/// The runs (by index) whose records ran on more than one GPU: tests of the multi-GPU path.
fn multi_gpu_runs(ctx: &Context<'_>) -> BTreeSet<usize> {
    let mut ordinals: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for r in &ctx.input.records {
        if let Some(d) = &r.record.outcome.device {
            for k in &r.runs {
                ordinals.entry(*k).or_default().insert(d.ordinal);
            }
        }
    }
    ordinals
        .into_iter()
        .filter(|(_, o)| o.len() > 1)
        .map(|(k, _)| k)
        .collect()
}

pub fn view(ctx: &Context<'_>) -> HarnessView {
    let records = &ctx.input.records;
    let several = multi_gpu_runs(ctx);
    let agree = ctx
        .harness
        .iter()
        .filter(|i| {
            let r = &records[**i].record;
            r.expected == Some(r.verdict)
        })
        .count();
    let mut tests: Vec<HarnessRow> = ctx.harness.iter().map(|i| row(ctx, &several, *i)).collect();
    // The known-bad kernels the page introduces first; runs on several GPUs after them.
    tests.sort_by(|a, b| {
        (a.gpus != "one", &a.entry, &a.task.text, &a.record.text).cmp(&(
            b.gpus != "one",
            &b.entry,
            &b.task.text,
            &b.record.text,
        ))
    });
    let mut checks: Vec<HarnessRow> = ctx
        .entries
        .values()
        .filter(|e| e.kind == EntryKind::EngineCheck)
        .filter_map(|e| ctx.entry_records.get(&e.name))
        .flatten()
        .map(|i| row(ctx, &several, *i))
        .collect();
    checks.sort_by(|a, b| (&a.entry, &a.task.text).cmp(&(&b.entry, &b.task.text)));
    HarnessView {
        disagree: ctx.harness.len() - agree,
        agree,
        tests: HarnessTable {
            id: "harness-tests",
            rows: tests,
        },
        checks: HarnessTable {
            id: "engine-checks",
            rows: checks,
        },
    }
}
