//! `ptxbench site [MANIFEST] -o DIR`: build the static leaderboard from a manifest and its
//! store (no GPU, no network). The output folder is replaced as a whole.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context as _;
use clap::Args;

use crate::site::SiteInput;
use crate::site::output::{PAGES_LIMIT_BYTES, write_site};
use crate::store::Store;

/// The manifest `site` and `export` use when none is given.
pub const DEFAULT_MANIFEST: &str = "manifests/leaderboard.yaml";

#[derive(Debug, Args)]
pub struct SiteArgs {
    /// The manifest (default: manifests/leaderboard.yaml here or in the nearest parent).
    pub manifest: Option<PathBuf>,
    /// The output folder; replaced if an earlier build made it, refused if it holds anything else.
    #[arg(short, long, value_name = "DIR", default_value = "public")]
    pub out: PathBuf,
    /// The store folder (default: the `artifacts/` nearest the manifest).
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
}

/// The manifest: the argument, else `manifests/leaderboard.yaml` here or in a parent.
pub fn manifest_path(arg: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(p) = arg {
        return Ok(p);
    }
    let cwd = std::env::current_dir().context("reading the current folder")?;
    cwd.ancestors()
        .map(|d| d.join(DEFAULT_MANIFEST))
        .find(|p| p.is_file())
        .with_context(|| {
            format!(
                "no {DEFAULT_MANIFEST} in {} or its parents; name a manifest",
                cwd.display()
            )
        })
}

/// The store: the flag, else the `artifacts/` nearest the manifest, else nearest here.
pub fn store_for(flag: Option<PathBuf>, manifest: &Path) -> anyhow::Result<Store> {
    if let Some(d) = flag {
        return Ok(Store::open(d));
    }
    let near_manifest = std::path::absolute(manifest)
        .ok()
        .and_then(|m| m.parent().and_then(Store::discover));
    let cwd = std::env::current_dir().context("reading the current folder")?;
    near_manifest
        .or_else(|| Store::discover(&cwd))
        .map(Store::open)
        .with_context(|| {
            format!(
                "no artifacts/ store near {} or {}; pass --store DIR",
                manifest.display(),
                cwd.display()
            )
        })
}

/// Loads the manifest, its store content and the suite.
pub fn load_input(
    manifest: &Path,
    store: Option<PathBuf>,
    tasks_dir: Option<PathBuf>,
) -> anyhow::Result<SiteInput> {
    let store = store_for(store, manifest)?;
    let suite = super::load_suite(tasks_dir)?;
    SiteInput::load(manifest, &store, suite).with_context(|| {
        format!(
            "loading {} from {}",
            manifest.display(),
            store.root().display()
        )
    })
}

pub fn run(a: SiteArgs, tasks_dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let start = Instant::now();
    let manifest = manifest_path(a.manifest)?;
    // Refused before anything is loaded: an output inside a store.
    if let Some(store) = crate::destination::store_containing(crate::destination::folder_of(&a.out))
    {
        anyhow::bail!(
            "{} is inside the store {}, whose files only the store writes; choose a folder outside it",
            a.out.display(),
            store.display()
        );
    }
    let input = load_input(&manifest, a.store, tasks_dir)?;
    let loaded = start.elapsed();
    let written = write_site(&input, &a.out)
        .with_context(|| format!("building the site into {}", a.out.display()))?;
    eprintln!(
        "wrote {} files ({:.1} MB) to {} from {} ({} records, {} reported data sets) in {:.2} s (loading {:.2} s); peak memory {}",
        written.files,
        written.bytes as f64 / 1e6,
        a.out.display(),
        manifest.display(),
        input.records.len(),
        input.reported.len(),
        start.elapsed().as_secs_f64(),
        loaded.as_secs_f64(),
        crate::peak_memory::peak_resident_text()
    );
    // The process ends next, which returns all its memory at once: freeing the loaded records
    // one allocation at a time first would only add serial work at the end of every build.
    std::mem::forget(input);
    if let Some(w) = pages_warning(written.bytes) {
        eprintln!("{w}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The warning for a site too large for GitHub Pages, if it is.
fn pages_warning(bytes: u64) -> Option<String> {
    (bytes > PAGES_LIMIT_BYTES).then(|| {
        format!(
            "warning: the site is {:.2} GB; GitHub Pages publishes a site of at most {:.0} GB, so a Pages deployment of this folder will fail",
            bytes as f64 / 1e9,
            PAGES_LIMIT_BYTES as f64 / 1e9
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_over_the_pages_limit_is_warned_about() {
        assert_eq!(pages_warning(PAGES_LIMIT_BYTES), None);
        let w = pages_warning(3_500_000_000).expect("warned");
        assert!(w.contains("3.50 GB") && w.contains("at most 1 GB"), "{w}");
    }
}
