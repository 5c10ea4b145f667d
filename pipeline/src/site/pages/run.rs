//! One run's page: the run object's fields and its records.

use askama::Template;

use super::record::RecordsTable;
use super::{Fact, Page};
use crate::site::context::Context;
use crate::site::paths;

#[derive(Debug)]
pub struct RunView {
    pub name: String,
    pub digest: String,
    pub facts: Vec<Fact>,
    pub record_tables: Vec<RecordsTable>,
    pub show: String,
}

#[derive(Debug, Template)]
#[template(path = "run.html")]
pub struct RunPage<'a> {
    pub page: &'a Page,
    pub v: &'a RunView,
}

pub fn view(ctx: &Context<'_>, run_index: usize) -> RunView {
    let run = &ctx.input.runs[run_index];
    let from = paths::run(&run.digest);
    let records: Vec<usize> = ctx
        .input
        .records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.runs.contains(&run_index))
        .map(|(i, _)| i)
        .collect();
    RunView {
        name: run.run.name.clone(),
        digest: run.digest.to_string(),
        facts: vec![
            Fact {
                key: "schema".into(),
                value: run.run.schema.clone(),
            },
            Fact {
                key: "architecture".into(),
                value: run.run.arch.to_string(),
            },
            Fact {
                key: "run list (YAML) digest".into(),
                value: run.run.list_digest.to_string(),
            },
            Fact {
                key: "suite hash".into(),
                value: run.run.suite_hash.to_string(),
            },
            Fact {
                key: "records".into(),
                value: run.run.record_digests.len().to_string(),
            },
        ],
        record_tables: RecordsTable::of(ctx, &records, &from, "record-list"),
        show: format!("ptxbench show {}", run.digest),
    }
}
