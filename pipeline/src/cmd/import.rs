//! `ptxbench import FILE.zip` (a bundle: every hash and path checked before anything lands) and
//! `ptxbench import-reported DIR` (a folder of published files, stored byte-for-byte as
//! reported data).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::bundle::{ImportLimits, import_bundle};
use crate::store::reported::{PAPER_SOURCE, ReportedData, import_reported};

use super::verify::StoreArgs;

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The bundle to import.
    pub bundle: PathBuf,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Where to write the bundle's manifest (default: `manifests/` beside the store folder).
    #[arg(long, value_name = "DIR")]
    pub manifests: Option<PathBuf>,
}

pub fn run(a: ImportArgs) -> anyhow::Result<ExitCode> {
    let store = a.store.open()?;
    let manifests = match a.manifests {
        Some(d) => d,
        None => store
            .root()
            .parent()
            .map(|p| p.join("manifests"))
            .context("the store folder has no parent; pass --manifests DIR")?,
    };
    let s = import_bundle(&store, &manifests, &a.bundle, &ImportLimits::default())?;
    if s.swept > 0 {
        eprintln!(
            "removed {} temp files that interrupted writes had left in {}",
            s.swept,
            store.temp_dir().display()
        );
    }
    for d in &s.repaired {
        eprintln!(
            "repaired {d}: the stored copy did not hash to its name; replaced by the bundle's"
        );
    }
    if let Some(first) = s.skipped.first() {
        eprintln!(
            "skipped {} entries that the manifest's closure does not reference (not imported; the first: {first})",
            s.skipped.len()
        );
    }
    println!(
        "imported {}: {} objects ({} new, repaired {} objects, {} bytes), manifest {}",
        a.bundle.display(),
        s.objects,
        s.new_objects,
        s.repaired.len(),
        s.bytes,
        s.manifest.display()
    );
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct ImportReportedArgs {
    /// The folder of published files (e.g. a checkout of the paper's data).
    pub dir: PathBuf,
    /// The source name recorded in the import object.
    #[arg(long, default_value = PAPER_SOURCE)]
    pub source: String,
    #[command(flatten)]
    pub store: StoreArgs,
}

pub fn run_reported(a: ImportReportedArgs) -> anyhow::Result<ExitCode> {
    let store = a.store.open()?;
    let digest = import_reported(&store, &a.dir, &a.source)
        .with_context(|| format!("importing {}", a.dir.display()))?;
    let data = ReportedData::load(&store, &digest)?;
    let results = data.results().map(|r| r.len()).unwrap_or(0);
    println!(
        "import {digest} (REPORTED: {}): {} files, {} CSV tables, {results} result rows",
        data.source,
        data.files.len(),
        data.tables.len()
    );
    println!("reference it from a manifest under `reported:` as import_digest: \"{digest}\"");
    Ok(ExitCode::SUCCESS)
}
