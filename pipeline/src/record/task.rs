//! Task definitions as store objects, so that a record's closure holds what it was measured
//! against and `audit` needs no checkout of the suite.
//!
//! A [`TaskObject`] (`ptxbench.task/1`) is a task file byte for byte, with its id, its path in
//! the suite folder and the `Task::digest()` it validated to when stored (the `task_hash` that
//! records name). A [`SuiteObject`] (`ptxbench.suite/1`) is a suite's version and description,
//! its `Suite::digest()`, and its task objects in id order. Both are written by
//! [`store_suite`] ([`SuiteObjects`] computes them without a store); storing the same suite
//! twice gives the same digests.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::store::{Store, StoreError};
use crate::task::{Problem, Suite, Task};

pub const TASK_SCHEMA: &str = "ptxbench.task/1";
pub const SUITE_SCHEMA: &str = "ptxbench.suite/1";

/// One task definition as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskObject {
    pub schema: String,
    pub id: String,
    /// The task file's path relative to the suite folder (`gemm/gemm_n7168_k5120.yaml`).
    pub source: String,
    /// `Task::digest()` of the definition, as validated when it was stored.
    pub task_hash: Digest,
    /// The task file (YAML), exactly.
    pub definition: String,
}

/// One suite as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteObject {
    pub schema: String,
    pub version: String,
    pub description: String,
    /// `Suite::digest()`.
    pub suite_hash: Digest,
    /// Its [`TaskObject`]s, in task id order.
    pub task_digests: Vec<Digest>,
}

/// Why a task definition could not be stored, found or read back.
#[derive(Debug, thiserror::Error)]
pub enum TaskObjectError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Decode(#[from] Box<super::RecordError>),
    #[error("{path}: {source}")]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} changed after the suite was loaded (task {id}): load it again")]
    Changed {
        path: std::path::PathBuf,
        id: String,
    },
    #[error("task object {digest} ({id}, {file}) does not validate:{}", list(.problems))]
    Invalid {
        digest: Digest,
        id: String,
        file: String,
        problems: Vec<Problem>,
    },
    #[error("task object {digest} holds task `{found}`, not `{id}`")]
    WrongTask {
        digest: Digest,
        id: String,
        found: String,
    },
    #[error(
        "task object {digest} ({id}) says its definition validates to task hash {stored}, but this ptxbench validates it to {now}"
    )]
    Revalidated {
        digest: Digest,
        id: String,
        stored: Digest,
        now: Digest,
    },
    #[error("no ptxbench.task object in {root} has task hash {task_hash} (task {id}){hint}")]
    NotStored {
        id: String,
        task_hash: Digest,
        root: std::path::PathBuf,
        hint: String,
    },
}

fn list(problems: &[Problem]) -> String {
    problems.iter().map(|p| format!("\n  {p}")).collect()
}

impl TaskObject {
    /// The object of `task` of `suite`, read from its file (and checked to still be the task
    /// the suite loaded).
    pub fn from_suite(suite: &Suite, task: &Task) -> Result<TaskObject, TaskObjectError> {
        let path = suite.dir.join(&task.source);
        let definition =
            std::fs::read_to_string(&path).map_err(|source| TaskObjectError::Read {
                path: path.clone(),
                source,
            })?;
        let object = TaskObject {
            schema: TASK_SCHEMA.into(),
            id: task.id.to_string(),
            source: task.source.to_string_lossy().replace('\\', "/"),
            task_hash: task.digest(),
            definition,
        };
        match object.parse() {
            Ok(t) if t.digest() == object.task_hash => Ok(object),
            _ => Err(TaskObjectError::Changed {
                path,
                id: object.id,
            }),
        }
    }

    fn parse(&self) -> Result<Task, Vec<Problem>> {
        Task::from_yaml(&self.definition, Path::new(&self.source))
    }

    /// The digest the object has in a store (of its canonical JSON).
    pub fn digest(&self) -> Digest {
        Digest::of(&serde_json::to_vec(self).expect("strings and a digest always serialise"))
    }

    /// Parses and validates the definition (the worker does this with a request's task).
    pub fn validate(&self) -> Result<Task, TaskObjectError> {
        let digest = &self.digest();
        let task = self.parse().map_err(|problems| TaskObjectError::Invalid {
            digest: *digest,
            id: self.id.clone(),
            file: self.source.clone(),
            problems,
        })?;
        if task.id.as_str() != self.id {
            return Err(TaskObjectError::WrongTask {
                digest: *digest,
                id: self.id.clone(),
                found: task.id.to_string(),
            });
        }
        Ok(task)
    }

    /// Validates the definition and checks that it is still the task it was stored as.
    pub fn validate_exactly(&self) -> Result<Task, TaskObjectError> {
        let task = self.validate()?;
        let now = task.digest();
        if now != self.task_hash {
            return Err(TaskObjectError::Revalidated {
                digest: self.digest(),
                id: self.id.clone(),
                stored: self.task_hash,
                now,
            });
        }
        Ok(task)
    }

    pub fn load(store: &Store, digest: &Digest) -> Result<TaskObject, TaskObjectError> {
        super::decode_exactly(digest, &store.get(digest)?, TASK_SCHEMA)
            .map_err(Box::new)
            .map_err(TaskObjectError::from)
    }
}

/// A suite's objects: the suite object and each task's object, by task id, with the digests
/// they have in any store (computed, so nothing needs to be written to know them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuiteObjects {
    pub digest: Digest,
    pub suite_hash: Digest,
    pub suite: SuiteObject,
    pub tasks: BTreeMap<String, (Digest, TaskObject)>,
}

impl SuiteObjects {
    /// The objects of `suite`, its task files read again (and checked to be what it loaded).
    pub fn of(suite: &Suite) -> Result<SuiteObjects, TaskObjectError> {
        let mut tasks = BTreeMap::new();
        for t in &suite.tasks {
            let object = TaskObject::from_suite(suite, t)?;
            tasks.insert(t.id.to_string(), (object.digest(), object));
        }
        let suite_hash = suite.digest();
        let object = SuiteObject {
            schema: SUITE_SCHEMA.into(),
            version: suite.version.clone(),
            description: suite.description.clone(),
            suite_hash,
            // `suite.tasks` is sorted by id, and so is the map.
            task_digests: tasks.values().map(|(d, _)| *d).collect(),
        };
        Ok(SuiteObjects {
            digest: Digest::of(
                &serde_json::to_vec(&object).expect("strings and digests always serialise"),
            ),
            suite_hash,
            suite: object,
            tasks,
        })
    }

    /// Writes every object into `store` (idempotent).
    pub fn put(&self, store: &Store) -> Result<(), TaskObjectError> {
        for (d, object) in self.tasks.values() {
            let stored = store.put_object(object)?;
            debug_assert_eq!(stored, *d, "a task object's digest is its canonical JSON's");
        }
        store.put_object(&self.suite)?;
        Ok(())
    }

    /// The digest of task `id`'s object.
    pub fn task(&self, id: &str) -> Option<Digest> {
        self.tasks.get(id).map(|(d, _)| *d)
    }

    /// Task `id`'s object.
    pub fn object(&self, id: &str) -> Option<&TaskObject> {
        self.tasks.get(id).map(|(_, o)| o)
    }
}

/// Stores every task of `suite` and the suite object (idempotent).
pub fn store_suite(store: &Store, suite: &Suite) -> Result<SuiteObjects, TaskObjectError> {
    let objects = SuiteObjects::of(suite)?;
    objects.put(store)?;
    Ok(objects)
}

/// Every typed object of `schema` in the store, decoded, sorted by digest. A full scan that
/// reads only the first bytes of other objects.
fn objects_of<T: serde::de::DeserializeOwned>(
    store: &Store,
    schema: &'static str,
) -> Result<Vec<(Digest, T)>, TaskObjectError> {
    let prefix = format!("{{\"schema\":\"{schema}\"");
    let mut out = Vec::new();
    for (digest, path) in store.scan()?.objects {
        let mut head = vec![0u8; prefix.len()];
        let n = std::fs::File::open(&path)
            .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
            .map_err(|e| StoreError::io(&path, e))?;
        if head[..n] == *prefix.as_bytes() {
            let bytes = store.get(&digest)?;
            out.push((
                digest,
                super::decode_exactly(&digest, &bytes, schema).map_err(Box::new)?,
            ));
        }
    }
    Ok(out)
}

/// The stored task object whose definition validated to `task_hash` (the first by digest if
/// several files validate to the same task).
pub fn find_task(
    store: &Store,
    id: &str,
    task_hash: &Digest,
) -> Result<(Digest, TaskObject), TaskObjectError> {
    objects_of::<TaskObject>(store, TASK_SCHEMA)?
        .into_iter()
        .find(|(_, t)| t.task_hash == *task_hash)
        .ok_or_else(|| TaskObjectError::NotStored {
            id: id.to_string(),
            task_hash: *task_hash,
            root: store.root().to_path_buf(),
            hint: String::new(),
        })
}

/// Every stored suite object, by suite hash (the first by digest where two share one).
pub fn stored_suites(
    store: &Store,
) -> Result<BTreeMap<Digest, (Digest, SuiteObject)>, TaskObjectError> {
    let mut out = BTreeMap::new();
    for (d, s) in objects_of::<SuiteObject>(store, SUITE_SCHEMA)? {
        out.entry(s.suite_hash).or_insert((d, s));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite() -> Suite {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks");
        Suite::load(&dir).expect("the committed suite loads")
    }

    #[test]
    fn a_stored_task_validates_to_its_hash_and_the_suite_lists_them_all() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = Store::open(tmp.path()).without_sync();
        let suite = suite();
        let stored = store_suite(&store, &suite).expect("stores");
        assert_eq!(stored, store_suite(&store, &suite).expect("again"));
        let object: SuiteObject = store.get_json(&stored.digest).expect("suite object");
        assert_eq!(object.suite_hash, suite.digest());
        assert_eq!(object.task_digests.len(), suite.tasks.len());
        let t = &suite.tasks[0];
        let d = stored.task(t.id.as_str()).expect("stored");
        let back = TaskObject::load(&store, &d).expect("task object");
        assert_eq!(back.digest(), d);
        assert_eq!(back.validate_exactly().expect("validates"), *t);
        let (found, _) = find_task(&store, t.id.as_str(), &t.digest()).expect("found by hash");
        assert_eq!(found, d);
        let missing = find_task(&store, "x", &Digest::of(b"x")).expect_err("not stored");
        assert!(missing.to_string().contains(&Digest::of(b"x").to_string()));
    }

    #[test]
    fn an_edited_definition_is_caught_on_validation() {
        let suite = suite();
        let t = &suite.tasks[0];
        let mut object = TaskObject::from_suite(&suite, t).expect("reads");
        object.definition = object.definition.replacen("title:", "title: edited", 1);
        let e = object.validate_exactly().expect_err("another task");
        assert!(
            matches!(
                e,
                TaskObjectError::Revalidated { .. } | TaskObjectError::Invalid { .. }
            ),
            "{e}"
        );
        object.definition = "not: [yaml".into();
        assert!(matches!(
            object.validate(),
            Err(TaskObjectError::Invalid { .. })
        ));
    }
}
