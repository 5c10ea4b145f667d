//! The static leaderboard site: a manifest and its store in, a folder of HTML, CSS, JS and SVG
//! out, with no GPU and no network.
//!
//! Rendering is a pure function of the loaded [`SiteInput`] to pages (relative path → bytes):
//! [`build`] collects them, [`render_each`] hands each to a sink as it is made (records are
//! rendered on all cores, so a large site need not sit in memory), and [`output::write_site`]
//! is the separate step that puts them on disk. The same input always gives the same bytes:
//! everything is sorted with total orders, numbers are formatted with fixed precision, and no
//! clock, host, absolute path or unseeded randomness reaches a page.
//!
//! `input` (loading records through `crate::record`), `blob_kind` (what a record's text blobs
//! hold), `ceiling` (library time, best reference and best model per task), `context` (metrics and indexes derived once), `data` (the downloads),
//! `pages` (view models and templates),
//! `plots` (SVG), `format` and `paths` (numbers and links), `trajectory` (the turns of a
//! generation), `diff` (line diffs between turns), `linkcheck` (the output's links), `output`
//! (writing). Every object the pages name is copied into `objects/` byte for byte.

pub mod blob_kind;
pub mod ceiling;
pub mod context;
pub mod data;
pub mod diff;
pub mod entries;
pub mod escape;
pub mod format;
pub mod input;
pub mod linkcheck;
pub mod output;
pub mod pages;
pub mod paths;
pub mod plots;
pub mod rates;
pub mod sources;
pub mod trajectory;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use askama::Template;

use crate::digest::Digest;
use crate::metrics::MetricsError;
use crate::store::StoreError;
use crate::store::reported::ReportedError;

pub use context::Context;
pub use input::SiteInput;

/// The stylesheet and the page script, compiled in (they are part of the output's bytes).
pub const STYLE_CSS: &str = include_str!("../../../site/static/style.css");
pub const SITE_JS: &str = include_str!("../../../site/static/site.js");
pub const FAVICON_SVG: &str = include_str!("../../../site/static/favicon.svg");

/// Why a site could not be built. Every variant names what failed.
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    #[error("{what}: {source}")]
    Store {
        what: String,
        #[source]
        source: StoreError,
    },
    #[error("{what}: {source}")]
    Record {
        what: String,
        #[source]
        source: crate::record::RecordError,
    },
    #[error("manifest: {message}")]
    Manifest { message: String },
    #[error("reported data `{label}` ({digest}): {source}")]
    Reported {
        label: String,
        digest: Digest,
        #[source]
        source: Box<ReportedError>,
    },
    #[error(transparent)]
    Metrics(#[from] MetricsError),
    #[error("bundle of run {run} ({name}): {source}")]
    Bundle {
        run: Digest,
        name: String,
        #[source]
        source: Box<crate::bundle::BundleError>,
    },
    #[error("rendering {page}: {message}")]
    Render { page: String, message: String },
    #[error("drawing plot {plot}: {message}")]
    Plot { plot: String, message: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Output { path: PathBuf, message: String },
    #[error("internal: {0}")]
    Internal(String),
}

/// A rendered site: relative path → bytes, sorted.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pages {
    pub files: BTreeMap<String, Vec<u8>>,
}

impl Pages {
    pub fn get(&self, path: &str) -> Option<&[u8]> {
        self.files.get(path).map(Vec::as_slice)
    }

    pub fn text(&self, path: &str) -> Option<&str> {
        self.get(path).and_then(|b| std::str::from_utf8(b).ok())
    }
}

/// Renders the whole site into memory.
pub fn build(input: &SiteInput) -> Result<Pages, SiteError> {
    let files = Mutex::new(BTreeMap::new());
    render_each(input, &|path, bytes| {
        files
            .lock()
            .map_err(|_| SiteError::Internal("page map poisoned".into()))?
            .insert(path, bytes);
        Ok(())
    })?;
    Ok(Pages {
        files: files
            .into_inner()
            .map_err(|_| SiteError::Internal("page map poisoned".into()))?,
    })
}

/// Where rendered pages go: called once per file, possibly from several threads.
pub type Sink<'a> = dyn Fn(String, Vec<u8>) -> Result<(), SiteError> + Sync + 'a;

/// Writes one file's bytes to the writer it is given.
pub type WriteFile<'a> = dyn FnMut(&mut dyn std::io::Write) -> Result<(), SiteError> + 'a;

/// Where the files too large to hold whole in memory go (the downloads): called once per
/// file, possibly from several threads, with its path and the function that writes it;
/// returns the bytes written.
pub type StreamSink<'a> = dyn Fn(String, &mut WriteFile<'_>) -> Result<u64, SiteError> + Sync + 'a;

/// A [`StreamSink`] that makes each file in memory and hands it to `sink`.
pub fn buffered<'a>(
    sink: &'a Sink<'a>,
) -> impl Fn(String, &mut WriteFile<'_>) -> Result<u64, SiteError> + Sync + 'a {
    move |path, write| {
        let mut bytes = Vec::new();
        write(&mut bytes)?;
        let n = bytes.len() as u64;
        sink(path, bytes)?;
        Ok(n)
    }
}

/// Where the stored objects the site copies go (`objects/<digest>`), possibly from several
/// threads: called with the output path, the digest, and whether loading already read the
/// object and checked that it hashes to its name (records, runs, the blobs records name,
/// suite objects). [`write_site`](output::write_site) links such an object from the store
/// instead of writing its bytes again.
pub type ObjectSink<'a> = dyn Fn(String, &Digest, bool) -> Result<(), SiteError> + Sync + 'a;

fn html<T: Template>(t: &T, path: &str) -> Result<Vec<u8>, SiteError> {
    // Most pages are tens of KiB: start above that rather than grow from the template's hint
    // (a trajectory page past 32 KiB was copied on growing; the untouched rest of the buffer
    // costs nothing).
    let mut out = String::with_capacity(64 * 1024);
    t.render_into(&mut out).map_err(|e| SiteError::Render {
        page: path.to_string(),
        message: e.to_string(),
    })?;
    Ok(out.into_bytes())
}

/// Renders every file of the site and hands each to `sink`; returns how many there were.
///
/// Record and shared-blob pages (nearly all of a large site) are rendered on worker threads
/// while this thread makes the rest (tables, downloads, bundles, plots, the other pages), so
/// the serial part of the build overlaps the parallel one.
pub fn render_each(input: &SiteInput, sink: &Sink<'_>) -> Result<usize, SiteError> {
    render_each_placing(
        input,
        sink,
        &|path, d, _verified| sink(path, object_bytes(input, d)?),
        &buffered(sink),
    )
}

/// The bytes of stored object `d` that the site copies: a text blob from memory (hashed when
/// it was loaded), anything else read from the store and re-hashed.
pub(crate) fn object_bytes(input: &SiteInput, d: &Digest) -> Result<Vec<u8>, SiteError> {
    match input.blobs.get(d) {
        Some(input::Blob::Text(t)) => Ok(t.as_bytes().to_vec()),
        _ => input.store.get(d).map_err(|source| SiteError::Store {
            what: format!("object {d} (copied to {})", paths::object(d)),
            source,
        }),
    }
}

/// [`render_each`], with the stored objects handed to `objects` and the downloads to
/// `streams` instead of `sink`.
///
/// The objects depend on the input alone, so one thread places them from the start, while
/// the context is derived (on one core) and the pages are rendered.
pub fn render_each_placing(
    input: &SiteInput,
    sink: &Sink<'_>,
    objects: &ObjectSink<'_>,
    streams: &StreamSink<'_>,
) -> Result<usize, SiteError> {
    let stored = context::objects(input);
    let listed: Vec<Digest> = stored.iter().copied().collect();
    std::thread::scope(|s| {
        let placed = s.spawn(|| -> Result<usize, SiteError> {
            for d in &listed {
                objects(paths::object(d), d, input.was_verified(d))?;
            }
            Ok(listed.len())
        });
        let rendered = Context::with_objects(input, stored).and_then(|ctx| {
            let ctx = &ctx;
            std::thread::scope(|s| {
                let many = s.spawn(|| render_records_and_blobs(ctx, sink));
                let few = render_site_pages(ctx, sink, streams);
                let many = many.join().unwrap_or_else(|_| {
                    Err(SiteError::Internal("a render thread panicked".into()))
                });
                Ok(few? + many?)
            })
        });
        let placed = placed
            .join()
            .unwrap_or_else(|_| Err(SiteError::Internal("the object thread panicked".into())));
        Ok(rendered? + placed?)
    })
}

/// Every page but the records' and the shared blobs'; returns how many files.
fn render_site_pages(
    ctx: &Context<'_>,
    sink: &Sink<'_>,
    streams: &StreamSink<'_>,
) -> Result<usize, SiteError> {
    use pages::*;
    let input = ctx.input;
    let mut count = 0usize;
    let mut emit = |path: String, bytes: Vec<u8>| -> Result<(), SiteError> {
        count += 1;
        sink(path, bytes)
    };
    emit(paths::STYLE.into(), STYLE_CSS.as_bytes().to_vec())?;
    emit(paths::SCRIPT.into(), SITE_JS.as_bytes().to_vec())?;
    emit(paths::FAVICON.into(), FAVICON_SVG.as_bytes().to_vec())?;
    // GitHub Pages: serve files as they are (no Jekyll).
    emit(".nojekyll".into(), Vec::new())?;

    let mut tables = Vec::new();
    let mut downloads = Vec::new();
    let mut streamed = 0usize;
    data::tables(ctx, |mut t| {
        let sizes = data::files(&mut t, streams)?;
        streamed += sizes.len();
        downloads.push(sizes);
        // The data page needs its rows and columns, not its frame.
        t.frame = polars::prelude::DataFrame::empty();
        tables.push(t);
        Ok(())
    })?;
    let bundled: Vec<&input::LoadedRun> = input
        .runs
        .iter()
        .filter(|r| r.run.record_digests.len() <= MAX_BUNDLED_RECORDS)
        .collect();
    let bundles = input::parallel_map(&bundled, |r| {
        let path = paths::run_bundle(&r.digest);
        let b = crate::bundle::run_bundle(
            &input.store,
            &input.manifest,
            &input.manifest_name,
            &r.digest,
            &r.run.name,
            std::path::Path::new(&path),
        )
        .map_err(|source| SiteError::Bundle {
            run: r.digest,
            name: r.run.name.clone(),
            source: Box::new(source),
        })?;
        Ok((r.digest, path, b))
    })?;
    let mut bundle_facts = Vec::with_capacity(bundles.len());
    for (run, path, b) in bundles {
        bundle_facts.push(downloads::BundleFile {
            run,
            digest: Digest::of(&b.bytes),
            bytes: b.bytes.len() as u64,
            objects: b.summary.objects,
            manifest_entry: b.summary.manifest_entry,
            path: path.clone(),
        });
        emit(path, b.bytes)?;
    }
    // A run too large to bundle here gets the manifest that bundles it.
    for r in input
        .runs
        .iter()
        .filter(|r| r.run.record_digests.len() > MAX_BUNDLED_RECORDS)
    {
        let (name, text) = crate::bundle::run_manifest(
            &input.manifest,
            &input.manifest_name,
            &r.digest,
            &r.run.name,
        )
        .map_err(|source| SiteError::Bundle {
            run: r.digest,
            name: r.run.name.clone(),
            source: Box::new(source),
        })?;
        emit(format!("data/bundles/{name}"), text.into_bytes())?;
    }
    let v = downloads::view(ctx, &tables, &downloads, &bundle_facts);
    let page = Page::new(ctx, paths::DATA, "Data");
    emit(
        paths::DATA.into(),
        html(&downloads::DataPage { page: &page, v: &v }, paths::DATA)?,
    )?;

    for arch in &ctx.archs {
        let mut drawn: Vec<plots::Plot> = Vec::new();
        for panel in plots::panels(ctx, arch) {
            let plots = [
                plots::best_speedup_per_task(ctx, &panel)?,
                plots::fast_p_curves_plot(ctx, &panel)?,
                plots::rates_by_turn_limit(ctx, &panel)?,
                plots::speedup_by_release_date(ctx, &panel)?,
                plots::speedup_distribution(ctx, &panel)?,
            ];
            drawn.extend(plots.into_iter().flatten().map(|mut p| {
                p.note = [std::mem::take(&mut p.note), panel.note()]
                    .into_iter()
                    .filter(|n| !n.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ");
                p
            }));
        }
        for p in &drawn {
            emit(paths::plot(&p.name), p.svg.as_str().as_bytes().to_vec())?;
        }
        let path = paths::arch(arch);
        let v = arch::view(ctx, arch, &drawn);
        let page = Page::new(ctx, &path, format!("{arch} leaderboard"));
        emit(
            path.clone(),
            html(&arch::ArchPage { page: &page, v: &v }, &path)?,
        )?;
    }
    // The repository's kernel sources of the records' nvcc-made PTX, once each.
    let mut published = std::collections::BTreeSet::new();
    for r in &ctx.input.records {
        if r.record.kernel_source_digest.is_some() {
            continue;
        }
        for f in ctx
            .input
            .sources
            .of(r.record.ptx_digest)
            .map(|s| s.files.as_slice())
            .unwrap_or_default()
        {
            if published.insert(f.digest) {
                emit(paths::source_file(&f.digest), f.text.as_bytes().to_vec())?;
            }
        }
    }
    let v = index::view(ctx);
    let page = Page::new(ctx, paths::INDEX, "Overview");
    emit(
        paths::INDEX.into(),
        html(&index::IndexPage { page: &page, v: &v }, paths::INDEX)?,
    )?;

    let v = methodology::view(ctx)?;
    let page = Page::new(ctx, paths::METHODOLOGY, "Methodology");
    emit(
        paths::METHODOLOGY.into(),
        html(
            &methodology::MethodologyPage { page: &page, v: &v },
            paths::METHODOLOGY,
        )?,
    )?;

    let v = harness::view(ctx);
    let page = Page::new(ctx, paths::HARNESS_TESTS, "Harness tests");
    emit(
        paths::HARNESS_TESTS.into(),
        html(
            &harness::HarnessPage { page: &page, v: &v },
            paths::HARNESS_TESTS,
        )?,
    )?;
    for e in ctx.entries.values() {
        let path = paths::entry(&e.slug);
        let v = entry::view(ctx, e);
        let page = Page::new(ctx, &path, e.display_name.clone());
        emit(
            path.clone(),
            html(&entry::EntryPage { page: &page, v: &v }, &path)?,
        )?;
    }
    for t in &ctx.tasks {
        let path = paths::task(t);
        let v = task::view(ctx, t);
        let page = Page::new(ctx, &path, format!("Task {t}"));
        emit(
            path.clone(),
            html(&task::TaskPage { page: &page, v: &v }, &path)?,
        )?;
    }

    for (i, r) in input.runs.iter().enumerate() {
        let path = paths::run(&r.digest);
        let v = run::view(ctx, i);
        let page = Page::new(ctx, &path, format!("Run {}", r.run.name));
        emit(
            path.clone(),
            html(&run::RunPage { page: &page, v: &v }, &path)?,
        )?;
    }
    Ok(count + streamed)
}

/// The record, shared-blob and trajectory pages, on all cores; returns how many files.
fn render_records_and_blobs(ctx: &Context<'_>, sink: &Sink<'_>) -> Result<usize, SiteError> {
    use pages::*;
    let input = ctx.input;
    let indices: Vec<usize> = (0..input.records.len()).collect();
    let rendered = input::parallel_map(&indices, |&i| {
        let r = &input.records[i];
        let path = paths::record(&r.digest);
        let v = record::view(ctx, i);
        let page = Page::new(
            ctx,
            &path,
            format!(
                "Record {} · {} · {}",
                r.digest.short(12),
                r.record.entry,
                r.record.task
            ),
        );
        let bytes = html(&record::RecordPage { page: &page, v: &v }, &path)?;
        sink(path, bytes)?;
        Ok(())
    })?;
    let shared: Vec<Digest> = ctx.shared_blobs.keys().copied().collect();
    let blobs = input::parallel_map(&shared, |d| {
        let path = paths::blob(d);
        let v = blob::view(ctx, d);
        let page = Page::new(ctx, &path, format!("Blob {}", d.short(12)));
        sink(
            path.clone(),
            html(&blob::BlobPage { page: &page, v: &v }, &path)?,
        )
    })?;
    let trajectories = input::parallel_map(&ctx.trajectories.all, |t| {
        let path = paths::trajectory(&t.root);
        let v = trajectory::view(ctx, t);
        let page = Page::new(
            ctx,
            &path,
            format!("Trajectory {} · {}", t.root.short(12), v.title),
        );
        sink(
            path.clone(),
            html(&trajectory::TrajectoryPage { page: &page, v: &v }, &path)?,
        )
    })?;
    Ok(rendered.len() + blobs.len() + trajectories.len())
}

/// The largest run (in records) the site bundles; a larger run's bundle is left to
/// `ptxbench bundle` (the data page says so and gives the command): a bundle is about a third
/// of its closure, and 10,000 records make a zip of some 30 MB that takes a few seconds to
/// compress.
pub const MAX_BUNDLED_RECORDS: usize = 10_000;

/// The results table as CSV, for download.
pub const DATA_CSV: &str = "data/results.csv";
/// Every record of the site, one line each, for download (pages list at most
/// [`pages::record::MAX_LISTED`]).
pub const DATA_RECORDS_CSV: &str = "data/records.csv";
