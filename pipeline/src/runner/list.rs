//! Run lists: the YAML that names what `ptxbench run` evaluates. Strict (unknown keys and
//! duplicate keys are errors); paths inside are relative to the list file.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::arch::Arch;
use crate::record::{Protocol, Role, Verdict};

/// One run list.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunList {
    pub name: String,
    pub arch: Arch,
    /// The base seed of every evaluation; absent: drawn when the run starts (see
    /// `runner::seed`).
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub protocol: Option<Protocol>,
    #[serde(default = "default_timeout")]
    pub timeout_s: u64,
    pub evaluations: Vec<EvaluationSpec>,
}

fn default_timeout() -> u64 {
    300
}

/// One candidate on the tasks its patterns match.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvaluationSpec {
    pub name: String,
    /// Paths relative to the list file.
    pub kernel: PathBuf,
    pub plan: PathBuf,
    /// Task ids, `*` a wildcard.
    pub tasks: Vec<String>,
    #[serde(default)]
    pub workloads: Vec<String>,
    #[serde(default)]
    pub no_timing: bool,
    /// What the list's author expects (checked and reported, never used to grade).
    #[serde(default)]
    pub expect: Option<Verdict>,
    /// Overrides the list's worker time limit.
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// `entry` (default) or `harness-test` (known-bad kernels, kept off the leaderboard).
    #[serde(default)]
    pub role: Role,
    /// The leaderboard entry its records belong to (default: the evaluation's name), so that
    /// several evaluations of one submission (one per task family, say) make one entry.
    #[serde(default)]
    pub entry: Option<String>,
}

impl EvaluationSpec {
    pub fn entry(&self) -> &str {
        self.entry.as_deref().unwrap_or(&self.name)
    }
}

/// Why a run list could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a valid run list: {message}")]
    Invalid { path: PathBuf, message: String },
}

impl RunList {
    /// Parses the list at `path` (whose text is `text`).
    pub fn parse(text: &str, path: &Path) -> Result<RunList, ListError> {
        let options = serde_saphyr::options! {
            strict_booleans: true,
            duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
        };
        serde_saphyr::from_str_with_options(text, options).map_err(|e| ListError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    }

    /// Reads and parses the list at `path`; returns it with its text.
    pub fn load(path: &Path) -> Result<(RunList, String), ListError> {
        let text = std::fs::read_to_string(path).map_err(|source| ListError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Ok((RunList::parse(&text, path)?, text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_without_a_seed_leaves_it_to_the_run() {
        let text = "name: l\narch: sm_90a\nevaluations:\n  - {name: e, kernel: k.ptx, plan: p.yaml, tasks: [\"gemm_*\"], role: harness-test, expect: numerical}\n";
        let l = RunList::parse(text, Path::new("l.yaml")).expect("valid");
        assert_eq!((l.seed, l.timeout_s), (None, 300));
        assert_eq!(l.evaluations[0].entry(), "e");
        assert_eq!(l.evaluations[0].role, Role::HarnessTest);
        let bad = RunList::parse(
            "name: l\narch: sm_90a\nevaluations: []\nextra: 1\n",
            Path::new("l.yaml"),
        );
        assert!(bad.expect_err("unknown key").to_string().contains("l.yaml"));
    }
}
