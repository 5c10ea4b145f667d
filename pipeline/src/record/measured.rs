//! A measured record, made one way: the evaluator's outcome with who asked for it, what it was
//! asked, and the bytes it ran, each stored by digest. `run` and `generate` both make their
//! records here, so a record means the same whichever command made it.

use super::task::SuiteObjects;
use super::{Outcome, RECORD_SCHEMA, Record, RecordError, Role, put_record};
use crate::arch::Arch;
use crate::digest::Digest;
use crate::engine::Protocol;
use crate::record::Verdict;
use crate::store::Store;

/// Everything a measured record names beside its outcome.
#[derive(Debug, Clone)]
pub struct Measured<'a> {
    /// The leaderboard row and its kind.
    pub entry: &'a str,
    pub role: Role,
    /// The model that wrote the candidate (generation), if any.
    pub model: Option<&'a str>,
    /// The run list's evaluation that made it (run), if any.
    pub evaluation: Option<&'a str>,
    pub task: &'a str,
    pub task_hash: Digest,
    pub arch: Arch,
    pub seed: u64,
    /// The seed was given, not drawn at run time ([`crate::record::Record::seed_given`]).
    pub seed_given: bool,
    pub protocol: &'a Protocol,
    pub workloads: &'a [String],
    /// No timing was asked for (correctness and evidence only).
    pub correctness_only: bool,
    pub expected: Option<Verdict>,
    /// The bytes that ran: the CUDA C++ source (if the kernel was CUDA C++), the PTX (absent
    /// when none was made), the plan.
    pub source: Option<&'a str>,
    pub ptx: Option<&'a str>,
    pub plan: &'a str,
    /// The conversation (generation): the messages sent, the answer, the turn, the previous
    /// turn's record.
    pub prompt: Option<&'a [u8]>,
    pub response: Option<&'a str>,
    pub turn: Option<u32>,
    pub previous: Option<Digest>,
}

impl Measured<'_> {
    /// Stores the record of `outcome` and every blob it names; returns the record's digest.
    pub fn store(
        &self,
        store: &Store,
        suite: &SuiteObjects,
        outcome: Outcome,
    ) -> Result<Digest, RecordError> {
        let text = |t: Option<&str>| t.map(|t| store.put(t.as_bytes())).transpose();
        let record = Record {
            schema: RECORD_SCHEMA.into(),
            entry: self.entry.to_string(),
            role: self.role,
            model: self.model.map(str::to_string),
            evaluation: self.evaluation.map(str::to_string),
            task: self.task.to_string(),
            task_hash: self.task_hash,
            task_digest: suite.task(self.task),
            suite_hash: suite.suite_hash,
            suite_digest: Some(suite.digest),
            arch: self.arch,
            provenance: "measured".into(),
            kernel_source_digest: text(self.source)?,
            ptx_digest: text(self.ptx)?,
            plan_digest: store.put(self.plan.as_bytes())?,
            cubin_digest: outcome.cubin.as_deref().map(|c| store.put(c)).transpose()?,
            prompt_digest: self.prompt.map(|p| store.put(p)).transpose()?,
            response_digest: text(self.response)?,
            turn: self.turn,
            previous_digest: self.previous,
            seed: self.seed,
            seed_given: self.seed_given,
            protocol: self.protocol.clone(),
            workloads_selected: self.workloads.to_vec(),
            correctness_only: self.correctness_only,
            expected: self.expected,
            verdict: outcome.verdict,
            min_speedup: outcome.min_speedup,
            outcome,
        };
        put_record(store, &record)
    }
}
