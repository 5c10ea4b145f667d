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
    /// [`crate::site::MAX_BUNDLED_RECORDS`], formatted.
    pub max_bundled: String,
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
    /// The run's bundle: a link naming its size, the objects it holds and its blake3; an
    /// empty link when the run is too large to bundle here (see `bundle_command`).
    pub bundle: Link,
    /// How to make the bundle of a run the site does not bundle (empty otherwise).
    pub bundle_command: String,
    pub bundle_objects: String,
    pub bundle_digest: String,
    /// The file name of the bundle (for the `b3sum` line).
    pub bundle_file: String,
    pub bundle_manifest: String,
}

/// A run bundle the site holds.
#[derive(Debug, Clone)]
pub struct BundleFile {
    /// The run it bundles.
    pub run: crate::digest::Digest,
    /// Site path.
    pub path: String,
    pub bytes: u64,
    /// blake3 of the zip's bytes.
    pub digest: crate::digest::Digest,
    pub objects: usize,
    /// The manifest's entry in the zip (`manifests/run-….yaml`).
    pub manifest_entry: String,
}

#[derive(Debug, Template)]
#[template(path = "data.html")]
pub struct DataPage<'a> {
    pub page: &'a Page,
    pub v: &'a DataView,
}

/// `sizes[i]` holds (site path, bytes) of table `i`'s files, in [`FORMATS`] order;
/// `bundles` are the run bundles the site holds (runs over
/// [`crate::site::MAX_BUNDLED_RECORDS`] have none).
pub fn view(
    ctx: &Context<'_>,
    tables: &[Table],
    sizes: &[Vec<(String, u64)>],
    bundles: &[BundleFile],
) -> DataView {
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
                rows: format::count(t.rows as u64),
                files: FORMATS
                    .iter()
                    .zip(files)
                    .map(|((label, _), (path, bytes))| Link {
                        text: format!("{label} ({})", format::bytes(*bytes)),
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
            .map(|r| {
                let mut row = RunRow {
                    name: Link {
                        text: r.run.name.clone(),
                        href: paths::link(from, &paths::run(&r.digest)),
                    },
                    arch: r.run.arch.to_string(),
                    records: format::count(r.run.record_digests.len() as u64),
                    digest: r.digest.to_string(),
                    bundle: Link::default(),
                    bundle_command: String::new(),
                    bundle_objects: String::new(),
                    bundle_digest: String::new(),
                    bundle_file: String::new(),
                    bundle_manifest: String::new(),
                };
                match bundles.iter().find(|b| b.run == r.digest) {
                    Some(b) => {
                        row.bundle = Link {
                            text: format!("zip, {}", format::bytes(b.bytes)),
                            href: paths::link(from, &b.path),
                        };
                        row.bundle_objects = format::count(b.objects as u64);
                        row.bundle_digest = b.digest.to_string();
                        row.bundle_file = b.path.rsplit('/').next().unwrap_or(&b.path).to_string();
                        row.bundle_manifest = b.manifest_entry.clone();
                    }
                    None => {
                        let name = format!("run-{}.yaml", r.digest.short(12));
                        row.bundle = Link {
                            text: name.clone(),
                            href: paths::link(from, &format!("data/bundles/{name}")),
                        };
                        row.bundle_command =
                            format!("ptxbench bundle {name} -o run-{}.zip", r.digest);
                    }
                }
                row
            })
            .collect(),
        max_bundled: format::count(crate::site::MAX_BUNDLED_RECORDS as u64),
        manifest_digest: ctx.input.manifest_digest.to_string(),
        bundle: format!("ptxbench bundle manifests/{manifest} -o {stem}.zip"),
        manifest,
    }
}
