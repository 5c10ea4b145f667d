//! The resumption index of a run: which evaluations are done (`Pair::index_key` → the record
//! it made in the store) and the seed an earlier start drew. It is local working state, not a
//! result: every result is a record in the store the moment its evaluation ends, and losing
//! the index loses no result (a re-started run then evaluates again, under a new seed if it
//! draws one).
//!
//! One JSON file, `index.json`, rewritten whole through a temp file and a rename after each
//! evaluation, so an interrupted run leaves the last complete index. One `ptxbench run` per
//! folder at a time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::digest::Digest;

/// The index file inside a run folder.
pub const INDEX_FILE: &str = "index.json";
/// Its format version.
pub const INDEX_FORMAT: u32 = 1;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunIndex {
    pub format: u32,
    /// The run list's name.
    pub list: String,
    /// The seed drawn for this run when neither the list nor `--seed` gave one.
    pub drawn_seed: Option<u64>,
    /// `Pair::index_key` → record digest.
    pub records: BTreeMap<Digest, Digest>,
}

/// Why the index could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a run index ({message}); move it away to start the run afresh")]
    Invalid { path: PathBuf, message: String },
    #[error("{path} is the index of run list `{found}`, not `{list}`")]
    OtherList {
        path: PathBuf,
        found: String,
        list: String,
    },
}

impl RunIndex {
    /// The index in `dir`, or an empty one for `list` if there is none yet.
    pub fn load(dir: &Path, list: &str) -> Result<RunIndex, IndexError> {
        let path = dir.join(INDEX_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(RunIndex {
                    format: INDEX_FORMAT,
                    list: list.to_string(),
                    ..RunIndex::default()
                });
            }
            Err(source) => return Err(IndexError::Io { path, source }),
        };
        let index: RunIndex = serde_json::from_slice(&bytes).map_err(|e| IndexError::Invalid {
            path: path.clone(),
            message: e.to_string(),
        })?;
        if index.format != INDEX_FORMAT {
            return Err(IndexError::Invalid {
                path,
                message: format!(
                    "format {} (this ptxbench writes {INDEX_FORMAT})",
                    index.format
                ),
            });
        }
        if index.list != list {
            return Err(IndexError::OtherList {
                path,
                found: index.list,
                list: list.to_string(),
            });
        }
        Ok(index)
    }

    /// Writes the index into `dir` (created if needed), atomically.
    pub fn save(&self, dir: &Path) -> Result<(), IndexError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| IndexError::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let path = dir.join(INDEX_FILE);
        let bytes = serde_json::to_vec_pretty(self).expect("digests and numbers serialise");
        crate::destination::write_atomic(&path, &bytes).map_err(|e| IndexError::Io {
            path: path.clone(),
            source: std::io::Error::other(e.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_round_trips_and_belongs_to_one_list() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = RunIndex::load(dir.path(), "l").expect("empty");
        assert!(index.records.is_empty() && index.drawn_seed.is_none());
        index.drawn_seed = Some(42);
        index.records.insert(Digest::of(b"k"), Digest::of(b"r"));
        index.save(dir.path()).expect("saves");
        assert_eq!(RunIndex::load(dir.path(), "l").expect("loads"), index);
        let other = RunIndex::load(dir.path(), "m").expect_err("another list");
        assert!(other.to_string().contains("`m`"), "{other}");
        std::fs::write(dir.path().join(INDEX_FILE), b"{").expect("write");
        assert!(matches!(
            RunIndex::load(dir.path(), "l"),
            Err(IndexError::Invalid { .. })
        ));
    }
}
