//! The one evaluator: the sequence that turns a candidate into an outcome, written once.
//!
//! static check (CPU: extraction, NVRTC in the sandbox, PTX screening, the plan bound for every
//! workload) → the counted copy of the PTX → the worker's request → the isolated worker on a
//! GPU (correctness trials with the counted copy checked on every workload, timing against the
//! library) → the target evidence (SASS of the cubin and the counts). `eval`, `run`,
//! `generate` and `audit` call [`Evaluator`] and nothing else of this sequence, so a change to
//! the protocol lands here once. The CPU part ([`Evaluator::prepare`]) and the GPU part
//! ([`Evaluator::run`]) are separate calls because a run list checks every pair before it
//! hands the GPU work to the threads of each GPU ([`Evaluator::at_once`]).

use crate::record::Stage;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, RwLock, mpsc};
use std::time::Duration;

use super::target_evidence::{counted_copy, evidence_of};
use super::worker::Lane;
use super::{COMPILE_AHEAD, Outcome, Protocol, Request, Verdict};
use crate::arch::Arch;
use crate::candidate::Candidate;
use crate::check::{self, CheckOptions, CheckReport};
use crate::record::TaskObject;
use crate::task::Task;

/// What an evaluation is asked, besides the candidate and the task.
#[derive(Debug, Clone)]
pub struct Job {
    pub arch: Arch,
    /// Base seed of every trial's and timed pair's inputs.
    pub seed: u64,
    pub protocol: Protocol,
    /// Only these workloads (all when empty).
    pub workloads: Vec<String>,
    /// Correctness and evidence only.
    pub no_timing: bool,
}

/// What is left to do for a candidate after the static check.
#[derive(Debug, Clone)]
pub enum Work {
    /// Run it on a GPU.
    Evaluate(Box<Request>),
    /// The static check already decided it (extraction, compilation, a refused plan).
    Decided(Box<Outcome>),
}

/// A candidate after the static check: the report (with the PTX it checked) and the work
/// left. A request made without a counted copy says why (`Request::no_counted_copy`), and the
/// outcome's evidence repeats it, so no caller can drop the reason.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub report: CheckReport,
    pub work: Work,
}

/// How many correctness-only evaluations may run on one GPU at once, each in its own worker
/// process and context (see [`Evaluator::at_once`]).
pub const UNTIMED_AT_ONCE: usize = 2;

/// One GPU's lanes: a correctness-only evaluation takes any free lane beside others; a timed
/// one takes the GPU alone (every other lane idle and quiet).
#[derive(Debug)]
struct GpuLanes {
    /// Held shared by correctness-only evaluations, exclusively by a timed one.
    alone: RwLock<()>,
    lanes: Vec<Mutex<Lane>>,
}

/// A lock's guard, poisoned or not: a panic in one evaluation never stops the next.
fn lock(m: &Mutex<Lane>) -> MutexGuard<'_, Lane> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs evaluations in isolated worker processes of one `ptxbench` executable, one
/// [`Lane`] per evaluation that may run at once on a GPU.
#[derive(Debug, Clone)]
pub struct Evaluator {
    exe: PathBuf,
    /// Workers kept started on each GPU while one evaluates (for callers that evaluate one
    /// after another).
    spares: usize,
    /// Evaluations each worker process serves, each in a fresh context (1: a process each).
    evaluations: usize,
    /// Correctness-only evaluations at once on one GPU (timed ones always run alone).
    at_once: usize,
    lanes: Arc<Mutex<BTreeMap<usize, Arc<GpuLanes>>>>,
    /// Where the workers share the harness's PTX (with spares; see [`Lane::sharing_harness`]).
    harness: Option<Arc<tempfile::TempDir>>,
}

impl Evaluator {
    /// An evaluator whose workers are `exe worker …` processes, each started when its
    /// evaluation comes and serving only that one.
    pub fn new(exe: PathBuf) -> Evaluator {
        Evaluator {
            exe,
            spares: 0,
            evaluations: 1,
            at_once: 1,
            lanes: Arc::default(),
            harness: None,
        }
    }

    /// The same, with the next workers of each GPU started while one evaluates (see [`Lane`]),
    /// each serving up to [`super::worker::EVALUATIONS`] evaluations in a fresh context each,
    /// up to [`UNTIMED_AT_ONCE`] correctness-only evaluations at once on a GPU, and the
    /// harness's PTX compiled by the first worker only: for a run list, a service or a
    /// generation, where another evaluation usually follows.
    pub fn with_spares(exe: PathBuf) -> Evaluator {
        let harness = tempfile::Builder::new()
            .prefix("ptxbench-harness-")
            .tempdir()
            .ok()
            .map(Arc::new);
        Evaluator {
            spares: super::stages::tuning("PTXBENCH_SPARES", super::worker::SPARES),
            evaluations: super::stages::tuning(
                "PTXBENCH_WORKER_EVALUATIONS",
                super::worker::EVALUATIONS,
            ),
            harness,
            ..Evaluator::new(exe)
        }
        .untimed_at_once(super::stages::tuning(
            "PTXBENCH_UNTIMED_AT_ONCE",
            UNTIMED_AT_ONCE,
        ))
    }

    /// The same evaluator, running up to `n` (at least 1) correctness-only evaluations at once
    /// on a GPU (see [`Evaluator::at_once`]). Lanes already made keep their number.
    pub fn untimed_at_once(mut self, n: usize) -> Evaluator {
        self.at_once = n.max(1);
        self
    }

    /// How many evaluations may be under way on one GPU at once: correctness-only ones share
    /// a GPU up to this many (`PTXBENCH_UNTIMED_AT_ONCE`), each in its own process and context
    /// (a fault or hang stays in its own context; time slicing only delays the others); a
    /// timed one waits until it has the GPU alone. Callers run this many threads per GPU.
    pub fn at_once(&self) -> usize {
        self.at_once
    }

    fn lanes(&self, gpu: usize) -> Arc<GpuLanes> {
        let mut lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
        lanes
            .entry(gpu)
            .or_insert_with(|| {
                let lane = || {
                    let lane = Lane::new(self.exe.clone(), gpu, self.spares)
                        .evaluations_per_worker(self.evaluations);
                    Mutex::new(match &self.harness {
                        Some(dir) => lane.sharing_harness(dir.path().to_path_buf()),
                        None => lane,
                    })
                };
                Arc::new(GpuLanes {
                    alone: RwLock::new(()),
                    lanes: (0..self.at_once).map(|_| lane()).collect(),
                })
            })
            .clone()
    }

    /// An evaluator whose workers are this executable.
    pub fn this_executable() -> std::io::Result<Evaluator> {
        Ok(Evaluator::new(std::env::current_exe()?))
    }

    /// The CPU part: the static check of `candidate` (or the extraction failure in its place)
    /// and, when it passes, the worker's request with the counted copy of the PTX.
    pub fn prepare(
        candidate: Result<&Candidate, String>,
        task: &Task,
        object: &TaskObject,
        job: &Job,
    ) -> Prepared {
        // Refused before anything runs: an evaluation that runs no workload is never correct.
        if let Some(why) = task.unknown_workload(&job.workloads) {
            return Prepared {
                report: check::extraction_failed(task, job.arch, format!("workloads: {why}")),
                work: Work::Decided(Box::new(Outcome::failed(
                    Verdict::Other,
                    Stage::Static,
                    format!("workloads: {why}"),
                ))),
            };
        }
        let report = match &candidate {
            Ok(c) => check::check(
                c,
                task,
                &CheckOptions {
                    arch: job.arch,
                    compile_for: Vec::new(),
                },
            ),
            Err(reason) => check::extraction_failed(task, job.arch, reason.clone()),
        };
        let work = match (check::static_outcome(&report), &candidate, &report.ptx) {
            (Some(o), ..) => Work::Decided(Box::new(o)),
            (None, Ok(c), Some(ptx)) => Work::Evaluate(Box::new(Evaluator::request(
                task,
                object.clone(),
                ptx.clone(),
                c.plan.clone(),
                job,
            ))),
            (None, ..) => Work::Decided(Box::new(Outcome::failed(
                Verdict::Other,
                Stage::Static,
                "no candidate was extracted",
            ))),
        };
        Prepared { report, work }
    }

    /// The request for PTX that already passed the static check (a stored record's, for an
    /// audit): the counted copy is made here, so every evaluation counts its target work alike.
    pub fn request(
        task: &Task,
        object: TaskObject,
        ptx: String,
        plan: String,
        job: &Job,
    ) -> Request {
        let (counted, no_counted_copy) = match counted_copy(task, job.arch, &ptx) {
            Ok(c) => (c, None),
            Err(e) => (None, Some(e)),
        };
        Request {
            task: object,
            arch: job.arch,
            ptx,
            plan,
            seed: job.seed,
            protocol: job.protocol.clone(),
            workloads: job.workloads.clone(),
            no_timing: job.no_timing,
            gpu: 0,
            counted,
            no_counted_copy,
            cubin: None,
            compile_seconds: None,
        }
    }

    /// The GPU part: `req` in an isolated worker on `gpu`, killed after `timeout`, then its
    /// target evidence (the SASS of its cubin and the counts the worker read).
    pub fn run(&self, req: &Request, gpu: usize, timeout: Duration) -> Outcome {
        let mut req = req.clone();
        req.compile_ahead();
        let outcome = self.on_gpu(&req, gpu, timeout);
        Evaluator::with_evidence(&req, outcome)
    }

    /// Only the worker's part of [`Evaluator::run`], for a pipeline that compiles ahead
    /// ([`Request::compile_ahead`]) and assembles the evidence ([`Evaluator::with_evidence`])
    /// on other threads.
    ///
    /// The outcome's clock starts with `compile ahead` (ptxas on a CPU thread, before this
    /// evaluation reached the GPU), when the request was compiled ahead.
    pub fn on_gpu(&self, req: &Request, gpu: usize, timeout: Duration) -> Outcome {
        let mut req = req.clone();
        req.gpu = gpu;
        let gpu_lanes = self.lanes(gpu);
        let (alone, lanes) = (&gpu_lanes.alone, &gpu_lanes.lanes);
        let mut outcome = if req.no_timing {
            let _shared = alone.read().unwrap_or_else(|e| e.into_inner());
            // A free lane; with more callers than lanes, the first one when it is free.
            let mut lane = lanes
                .iter()
                .find_map(|l| match l.try_lock() {
                    Ok(g) => Some(g),
                    Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
                    Err(std::sync::TryLockError::WouldBlock) => None,
                })
                .unwrap_or_else(|| lock(&lanes[0]));
            lane.run(&req, timeout)
        } else {
            let _alone = alone.write().unwrap_or_else(|e| e.into_inner());
            // Nothing else evaluates now; the other lanes' workers that are still starting
            // up or exiting are waited for before this one starts (its own lane waits for its
            // own before timing).
            let by = std::time::Instant::now() + timeout;
            for other in &lanes[1..] {
                lock(other).quiet(by);
            }
            lock(&lanes[0]).run(&req, timeout)
        };
        if let Some(s) = req.compile_seconds {
            outcome.seconds.insert(0, (COMPILE_AHEAD.to_string(), s));
        }
        outcome
    }

    /// `outcome` (of `req`) with its target evidence: the SASS of its cubin and its counts.
    pub fn with_evidence(req: &Request, mut outcome: Outcome) -> Outcome {
        if let Ok(task) = req.task.validate_exactly() {
            outcome.evidence = evidence_of(&task, req.arch, &outcome);
        }
        if let (Some(why), Some(ev)) = (&req.no_counted_copy, outcome.evidence.as_mut()) {
            ev.notes.push(format!(
                "no counted copy of the PTX was made, so no execution is claimed: {why}"
            ));
        }
        outcome
    }

    /// Finishes prepared work: a decided outcome as it is, a request run on `gpu`.
    pub fn finish(&self, work: &Work, gpu: usize, timeout: Duration) -> Outcome {
        match work {
            Work::Decided(o) => (**o).clone(),
            Work::Evaluate(req) => self.run(req, gpu, timeout),
        }
    }

    /// The GPU stage of prepared work, for a pipeline that runs the evidence on other threads
    /// ([`Evaluator::evidence_stage`]): a decided outcome as it is; a request in a worker on
    /// `gpu`, unless `instead` is the outcome to record in its place (a job given up).
    pub fn gpu_stage(
        &self,
        work: &Work,
        gpu: usize,
        timeout: Duration,
        instead: Option<Outcome>,
    ) -> Ran {
        match (work, instead) {
            (Work::Decided(o), _) => Ran {
                outcome: (**o).clone(),
                evaluated: false,
            },
            (Work::Evaluate(_), Some(o)) => Ran {
                outcome: o,
                evaluated: false,
            },
            (Work::Evaluate(req), None) => Ran {
                outcome: self.on_gpu(req, gpu, timeout),
                evaluated: true,
            },
        }
    }

    /// The stage after [`Evaluator::gpu_stage`]: what a worker ran gets its target evidence.
    pub fn evidence_stage(work: &Work, ran: Ran) -> Outcome {
        match work {
            Work::Evaluate(req) if ran.evaluated => Evaluator::with_evidence(req, ran.outcome),
            _ => ran.outcome,
        }
    }
}

/// What [`Evaluator::gpu_stage`] left: the outcome, and whether a worker ran it (only then does
/// it get target evidence).
#[derive(Debug, Clone)]
pub struct Ran {
    pub outcome: Outcome,
    pub evaluated: bool,
}

/// One evaluation asked of a [`Queue`], with where its outcome goes.
type Asked = (Box<super::Request>, mpsc::Sender<super::Outcome>);

/// Evaluations asked one at a time from many threads (generate's trajectories, each waiting for
/// its answer), run through [`staged`](super::stages::staged) on every GPU like `run`'s and `serve`'s: compiled ahead on
/// the CPU, each in a worker on the next free lane of a GPU, its target evidence on the finish
/// threads. Dropping the queue lets it drain and joins it.
#[derive(Debug)]
pub struct Queue {
    asks: Mutex<Option<mpsc::Sender<Asked>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Queue {
    /// A queue over GPUs `0..gpus`, each request killed after `timeout`.
    pub fn start(evaluator: Evaluator, gpus: usize, timeout: Duration) -> Queue {
        let (tx, rx) = mpsc::channel::<Asked>();
        let thread = std::thread::spawn(move || {
            super::stages::staged(
                rx.into_iter(),
                gpus,
                evaluator.at_once(),
                |(mut req, reply): Asked| {
                    req.compile_ahead();
                    (req, reply)
                },
                |gpu, (req, reply), _waited| (evaluator.on_gpu(&req, gpu, timeout), req, reply),
                |(outcome, req, reply)| {
                    // The asker may have stopped waiting (a panic in its thread): nothing to do.
                    let _ = reply.send(Evaluator::with_evidence(&req, outcome));
                },
            );
        });
        Queue {
            asks: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
        }
    }

    /// Runs `req` when a GPU lane is free and returns its outcome with its target evidence.
    pub fn evaluate(&self, req: &super::Request) -> super::Outcome {
        let (reply, answer) = mpsc::channel();
        let sent = self
            .asks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|tx| tx.send((Box::new(req.clone()), reply)).is_ok());
        let stopped = || {
            super::Outcome::failed(
                super::Verdict::Other,
                crate::record::Stage::Worker,
                "the evaluation queue stopped before this evaluation ran",
            )
        };
        match sent {
            Some(true) => answer.recv().unwrap_or_else(|_| stopped()),
            _ => stopped(),
        }
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        self.asks.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
    }
}
