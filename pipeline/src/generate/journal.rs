//! The generation journal (`<out>/journal.json`): what a run has finished, so that a run that
//! is interrupted resumes without asking the model again.
//!
//! One entry per finished turn, keyed by `<trajectory key>#<turn>`; it names the turn's record
//! and exchange (both already in the store when the entry is written) and the conversation the
//! next turn continues from. Finished trajectories map to their trajectory object; the spend
//! counters cover every invocation on this folder. The file is rewritten whole, to a locked temp
//! file (`.journal-*`) then renamed, after every change: a crash leaves the old journal or the
//! new one, never half, and [`Journal::load`] sweeps the temp files a killed run left.
//!
//! Spend is journalled as an intent before a request is sent: the request is counted and its
//! completion budget (`sampling.max_tokens`) reserved, and the journal is saved, then the
//! request goes out; the reply's usage replaces the reservation. A run killed with requests in
//! flight leaves them counted, and [`Journal::load`] counts their reservations as tokens spent,
//! so `--max-requests` and `--max-tokens` hold across kills. The journal also keeps the
//! generation's seed, so a resumed generation reuses the one drawn when it started.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::engine::Verdict;
use crate::record::Stage;

pub const JOURNAL_SCHEMA: &str = "ptxbench.generate-journal/1";
pub const JOURNAL_FILE: &str = "journal.json";

/// Requests and tokens spent so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spend {
    /// Requests sent or about to be (counted before sending).
    pub requests: u64,
    /// Tokens the endpoint reported, saturating.
    pub tokens: u64,
    /// Tokens reserved for requests in flight (their `max_tokens`); on load, those of a run
    /// that was killed count as spent.
    #[serde(default)]
    pub reserved_tokens: u64,
}

/// The prefix of the journal's temp files.
const TEMP_PREFIX: &str = ".journal-";

/// One finished turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnEntry {
    pub record_digest: Digest,
    pub exchange_digest: Digest,
    pub verdict: Verdict,
    /// Where the evaluation stopped (absent from journals written before it was kept).
    #[serde(default)]
    pub stage: Stage,
    pub min_speedup: Option<f64>,
    /// The conversation (JSON messages) the next turn sends; `None` when the trajectory stops.
    pub next_prompt_digest: Option<Digest>,
    /// Why the trajectory stopped after this turn, if it did.
    pub stop: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    pub schema: String,
    pub spent: Spend,
    /// The base seed of the generation (the manifest's, or the one drawn when it started).
    #[serde(default)]
    pub seed: Option<u64>,
    pub turns: BTreeMap<String, TurnEntry>,
    /// Trajectory key → its trajectory object.
    pub trajectories: BTreeMap<String, Digest>,
}

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a generation journal: {message}", .path.display())]
    Parse { path: PathBuf, message: String },
}

/// The key of one turn.
pub fn turn_key(trajectory: &str, turn: u32) -> String {
    format!("{trajectory}#{turn}")
}

impl Journal {
    /// Reads the journal in `dir`, or an empty one if there is none yet; removes the temp files
    /// of killed runs and counts their in-flight reservations as spent.
    pub fn load(dir: &Path) -> Result<Journal, JournalError> {
        let path = dir.join(JOURNAL_FILE);
        crate::scratch::sweep(dir, TEMP_PREFIX, crate::scratch::STALE_AFTER, &[]).map_err(
            |source| JournalError::Io {
                path: dir.to_path_buf(),
                source,
            },
        )?;
        match std::fs::read(&path) {
            Ok(bytes) => {
                let mut j: Journal =
                    serde_json::from_slice(&bytes).map_err(|e| JournalError::Parse {
                        path: path.clone(),
                        message: e.to_string(),
                    })?;
                if j.schema != JOURNAL_SCHEMA {
                    return Err(JournalError::Parse {
                        path,
                        message: format!("schema `{}`, expected `{JOURNAL_SCHEMA}`", j.schema),
                    });
                }
                j.spent.tokens = j.spent.tokens.saturating_add(j.spent.reserved_tokens);
                j.spent.reserved_tokens = 0;
                Ok(j)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Journal {
                schema: JOURNAL_SCHEMA.into(),
                ..Journal::default()
            }),
            Err(source) => Err(JournalError::Io { path, source }),
        }
    }

    /// Writes the journal to `dir` atomically (temp file, sync, rename).
    pub fn save(&self, dir: &Path) -> Result<(), JournalError> {
        let path = dir.join(JOURNAL_FILE);
        let io = |source| JournalError::Io {
            path: path.clone(),
            source,
        };
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| io(std::io::Error::other(e)))?;
        crate::destination::write_atomic(&path, &bytes)
            .map_err(|e| io(std::io::Error::other(e.to_string())))
    }

    /// The finished turns of one trajectory, in order (turns are 0-based and contiguous).
    pub fn turns_of(&self, trajectory: &str) -> Vec<&TurnEntry> {
        let mut out = Vec::new();
        let mut t = 0;
        while let Some(e) = self.turns.get(&turn_key(trajectory, t)) {
            out.push(e);
            t += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_journal_loads_back_and_a_missing_one_is_empty() {
        let dir = tempfile::tempdir().expect("temp dir");
        let empty = Journal::load(dir.path()).expect("empty");
        assert!(empty.turns.is_empty());
        let mut j = empty.clone();
        j.spent.requests = 3;
        let d = Digest::of(b"x");
        for t in [0, 1, 3] {
            j.turns.insert(
                turn_key("m/t/sm_90a/v1/r1", t),
                TurnEntry {
                    record_digest: d,
                    exchange_digest: d,
                    verdict: Verdict::Numerical,
                    stage: Stage::Correctness,
                    min_speedup: None,
                    next_prompt_digest: Some(d),
                    stop: None,
                },
            );
        }
        j.save(dir.path()).expect("saved");
        let back = Journal::load(dir.path()).expect("loads");
        assert_eq!(back, j);
        assert_eq!(back.turns_of("m/t/sm_90a/v1/r1").len(), 2);
    }

    #[test]
    fn issue_15_reservations_of_a_killed_run_count_as_spent() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut j = Journal::load(dir.path()).expect("empty");
        j.spent = Spend {
            requests: 5,
            tokens: u64::MAX - 10,
            reserved_tokens: 4096,
        };
        j.seed = Some(42);
        j.save(dir.path()).expect("saved");
        let back = Journal::load(dir.path()).expect("loads");
        assert_eq!(back.spent.requests, 5);
        assert_eq!(back.spent.tokens, u64::MAX, "saturates");
        assert_eq!(back.spent.reserved_tokens, 0);
        assert_eq!(back.seed, Some(42));
    }
}
