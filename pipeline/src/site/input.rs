//! Loading what a site shows: a manifest's runs and records, the text blobs the records name,
//! and its reported data, every byte read through the store (so re-hashed), plus the task
//! suite. Anything missing, corrupt or of the wrong kind is an error naming its digest and
//! where the manifest or a run refers to it: a published number always has its evidence.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::digest::{Digest, DigestMap};
use crate::manifest::Manifest;
use crate::store::reported::ReportedData;
use crate::store::{Store, StoreError};
use crate::task::Suite;

use super::SiteError;
use super::blob_kind::text_blobs;
use crate::record::{self, Record, RecordError, RunObject, SUITE_SCHEMA, SuiteObject};

/// Everything a site is rendered from. Records are unique and sorted by digest; runs are in
/// manifest order.
#[derive(Debug, Clone)]
pub struct SiteInput {
    pub manifest: Manifest,
    /// The manifest's file name (pages never show paths of the building machine).
    pub manifest_name: String,
    /// blake3 of the manifest file.
    pub manifest_digest: Digest,
    pub suite: Suite,
    pub runs: Vec<LoadedRun>,
    pub records: Vec<LoadedRecord>,
    pub reported: Vec<LoadedReported>,
    /// Blobs named by records, by digest (looked up, never iterated: a page build looks up
    /// several per record).
    pub blobs: DigestMap<Blob>,
    /// The suite objects records name (`suite_digest`), by suite hash.
    pub suites: BTreeMap<Digest, SuiteObject>,
    /// The digests of the suite objects loaded (re-hashed) into `suites`.
    pub suite_objects: BTreeSet<Digest>,
    /// The store it was read from: the site copies the objects it names, byte for byte, from
    /// there (they are read, and re-hashed, as they are written, not held in memory); the run
    /// bundles are made from it too.
    pub store: Store,
    /// The sources of the repository's nvcc-made PTX ([`super::sources`]), found beside the
    /// suite's folder.
    pub sources: super::sources::KernelSources,
}

#[derive(Debug, Clone)]
pub struct LoadedRun {
    pub digest: Digest,
    pub run: RunObject,
}

#[derive(Debug, Clone)]
pub struct LoadedRecord {
    pub digest: Digest,
    pub record: Record,
    /// Indices into [`SiteInput::runs`] of the runs that list it.
    pub runs: Vec<usize>,
    /// The size of its stored bytes.
    pub bytes: u64,
}

#[derive(Debug, Clone)]
pub struct LoadedReported {
    pub label: String,
    pub data: ReportedData,
}

/// A blob's content as pages show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blob {
    Text(String),
    /// Not UTF-8 (a cubin): only its size is shown.
    Binary {
        bytes: u64,
    },
}

/// Where a record was named, for error messages.
fn record_origin(manifest_name: &str, runs: &[LoadedRun], rec_runs: &[usize]) -> String {
    match rec_runs.first().and_then(|&i| runs.get(i)) {
        Some(run) => format!("listed by run {} ({})", run.digest, run.run.name),
        None => format!("listed in {manifest_name} `records`"),
    }
}

impl SiteInput {
    /// Reads the manifest at `manifest_path`, then everything it names from `store`.
    pub fn load(manifest_path: &Path, store: &Store, suite: Suite) -> Result<SiteInput, SiteError> {
        let bytes = std::fs::read(manifest_path).map_err(|source| SiteError::Io {
            path: manifest_path.to_path_buf(),
            source,
        })?;
        let text = String::from_utf8(bytes).map_err(|_| SiteError::Manifest {
            message: format!("{}: not UTF-8", manifest_path.display()),
        })?;
        let manifest = Manifest::parse(&text, manifest_path).map_err(|e| SiteError::Manifest {
            message: e.to_string(),
        })?;
        let manifest_name = manifest_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "manifest".to_string());
        SiteInput::from_manifest(
            manifest,
            manifest_name,
            Digest::of(text.as_bytes()),
            store,
            suite,
        )
    }

    /// Loads everything `manifest` names from `store`.
    pub fn from_manifest(
        manifest: Manifest,
        manifest_name: String,
        manifest_digest: Digest,
        store: &Store,
        suite: Suite,
    ) -> Result<SiteInput, SiteError> {
        let listed = manifest
            .listed_runs(store)
            .map_err(|e| SiteError::Manifest {
                message: format!("{manifest_name}: {e}"),
            })?;
        let mut runs = Vec::with_capacity(listed.len());
        for l in &listed {
            let d = &l.digest;
            let what = || format!("run {d} ({manifest_name} `{}`)", l.field);
            let run = record::load_run(store, d).map_err(|source| SiteError::Record {
                what: what(),
                source,
            })?;
            runs.push(LoadedRun { digest: *d, run });
        }

        let mut wanted: BTreeMap<Digest, Vec<usize>> = BTreeMap::new();
        for (i, run) in runs.iter().enumerate() {
            for d in &run.run.record_digests {
                let v = wanted.entry(*d).or_default();
                if !v.contains(&i) {
                    v.push(i);
                }
            }
        }
        for d in &manifest.records {
            wanted.entry(*d).or_default();
        }
        let wanted: Vec<(Digest, Vec<usize>)> = wanted.into_iter().collect();
        let what = |digest: &Digest, rec_runs: &[usize]| {
            format!(
                "record {digest} ({})",
                record_origin(&manifest_name, &runs, rec_runs)
            )
        };
        // Every record is read (and re-hashed) first, then all are decoded. From a store on
        // the disk of the site benchmark's 2-core machine, loading 100k records and their
        // blobs took 3.87–4.42 s against 4.49–5.17 s with each thread decoding what it had
        // just read (alternated, `artifacts/evidence/site-bench/floor-2026-12-03.log`), with
        // about 2 s less CPU, likely as reads issued back to back keep the virtual disk busy;
        // a store in memory loads as fast either way. The price is the records' bytes held
        // until decoded (peak memory then 1,050 MiB against 900 MiB). A read error is
        // reported before any decoding error, each the first of its kind in digest order.
        let stored = read_each(
            store,
            &wanted,
            |(digest, _)| digest,
            |(digest, rec_runs), bytes| {
                bytes.map_err(|source| SiteError::Record {
                    what: what(digest, rec_runs),
                    source: source.into(),
                })
            },
        )?;
        let pairs: Vec<_> = wanted.iter().zip(stored).collect();
        let records = parallel_map(&pairs, |((digest, rec_runs), stored)| {
            let record =
                record::decode_record(digest, stored).map_err(|source| SiteError::Record {
                    what: what(digest, rec_runs),
                    source,
                })?;
            Ok(LoadedRecord {
                digest: *digest,
                record,
                runs: rec_runs.clone(),
                bytes: stored.len() as u64,
            })
        })?;
        // The records' bytes go before the blobs are read.
        drop(pairs);

        let mut blob_refs: BTreeMap<Digest, (Digest, &'static str)> = BTreeMap::new();
        for r in &records {
            for (kind, d) in text_blobs(&r.record) {
                blob_refs.entry(d).or_insert((r.digest, kind.field()));
            }
            if let Some(d) = r.record.cubin_digest {
                blob_refs.entry(d).or_insert((r.digest, "cubin_digest"));
            }
        }
        let blob_refs: Vec<(Digest, (Digest, &'static str))> = blob_refs.into_iter().collect();
        let blob_list = read_each(
            store,
            &blob_refs,
            |(d, _)| d,
            |(d, (record, field)), bytes| {
                let bytes = bytes.map_err(|source| SiteError::Store {
                    what: format!("blob {d} (record {record} field `{field}`)"),
                    source,
                })?;
                let len = bytes.len() as u64;
                Ok((
                    *d,
                    match String::from_utf8(bytes) {
                        Ok(s) => Blob::Text(s),
                        Err(_) => Blob::Binary { bytes: len },
                    },
                ))
            },
        )?;
        let blobs: DigestMap<Blob> = blob_list.into_iter().collect();

        let mut suites = BTreeMap::new();
        let mut named: BTreeMap<Digest, String> = records
            .iter()
            .filter_map(|r| {
                let by = format!("record {} field `suite_digest`", r.digest);
                r.record.suite_digest.map(|d| (d, by))
            })
            .collect();
        for (i, d) in manifest.suites.iter().enumerate() {
            named.insert(*d, format!("{manifest_name} `suites[{i}]`"));
        }
        let mut suite_objects = BTreeSet::new();
        for (d, by) in named {
            let suite = load_suite_object(store, &d, &by)?;
            suite_objects.insert(d);
            suites.entry(suite.suite_hash).or_insert(suite);
        }

        let mut reported = Vec::with_capacity(manifest.reported.len());
        let mut seen = BTreeSet::new();
        for r in &manifest.reported {
            if !seen.insert(r.import_digest) {
                continue;
            }
            let data = ReportedData::load(store, &r.import_digest).map_err(|source| {
                SiteError::Reported {
                    label: r.label.clone(),
                    digest: r.import_digest,
                    source: Box::new(source),
                }
            })?;
            reported.push(LoadedReported {
                label: r.label.clone(),
                data,
            });
        }
        let sources = super::sources::KernelSources::load(
            suite.dir.parent().unwrap_or_else(|| Path::new(".")),
        )?;
        Ok(SiteInput {
            sources,
            manifest,
            manifest_name,
            manifest_digest,
            suite,
            runs,
            records,
            reported,
            blobs,
            suites,
            suite_objects,
            store: store.clone(),
        })
    }
}

impl SiteInput {
    /// The size of object `d` where loading read it (a record or a blob a record names).
    pub fn loaded_len(&self, d: &Digest) -> Option<u64> {
        match self.blobs.get(d) {
            Some(Blob::Text(t)) => Some(t.len() as u64),
            Some(Blob::Binary { bytes }) => Some(*bytes),
            None => self
                .records
                .binary_search_by(|r| r.digest.cmp(d))
                .ok()
                .map(|i| self.records[i].bytes),
        }
    }

    /// Whether loading read object `d` and checked that it hashes to its name: a record, a
    /// run, a blob a record names, or a suite object.
    pub fn was_verified(&self, d: &Digest) -> bool {
        self.blobs.contains_key(d)
            || self.records.binary_search_by(|r| r.digest.cmp(d)).is_ok()
            || self.runs.iter().any(|r| r.digest == *d)
            || self.suite_objects.contains(d)
    }
}

/// The suite object `d` named `by` (re-hashed; its task objects are left to `verify`, pages
/// need only the version).
fn load_suite_object(store: &Store, d: &Digest, by: &str) -> Result<SuiteObject, SiteError> {
    let what = || format!("suite object {d} ({by})");
    let bytes = store.get(d).map_err(|source| SiteError::Store {
        what: what(),
        source,
    })?;
    match record::decode_object(d, &bytes) {
        Some(Ok(record::Decoded::Suite(s))) => Ok(s),
        Some(Err(source)) => Err(SiteError::Record {
            what: what(),
            source,
        }),
        _ => Err(SiteError::Record {
            what: what(),
            source: RecordError::WrongSchema {
                digest: *d,
                found: "another kind of object".into(),
                expected: SUITE_SCHEMA,
            },
        }),
    }
}

/// Reads of the store kept in flight while loading: reading is mostly waiting when the store
/// is not in memory (188,442 small reads for a 100k-record site), so what matters is how many
/// reads the disk is given at once, not the cores. On a 2-core virtual machine 32 loaded a
/// 100k-record store from its disk in 3.95 s mean against 4.39 s with 8.
const READS_IN_FLIGHT: usize = 32;

/// Store files read ahead together by a reading thread (see [`Store::get_many`]): each holds
/// a file open, so a load holds at most [`READS_IN_FLIGHT`] times as many, well under the
/// usual limit of 1,024 open files a process. From the disk of the site benchmark's 2-core
/// machine, a 100k-record store loaded in 3.10–3.60 s this way against 3.79–4.27 s a file at
/// a time, cold; from memory it costs 0.10–0.15 s more, an advice call per file
/// (`artifacts/evidence/site-bench/read-ahead-2026-12-03.log`).
const READ_AHEAD_FILES: usize = 16;

/// `then` of each of `items` and the bytes (or the error) of the store object it names, in
/// order, read on [`READS_IN_FLIGHT`] threads [`READ_AHEAD_FILES`] at a time; the first error in
/// item order.
fn read_each<T: Sync, U: Send>(
    store: &Store,
    items: &[T],
    digest: impl Fn(&T) -> &Digest + Sync + Send,
    then: impl Fn(&T, Result<Vec<u8>, StoreError>) -> Result<U, SiteError> + Sync + Send,
) -> Result<Vec<U>, SiteError> {
    let blocks: Vec<&[T]> = items.chunks(READ_AHEAD_FILES).collect();
    let read = |block: &&[T]| {
        let digests: Vec<Digest> = block.iter().map(|i| *digest(i)).collect();
        store
            .get_many(&digests)
            .into_iter()
            .zip(*block)
            .map(|(bytes, item)| then(item, bytes))
            .collect::<Result<Vec<U>, SiteError>>()
    };
    // Reading is mostly waiting on the disk, so more reads are kept in flight than there are
    // cores; a pool that cannot be made leaves the reads to the shared one.
    let read = match rayon::ThreadPoolBuilder::new()
        .num_threads(READS_IN_FLIGHT)
        .build()
    {
        Ok(pool) => pool.install(|| parallel_map(&blocks, read))?,
        Err(_) => parallel_map(&blocks, read)?,
    };
    Ok(read.into_iter().flatten().collect())
}

/// Maps `f` over `items` on rayon's threads, keeping the order; the first error (in item
/// order) wins, whichever thread met it, so a failing build always names the same thing.
pub(crate) fn parallel_map<T: Sync, U: Send>(
    items: &[T],
    f: impl Fn(&T) -> Result<U, SiteError> + Sync + Send,
) -> Result<Vec<U>, SiteError> {
    use rayon::prelude::*;
    let all: Vec<Result<U, SiteError>> = items.par_iter().map(f).collect();
    all.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_each_keeps_order_and_reports_the_first_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path());
        // Enough blocks of files for the reads to go to threads.
        let mut digests: Vec<Digest> = (0..2000)
            .map(|i| store.put(format!("blob {i}").as_bytes()).expect("put"))
            .collect();
        let len = |_: &Digest, bytes: Result<Vec<u8>, StoreError>| {
            bytes.map(|b| b.len()).map_err(|source| SiteError::Store {
                what: "blob".into(),
                source,
            })
        };
        let lens = read_each(&store, &digests, |d| d, len).expect("all stored");
        let expected: Vec<usize> = (0..2000).map(|i| format!("blob {i}").len()).collect();
        assert_eq!(lens, expected);
        // Two objects that are not there, in different blocks: the first in item order is
        // reported, whichever thread reads it.
        let (first, second) = (Digest::of(b"missing 1"), Digest::of(b"missing 2"));
        digests[1000] = first;
        digests[1701] = second;
        for _ in 0..10 {
            match read_each(&store, &digests, |d| d, len) {
                Err(SiteError::Store {
                    source: StoreError::Missing { digest, .. },
                    ..
                }) => assert_eq!(digest, first),
                other => panic!("expected object {first} missing, got {other:?}"),
            }
        }
    }

    #[test]
    fn parallel_map_keeps_order_and_reports_the_first_error() {
        let items: Vec<usize> = (0..10_000).collect();
        let doubled = parallel_map(&items, |&i| Ok(2 * i)).expect("no error");
        assert_eq!(doubled, items.iter().map(|i| 2 * i).collect::<Vec<_>>());
        // Items of very different cost, so blocks finish out of order.
        let slow = parallel_map(&items, |&i| {
            if i % 997 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            Ok(i)
        })
        .expect("no error");
        assert_eq!(slow, items);
        for bad in [0, 1, 5_000, 9_999] {
            let r = parallel_map(&items, |&i| {
                if i >= bad && i % 2 == bad % 2 {
                    Err(SiteError::Internal(format!("item {i}")))
                } else {
                    Ok(i)
                }
            });
            match r {
                Err(SiteError::Internal(m)) => assert_eq!(m, format!("item {bad}")),
                other => panic!("expected the error of item {bad}, got {other:?}"),
            }
        }
        assert_eq!(
            parallel_map(&items[..3], |&i| Ok(i)).expect("few"),
            vec![0, 1, 2]
        );
    }
}
