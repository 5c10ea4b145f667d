//! Candidates: kernel code plus a launch plan, from a model response or a folder.
//!
//! A candidate folder holds `kernel.ptx` or `kernel.cu` (CUDA C++ device code with inline PTX)
//! and `plan.yaml`; any other path is read as a model response and the two blocks are extracted
//! from it ([`extract`]).

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
            let (lang, kernel_path) = match (ptx.is_file(), cu.is_file()) {
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
            if !plan_path.is_file() {
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
