//! One run's page: the run object's fields and its records.

use askama::Template;

use super::record::RecordsTable;
use super::{Link, Page};
use crate::site::context::{Context, DigestLink};
use crate::site::paths;

#[derive(Debug)]
pub struct RunView {
    pub name: String,
    pub digest: DigestLink,
    /// Keys and values; a value that is a digest of a stored object links to it.
    pub facts: Vec<(String, DigestLink)>,
    pub record_tables: Vec<RecordsTable>,
    pub show: String,
    /// Its bundle (`None`: too large to bundle here; the data page says how).
    pub bundle: Option<Link>,
    pub reproduce: String,
}

#[derive(Debug, Template)]
#[template(path = "run.html")]
pub struct RunPage<'a> {
    pub page: &'a Page,
    pub v: &'a RunView,
}

/// A value shown like a digest that links nowhere.
fn plain(value: String) -> DigestLink {
    DigestLink {
        digest: value,
        ..DigestLink::default()
    }
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
        digest: ctx.digest_link(&from, &run.digest, "json"),
        facts: vec![
            ("schema".into(), plain(run.run.schema.clone())),
            ("architecture".into(), plain(run.run.arch.to_string())),
            (
                "run list (YAML) digest".into(),
                ctx.digest_link(&from, &run.run.list_digest, "yaml"),
            ),
            (
                "suite hash (a hash, not a stored object)".into(),
                plain(run.run.suite_hash.to_string()),
            ),
            (
                "records".into(),
                plain(run.run.record_digests.len().to_string()),
            ),
        ],
        record_tables: RecordsTable::of(ctx, &records, &from, "record-list"),
        show: format!("ptxbench show {}", run.digest),
        bundle: super::bundle_link(run, &from),
        reproduce: paths::link(&from, &format!("{}#runs", paths::DATA)),
    }
}
