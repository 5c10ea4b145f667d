//! Importing a bundle: every hash, size and path checked before anything lands; only the
//! manifest's closure is stored; a stored copy that does not hash to its name is repaired.
//!
//! [`import_bundle`] reads the archive twice. The first pass checks everything and writes
//! nothing: entry count, archive and entry sizes, compression ratio (zip bombs), names
//! (absolute, `..`, backslashes, anything outside the two forms of [`super`]), symlinks,
//! directories, encryption, duplicate names, that every entry's bytes hash to its name and match
//! its declared size, that the manifest is within [`MANIFEST_LIMIT`] and parses, that its
//! closure is complete within the bundle and the store, that each root is an object of the kind
//! the manifest names it as (a run under `runs`, ...), and that every record, run, task and suite
//! object of the closure decodes. Every typed object is parsed for its references whatever its
//! size (up to the entry limit, [`ImportLimits::max_entry_bytes`]); only plain blobs are hashed
//! as a stream. Entries that the manifest's closure
//! does not reach are skipped (and counted), never stored. The second pass streams each closure
//! object into the store (children before parents), each re-hashed against its name, so an
//! object is never replaced by other bytes; a stored copy whose bytes do not hash to its name
//! is replaced by the verified incoming bytes (and counted as repaired). Then the manifest is
//! written, refusing to replace a different manifest of the same name. Every error names the
//! archive and, where there is one, the entry.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use zip::ZipArchive;

use super::{ARTIFACTS_PREFIX, MANIFESTS_PREFIX, manifest_name_ok};
use crate::digest::Digest;
use crate::manifest::{Manifest, ManifestError};
use crate::store::object::{self, ObjectKind, Reference};
use crate::store::{Store, StoreError};

/// The most incomplete references, wrong roots or undecodable objects an error lists by name
/// (the rest are counted): a run naming 100,000 missing records gives a readable message.
pub const LISTED_AT_MOST: usize = 20;
/// The largest manifest entry read (a manifest lists digests; 16 MiB is ~200,000 of them).
pub const MANIFEST_LIMIT: u64 = 16 << 20;
/// Name prefix of the temp file a manifest is written to.
const MANIFEST_TEMP_PREFIX: &str = ".manifest-";

/// Limits an import enforces before reading any content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportLimits {
    /// Size of the zip file itself.
    pub max_archive_bytes: u64,
    pub max_entries: usize,
    /// Uncompressed size of one entry.
    pub max_entry_bytes: u64,
    /// Uncompressed size of all entries together.
    pub max_total_bytes: u64,
    /// Largest uncompressed / compressed ratio, checked for entries above `ratio_floor_bytes`.
    pub max_ratio: u64,
    pub ratio_floor_bytes: u64,
}

impl Default for ImportLimits {
    fn default() -> ImportLimits {
        ImportLimits {
            max_archive_bytes: 16 << 30,
            max_entries: 1_000_000,
            max_entry_bytes: 2 << 30,
            max_total_bytes: 32 << 30,
            max_ratio: 100,
            ratio_floor_bytes: 1 << 20,
        }
    }
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportSummary {
    /// Where the manifest was written.
    pub manifest: PathBuf,
    /// Objects of the manifest's closure in the bundle.
    pub objects: usize,
    /// Objects that were not in the store before.
    pub new_objects: usize,
    /// Stored objects whose bytes did not hash to their name, replaced by the bundle's.
    pub repaired: Vec<Digest>,
    /// Entries the manifest's closure does not reach: not imported.
    pub skipped: Vec<Digest>,
    /// Temp files of killed earlier writers removed from the store first.
    pub swept: usize,
    pub bytes: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a readable zip: {source}")]
    Zip {
        path: PathBuf,
        #[source]
        source: zip::result::ZipError,
    },
    #[error("{path}: entry `{name}`: {source}")]
    EntryZip {
        path: PathBuf,
        name: String,
        #[source]
        source: zip::result::ZipError,
    },
    #[error("{path}: entry `{name}`: {source}")]
    EntryIo {
        path: PathBuf,
        name: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: entry `{name}`: {source}")]
    EntryStore {
        path: PathBuf,
        name: String,
        #[source]
        source: Box<StoreError>,
    },
    #[error("{path}: the archive is {size} bytes, over the limit of {limit}")]
    ArchiveTooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    #[error("{path}: {count} entries, over the limit of {limit}")]
    TooManyEntries {
        path: PathBuf,
        count: usize,
        limit: usize,
    },
    #[error("{path}: the archive has duplicate entry names")]
    DuplicateNames { path: PathBuf },
    #[error("{path}: entry `{name}`: unsafe name ({reason})")]
    UnsafeName {
        path: PathBuf,
        name: String,
        reason: &'static str,
    },
    #[error("{path}: entry `{name}` is a symbolic link")]
    Symlink { path: PathBuf, name: String },
    #[error("{path}: entry `{name}` is encrypted")]
    Encrypted { path: PathBuf, name: String },
    #[error(
        "{path}: entry `{name}` is not an object (artifacts/v1/blake3/ab/cd/<hex>) or a manifest (manifests/<name>.yaml)"
    )]
    UnexpectedEntry { path: PathBuf, name: String },
    #[error("{path}: entry `{name}` is {size} bytes, over the limit of {limit}")]
    EntryTooLarge {
        path: PathBuf,
        name: String,
        size: u64,
        limit: u64,
    },
    #[error(
        "{path}: manifest entry `{name}` is {} bytes, over the manifest size cap of {limit} bytes",
        .size.map_or_else(|| "more than that".to_string(), |s| s.to_string())
    )]
    ManifestTooLarge {
        path: PathBuf,
        name: String,
        /// The declared size (`None`: it declared less, but held more than the cap).
        size: Option<u64>,
        limit: u64,
    },
    #[error("{path}: entries total {size} bytes uncompressed, over the limit of {limit}")]
    TotalTooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    #[error(
        "{path}: entry `{name}` expands {size} bytes from {compressed} (ratio over {limit}): refusing a possible zip bomb"
    )]
    CompressionRatio {
        path: PathBuf,
        name: String,
        size: u64,
        compressed: u64,
        limit: u64,
    },
    #[error("{path}: entry `{name}` declares {declared} bytes but holds {actual}")]
    SizeMismatch {
        path: PathBuf,
        name: String,
        declared: u64,
        actual: u64,
    },
    #[error("{path}: entry `{name}` does not match its name: its content hashes to {actual}")]
    HashMismatch {
        path: PathBuf,
        name: String,
        actual: Digest,
    },
    #[error("{path}: entry `{name}` is a malformed object: {message}")]
    Malformed {
        path: PathBuf,
        name: String,
        message: String,
    },
    #[error("{path}: the bundle holds {count} manifests; exactly one is expected")]
    ManifestCount { path: PathBuf, count: usize },
    #[error("{path}: {source}")]
    Manifest {
        path: PathBuf,
        #[source]
        source: ManifestError,
    },
    #[error("{path}: the closure is incomplete: {} missing: {}", .missing.len(), listed(.missing.iter().map(|(d, who)| format!("{d} (referred to by {who})"))))]
    Incomplete {
        path: PathBuf,
        missing: Vec<(Digest, String)>,
    },
    #[error("{path}: {} manifest root(s) of the wrong kind: {}", .roots.len(), listed(.roots.iter().map(|r| r.to_string())))]
    WrongKind {
        path: PathBuf,
        roots: Vec<WrongRoot>,
    },
    #[error("{path}: {} object(s) that this ptxbench cannot decode: {}", .objects.len(), listed(.objects.iter().map(|(d, e)| format!("{d}: {e}"))))]
    Undecodable {
        path: PathBuf,
        /// Each object and why it does not decode, sorted by digest.
        objects: Vec<(Digest, String)>,
    },
    #[error("{existing} already exists with different content; not replacing it")]
    ManifestConflict { existing: PathBuf },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A manifest root that is not the kind of object the manifest names it as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrongRoot {
    pub digest: Digest,
    /// Where the manifest names it (`manifests/m.yaml: runs[0]`).
    pub label: String,
    pub expected: ObjectKind,
    /// The schema found, or "a plain blob".
    pub found: String,
}

impl std::fmt::Display for WrongRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}) should be a {} object, found {}",
            self.digest, self.label, self.expected, self.found
        )
    }
}

/// The first [`LISTED_AT_MOST`] of `items`, joined by `; `, and how many more there are.
fn listed(items: impl ExactSizeIterator<Item = String>) -> String {
    let more = items.len().saturating_sub(LISTED_AT_MOST);
    let mut out = items.take(LISTED_AT_MOST).collect::<Vec<_>>().join("; ");
    if more > 0 {
        out.push_str(&format!("; and {more} more"));
    }
    out
}

/// One checked entry of the first pass.
struct Entry {
    index: usize,
    name: String,
    size: u64,
    references: Vec<Reference>,
    /// The schema of a typed object (`None`: a plain blob).
    schema: Option<String>,
    /// Why a record, run, task or suite object does not decode, if it does not.
    undecodable: Option<String>,
}

/// Imports the bundle at `zip_path` into `store`, writing its manifest into `manifests_dir`.
pub fn import_bundle(
    store: &Store,
    manifests_dir: &Path,
    zip_path: &Path,
    limits: &ImportLimits,
) -> Result<ImportSummary, ImportError> {
    let path = zip_path.to_path_buf();
    let io = |source| ImportError::Io {
        path: path.clone(),
        source,
    };
    let entry_zip = |name: &str, source| ImportError::EntryZip {
        path: path.clone(),
        name: name.to_string(),
        source,
    };
    let entry_io = |name: &str, source| ImportError::EntryIo {
        path: path.clone(),
        name: name.to_string(),
        source,
    };
    let file = crate::destination::open_regular(zip_path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    if size > limits.max_archive_bytes {
        return Err(ImportError::ArchiveTooLarge {
            path,
            size,
            limit: limits.max_archive_bytes,
        });
    }
    let mut archive =
        ZipArchive::new(std::io::BufReader::new(file)).map_err(|source| ImportError::Zip {
            path: path.clone(),
            source,
        })?;
    if archive.has_duplicate_names() {
        return Err(ImportError::DuplicateNames { path });
    }
    if archive.len() > limits.max_entries {
        return Err(ImportError::TooManyEntries {
            path,
            count: archive.len(),
            limit: limits.max_entries,
        });
    }

    // Pass 1: metadata of every entry, before reading any content.
    let mut total = 0u64;
    let mut objects_at: Vec<(usize, Digest, u64, String)> = Vec::new();
    let mut manifests: Vec<(usize, String, u64)> = Vec::new();
    for i in 0..archive.len() {
        let label = entry_label(&archive, i);
        let f = archive.by_index_raw(i).map_err(|e| entry_zip(&label, e))?;
        let name = match std::str::from_utf8(f.name_raw()) {
            Ok(n) => n.to_string(),
            Err(_) => {
                return Err(ImportError::UnsafeName {
                    path,
                    name: String::from_utf8_lossy(f.name_raw()).into_owned(),
                    reason: "not UTF-8",
                });
            }
        };
        if let Some(reason) = unsafe_name(&name) {
            return Err(ImportError::UnsafeName { path, name, reason });
        }
        if f.is_symlink() {
            return Err(ImportError::Symlink { path, name });
        }
        if f.encrypted() {
            return Err(ImportError::Encrypted { path, name });
        }
        if f.is_dir() {
            return Err(ImportError::UnexpectedEntry { path, name });
        }
        let (len, compressed) = (f.size(), f.compressed_size());
        if len > limits.max_entry_bytes {
            return Err(ImportError::EntryTooLarge {
                path,
                name,
                size: len,
                limit: limits.max_entry_bytes,
            });
        }
        if len > limits.ratio_floor_bytes && len / compressed.max(1) > limits.max_ratio {
            return Err(ImportError::CompressionRatio {
                path,
                name,
                size: len,
                compressed,
                limit: limits.max_ratio,
            });
        }
        total = total.saturating_add(len);
        if total > limits.max_total_bytes {
            return Err(ImportError::TotalTooLarge {
                path,
                size: total,
                limit: limits.max_total_bytes,
            });
        }
        if let Some(d) = object_entry(&name) {
            objects_at.push((i, d, len, name));
        } else if let Some(m) = name
            .strip_prefix(MANIFESTS_PREFIX)
            .filter(|m| manifest_name_ok(m))
        {
            manifests.push((i, m.to_string(), len));
        } else {
            return Err(ImportError::UnexpectedEntry { path, name });
        }
    }
    if manifests.len() != 1 {
        return Err(ImportError::ManifestCount {
            path,
            count: manifests.len(),
        });
    }
    let (mindex, mname, mdeclared) = manifests.remove(0);
    let mentry = format!("{MANIFESTS_PREFIX}{mname}");
    if mdeclared > MANIFEST_LIMIT {
        return Err(ImportError::ManifestTooLarge {
            path,
            name: mentry,
            size: Some(mdeclared),
            limit: MANIFEST_LIMIT,
        });
    }

    // Pass 1, content: hash every entry against its name; parse objects.
    let mut entries: BTreeMap<Digest, Entry> = BTreeMap::new();
    for (i, digest, declared, name) in objects_at {
        let f = archive.by_index(i).map_err(|e| entry_zip(&name, e))?;
        let (actual, len, bytes) =
            read_entry(f, limits.max_entry_bytes).map_err(|e| entry_io(&name, e))?;
        if len != declared {
            return Err(ImportError::SizeMismatch {
                path,
                name,
                declared,
                actual: len,
            });
        }
        if actual != digest {
            return Err(ImportError::HashMismatch { path, name, actual });
        }
        let (references, schema, undecodable) = match bytes {
            Some(b) => match object::parse_object(&b) {
                Ok(o) => {
                    let undecodable = match crate::record::decode_object(&digest, &b) {
                        Some(Err(e)) => Some(e.to_string()),
                        _ => None,
                    };
                    (o.references, Some(o.schema.to_string()), undecodable)
                }
                Err(e) => {
                    return Err(ImportError::Malformed {
                        path,
                        name,
                        message: e.to_string(),
                    });
                }
            },
            None => (Vec::new(), None, None),
        };
        entries.insert(
            digest,
            Entry {
                index: i,
                name,
                size: len,
                references,
                schema,
                undecodable,
            },
        );
    }
    let mut manifest_bytes = Vec::new();
    archive
        .by_index(mindex)
        .map_err(|e| entry_zip(&mentry, e))?
        .take(MANIFEST_LIMIT + 1)
        .read_to_end(&mut manifest_bytes)
        .map_err(|e| entry_io(&mentry, e))?;
    if manifest_bytes.len() as u64 > MANIFEST_LIMIT {
        return Err(ImportError::ManifestTooLarge {
            path,
            name: mentry,
            size: None,
            limit: MANIFEST_LIMIT,
        });
    }
    if manifest_bytes.len() as u64 != mdeclared {
        return Err(ImportError::SizeMismatch {
            path,
            name: mentry,
            declared: mdeclared,
            actual: manifest_bytes.len() as u64,
        });
    }
    let manifest_label = PathBuf::from(&mentry);
    let text = String::from_utf8(manifest_bytes).map_err(|_| ImportError::Manifest {
        path: path.clone(),
        source: ManifestError::Parse {
            path: manifest_label.clone(),
            message: "not UTF-8".into(),
        },
    })?;
    let manifest =
        Manifest::parse(&text, &manifest_label).map_err(|source| ImportError::Manifest {
            path: path.clone(),
            source,
        })?;

    // The manifest's closure, within the bundle and the store; it must be complete.
    let Reached {
        wanted,
        missing,
        wrong_roots,
    } = reach(store, &entries, &manifest, &manifest_label);
    if !missing.is_empty() {
        return Err(ImportError::Incomplete { path, missing });
    }
    if !wrong_roots.is_empty() {
        return Err(ImportError::WrongKind {
            path,
            roots: wrong_roots,
        });
    }
    let undecodable: Vec<(Digest, String)> = entries
        .iter()
        .filter(|(d, _)| wanted.contains(d))
        .filter_map(|(d, e)| Some((*d, e.undecodable.clone()?)))
        .collect();
    if !undecodable.is_empty() {
        return Err(ImportError::Undecodable {
            path,
            objects: undecodable,
        });
    }
    let skipped: Vec<Digest> = entries
        .keys()
        .filter(|d| !wanted.contains(d))
        .copied()
        .collect();
    entries.retain(|d, _| wanted.contains(d));
    let target = manifests_dir.join(&mname);
    if let Ok(existing) = fs::read(&target)
        && existing != text.as_bytes()
    {
        return Err(ImportError::ManifestConflict { existing: target });
    }

    // Pass 2: children before parents, each re-hashed on its way in.
    let swept = store.sweep_temp()?.len();
    let mut new_objects = 0;
    let mut repaired = Vec::new();
    let mut bytes = 0;
    for d in post_order(&entries) {
        let e = &entries[&d];
        let store_err = |source| ImportError::EntryStore {
            path: path.clone(),
            name: e.name.clone(),
            source: Box::new(source),
        };
        bytes += e.size;
        let stored = fs::symlink_metadata(store.path_of(&d)).ok();
        let sound = match &stored {
            Some(m) if m.is_file() && m.len() == e.size => store.is_sound(&d).map_err(store_err)?,
            _ => false,
        };
        if sound {
            continue;
        }
        let mut f = archive
            .by_index(e.index)
            .map_err(|err| entry_zip(&e.name, err))?;
        if stored.is_some() {
            store.put_reader_replacing(&mut f, &d).map_err(store_err)?;
            repaired.push(d);
        } else {
            store.put_reader_expecting(&mut f, &d).map_err(store_err)?;
            new_objects += 1;
        }
    }
    write_manifest(manifests_dir, &target, text.as_bytes())?;
    Ok(ImportSummary {
        manifest: target,
        objects: entries.len(),
        new_objects,
        repaired,
        skipped,
        swept,
        bytes,
    })
}

/// The name of entry `i` for an error message, or `#i` when even that is unreadable.
fn entry_label<R: Read + std::io::Seek>(archive: &ZipArchive<R>, i: usize) -> String {
    match archive.name_for_index(i) {
        Some(Ok(n)) => n.into_owned(),
        _ => format!("#{i}"),
    }
}

/// What the manifest's roots reach through the bundle's entries and the store's objects.
struct Reached {
    wanted: BTreeSet<Digest>,
    /// What is missing from both, with who refers to it.
    missing: Vec<(Digest, String)>,
    /// Roots that are not the kind of object the manifest names them as.
    wrong_roots: Vec<WrongRoot>,
}

/// Everything the manifest's roots reach through the bundle's entries and the store's objects,
/// what is missing from both (with who refers to it), and the roots of the wrong kind.
fn reach(
    store: &Store,
    entries: &BTreeMap<Digest, Entry>,
    manifest: &Manifest,
    label: &Path,
) -> Reached {
    let mut wanted = BTreeSet::new();
    let mut missing = Vec::new();
    let mut wrong_roots = Vec::new();
    let mut stack: Vec<(Digest, String, Option<ObjectKind>)> = manifest
        .roots(label)
        .into_iter()
        .map(|r| (r.digest, r.label, r.expect))
        .rev()
        .collect();
    while let Some((d, who, expect)) = stack.pop() {
        // The object's schema (`None`: a plain blob) and references.
        let (schema, references) = if let Some(e) = entries.get(&d) {
            (e.schema.clone(), e.references.clone())
        } else if store.contains(&d) {
            // Already stored: walk through it to the bundle's entries beneath.
            match store.get_object(&d) {
                Ok(o) => (Some(o.schema.to_string()), o.references),
                Err(_) => (None, Vec::new()),
            }
        } else {
            if wanted.insert(d) {
                missing.push((d, who));
            }
            continue;
        };
        if let Some(expected) = expect {
            let kind = schema
                .as_deref()
                .and_then(|s| s.parse::<object::Schema>().ok())
                .map(|s| s.kind);
            if kind.as_ref() != Some(&expected) {
                wrong_roots.push(WrongRoot {
                    digest: d,
                    label: who.clone(),
                    expected,
                    found: schema.unwrap_or_else(|| "a plain blob".to_string()),
                });
            }
        }
        if !wanted.insert(d) {
            continue;
        }
        for r in references.into_iter().rev() {
            let who = format!("object {d} field `{}`", r.field);
            stack.push((r.digest, who, None));
        }
    }
    missing.sort();
    Reached {
        wanted,
        missing,
        wrong_roots,
    }
}

/// Hashes an entry (at most `limit` + 1 bytes are read); keeps the whole bytes of a typed
/// object (one that starts with [`object::OBJECT_PREFIX`]), whatever its size, so that its
/// references are read; streams any other blob.
fn read_entry(f: impl Read, limit: u64) -> std::io::Result<(Digest, u64, Option<Vec<u8>>)> {
    let mut f = f.take(limit.saturating_add(1));
    let mut head = Vec::new();
    (&mut f)
        .take(object::OBJECT_PREFIX.len() as u64)
        .read_to_end(&mut head)?;
    if object::looks_like_object(&head) {
        f.read_to_end(&mut head)?;
        return Ok((Digest::of(&head), head.len() as u64, Some(head)));
    }
    let mut hasher = blake3::Hasher::new();
    hasher.update(&head);
    let mut len = head.len() as u64;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        len += n as u64;
    }
    Ok((Digest::from_hasher(&hasher), len, None))
}

/// `artifacts/v1/blake3/ab/cd/<hex>` with a consistent shard → the digest.
fn object_entry(name: &str) -> Option<Digest> {
    let rel = name.strip_prefix(ARTIFACTS_PREFIX)?;
    let hex = rel.rsplit('/').next()?;
    let d: Digest = hex.parse().ok()?;
    (Store::relative_path_of(&d) == rel).then_some(d)
}

/// Why an entry name is unsafe to interpret as a path, if it is.
pub fn unsafe_name(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("empty");
    }
    if name.starts_with('/') || name.starts_with('\\') {
        return Some("absolute path");
    }
    let b = name.as_bytes();
    if b.len() >= 2 && b[1] == b':' && b[0].is_ascii_alphabetic() {
        return Some("absolute path (drive letter)");
    }
    if name.contains('\\') {
        return Some("backslash");
    }
    if name.contains('\0') {
        return Some("NUL byte");
    }
    for part in name.split('/') {
        match part {
            ".." => return Some("`..` component"),
            "." => return Some("`.` component"),
            "" if !name.ends_with('/') => return Some("empty component"),
            _ => {}
        }
    }
    None
}

/// Bundle objects ordered so that each comes after everything it references.
fn post_order(entries: &BTreeMap<Digest, Entry>) -> Vec<Digest> {
    let mut done = BTreeSet::new();
    let mut out = Vec::with_capacity(entries.len());
    for start in entries.keys() {
        // Iterative DFS: (digest, children pushed?)
        let mut stack = vec![(*start, false)];
        while let Some((d, expanded)) = stack.pop() {
            if done.contains(&d) {
                continue;
            }
            if expanded {
                done.insert(d);
                out.push(d);
                continue;
            }
            stack.push((d, true));
            if let Some(e) = entries.get(&d) {
                for r in e.references.iter().rev() {
                    if entries.contains_key(&r.digest) && !done.contains(&r.digest) {
                        stack.push((r.digest, false));
                    }
                }
            }
        }
    }
    out.retain(|d| entries.contains_key(d));
    out
}

fn write_manifest(dir: &Path, target: &Path, bytes: &[u8]) -> Result<(), ImportError> {
    let io = |path: &Path, source| ImportError::Io {
        path: path.to_path_buf(),
        source,
    };
    fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    crate::scratch::sweep(dir, MANIFEST_TEMP_PREFIX, crate::scratch::STALE_AFTER, &[])
        .map_err(|e| io(dir, e))?;
    let mut tmp =
        crate::destination::new_file_temp(dir, MANIFEST_TEMP_PREFIX).map_err(|e| io(dir, e))?;
    tmp.write_all(bytes).map_err(|e| io(target, e))?;
    tmp.as_file().sync_all().map_err(|e| io(target, e))?;
    match tmp.persist_noclobber(target) {
        Ok(_) => Ok(()),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
            // Another importer got there first: fine if it wrote the same bytes.
            match fs::read(target) {
                Ok(existing) if existing == bytes => Ok(()),
                Ok(_) => Err(ImportError::ManifestConflict {
                    existing: target.to_path_buf(),
                }),
                Err(e) => Err(io(target, e)),
            }
        }
        Err(e) => Err(io(target, e.error)),
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_names() {
        assert_eq!(unsafe_name("../x"), Some("`..` component"));
        assert_eq!(unsafe_name("a/../../x"), Some("`..` component"));
        assert_eq!(unsafe_name("/etc/passwd"), Some("absolute path"));
        assert_eq!(unsafe_name("C:/x"), Some("absolute path (drive letter)"));
        assert_eq!(unsafe_name("a\\b"), Some("backslash"));
        assert_eq!(unsafe_name("a//b"), Some("empty component"));
        assert_eq!(unsafe_name("manifests/leaderboard.yaml"), None);
    }

    #[test]
    fn object_entry_requires_consistent_shards() {
        let d = Digest::of(b"x");
        let good = format!("artifacts/{}", Store::relative_path_of(&d));
        assert_eq!(object_entry(&good), Some(d));
        let bad = format!("artifacts/v1/blake3/00/00/{d}");
        assert_eq!(object_entry(&bad), None);
    }
}
