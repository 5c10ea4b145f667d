//! One generation: a manifest's work list run (or resumed) to its end, then published.
//!
//! [`Generation::prepare`] loads and checks everything before any request: the suite, the
//! manifest, the work list, the API keys, the journal and the seed (the manifest's, else the
//! journal's, else one drawn from the operating system's entropy and journalled at once, so a
//! resumed generation reuses it). [`Generation::run`] runs the trajectories, `concurrency`
//! threads per model, and, once every trajectory has ended, publishes a run object per arch and
//! the generation object ([`super::publish`]). Printing is the caller's: `run` reports progress
//! through a callback and returns a [`Report`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::chat::ChatClient;
pub use super::error::GenerateError;
use super::journal::{Journal, Spend};
use super::manifest::{GenManifest, SpendLimits};
use super::preflight;
pub use super::publish::Seed;
use super::publish::{self, CandidateList, Published};
use super::trajectory::{self, Context, End};
use super::{TrajectorySpec, work_list};
use crate::store::Store;
use crate::task::Suite;

/// What a generation is asked to do.
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    pub manifest: PathBuf,
    /// The task suite folder (made absolute: evaluation workers read it).
    pub suite_dir: PathBuf,
    /// The output folder: journal, digests, `--no-eval` candidates.
    pub out: PathBuf,
    pub store: Store,
    /// The `ptxbench` executable evaluations run in.
    pub exe: PathBuf,
    /// One turn per trajectory, candidates written out for `ptxbench run`.
    pub no_eval: bool,
    /// Start although no GPU is found (each evaluation then is a harness failure): a dry run
    /// of the loop.
    pub allow_no_gpu: bool,
    /// Override the manifest's spend limits.
    pub max_requests: Option<u64>,
    pub max_tokens: Option<u64>,
}

/// A generation ready to run: everything loaded and checked.
#[derive(Debug)]
pub struct Generation {
    options: GenerateOptions,
    suite: Suite,
    manifest: GenManifest,
    manifest_text: String,
    specs: Vec<TrajectorySpec>,
    skipped: Vec<String>,
    clients: Vec<ChatClient>,
    journal: Journal,
    seed: Seed,
    limits: SpendLimits,
    /// What the pre-flight check could not confirm.
    notes: Vec<String>,
    /// Held while this generation lives: one generation at a time per output folder (two would
    /// each spend the caps).
    _lock: std::fs::File,
}

/// The lock file in the output folder.
const LOCK_FILE: &str = ".generate.lock";

/// What `run` is about to do, for the caller to announce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overview {
    pub trajectories: usize,
    pub models: usize,
    pub turn_limit: u32,
    pub finished_before: usize,
    pub spent: Spend,
    pub seed: Seed,
}

/// What a run did.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub out: PathBuf,
    /// Over every invocation on the output folder.
    pub spent: Spend,
    pub turns: usize,
    /// Turns recorded, by verdict and the stage it was reached at ([`verdict_at`]).
    pub verdicts: BTreeMap<String, usize>,
    pub trajectories: usize,
    /// Trajectories that ended, by the class of their stop.
    pub stops: BTreeMap<String, usize>,
    /// Trajectories whose request kept failing (retried by the next run).
    pub failures: Vec<String>,
    /// Trajectories stopped by a harness failure (their answer is graded again by the next
    /// run, without a request).
    pub harness: Vec<String>,
    /// Why trajectories stopped at a spend cap.
    pub caps: Vec<String>,
    /// Every trajectory has ended.
    pub complete: bool,
    /// Trajectories ended so far (all invocations).
    pub ended: usize,
    /// With `--no-eval`: the run lists written.
    pub candidates: Vec<CandidateList>,
    /// Once complete: the run objects and the generation object.
    pub published: Option<Published>,
}

impl Generation {
    /// Loads and checks the suite, the manifest, the work list, the API keys, the tools, the
    /// GPU, the endpoints ([`super::preflight`]), the journal and the seed; no completion is
    /// requested.
    pub fn prepare(options: GenerateOptions) -> Result<Generation, GenerateError> {
        let suite = Suite::load(&options.suite_dir).map_err(|source| GenerateError::Suite {
            path: options.suite_dir.clone(),
            source,
        })?;
        let path = &options.manifest;
        let manifest_text = std::fs::read_to_string(path).map_err(|source| GenerateError::Io {
            path: path.clone(),
            source,
        })?;
        let manifest = GenManifest::parse(&manifest_text, path)?;
        let mut clients = Vec::new();
        for (index, m) in manifest.models.iter().enumerate() {
            let key = match &m.api_key_env {
                Some(var) => Some(std::env::var(var).map_err(|_| GenerateError::ApiKey {
                    path: path.clone(),
                    index,
                    var: var.clone(),
                })?),
                None => None,
            };
            // Whatever the variable is called, its value never leaves in a text.
            if let Some(k) = &key {
                crate::secrets::register(k);
            }
            clients.push(ChatClient::new(
                m.url(),
                key,
                Duration::from_secs(m.timeout_s),
            ));
        }
        // Evaluations on a service need no GPU here, but the service must answer.
        let remote = manifest.eval.endpoint.is_some();
        let needs = preflight::Needs {
            gpu: !options.no_eval && !options.allow_no_gpu && !remote,
            service: !options.no_eval && remote,
        };
        let notes = preflight::check(&manifest, &clients, needs).map_err(|problems| {
            GenerateError::Unusable {
                path: path.clone(),
                problems,
            }
        })?;
        std::fs::create_dir_all(&options.out).map_err(|source| GenerateError::Io {
            path: options.out.clone(),
            source,
        })?;
        let lock = lock_out(&options.out)?;
        let mut journal = Journal::load(&options.out)?;
        let seed = resolve_seed(&manifest, &journal, path)?;
        let (specs, skipped) = work_list(&manifest, &suite, seed.value).map_err(|message| {
            GenerateError::WorkList {
                path: path.clone(),
                message,
            }
        })?;
        if journal.seed != Some(seed.value) {
            journal.seed = Some(seed.value);
            journal.save(&options.out)?;
        }
        let mut limits = manifest.limits.clone();
        limits.max_requests = options.max_requests.or(limits.max_requests);
        limits.max_tokens = options.max_tokens.or(limits.max_tokens);
        Ok(Generation {
            options,
            suite,
            manifest,
            manifest_text,
            specs,
            skipped,
            clients,
            journal,
            seed,
            limits,
            notes,
            _lock: lock,
        })
    }

    /// The (task, arch) pairs skipped because the task has no target for the arch.
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }

    /// What the pre-flight check could not confirm (it found no problem).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    pub fn overview(&self) -> Overview {
        Overview {
            trajectories: self.specs.len(),
            models: self.manifest.models.len(),
            turn_limit: if self.options.no_eval {
                1
            } else {
                self.manifest.max_turns()
            },
            finished_before: self.finished(&self.journal),
            spent: self.journal.spent,
            seed: self.seed,
        }
    }

    fn finished(&self, journal: &Journal) -> usize {
        self.specs
            .iter()
            .filter(|s| journal.trajectories.contains_key(&s.key))
            .count()
    }

    /// Runs every unfinished trajectory; `progress` is called with the spend after each one
    /// ends (from worker threads). Publishes once every trajectory has ended.
    pub fn run(self, progress: &(dyn Fn(Spend) + Sync)) -> Result<Report, GenerateError> {
        let o = &self.options;
        let evaluator = crate::engine::evaluator::Evaluator::with_spares(o.exe.clone());
        // A slot for each evaluation the evaluator runs at once on a GPU (correctness-only
        // ones share a GPU; a timed one waits in the evaluator until it has it alone).
        let queue = crate::engine::evaluator::Queue::start(
            evaluator,
            self.manifest.eval.gpus,
            Duration::from_secs(self.manifest.eval.timeout_s),
        );
        let ctx = Context {
            store: &o.store,
            suite: &self.suite,
            suite_dir: o.suite_dir.clone(),
            manifest: &self.manifest,
            seed: self.seed.value,
            seed_given: !self.seed.drawn,
            out: o.out.clone(),
            queue,
            no_eval: o.no_eval,
            limits: self.limits.clone(),
            journal: Mutex::new(self.journal.clone()),
            capped: AtomicBool::new(false),
        };
        let ends = run_all(&ctx, &self.specs, &self.clients, &self.manifest, progress);
        let journal = ctx.journal.into_inner().unwrap_or_else(|e| e.into_inner());
        journal.save(&o.out)?;

        let mut report = Report {
            out: o.out.clone(),
            spent: journal.spent,
            turns: journal.turns.len(),
            verdicts: BTreeMap::new(),
            trajectories: self.specs.len(),
            stops: BTreeMap::new(),
            failures: Vec::new(),
            harness: Vec::new(),
            caps: Vec::new(),
            complete: false,
            ended: self.finished(&journal),
            candidates: Vec::new(),
            published: None,
        };
        for (key, end) in &ends {
            match end {
                End::Finished { stop, .. } => {
                    let class = stop.split(':').next().unwrap_or(stop).to_string();
                    *report.stops.entry(class).or_default() += 1;
                }
                End::Capped(why) => report.caps.push(why.clone()),
                End::Failed(why) => report.failures.push(format!("{key}: {why}")),
                End::Harness(why) => report.harness.push(why.clone()),
            }
        }
        for t in journal.turns.values() {
            *report.verdicts.entry(verdict_at(t)).or_default() += 1;
        }
        report.complete = report.ended == self.specs.len();
        if o.no_eval {
            report.candidates =
                publish::write_candidates(&o.store, &journal, &self.specs, &o.out, &self.manifest)?;
        }
        if report.complete {
            report.published = Some(publish::publish(
                &o.store,
                &journal,
                &self.specs,
                &publish::Generated {
                    manifest: &self.manifest,
                    manifest_text: &self.manifest_text,
                    suite: &self.suite,
                    seed: self.seed,
                    no_eval: o.no_eval,
                    out: &o.out,
                },
            )?);
        }
        Ok(report)
    }
}

/// A turn's verdict and, unless it ran to the end, the stage that decided it, as `check` and
/// the feedback name them: `runtime at static` is a plan that does not bind (found by the
/// static check), `runtime at launch` a launch that faulted on the GPU.
pub fn verdict_at(t: &super::journal::TurnEntry) -> String {
    use crate::record::Stage;
    match t.stage {
        Stage::Done | Stage::Unrecorded => t.verdict.as_str().to_string(),
        Stage::NotEvaluated => "not evaluated".to_string(),
        stage => format!("{} at {stage}", t.verdict.as_str()),
    }
}

/// Takes the output folder's lock, or says that another generation holds it.
fn lock_out(out: &Path) -> Result<std::fs::File, GenerateError> {
    let path = out.join(LOCK_FILE);
    let io = |source| GenerateError::Io {
        path: path.clone(),
        source,
    };
    let f = std::fs::File::create(&path).map_err(io)?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(GenerateError::Busy {
            path: out.to_path_buf(),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(io(e)),
    }
}

/// The manifest's seed, else the journal's, else (a journal from before seeds were journalled
/// that has turns) the old default 1, else one drawn from the operating system.
fn resolve_seed(
    manifest: &GenManifest,
    journal: &Journal,
    path: &Path,
) -> Result<Seed, GenerateError> {
    match (manifest.seed, journal.seed) {
        (Some(m), Some(j)) if m != j => Err(GenerateError::SeedMismatch {
            path: path.to_path_buf(),
            journal: j,
            manifest: m,
        }),
        (Some(value), _) => Ok(Seed {
            value,
            drawn: false,
        }),
        (None, Some(value)) => Ok(Seed { value, drawn: true }),
        (None, None) if !journal.turns.is_empty() => Ok(Seed {
            value: 1,
            drawn: false,
        }),
        (None, None) => crate::entropy::draw_u64()
            .map(|value| Seed { value, drawn: true })
            .map_err(|e| GenerateError::Entropy(e.to_string())),
    }
}

/// Runs the trajectories, `concurrency` threads per model, each taking the next spec of its
/// model; returns how each ended, by key.
fn run_all(
    ctx: &Context,
    specs: &[TrajectorySpec],
    clients: &[ChatClient],
    manifest: &GenManifest,
    progress: &(dyn Fn(Spend) + Sync),
) -> BTreeMap<String, End> {
    let ends: Mutex<BTreeMap<String, End>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|scope| {
        for (mi, model) in manifest.models.iter().enumerate() {
            let mine: Vec<&TrajectorySpec> = specs.iter().filter(|s| s.model == mi).rev().collect();
            let threads = model.concurrency.min(mine.len());
            let queue = Arc::new(Mutex::new(mine));
            for _ in 0..threads {
                let queue = Arc::clone(&queue);
                let (ends, client) = (&ends, &clients[mi]);
                scope.spawn(move || {
                    loop {
                        let Some(spec) = queue.lock().unwrap_or_else(|e| e.into_inner()).pop()
                        else {
                            break;
                        };
                        let end = trajectory::run(ctx, client, spec);
                        progress(ctx.journal.lock().unwrap_or_else(|e| e.into_inner()).spent);
                        ends.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(spec.key.clone(), end);
                    }
                });
            }
        }
    });
    ends.into_inner().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Verdict;
    use crate::generate::journal::TurnEntry;
    use crate::record::Stage;

    #[test]
    fn issue_43_verdicts_name_the_stage_that_decided_them() {
        let turn = |verdict, stage| TurnEntry {
            record_digest: crate::digest::Digest::of(b"r"),
            exchange_digest: crate::digest::Digest::of(b"x"),
            verdict,
            stage,
            min_speedup: None,
            next_prompt_digest: None,
            stop: None,
        };
        assert_eq!(
            verdict_at(&turn(Verdict::Runtime, Stage::Static)),
            "runtime at static"
        );
        assert_eq!(
            verdict_at(&turn(Verdict::Runtime, Stage::Launch)),
            "runtime at launch"
        );
        assert_eq!(verdict_at(&turn(Verdict::Correct, Stage::Done)), "correct");
        assert_eq!(
            verdict_at(&turn(Verdict::Other, Stage::NotEvaluated)),
            "not evaluated"
        );
        // A journal from before stages were kept.
        assert_eq!(
            verdict_at(&turn(Verdict::Numerical, Stage::Unrecorded)),
            "numerical"
        );
    }
}
