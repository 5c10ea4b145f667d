//! Records of a run: each pair's outcome becomes a `ptxbench.record` in the store the moment
//! its evaluation ends (with its source, PTX, plan, cubin and task object), and the run object
//! lists them.

use super::list::RunList;
use super::pairs::{Pair, Settings};
use crate::digest::Digest;
use crate::record::measured::Measured;
use crate::record::task::SuiteObjects;
use crate::record::{self, Outcome, RECORD_SCHEMA, RUN_SCHEMA, RecordError, RunObject};
use crate::store::Store;

/// Makes and stores the records of one run.
#[derive(Debug, Clone, Copy)]
pub struct Publisher<'a> {
    pub store: &'a Store,
    pub suite: &'a SuiteObjects,
    pub settings: &'a Settings,
}

impl Publisher<'_> {
    /// Stores `pair`'s record of `outcome` and everything it names.
    pub fn record(&self, pair: &Pair, outcome: Outcome) -> Result<Digest, RecordError> {
        Measured {
            entry: &pair.entry,
            role: pair.role,
            model: None,
            evaluation: Some(&pair.evaluation),
            task: &pair.task,
            task_hash: pair.task_hash,
            arch: self.settings.arch,
            seed: self.settings.seed,
            seed_given: self.settings.seed_given,
            protocol: &self.settings.protocol,
            workloads: &pair.workloads,
            correctness_only: pair.no_timing,
            expected: pair.expected,
            source: pair.source.as_deref(),
            ptx: pair.ptx.as_deref(),
            plan: &pair.plan,
            prompt: None,
            response: None,
            turn: None,
            previous: None,
        }
        .store(self.store, self.suite, outcome)
    }

    /// The record an earlier start made for `pair`, with the labels the list gives it now
    /// (entry, role, expected verdict, evaluation name): a renamed entry needs no new
    /// evaluation. Returns `digest` itself when nothing changed. A record of an older schema
    /// is kept as it is.
    pub fn relabel(&self, pair: &Pair, digest: Digest) -> Result<Digest, RecordError> {
        let mut r = record::load_record(self.store, &digest)?;
        let labels = (
            r.entry.as_str(),
            r.role,
            r.expected,
            r.evaluation.as_deref(),
        );
        let wanted = (
            pair.entry.as_str(),
            pair.role,
            pair.expected,
            Some(pair.evaluation.as_str()),
        );
        if labels == wanted || r.schema != RECORD_SCHEMA {
            return Ok(digest);
        }
        r.entry = pair.entry.clone();
        r.role = pair.role;
        r.expected = pair.expected;
        r.evaluation = Some(pair.evaluation.clone());
        record::put_record(self.store, &r)
    }

    /// Stores the run object of `records` (sorted by entry and task) made from `list`.
    pub fn run(
        &self,
        list: &RunList,
        list_text: &str,
        records: &[Digest],
    ) -> Result<Digest, RecordError> {
        let mut keyed = Vec::with_capacity(records.len());
        for d in records {
            let r = record::load_record(self.store, d)?;
            keyed.push(((r.entry, r.task), *d));
        }
        keyed.sort();
        keyed.dedup();
        let run = RunObject {
            schema: RUN_SCHEMA.into(),
            name: list.name.clone(),
            arch: list.arch,
            list_digest: self.store.put(list_text.as_bytes())?,
            suite_hash: self.suite.suite_hash,
            record_digests: keyed.into_iter().map(|(_, d)| d).collect(),
        };
        Ok(self.store.put_object(&run)?)
    }
}
