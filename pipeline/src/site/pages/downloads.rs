//! The data page: every table of the site to download (CSV, JSON, Parquet) with its column
//! schema, and the manifest's runs with how to bundle them.

use askama::Template;

use super::{Link, Page};
use crate::site::context::Context;
use crate::site::data::{FORMATS, Table};
use crate::site::format;
use crate::site::paths;

#[derive(Debug)]
pub struct DataView {
    pub tables: Vec<TableView>,
    pub runs: Vec<RunRow>,
    pub manifest: String,
    pub manifest_digest: String,
    pub bundle: String,
}

#[derive(Debug)]
pub struct TableView {
    pub id: String,
    pub title: String,
    pub about: String,
    pub rows: String,
    /// One link per format, its text naming the format and size.
    pub files: Vec<Link>,
    pub schema: Vec<SchemaRow>,
}

#[derive(Debug)]
pub struct SchemaRow {
    pub name: String,
    pub kind: String,
    pub meaning: String,
}

#[derive(Debug)]
pub struct RunRow {
    pub name: Link,
    pub arch: String,
    pub records: String,
    pub digest: String,
}

#[derive(Debug, Template)]
#[template(path = "data.html")]
pub struct DataPage<'a> {
    pub page: &'a Page,
    pub v: &'a DataView,
}

/// `sizes[i]` holds (site path, bytes) of table `i`'s files, in [`FORMATS`] order.
pub fn view(ctx: &Context<'_>, tables: &[Table], sizes: &[Vec<(String, usize)>]) -> DataView {
    let from = paths::DATA;
    let manifest = ctx.input.manifest_name.clone();
    let stem = manifest
        .rsplit_once('.')
        .map_or(manifest.as_str(), |(s, _)| s);
    DataView {
        tables: tables
            .iter()
            .zip(sizes)
            .map(|(t, files)| TableView {
                id: format!("table-{}", t.stem),
                title: t.title.to_string(),
                about: t.about.to_string(),
                rows: format::count(t.frame.height() as u64),
                files: FORMATS
                    .iter()
                    .zip(files)
                    .map(|((label, _), (path, bytes))| Link {
                        text: format!("{label} ({})", format::bytes(*bytes as u64)),
                        href: paths::link(from, path),
                    })
                    .collect(),
                schema: t
                    .columns
                    .iter()
                    .map(|(name, kind, meaning)| SchemaRow {
                        name: name.clone(),
                        kind: kind.to_string(),
                        meaning: meaning.to_string(),
                    })
                    .collect(),
            })
            .collect(),
        runs: ctx
            .input
            .runs
            .iter()
            .map(|r| RunRow {
                name: Link {
                    text: r.run.name.clone(),
                    href: paths::link(from, &paths::run(&r.digest)),
                },
                arch: r.run.arch.to_string(),
                records: format::count(r.run.record_digests.len() as u64),
                digest: r.digest.to_string(),
            })
            .collect(),
        manifest_digest: ctx.input.manifest_digest.to_string(),
        bundle: format!("ptxbench bundle manifests/{manifest} -o {stem}.zip"),
        manifest,
    }
}
