//! The task suite: task definitions read from YAML (`tasks/`), validated into [`Task`]s, and
//! versioned and hashed as a [`Suite`]; plus an importer for FlashInfer-Trace definitions.
//!
//! Layout: `file` (the YAML as written), `validate` (file into model, every problem reported),
//! `model` (the validated types), `signature` (the tensors each op binds), `suite` (a directory
//! of tasks, its version and digest), `summary` (text for the terminal), `flashinfer` (import),
//! `document` (YAML tree with paths).

mod document;
pub mod file;
pub mod flashinfer;
mod model;
mod problem;
mod roles;
mod signature;
pub mod suite;
mod summary;
pub mod validate;

pub use flashinfer::{ImportError, import_flashinfer};
pub use model::*;
pub use problem::{
    AttentionDims, AxisRoles, Extent, GdnDims, GemmDims, MlaDecodeDims, PrefillDims, ProblemSize,
    Role,
};
pub use roles::ShapeError;
pub use suite::{SUITE_FILE, Suite, SuiteError, check_dir};
pub use summary::describe;
pub use validate::{Problem, parse_task};

impl Task {
    /// Parses and validates a task file; `source` is its path relative to the suite directory
    /// (its stem must equal the id).
    pub fn from_yaml(text: &str, source: &std::path::Path) -> Result<Task, Vec<Problem>> {
        parse_task(text, source, source)
    }

    /// The task as a task file (YAML) that reads back to an equal task.
    pub fn to_yaml(&self) -> Result<String, String> {
        serde_saphyr::to_string(&file::TaskFile::from(self)).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests;
