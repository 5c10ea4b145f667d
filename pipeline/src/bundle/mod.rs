//! Bundles: a manifest and its whole closure in one zip ([`write_bundle`]), and importing one
//! safely ([`import_bundle`], in [`import`]).
//!
//! A bundle holds `artifacts/v1/blake3/ab/cd/<hex>` for every object of the closure and
//! `manifests/<name>.yaml`, nothing else. [`write_bundle`] is deterministic: entries sorted by
//! name, fixed timestamps (1980-01-01), fixed permissions (0644), deflate at a fixed level, no
//! extra fields, so the same manifest and store give byte-identical zips. It refuses to bundle
//! an incomplete closure, and writes the zip through a locked temp file and a rename
//! ([`crate::destination`]: an output that is not a regular file is refused; the zip gets the
//! permissions of any new file; temp files of a killed earlier bundle beside it are swept).
//!
//! This module sits above both [`crate::store`] and [`crate::manifest`]: the store knows nothing
//! of manifests.

pub mod import;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use zip::write::SimpleFileOptions;

use crate::destination::{DestinationError, FirstError};
use crate::manifest::{Manifest, ManifestError};
use crate::store::closure::{self, Problem};
use crate::store::{Store, StoreError};

pub use import::{ImportError, ImportLimits, ImportSummary, import_bundle, unsafe_name};

/// Prefix of object entries in a bundle.
pub const ARTIFACTS_PREFIX: &str = "artifacts/";
/// Prefix of the manifest entry in a bundle.
pub const MANIFESTS_PREFIX: &str = "manifests/";
/// Name prefix of the temp file a bundle is written to.
const TEMP_PREFIX: &str = ".bundle-";

/// What a bundle holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleSummary {
    pub objects: usize,
    pub bytes: u64,
    pub manifest_entry: String,
}

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error(transparent)]
    Destination(#[from] crate::destination::DestinationError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: zip entry `{entry}`: {source}")]
    Zip {
        path: PathBuf,
        entry: String,
        #[source]
        source: zip::result::ZipError,
    },
    #[error(
        "{path}: the manifest file name must be letters, digits, `.`, `_` or `-` and end in .yaml"
    )]
    ManifestName { path: PathBuf },
    #[error("run {run}: cannot write its manifest: {message}")]
    RunManifest {
        run: crate::digest::Digest,
        message: String,
    },
    #[error("the closure of {manifest} is incomplete ({} problems); `ptxbench verify {manifest}` lists them all:\n{}",
        .problems.len(), first_problems(.problems))]
    Incomplete {
        manifest: PathBuf,
        problems: Vec<Problem>,
    },
}

/// The first [`import::LISTED_AT_MOST`] problems, one a line (with at most as many referrers
/// each), and how many more there are: a run naming 100,000 missing records gives a message of
/// a few kilobytes, not megabytes.
fn first_problems(problems: &[Problem]) -> String {
    let most = import::LISTED_AT_MOST;
    let mut lines: Vec<String> = problems
        .iter()
        .take(most)
        .map(|p| {
            let mut shown = p.clone();
            let more = shown.referrers.len().saturating_sub(most);
            shown.referrers.truncate(most);
            let mut line = shown.to_string();
            if more > 0 {
                line.push_str(&format!("\n    and {more} more referrers"));
            }
            line
        })
        .collect();
    if problems.len() > most {
        lines.push(format!("and {} more", problems.len() - most));
    }
    lines.join("\n")
}

/// Writes the bundle of the manifest at `manifest_path` (its closure in `store`) to `out`.
pub fn write_bundle(
    store: &Store,
    manifest_path: &Path,
    out: &Path,
) -> Result<BundleSummary, BundleError> {
    let io = |path: &Path, source| BundleError::Io {
        path: path.to_path_buf(),
        source,
    };
    let text = fs::read_to_string(manifest_path).map_err(|e| io(manifest_path, e))?;
    let manifest = Manifest::parse(&text, manifest_path)?;
    let file_name = manifest_path
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| manifest_name_ok(n))
        .ok_or_else(|| BundleError::ManifestName {
            path: manifest_path.to_path_buf(),
        })?;
    let closure = closure::closure(store, &manifest.roots(manifest_path));
    if !closure.is_complete() {
        return Err(BundleError::Incomplete {
            manifest: manifest_path.to_path_buf(),
            problems: closure.problems,
        });
    }
    let tmp = crate::destination::temp_for(out, TEMP_PREFIX)?;
    let manifest_entry = format!("{MANIFESTS_PREFIX}{file_name}");
    let buffered = write_zip(
        store,
        &closure.objects,
        &manifest_entry,
        text.as_bytes(),
        std::io::BufWriter::new(tmp),
        out,
    )?;
    let write_failed = |source| {
        BundleError::Destination(DestinationError::Write {
            path: out.to_path_buf(),
            source,
        })
    };
    let tmp = buffered
        .into_inner()
        .map_err(|e| write_failed(e.into_error()))?;
    crate::destination::persist(tmp, out)?;
    Ok(BundleSummary {
        objects: closure.objects.len(),
        bytes: closure.bytes,
        manifest_entry,
    })
}

/// Writes the zip of `objects` (read from `store`) and the manifest entry to `w`, entries in
/// name order with fixed metadata (see the module documentation); `out` names the bundle in
/// errors. Returns the writer.
///
/// The zip goes through a [`FirstError`]: when writing fails (a full disk), the error is the
/// writer's own, naming `out`, and the zip writer's attempt to finish the archive when it
/// drops (which prints its own failure to stderr) writes nothing and so fails at nothing.
fn write_zip<W: Write + std::io::Seek>(
    store: &Store,
    objects: &std::collections::BTreeSet<crate::digest::Digest>,
    manifest_entry: &str,
    manifest_text: &[u8],
    w: W,
    out: &Path,
) -> Result<W, BundleError> {
    let mut zip = zip::ZipWriter::new(FirstError::new(w));
    // On an error `zip` drops here, and its finishing writes nothing more.
    add_entries(&mut zip, store, objects, manifest_entry, manifest_text, out)?;
    let w = zip.finish().map_err(|source| BundleError::Zip {
        path: out.to_path_buf(),
        entry: "(central directory)".into(),
        source,
    })?;
    Ok(w.into_inner())
}

/// Adds the entries of [`write_zip`] to `zip`.
fn add_entries<W: Write + std::io::Seek>(
    zip: &mut zip::ZipWriter<W>,
    store: &Store,
    objects: &std::collections::BTreeSet<crate::digest::Digest>,
    manifest_entry: &str,
    manifest_text: &[u8],
    out: &Path,
) -> Result<(), BundleError> {
    let io = |source| {
        BundleError::Destination(DestinationError::Write {
            path: out.to_path_buf(),
            source,
        })
    };
    let zerr = |entry: &str, source| BundleError::Zip {
        path: out.to_path_buf(),
        entry: entry.to_string(),
        source,
    };
    // Object entry names sort in digest order and all sort before `manifests/`.
    for digest in objects {
        let bytes = store.get(digest)?;
        let name = format!("{ARTIFACTS_PREFIX}{}", Store::relative_path_of(digest));
        zip.start_file(name.as_str(), entry_options(bytes.len() as u64))
            .map_err(|e| zerr(&name, e))?;
        zip.write_all(&bytes).map_err(io)?;
    }
    zip.start_file(manifest_entry, entry_options(manifest_text.len() as u64))
        .map_err(|e| zerr(manifest_entry, e))?;
    zip.write_all(manifest_text).map_err(io)?;
    Ok(())
}

/// The bundle of one run of a manifest, made in memory: the zip's bytes and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunBundle {
    pub bytes: Vec<u8>,
    pub summary: BundleSummary,
}

/// The manifest of a run bundle: `base` with only the run `run` (and `base`'s suites and
/// models), no single records and no reported data; a comment line says where it comes from.
/// Its file name is `run-<first 12 hex digits>.yaml`.
pub fn run_manifest(
    base: &Manifest,
    base_name: &str,
    run: &crate::digest::Digest,
    run_name: &str,
) -> Result<(String, String), BundleError> {
    let file_name = format!("run-{}.yaml", run.short(12));
    let m = Manifest {
        manifest: base.manifest,
        suite: base.suite.clone(),
        runs: vec![*run],
        generations: Vec::new(),
        records: Vec::new(),
        suites: base.suites.clone(),
        reported: Vec::new(),
        models: base.models.clone(),
        site: crate::manifest::SiteOptions {
            title: format!("{} · run {run_name}", base.site.title),
            base_path: base.site.base_path.clone(),
            repository: base.site.repository.clone(),
            paper: None,
            code_release: None,
            citation: None,
            date: base.site.date.clone(),
        },
    };
    let yaml = serde_saphyr::to_string(&m).map_err(|e| BundleError::RunManifest {
        run: *run,
        message: e.to_string(),
    })?;
    // One comment line; names with line breaks never reach it (the run's name is in the title,
    // which the serializer quotes).
    let text = format!(
        "# Run {} of {}, bundled by the site build with its closure.\n{yaml}",
        run.short(12),
        base_name.replace(['\n', '\r'], " ")
    );
    // What an import will read back must be what was meant.
    let path = Path::new(&file_name);
    let parsed = Manifest::parse(&text, path)?;
    if parsed != m {
        return Err(BundleError::RunManifest {
            run: *run,
            message: "the written manifest does not read back as itself".into(),
        });
    }
    Ok((file_name, text))
}

/// The bundle of run `run` (named `run_name`) of manifest `base` (file name `base_name`): the
/// run object, the suites and the whole closure of both, with the manifest of
/// [`run_manifest`], as deterministic as [`write_bundle`]'s. `out` names it in errors.
pub fn run_bundle(
    store: &Store,
    base: &Manifest,
    base_name: &str,
    run: &crate::digest::Digest,
    run_name: &str,
    out: &Path,
) -> Result<RunBundle, BundleError> {
    let (file_name, text) = run_manifest(base, base_name, run, run_name)?;
    let m = Manifest::parse(&text, Path::new(&file_name))?;
    let closure = closure::closure(store, &m.roots(Path::new(&file_name)));
    if !closure.is_complete() {
        return Err(BundleError::Incomplete {
            manifest: PathBuf::from(&file_name),
            problems: closure.problems,
        });
    }
    let manifest_entry = format!("{MANIFESTS_PREFIX}{file_name}");
    let cursor = write_zip(
        store,
        &closure.objects,
        &manifest_entry,
        text.as_bytes(),
        std::io::Cursor::new(Vec::new()),
        out,
    )?;
    Ok(RunBundle {
        bytes: cursor.into_inner(),
        summary: BundleSummary {
            objects: closure.objects.len(),
            bytes: closure.bytes,
            manifest_entry,
        },
    })
}

fn entry_options(len: u64) -> SimpleFileOptions {
    SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(6))
        .last_modified_time(zip::DateTime::DEFAULT)
        .unix_permissions(0o644)
        .large_file(len >= u64::from(u32::MAX))
}

/// The longest manifest file name a bundle may carry (file systems allow 255 bytes; a name
/// they refuse failed the import after its objects were stored).
const MANIFEST_NAME_MAX: usize = 200;

fn manifest_name_ok(name: &str) -> bool {
    name.len() <= MANIFEST_NAME_MAX
        && name.strip_suffix(".yaml").is_some_and(|stem| {
            !stem.is_empty()
                && !stem.starts_with('.')
                && stem
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 55, finding 7: a 300-character manifest name failed the import late, after 72
    /// objects were stored; it is refused with the other entry names, before anything is.
    #[test]
    fn issue_55_a_manifest_name_no_file_system_takes_is_refused_up_front() {
        assert!(manifest_name_ok("leaderboard.yaml"));
        assert!(!manifest_name_ok(&format!("{}.yaml", "a".repeat(300))));
        assert!(manifest_name_ok(&format!("{}.yaml", "a".repeat(195))));
    }

    /// A disk that holds `room` bytes, then fails as a full one does.
    #[derive(Debug)]
    struct Full {
        bytes: std::io::Cursor<Vec<u8>>,
        room: usize,
    }

    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.bytes.get_ref().len() + buf.len() > self.room {
                return Err(std::io::Error::from_raw_os_error(28));
            }
            self.bytes.write(buf)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl std::io::Seek for Full {
        fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
            self.bytes.seek(to)
        }
    }

    #[test]
    fn issue_41_a_full_disk_is_one_error_naming_the_bundle() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().join("artifacts"));
        let objects = (0..20u32)
            .map(|i| store.put(&vec![i as u8; 4096]).expect("put"))
            .collect();
        let full = Full {
            bytes: std::io::Cursor::new(Vec::new()),
            room: 1000,
        };
        let out = Path::new("lb.zip");
        let e = write_zip(&store, &objects, "manifests/m.yaml", b"m", full, out)
            .expect_err("the disk is full");
        let text = e.to_string();
        assert!(
            text.contains("lb.zip") && text.contains("No space left on device"),
            "{text}"
        );
        // What the zip writer does when it drops after the failure (finishing the archive,
        // printing `ZipWriter::drop: ...` if that fails) now succeeds, writing nothing.
        let full = Full {
            bytes: std::io::Cursor::new(Vec::new()),
            room: 100,
        };
        let mut zip = zip::ZipWriter::new(FirstError::new(full));
        let stored =
            SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        zip.start_file("a", stored).expect("start");
        assert!(zip.write_all(&[7u8; 5000]).is_err());
        let mut w = zip
            .finish()
            .expect("finishing after the failure fails at nothing");
        assert_eq!(
            w.take_error().and_then(|e| e.raw_os_error()),
            Some(28),
            "the first error is kept"
        );
    }
}
