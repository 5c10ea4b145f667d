//! Why a generation could not start or finish.

use std::path::PathBuf;

use super::journal::JournalError;
use super::manifest::GenManifestError;
use crate::store::StoreError;
use crate::task::SuiteError;

/// Why a generation could not start or finish (each names its file, field or object).
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("loading the task suite in {}: {source}", .path.display())]
    Suite {
        path: PathBuf,
        #[source]
        source: SuiteError,
    },
    #[error(transparent)]
    Manifest(#[from] GenManifestError),
    #[error("{}: {message}", .path.display())]
    WorkList { path: PathBuf, message: String },
    #[error("{}: field `models[{index}].api_key_env`: the environment variable {var} is not set (the field is optional: leave it out for an endpoint that needs no key)", .path.display())]
    ApiKey {
        path: PathBuf,
        index: usize,
        var: String,
    },
    #[error(
        "{}: this output folder's journal was made with seed {journal}, the manifest now gives {manifest}; use another --out (or the journal's seed)",
        .path.display()
    )]
    SeedMismatch {
        path: PathBuf,
        journal: u64,
        manifest: u64,
    },
    #[error("{}: this setup cannot run; nothing was sent:\n  - {}", .path.display(), .problems.join("\n  - "))]
    Unusable {
        path: PathBuf,
        problems: Vec<String>,
    },
    #[error("drawing a seed from the operating system: {0}")]
    Entropy(String),
    #[error("{}: another `ptxbench generate` is running on this output folder", .path.display())]
    Busy { path: PathBuf },
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("writing the run list: {0}")]
    RunList(String),
}
