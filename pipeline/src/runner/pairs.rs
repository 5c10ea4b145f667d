//! A run list expanded into pairs (one candidate on one task), each statically checked here on
//! the CPU and keyed by everything its evaluation depends on, and split into shards.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::list::RunList;
use crate::arch::Arch;
use crate::candidate::{Candidate, CandidateError, KernelLang};
use crate::digest::Digest;
pub use crate::engine::evaluator::Work;
use crate::engine::evaluator::{Evaluator, Job, Prepared};
use crate::engine::key::{EvaluationKey, Submitted};
use crate::record::task::SuiteObjects;
use crate::record::{Protocol, Role, Verdict};
use crate::task::{Suite, Task, glob_match};

/// One evaluation of one candidate on one task.
#[derive(Debug, Clone)]
pub struct Pair {
    /// Hashes the PTX, plan, task, arch, seed, protocol, workloads and timing switch: the same
    /// key is the same evaluation, so a finished one is never redone.
    pub key: Digest,
    pub evaluation: String,
    pub entry: String,
    pub role: Role,
    pub expected: Option<Verdict>,
    pub task: String,
    pub task_hash: Digest,
    /// What the record stores by digest: the CUDA C++ source (if any), the PTX, the plan.
    pub source: Option<String>,
    pub ptx: Option<String>,
    pub plan: String,
    pub workloads: Vec<String>,
    /// Correctness and evidence only.
    pub no_timing: bool,
    pub timeout: Duration,
    pub work: Work,
}

impl Pair {
    /// The pair's entry in the resumption index: its key and its evaluation's name, so that two
    /// evaluations of the same bytes (under two entries) each keep their record, while a pair
    /// whose entry, role or expectation was renamed finds its record again.
    pub fn index_key(&self) -> Digest {
        crate::engine::key::labelled(self.key, &self.evaluation)
    }
}

/// What every pair of a run shares.
#[derive(Debug, Clone)]
pub struct Settings {
    pub arch: Arch,
    pub seed: u64,
    /// The seed came from `--seed` or the list, not drawn when the run started.
    pub seed_given: bool,
    pub protocol: Protocol,
}

/// Why a list could not be expanded.
#[derive(Debug, thiserror::Error)]
pub enum PairError {
    #[error("{list}: evaluations[{index}] ({name}): {source}")]
    Candidate {
        list: PathBuf,
        index: usize,
        name: String,
        #[source]
        source: CandidateError,
    },
    #[error("{list}: evaluations[{index}] ({name}): no task matches {patterns:?}")]
    NoTask {
        list: PathBuf,
        index: usize,
        name: String,
        patterns: Vec<String>,
    },
    #[error(
        "{list}: evaluations `{first}` and `{second}` both give entry `{entry}` a record for task {task}; give one of them its own `entry`"
    )]
    Clash {
        list: PathBuf,
        first: String,
        second: String,
        entry: String,
        task: String,
    },
    #[error("task {task} is in the suite but was not stored")]
    NotStored { task: String },
    #[error("{list}: evaluations[{index}] ({name}): workloads: {why}")]
    Workload {
        list: PathBuf,
        index: usize,
        name: String,
        why: String,
    },
}

/// The evaluation key of a pair (see [`Pair::key`]): [`EvaluationKey`], the service's key
/// too, with the run's settled seed.
pub fn key(
    candidate: Submitted,
    task: Digest,
    settings: &Settings,
    workloads: &[String],
    no_timing: bool,
) -> Digest {
    EvaluationKey {
        candidate,
        task,
        arch: settings.arch,
        seed: Some(settings.seed),
        protocol: &settings.protocol,
        workloads,
        no_timing,
    }
    .digest()
}

/// Every pair of `list` (whose file is `list_path`), in list order, then task order.
pub fn expand(
    list: &RunList,
    list_path: &Path,
    suite: &Suite,
    stored: &SuiteObjects,
    settings: &Settings,
) -> Result<Vec<Pair>, PairError> {
    let base = list_path.parent().unwrap_or(Path::new("."));
    // What to check, in list order, then task order.
    let mut todo = Vec::new();
    for (index, e) in list.evaluations.iter().enumerate() {
        let cand = Candidate::from_files(&base.join(&e.kernel), &base.join(&e.plan)).map_err(
            |source| PairError::Candidate {
                list: list_path.to_path_buf(),
                index,
                name: e.name.clone(),
                source,
            },
        )?;
        let cand = std::sync::Arc::new(cand);
        let tasks: Vec<&Task> = suite
            .tasks
            .iter()
            .filter(|t| e.tasks.iter().any(|p| glob_match(p, t.id.as_str())))
            .collect();
        if tasks.is_empty() {
            return Err(PairError::NoTask {
                list: list_path.to_path_buf(),
                index,
                name: e.name.clone(),
                patterns: e.tasks.clone(),
            });
        }
        for task in tasks {
            if let Some(why) = task.unknown_workload(&e.workloads) {
                return Err(PairError::Workload {
                    list: list_path.to_path_buf(),
                    index,
                    name: e.name.clone(),
                    why,
                });
            }
            let object = stored
                .object(task.id.as_str())
                .ok_or_else(|| PairError::NotStored {
                    task: task.id.to_string(),
                })?;
            todo.push((e, cand.clone(), task, object));
        }
    }
    // The static checks are independent: on every core, kept in order.
    use rayon::prelude::*;
    let pairs: Vec<Pair> = todo
        .into_par_iter()
        .map(|(e, cand, task, object)| {
            let job = Job {
                arch: settings.arch,
                seed: settings.seed,
                protocol: settings.protocol.clone(),
                workloads: e.workloads.clone(),
                no_timing: e.no_timing,
            };
            let Prepared { report, work } = Evaluator::prepare(Ok(&cand), task, object, &job);
            Pair {
                key: key(
                    Submitted::kernel(cand.lang == KernelLang::Cuda, &cand.kernel, &cand.plan),
                    task.digest(),
                    settings,
                    &e.workloads,
                    e.no_timing,
                ),
                evaluation: e.name.clone(),
                entry: e.entry().to_string(),
                role: e.role,
                expected: e.expect,
                task: task.id.to_string(),
                task_hash: task.digest(),
                source: (cand.lang == KernelLang::Cuda).then(|| cand.kernel.clone()),
                ptx: report.ptx.clone(),
                plan: cand.plan.clone(),
                workloads: e.workloads.clone(),
                no_timing: e.no_timing,
                timeout: Duration::from_secs(e.timeout_s.unwrap_or(list.timeout_s)),
                work,
            }
        })
        .collect();
    check_clashes(&pairs, list_path)?;
    Ok(pairs)
}

/// An entry has one record per task: two evaluations of one entry on one task would collide.
fn check_clashes(pairs: &[Pair], list: &Path) -> Result<(), PairError> {
    let mut owner: BTreeMap<(&str, &str), &str> = BTreeMap::new();
    for p in pairs {
        if let Some(first) = owner.insert((&p.entry, &p.task), &p.evaluation) {
            return Err(PairError::Clash {
                list: list.to_path_buf(),
                first: first.to_string(),
                second: p.evaluation.clone(),
                entry: p.entry.clone(),
                task: p.task.clone(),
            });
        }
    }
    Ok(())
}

/// The `i`-th of `n` shares of a list's pairs (0-based), e.g. `0/4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

/// A shard that is not `i/n` with `0 <= i < n`.
#[derive(Debug, thiserror::Error)]
#[error("--shard {0}: takes i/n with 0 <= i < n, e.g. 0/4")]
pub struct ShardError(String);

impl std::str::FromStr for Shard {
    type Err = ShardError;
    fn from_str(s: &str) -> Result<Shard, ShardError> {
        let bad = || ShardError(s.to_string());
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (usize, usize) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// The pairs of this shard: every `count`-th, from `index` on.
    pub fn take<T>(self, items: Vec<T>) -> Vec<T> {
        items
            .into_iter()
            .enumerate()
            .filter(|(k, _)| k % self.count == self.index)
            .map(|(_, it)| it)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_pairs() {
        let s: Shard = "1/3".parse().expect("valid");
        assert_eq!(s.take((0..7).collect()), vec![1, 4]);
        for bad in ["3/3", "1", "a/2", "0/0"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_key_follows_the_seed_and_the_protocol() {
        let s = Settings {
            arch: Arch::Sm90a,
            seed: 1,
            seed_given: true,
            protocol: Protocol::default(),
        };
        let d = Digest::of(b"p");
        let c = || Submitted::kernel(false, "ptx", "plan");
        let k = key(c(), d, &s, &[], false);
        let other_seed = Settings {
            seed: 2,
            ..s.clone()
        };
        assert_ne!(k, key(c(), d, &other_seed, &[], false));
        assert_ne!(k, key(c(), d, &s, &["M1".into()], false));
        // Two kernels that do not compile (no PTX) are two keys: the key is the submitted bytes.
        assert_ne!(
            k,
            key(Submitted::kernel(false, "ptx 2", "plan"), d, &s, &[], false)
        );
        assert_eq!(k, key(c(), d, &s, &[], false));
    }
}
