//! Store errors: every variant names the hash and/or path that failed.

use std::path::PathBuf;

use crate::digest::Digest;
use crate::store::object::ObjectError;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no object {digest} in the store (expected at {path})")]
    Missing { digest: Digest, path: PathBuf },
    #[error("object {digest} at {path} is corrupt: its content hashes to {actual}")]
    Corrupt {
        digest: Digest,
        path: PathBuf,
        actual: Digest,
    },
    #[error("`{prefix}` is not a hash prefix (1 to 64 lowercase hex characters)")]
    BadPrefix { prefix: String },
    #[error("no object in {root} starts with `{prefix}`")]
    UnknownPrefix { prefix: String, root: PathBuf },
    #[error("`{prefix}` is ambiguous: {} objects start with it: {}{}",
        .count, list(.candidates), if *.count > .candidates.len() { ", …" } else { "" })]
    AmbiguousPrefix {
        prefix: String,
        /// The first candidates in order (at most 20).
        candidates: Vec<Digest>,
        count: usize,
    },
    #[error("object {digest} is malformed: {source}")]
    Malformed {
        digest: Digest,
        #[source]
        source: ObjectError,
    },
    #[error(
        "blob {digest} is not a typed object (it does not start with {{\"schema\":\"ptxbench.)"
    )]
    NotAnObject { digest: Digest },
    #[error("object {digest} does not decode as {expected}: {message}")]
    Decode {
        digest: Digest,
        expected: &'static str,
        message: String,
    },
    #[error("cannot serialise object: {message}")]
    Serialize { message: String },
    #[error("the object to store is malformed: {source}")]
    Invalid {
        #[source]
        source: ObjectError,
    },
    #[error("the object to store refers to {digest} (field `{field}`), which is not in the store")]
    DanglingReference { field: String, digest: Digest },
    #[error("expected content {expected} but the bytes hash to {actual}")]
    Mismatch { expected: Digest, actual: Digest },
}

fn list(ds: &[Digest]) -> String {
    ds.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl StoreError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> StoreError {
        StoreError::Io {
            path: path.into(),
            source,
        }
    }
}
