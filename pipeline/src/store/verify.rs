//! Whole-store verification: re-hash every object (in parallel), check every object's
//! references, and list every missing, corrupt or malformed object with what refers to it.
//!
//! Files are hashed on `threads` worker threads taking objects from a shared counter; a failure
//! on one file is recorded and the walk goes on. The report is sorted, so it does not depend on
//! thread timing.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::digest::Digest;
use crate::store::closure::{Problem, ProblemKind, Referrer};
use crate::store::object;
use crate::store::{Store, StoreError};

/// Plain blobs larger than this are hashed in a stream; a typed object is read whole, whatever
/// its size, so that its references are checked.
const WHOLE_READ_LIMIT: u64 = 64 << 20;

/// The outcome of [`verify_store`].
#[derive(Debug, Default)]
pub struct Report {
    /// Objects found (by name).
    pub objects: usize,
    /// Bytes hashed.
    pub bytes: u64,
    /// Typed objects among them.
    pub typed: usize,
    /// Missing, corrupt or malformed objects, sorted by digest.
    pub problems: Vec<Problem>,
    /// Files in the object folders that are not objects (misplaced, misnamed, leftover temp
    /// files). Reported, not counted as failures.
    pub strays: Vec<PathBuf>,
    /// Temp files in `v1/tmp/`: in-flight writes, or (stale) ones that a killed writer left.
    /// Reported, not counted as failures; [`Store::sweep_temp`] removes the stale ones.
    pub temp_files: Vec<crate::scratch::Leftover>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// What the workers found, merged.
#[derive(Default)]
struct Found {
    checked: Vec<(Digest, PathBuf, Outcome)>,
    strays: Vec<PathBuf>,
    error: Option<StoreError>,
}

enum Outcome {
    Sound {
        bytes: u64,
        references: Option<Vec<object::Reference>>,
    },
    Corrupt {
        actual: Digest,
    },
    Malformed {
        bytes: u64,
        message: String,
    },
    Unreadable {
        message: String,
    },
}

/// Re-hashes every object in `store` on `threads` threads (at least one) and checks every
/// reference of every typed object.
pub fn verify_store(store: &Store, threads: usize) -> Result<Report, StoreError> {
    // Workers take top-level shards from a shared counter and list and hash them as they go,
    // so listing (one readdir per folder) is parallel too.
    let (shards, top_strays) = store.top_shards()?;
    let next = AtomicUsize::new(0);
    let found: Mutex<Found> = Mutex::new(Found::default());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                let mut buf = Vec::new();
                let mut chunk = vec![0u8; 64 * 1024];
                let mut local = Found::default();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((name1, dir1)) = shards.get(i) else {
                        break;
                    };
                    let mut objects = Vec::new();
                    let walked = store.visit_shard(
                        name1,
                        dir1,
                        None,
                        &mut |d, p| objects.push((d, p.to_path_buf())),
                        &mut |p| local.strays.push(p.to_path_buf()),
                    );
                    if let Err(e) = walked {
                        local.error.get_or_insert(e);
                    }
                    for (digest, path) in objects {
                        let outcome = check_file(&digest, &path, &mut buf, &mut chunk);
                        local.checked.push((digest, path, outcome));
                    }
                }
                let mut all = found
                    .lock()
                    .expect("no verify thread panics while holding the lock");
                all.checked.append(&mut local.checked);
                all.strays.append(&mut local.strays);
                if let Some(e) = local.error {
                    all.error.get_or_insert(e);
                }
            });
        }
    });
    let mut found = found
        .into_inner()
        .expect("no verify thread panics while holding the lock");
    if let Some(e) = found.error {
        return Err(e);
    }
    found.checked.sort_by_key(|c| c.0);
    found.strays.extend(top_strays);
    found.strays.sort();

    let mut report = Report {
        objects: found.checked.len(),
        strays: found.strays,
        temp_files: store.leftover_temp()?,
        ..Report::default()
    };
    let mut problems: BTreeMap<Digest, Problem> = BTreeMap::new();
    let mut edges: Vec<(Digest, object::Reference)> = Vec::new();
    let mut present = Vec::with_capacity(found.checked.len());
    for (digest, path, outcome) in found.checked {
        present.push(digest);
        let problem = |kind| Problem {
            digest,
            path,
            kind,
            referrers: Vec::new(),
        };
        match outcome {
            Outcome::Sound { bytes, references } => {
                report.bytes += bytes;
                if let Some(refs) = references {
                    report.typed += 1;
                    edges.extend(refs.into_iter().map(|r| (digest, r)));
                }
            }
            Outcome::Corrupt { actual } => {
                problems.insert(digest, problem(ProblemKind::Corrupt { actual }));
            }
            Outcome::Malformed { bytes, message } => {
                report.bytes += bytes;
                problems.insert(digest, problem(ProblemKind::Malformed { message }));
            }
            Outcome::Unreadable { message } => {
                problems.insert(digest, problem(ProblemKind::Unreadable { message }));
            }
        }
    }
    edges.sort();
    for (from, r) in edges {
        let present = present.binary_search(&r.digest).is_ok();
        let who = Referrer::Object {
            digest: from,
            field: r.field,
        };
        if present && !problems.contains_key(&r.digest) {
            continue;
        }
        problems
            .entry(r.digest)
            .or_insert_with(|| Problem {
                digest: r.digest,
                path: store.path_of(&r.digest),
                kind: ProblemKind::Missing,
                referrers: Vec::new(),
            })
            .referrers
            .push(who);
    }
    report.problems = problems.into_values().collect();
    Ok(report)
}

/// Checks one object file; `buf` and `chunk` are reused across calls (no allocation or
/// zeroing per file).
fn check_file(
    digest: &Digest,
    path: &std::path::Path,
    buf: &mut Vec<u8>,
    chunk: &mut [u8],
) -> Outcome {
    let unreadable = |e: std::io::Error| Outcome::Unreadable {
        message: e.to_string(),
    };
    // open + read until 0 + close: no stat or seek per file (small files dominate a store).
    let mut file = match crate::destination::open_regular(path) {
        Ok(f) => f,
        Err(e) => return unreadable(e),
    };
    buf.clear();
    let mut hasher: Option<blake3::Hasher> = None;
    let mut streamed = 0u64;
    loop {
        let n = match file.read(chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return unreadable(e),
        };
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() as u64 >= WHOLE_READ_LIMIT
            && (hasher.is_some() || !object::looks_like_object(buf))
        {
            // Large plain blob: hash as a stream.
            let h = hasher.get_or_insert_with(blake3::Hasher::new);
            h.update(buf);
            streamed += buf.len() as u64;
            buf.clear();
        }
    }
    if let Some(mut h) = hasher {
        h.update(buf);
        let actual = Digest::from_hasher(&h);
        return if actual == *digest {
            Outcome::Sound {
                bytes: streamed + buf.len() as u64,
                references: None,
            }
        } else {
            Outcome::Corrupt { actual }
        };
    }
    let actual = Digest::of(buf);
    if actual != *digest {
        return Outcome::Corrupt { actual };
    }
    let bytes = buf.len() as u64;
    if !object::looks_like_object(buf) {
        return Outcome::Sound {
            bytes,
            references: None,
        };
    }
    match object::parse_object(buf) {
        Ok(o) => Outcome::Sound {
            bytes,
            references: Some(o.references),
        },
        Err(e) => Outcome::Malformed {
            bytes,
            message: e.to_string(),
        },
    }
}
