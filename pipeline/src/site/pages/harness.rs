//! The harness-tests page: records of known-bad kernels (role `harness-test`) with the verdict
//! their author expected and the one the harness gave. They are never on the leaderboard.

use askama::Template;

use super::Page;
use super::record::RecordsTable;
use crate::site::context::Context;
use crate::site::paths;

#[derive(Debug)]
pub struct HarnessView {
    pub record_tables: Vec<RecordsTable>,
    pub agree: usize,
    pub disagree: usize,
}

#[derive(Debug, Template)]
#[template(path = "harness.html")]
pub struct HarnessPage<'a> {
    pub page: &'a Page,
    pub v: &'a HarnessView,
}

pub fn view(ctx: &Context<'_>) -> HarnessView {
    let records = &ctx.input.records;
    let agree = ctx
        .harness
        .iter()
        .filter(|i| {
            let r = &records[**i].record;
            r.expected == Some(r.verdict)
        })
        .count();
    HarnessView {
        disagree: ctx.harness.len() - agree,
        agree,
        record_tables: RecordsTable::of(ctx, &ctx.harness, paths::HARNESS_TESTS, "harness-tests"),
    }
}
