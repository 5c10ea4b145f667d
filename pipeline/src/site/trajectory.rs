//! Generation trajectories among the loaded records: a model's turns on one task, linked by
//! `previous_digest` and named by the first record of the chain. What the trajectory pages and
//! the previous/next links of record pages are built from.
//!
//! A record is in a trajectory when it has a turn number or a previous record; single-turn
//! records of run lists have neither and are in none. Within a trajectory records are ordered
//! by turn, then digest; a record's next turn is a record naming it as `previous_digest`.

use std::collections::BTreeMap;

use crate::digest::Digest;

use super::input::LoadedRecord;

/// One trajectory: indices into the input's records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trajectory {
    /// The first record of the chain among the loaded records (its page is named by it).
    pub root: Digest,
    /// Ordered by turn, then digest; `records[0]` is the root.
    pub records: Vec<usize>,
}

/// Every trajectory of a site, and where each record is.
#[derive(Debug, Clone, Default)]
pub struct Trajectories {
    /// Sorted by root digest.
    pub all: Vec<Trajectory>,
    /// Per record (index into the input's records): its trajectory (index into `all`).
    of: Vec<Option<usize>>,
    /// Per record: the record of its previous turn and of its next, where loaded.
    previous: Vec<Option<usize>>,
    next: Vec<Option<usize>>,
}

impl Trajectories {
    /// Groups `records` by `roots` (for each record, the first record of its chain, see
    /// `context::trajectory_roots`).
    pub fn new(records: &[LoadedRecord], roots: &[Digest]) -> Trajectories {
        let index: BTreeMap<Digest, usize> = records
            .iter()
            .enumerate()
            .map(|(i, r)| (r.digest, i))
            .collect();
        let mut by_root: BTreeMap<Digest, Vec<usize>> = BTreeMap::new();
        for (i, r) in records.iter().enumerate() {
            if r.record.turn.is_some() || r.record.previous_digest.is_some() {
                by_root.entry(roots[i]).or_default().push(i);
            }
        }
        let mut of = vec![None; records.len()];
        let mut previous = vec![None; records.len()];
        let mut next: Vec<Option<usize>> = vec![None; records.len()];
        let mut all = Vec::with_capacity(by_root.len());
        for (root, mut members) in by_root {
            members.sort_by_key(|&i| (records[i].record.turn, records[i].digest));
            // The root sorts first unless another record claims an earlier turn: keep it first.
            if let Some(pos) = members.iter().position(|&i| records[i].digest == root) {
                let r = members.remove(pos);
                members.insert(0, r);
            }
            for &i in &members {
                of[i] = Some(all.len());
                if let Some(&p) = records[i]
                    .record
                    .previous_digest
                    .as_ref()
                    .and_then(|d| index.get(d))
                {
                    previous[i] = Some(p);
                    // The first of its successors in this order is its next turn.
                    if next[p].is_none() {
                        next[p] = Some(i);
                    }
                }
            }
            all.push(Trajectory {
                root,
                records: members,
            });
        }
        Trajectories {
            all,
            of,
            previous,
            next,
        }
    }

    /// The trajectory of record `i`, if it is in one.
    pub fn of(&self, i: usize) -> Option<&Trajectory> {
        self.of.get(i).copied().flatten().map(|t| &self.all[t])
    }

    /// The record of the turn before record `i`'s, where loaded.
    pub fn previous(&self, i: usize) -> Option<usize> {
        self.previous.get(i).copied().flatten()
    }

    /// The record of the turn after record `i`'s, where loaded.
    pub fn next(&self, i: usize) -> Option<usize> {
        self.next.get(i).copied().flatten()
    }
}
