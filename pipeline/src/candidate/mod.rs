//! Candidates: kernel code plus a launch plan, from a model response or a folder.
//!
//! A candidate folder holds `kernel.ptx` or `kernel.cu` (CUDA C++ device code with inline PTX)
//! and `plan.yaml`; any other path is read as a model response and the two blocks are extracted
//! from it ([`extract`]). A symbolic link among them is followed (the candidate is what it
//! names); one that names nothing, or no file, is an error saying so.

pub mod bind;
pub mod extract;
pub mod plan;

use std::path::{Path, PathBuf};

pub use extract::{ExtractionError, KernelLang};

/// A candidate before any checking: the code and the plan as text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Candidate {
    pub lang: KernelLang,
    pub kernel: String,
    pub plan: String,
    /// Where the plan came from, for errors: its file, or the response's plan block.
    #[serde(skip)]
    pub plan_source: String,
    /// How extraction resolved ambiguities (empty for a folder).
    pub notes: Vec<String>,
}

/// Whether the file `path` of a candidate folder is there: absent is `false`, a file (or a
/// symbolic link to one) `true`; anything else (a folder, a link to nothing) is an error naming
/// it and what it is.
fn present(path: &Path) -> Result<bool, CandidateError> {
    let layout = |reason: String| CandidateError::Layout {
        path: path.to_path_buf(),
        reason,
    };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(source) => {
            return Err(CandidateError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    if meta.is_file() {
        return Ok(true);
    }
    if !meta.file_type().is_symlink() {
        return Err(layout("is not a file".into()));
    }
    let target = std::fs::read_link(path)
        .map(|t| t.display().to_string())
        .unwrap_or_else(|_| "?".into());
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(true),
        Ok(_) => Err(layout(format!(
            "is a symbolic link to {target}, which is not a file"
        ))),
        Err(e) => Err(layout(format!(
            "is a symbolic link to {target}, which cannot be read: {e}"
        ))),
    }
}

/// The `plan_source` of a plan extracted from a model response.
pub const RESPONSE_PLAN: &str = "the response's plan block";

#[derive(Debug, thiserror::Error)]
pub enum CandidateError {
    #[error("reading {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", .path.display())]
    Extraction {
        path: PathBuf,
        source: ExtractionError,
    },
    #[error("{}: {reason}", .path.display())]
    Layout { path: PathBuf, reason: String },
}

impl CandidateError {
    /// True when the failure is the response's fault (the paper's "extraction" class).
    pub fn is_extraction(&self) -> bool {
        matches!(self, CandidateError::Extraction { .. })
    }
}

impl Candidate {
    /// Extracts a candidate from a model's response text.
    pub fn from_response(text: &str) -> Result<Candidate, ExtractionError> {
        let e = extract::extract(text)?;
        Ok(Candidate {
            lang: e.lang,
            kernel: e.kernel,
            plan: e.plan,
            plan_source: RESPONSE_PLAN.into(),
            notes: e.notes,
        })
    }

    /// Loads a kernel file (`.ptx` or `.cu`) and a plan file given separately.
    pub fn from_files(kernel: &Path, plan: &Path) -> Result<Candidate, CandidateError> {
        let lang = match kernel.extension().and_then(|e| e.to_str()) {
            Some("ptx") => KernelLang::Ptx,
            Some("cu" | "cuh" | "cpp") => KernelLang::Cuda,
            _ => {
                return Err(CandidateError::Layout {
                    path: kernel.to_path_buf(),
                    reason: "a kernel file must end in .ptx or .cu".into(),
                });
            }
        };
        let read = |p: &Path| {
            std::fs::read_to_string(p).map_err(|source| CandidateError::Io {
                path: p.to_path_buf(),
                source,
            })
        };
        Ok(Candidate {
            lang,
            kernel: read(kernel)?,
            plan: read(plan)?,
            plan_source: plan.display().to_string(),
            notes: Vec::new(),
        })
    }

    /// Loads a candidate folder or a response file.
    pub fn load(path: &Path) -> Result<Candidate, CandidateError> {
        let read = |p: &Path| {
            std::fs::read_to_string(p).map_err(|source| CandidateError::Io {
                path: p.to_path_buf(),
                source,
            })
        };
        if path.is_dir() {
            let ptx = path.join("kernel.ptx");
            let cu = path.join("kernel.cu");
            let (lang, kernel_path) = match (present(&ptx)?, present(&cu)?) {
                (true, false) => (KernelLang::Ptx, ptx),
                (false, true) => (KernelLang::Cuda, cu),
                (true, true) => {
                    return Err(CandidateError::Layout {
                        path: path.to_path_buf(),
                        reason: "has both kernel.ptx and kernel.cu; keep one".into(),
                    });
                }
                (false, false) => {
                    return Err(CandidateError::Layout {
                        path: path.to_path_buf(),
                        reason: "a candidate folder needs kernel.ptx or kernel.cu".into(),
                    });
                }
            };
            let plan_path = path.join("plan.yaml");
            if !present(&plan_path)? {
                return Err(CandidateError::Layout {
                    path: path.to_path_buf(),
                    reason: "a candidate folder needs plan.yaml (the launch plan)".into(),
                });
            }
            return Ok(Candidate {
                lang,
                kernel: read(&kernel_path)?,
                plan: read(&plan_path)?,
                plan_source: plan_path.display().to_string(),
                notes: Vec::new(),
            });
        }
        let text = read(path)?;
        let mut c =
            Candidate::from_response(&text).map_err(|source| CandidateError::Extraction {
                path: path.to_path_buf(),
                source,
            })?;
        c.plan_source = format!("{}: {RESPONSE_PLAN}", path.display());
        Ok(c)
    }
}
