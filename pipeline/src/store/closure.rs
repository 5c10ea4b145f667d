//! Closures: everything reachable from a set of roots (a manifest's runs, records and imports)
//! by following references, with every missing, corrupt or malformed object and who refers to it.
//!
//! Each reachable object is read once and re-hashed. The walk never stops at a problem: it
//! reports it and goes on with the rest of the DAG. This is the API the engine's `audit` and
//! the site use to gather (and trust) everything a manifest names.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::path::PathBuf;

use crate::digest::Digest;
use crate::store::object::{self, ObjectKind};
use crate::store::{Store, StoreError};

/// A starting point of a closure: a digest, where it was named, and the object kind expected
/// there (if any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub digest: Digest,
    /// Where the digest was named, e.g. `manifests/leaderboard.yaml: reported[0].import_digest`.
    pub label: String,
    pub expect: Option<ObjectKind>,
}

/// Who refers to a problem object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Referrer {
    /// A root, by its label.
    Root(String),
    /// A field of another object.
    Object { digest: Digest, field: String },
}

impl fmt::Display for Referrer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Referrer::Root(label) => f.write_str(label),
            Referrer::Object { digest, field } => write!(f, "object {digest} field `{field}`"),
        }
    }
}

/// What is wrong with one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProblemKind {
    Missing,
    Corrupt {
        actual: Digest,
    },
    /// Claims to be an object (starts with the schema prefix) but is not a valid one.
    Malformed {
        message: String,
    },
    /// Present and sound, but not the kind of object its root expects.
    WrongKind {
        expected: ObjectKind,
        found: String,
    },
    Unreadable {
        message: String,
    },
}

/// One object that fails, where it should be, and everything that refers to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub digest: Digest,
    pub path: PathBuf,
    pub kind: ProblemKind,
    pub referrers: Vec<Referrer>,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ProblemKind::Missing => write!(f, "missing  {} ({})", self.digest, self.path.display()),
            ProblemKind::Corrupt { actual } => write!(
                f,
                "corrupt  {} ({}): content hashes to {actual}",
                self.digest,
                self.path.display()
            ),
            ProblemKind::Malformed { message } => {
                write!(
                    f,
                    "malformed {} ({}): {message}",
                    self.digest,
                    self.path.display()
                )
            }
            ProblemKind::WrongKind { expected, found } => write!(
                f,
                "wrong kind {}: expected a {expected} object, found {found}",
                self.digest
            ),
            ProblemKind::Unreadable { message } => {
                write!(
                    f,
                    "unreadable {} ({}): {message}",
                    self.digest,
                    self.path.display()
                )
            }
        }?;
        for r in &self.referrers {
            write!(f, "\n    referred to by {r}")?;
        }
        Ok(())
    }
}

/// The result of a closure walk.
#[derive(Debug, Default)]
pub struct Closure {
    /// Every reachable object that is present and sound (hash checked), sorted.
    pub objects: BTreeSet<Digest>,
    /// Total size of `objects` in bytes.
    pub bytes: u64,
    /// Problems sorted by digest.
    pub problems: Vec<Problem>,
}

impl Closure {
    pub fn is_complete(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Walks everything reachable from `roots`, re-hashing each object once.
pub fn closure(store: &Store, roots: &[Root]) -> Closure {
    let mut out = Closure::default();
    let mut problems: BTreeMap<Digest, Problem> = BTreeMap::new();
    let mut seen: BTreeSet<Digest> = BTreeSet::new();
    let mut queue: VecDeque<(Digest, Referrer, Option<ObjectKind>)> = roots
        .iter()
        .map(|r| (r.digest, Referrer::Root(r.label.clone()), r.expect.clone()))
        .collect();
    let add = |problems: &mut BTreeMap<Digest, Problem>, d: Digest, kind, who: Referrer| {
        let p = problems.entry(d).or_insert_with(|| Problem {
            digest: d,
            path: store.path_of(&d),
            kind,
            referrers: Vec::new(),
        });
        if !p.referrers.contains(&who) {
            p.referrers.push(who);
        }
    };
    while let Some((digest, who, expect)) = queue.pop_front() {
        if let Some(p) = problems.get(&digest) {
            // Already known bad: record one more referrer.
            let kind = p.kind.clone();
            add(&mut problems, digest, kind, who);
            continue;
        }
        let first_visit = seen.insert(digest);
        let bytes = if first_visit {
            match store.get(&digest) {
                Ok(b) => Some(b),
                Err(e) => {
                    let kind = match e {
                        StoreError::Missing { .. } => ProblemKind::Missing,
                        StoreError::Corrupt { actual, .. } => ProblemKind::Corrupt { actual },
                        other => ProblemKind::Unreadable {
                            message: other.to_string(),
                        },
                    };
                    add(&mut problems, digest, kind, who);
                    continue;
                }
            }
        } else {
            None
        };
        if let Some(expected) = expect {
            // Kind checks need the schema; re-read only for roots visited twice (rare).
            let found = match &bytes {
                Some(b) => schema_name(b),
                None => store.get(&digest).ok().and_then(|b| schema_name(&b)),
            };
            let found_kind = found
                .as_deref()
                .and_then(|s| s.parse::<object::Schema>().ok());
            if found_kind.as_ref().map(|s| &s.kind) != Some(&expected) {
                let found = found.unwrap_or_else(|| "a plain blob".to_string());
                add(
                    &mut problems,
                    digest,
                    ProblemKind::WrongKind { expected, found },
                    who,
                );
                continue;
            }
        }
        let Some(bytes) = bytes else { continue };
        if object::looks_like_object(&bytes) {
            match object::parse_object(&bytes) {
                Ok(o) => {
                    for r in o.references {
                        queue.push_back((
                            r.digest,
                            Referrer::Object {
                                digest,
                                field: r.field,
                            },
                            None,
                        ));
                    }
                }
                Err(e) => {
                    add(
                        &mut problems,
                        digest,
                        ProblemKind::Malformed {
                            message: e.to_string(),
                        },
                        who,
                    );
                    continue;
                }
            }
        }
        out.bytes += bytes.len() as u64;
        out.objects.insert(digest);
    }
    out.problems = problems.into_values().collect();
    out
}

fn schema_name(bytes: &[u8]) -> Option<String> {
    if !object::looks_like_object(bytes) {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    Some(v.get("schema")?.as_str()?.to_string())
}

/// Every typed object in the store that refers to `target`, with the referring field and the
/// referrer's schema, sorted. Reads every typed object (a full scan); unreadable or corrupt
/// objects are skipped here (`verify` reports them).
pub fn referrers(
    store: &Store,
    target: &Digest,
) -> Result<Vec<(Digest, String, object::Schema)>, StoreError> {
    let mut out = Vec::new();
    for (digest, path) in store.scan()?.objects {
        let mut head = [0u8; 32];
        let n = match crate::destination::open_regular(&path)
            .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        {
            Ok(n) => n,
            Err(_) => continue,
        };
        if !object::looks_like_object(&head[..n]) {
            continue;
        }
        let Ok(o) = store.get_object(&digest) else {
            continue;
        };
        for r in o.references {
            if r.digest == *target {
                out.push((digest, r.field, o.schema.clone()));
            }
        }
    }
    out.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    Ok(out)
}
