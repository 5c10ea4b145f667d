//! A text blob shared by several records (a prompt every replica got, one kernel run on many
//! tasks), shown once, with the records that name it: a chat transcript as its messages, any
//! other text escaped and line-numbered, both cut at [`SHOWN_BYTES`](super::text::SHOWN_BYTES)
//! with a link to the whole object.

use askama::Template;

use super::record::RecordsTable;
use super::text::{self, MessageView, TextView};
use super::{Link, Page};
use crate::digest::Digest;
use crate::site::context::{Context, DigestLink};
use crate::site::format;
use crate::site::input::Blob;
use crate::site::paths;

#[derive(Debug)]
pub struct BlobView<'a> {
    pub digest: String,
    pub link: DigestLink,
    pub what: String,
    pub size: String,
    /// "N lines" or "N messages".
    pub summary: String,
    /// The text, when it is not a chat transcript.
    pub text: Option<TextView<'a>>,
    pub messages: Vec<MessageView<'a>>,
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
    let (text, messages, size) = match ctx.input.blobs.get(digest) {
        Some(Blob::Text(t)) => match text::chat(t) {
            Some(m) => (None, m, format::bytes(t.len() as u64)),
            None => (
                Some(TextView::new(t.as_str())),
                Vec::new(),
                format::bytes(t.len() as u64),
            ),
        },
        Some(Blob::Binary { bytes }) => (None, Vec::new(), format::bytes(*bytes)),
        None => (None, Vec::new(), String::new()),
    };
    let summary = match (&text, messages.len()) {
        (Some(t), _) => t.lines_text(),
        (None, 0) => "not text".into(),
        (None, n) => format!("{n} messages (a chat transcript)"),
    };
    let ext = if messages.is_empty() {
        shared
            .and_then(|b| b.kinds.iter().next())
            .map_or("txt", |k| k.extension())
    } else {
        "json"
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
        link: ctx.digest_link(&from, digest, ext),
        what,
        size,
        summary,
        text,
        messages,
        show: format!("ptxbench show --raw {digest}"),
        record_tables: RecordsTable::of(ctx, records, &from, "record-list"),
        first,
    }
}
