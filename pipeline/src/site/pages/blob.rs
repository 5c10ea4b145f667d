//! A text blob shared by several records (a prompt every replica got, one kernel run on many
//! tasks), shown once, escaped and line-numbered, with the records that name it.

use askama::Template;

use super::record::RecordsTable;
use super::{Link, Page};
use crate::digest::Digest;
use crate::site::context::Context;
use crate::site::format;
use crate::site::input::Blob;
use crate::site::paths;

#[derive(Debug)]
pub struct BlobView<'a> {
    pub digest: String,
    pub what: String,
    pub size: String,
    pub lines: Vec<&'a str>,
    pub show: String,
    pub record_tables: Vec<RecordsTable>,
    pub first: Link,
}

#[derive(Debug, Template)]
#[template(path = "blob.html")]
pub struct BlobPage<'a> {
    pub page: &'a Page,
    pub v: &'a BlobView<'a>,
}

pub fn view<'a>(ctx: &'a Context<'_>, digest: &Digest) -> BlobView<'a> {
    let from = paths::blob(digest);
    let shared = ctx.shared_blobs.get(digest);
    let (lines, size) = match ctx.input.blobs.get(digest) {
        Some(Blob::Text(t)) => (t.lines().collect(), format::bytes(t.len() as u64)),
        Some(Blob::Binary { bytes }) => (Vec::new(), format::bytes(*bytes)),
        None => (Vec::new(), String::new()),
    };
    let what = shared
        .map(|b| {
            b.kinds
                .iter()
                .map(|k| k.label())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let records: &[usize] = shared.map(|b| b.records.as_slice()).unwrap_or_default();
    let first = records
        .first()
        .map(|i| {
            let d = &ctx.input.records[*i].digest;
            Link {
                text: d.short(12),
                href: paths::link(&from, &paths::record(d)),
            }
        })
        .unwrap_or_default();
    BlobView {
        digest: digest.to_string(),
        what,
        size,
        lines,
        show: format!("ptxbench show --raw {digest}"),
        record_tables: RecordsTable::of(ctx, records, &from, "record-list"),
        first,
    }
}
