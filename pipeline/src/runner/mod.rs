//! `ptxbench run`: a run list evaluated on every GPU of the host, each result a record in the
//! store as soon as its evaluation ends.
//!
//! [`list`] reads the run list; [`pairs`] expands it into (candidate, task) pairs, statically
//! checked on the CPU and keyed by everything an evaluation depends on, and shards them;
//! [`seed`] chooses the run's seed (the flag, the list's, or drawn now); [`index`] is the
//! run folder's resumption index (key → record, and the drawn seed), so an interrupted run
//! resumes without redoing finished pairs; [`pool`] runs one worker process per GPU;
//! [`publish`] makes the records and the run object.

pub mod index;
pub mod list;
pub mod pairs;
pub mod pool;
pub mod publish;
pub mod seed;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::digest::Digest;
use crate::engine::evaluator::Evaluator;
use crate::record::task::{SuiteObjects, TaskObjectError};
use crate::record::{Protocol, RecordError, Verdict};
use crate::store::Store;
use crate::task::Suite;

use index::{IndexError, RunIndex};
use list::{ListError, RunList};
use pairs::{PairError, Settings, Shard, Work};
use publish::Publisher;
use seed::{SeedError, SeedOrigin};

/// Where the resumption index of a list goes by default: `<store>/runs/<list name>`.
pub const RUNS_DIR: &str = "runs";

/// What to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub list: PathBuf,
    /// The run folder (default: `<store>/runs/<list name>`).
    pub out: Option<PathBuf>,
    pub shard: Option<Shard>,
    /// Use at most this many GPUs (default: all).
    pub gpus: Option<usize>,
    /// Overrides the list's seed.
    pub seed: Option<u64>,
    /// Evaluate nothing: make the run object from the records already made.
    pub publish_only: bool,
    /// Each worker started when its evaluation comes, compiling in it (see `run --help`).
    pub cold_workers: bool,
}

/// One pair's result, for the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub evaluation: String,
    pub task: String,
    pub verdict: Verdict,
    pub expected: Option<Verdict>,
    pub min_speedup: Option<f64>,
    pub record: Digest,
}

/// What a run did.
#[derive(Debug)]
pub struct RunReport {
    pub name: String,
    pub out: PathBuf,
    pub seed: u64,
    pub seed_origin: SeedOrigin,
    pub pairs: usize,
    /// Pairs whose record an earlier start made.
    pub resumed: usize,
    /// Pairs not evaluated (`--publish-only`), as `evaluation on task`.
    pub skipped: Vec<String>,
    /// One row per pair with a record, sorted by evaluation and task.
    pub rows: Vec<Row>,
    pub run_digest: Digest,
    /// Results that could not be stored (the run goes on without them).
    pub failures: Vec<String>,
    /// Seconds from the start until every pair was statically checked, and until the last
    /// evaluation ended.
    pub check_seconds: f64,
    pub evaluated_after: f64,
}

impl RunReport {
    /// Rows whose verdict is not the one the list expects.
    pub fn mismatches(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.expected.is_some_and(|x| x != r.verdict))
            .count()
    }
}

/// Why a run could not be made (a failing candidate is a verdict, never this).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    List(#[from] ListError),
    #[error(transparent)]
    Pairs(#[from] PairError),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error(transparent)]
    Seed(#[from] SeedError),
    #[error("storing the task suite: {0}")]
    Suite(#[from] TaskObjectError),
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("counting GPUs: {0}")]
    Gpus(String),
    #[error("no GPU on this machine ({0} pairs need one)")]
    NoGpu(usize),
}

/// Runs `opts.list` against `suite`, storing into `store`; workers are `exe worker`.
pub fn run(
    store: &Store,
    suite: &Suite,
    exe: &Path,
    opts: &RunOptions,
    progress: &indicatif::ProgressBar,
) -> Result<RunReport, RunError> {
    let (list, list_text) = RunList::load(&opts.list)?;
    let out = opts
        .out
        .clone()
        .unwrap_or_else(|| store.root().join(RUNS_DIR).join(&list.name));
    let mut index = RunIndex::load(&out, &list.name)?;
    let (seed, seed_origin) = seed::choose(opts.seed, list.seed, index.drawn_seed)?;
    let settings = Settings {
        arch: list.arch,
        seed,
        seed_given: matches!(seed_origin, seed::SeedOrigin::Flag | seed::SeedOrigin::List),
        protocol: list.protocol.clone().unwrap_or_else(Protocol::default),
    };
    // Everything is checked before anything is written.
    let stored = SuiteObjects::of(suite)?;
    let clock = std::time::Instant::now();
    let mut pairs = pairs::expand(&list, &opts.list, suite, &stored, &settings)?;
    let check_seconds = clock.elapsed().as_secs_f64();
    if let Some(shard) = opts.shard {
        pairs = shard.take(pairs);
    }
    stored.put(store)?;
    if seed_origin == SeedOrigin::Drawn {
        // Kept before anything runs, so that a resumed start reuses it.
        index.drawn_seed = Some(seed);
        index.save(&out)?;
    }
    let publisher = Publisher {
        store,
        suite: &stored,
        settings: &settings,
    };
    let total = pairs.len();

    // Done before: the index names a record that the store holds.
    let mut todo = Vec::new();
    let mut made: Vec<(usize, Digest)> = Vec::new();
    for (i, pair) in pairs.iter().enumerate() {
        match index.records.get(&pair.index_key()) {
            Some(d) if store.contains(d) => {
                let d = publisher.relabel(pair, *d)?;
                index.records.insert(pair.index_key(), d);
                made.push((i, d));
            }
            _ => todo.push(i),
        }
    }
    let resumed = made.len();
    let mut skipped = Vec::new();
    if opts.publish_only {
        skipped = todo
            .drain(..)
            .map(|i| format!("{} on {}", pairs[i].evaluation, pairs[i].task))
            .collect();
    }
    index.save(&out)?;

    let needs_gpu = todo
        .iter()
        .filter(|i| matches!(pairs[**i].work, Work::Evaluate(_)))
        .count();
    let gpus = if needs_gpu > 0 {
        let n = crate::cuda::driver::device_count().map_err(|e| RunError::Gpus(e.to_string()))?;
        if n == 0 {
            return Err(RunError::NoGpu(needs_gpu));
        }
        opts.gpus.unwrap_or(n).clamp(1, n)
    } else {
        1
    };
    progress.set_length(todo.len() as u64);
    let state = Mutex::new((index, made, Vec::<String>::new()));
    let todo_pairs: Vec<_> = todo.iter().map(|&i| (i, pairs[i].clone())).collect();
    let position: std::collections::BTreeMap<Digest, usize> = todo_pairs
        .iter()
        .map(|(i, p)| (p.index_key(), *i))
        .collect();
    let evaluator = if opts.cold_workers {
        Evaluator::new(exe.to_path_buf())
    } else {
        Evaluator::with_spares(exe.to_path_buf())
    };
    pool::evaluate_all(
        todo_pairs.into_iter().map(|(_, p)| p).collect(),
        gpus,
        &evaluator,
        !opts.cold_workers,
        progress,
        &|pair, outcome| {
            let stored = publisher.record(pair, outcome);
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
            let (index, made, failures) = &mut *s;
            match stored {
                Ok(d) => {
                    index.records.insert(pair.index_key(), d);
                    if let Some(&i) = position.get(&pair.index_key()) {
                        made.push((i, d));
                    }
                    if let Err(e) = index.save(&out) {
                        failures.push(e.to_string());
                    }
                }
                Err(e) => failures.push(format!(
                    "{} on {}: the record was not stored: {e}",
                    pair.evaluation, pair.task
                )),
            }
        },
    );
    let evaluated_after = clock.elapsed().as_secs_f64();
    let (_, mut made, failures) = state.into_inner().unwrap_or_else(|e| e.into_inner());
    made.sort();
    let records: Vec<Digest> = made.iter().map(|(_, d)| *d).collect();
    let run_digest = publisher.run(&list, &list_text, &records)?;
    let mut rows = Vec::with_capacity(made.len());
    for (i, d) in &made {
        let r = crate::record::load_record(store, d)?;
        rows.push(Row {
            evaluation: pairs[*i].evaluation.clone(),
            task: pairs[*i].task.clone(),
            verdict: r.verdict,
            expected: r.expected,
            min_speedup: r.min_speedup(),
            record: *d,
        });
    }
    rows.sort_by(|a, b| (&a.evaluation, &a.task).cmp(&(&b.evaluation, &b.task)));
    Ok(RunReport {
        name: list.name,
        out,
        seed,
        seed_origin,
        pairs: total,
        resumed,
        skipped,
        rows,
        run_digest,
        failures,
        check_seconds,
        evaluated_after,
    })
}
