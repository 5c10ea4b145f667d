//! The service's state: jobs by id, the answers index (submission key → record), the queue
//! the jobs go to, and the counters the metrics show.
//!
//! Jobs are kept in a log beside the answers index (`serve/jobs`, one JSON line a job), so a
//! server started again on the same store knows every job id it gave out: a job still queued
//! is queued again (embedded) or still in its stream (Redis), and its result is accepted when
//! it comes. A job id is 128 random bits, and a job belongs to the client that submitted it.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::job::{Answer, JobSpec, Submission};
use crate::digest::Digest;
use crate::engine::{Protocol, Verdict};
use crate::record::task::SuiteObjects;
use crate::store::Store;

/// Where jobs go: the embedded queue or Redis.
pub trait Queue: Send + Sync {
    /// Queues every job of `jobs`, or (on an error) none that a worker can take twice; returns
    /// where each went (the Redis stream entry, which only the server deletes).
    fn push_all(&self, jobs: &[JobSpec]) -> Result<Vec<Option<String>>, String>;
    /// Whether jobs still queued when the server stopped must be queued again at its start
    /// (an in-process queue lost them; a Redis stream still holds them).
    fn forgets_on_restart(&self) -> bool;
}

/// Limits of what the service accepts.
#[derive(Debug, Clone)]
pub struct Caps {
    pub max_body: usize,
    pub max_batch: usize,
    pub max_queue: usize,
    /// Worker wall-clock limit of one evaluation, seconds.
    pub timeout_s: u64,
}

/// Where a job is.
#[derive(Debug, Clone)]
pub enum State {
    Queued,
    Done(Answer),
    /// The harness failed (no GPU, a worker that died of its own causes, a job that kept
    /// killing workers): the record says why; it is no verdict on the candidate, gets no
    /// reward, is never cached, and a resubmission evaluates it again.
    HarnessFailure(Answer),
    /// No record could be made (a worker with another suite, a store that failed).
    Failed(String),
}

#[derive(Debug)]
struct Entry {
    key: Digest,
    /// The client that submitted it: no other client sees it.
    owner: String,
    /// The job as queued (for the job that evaluates its key; followers and answered ones have
    /// none): a result is checked against it.
    spec: Option<JobSpec>,
    /// Where the queue holds it (a Redis stream entry), deleted by the server alone.
    queued_at: Option<String>,
    submitted: Instant,
    finished: Option<Instant>,
    /// Answered from the store, or by an identical submission's evaluation.
    cached: bool,
    state: State,
    /// Results that arrived for this job (more than one: redelivered, recorded once).
    results: u32,
}

/// The most finished jobs remembered by id (their records stay in the store).
const KEPT_JOBS: usize = 200_000;

#[derive(Debug, Default)]
struct Tables {
    jobs: HashMap<String, Entry>,
    order: VecDeque<String>,
    answers: HashMap<Digest, Answer>,
    /// Keys queued now, to the job evaluating them (identical submissions wait for it).
    queued: HashMap<Digest, String>,
    /// Jobs waiting for the job of the same key to finish.
    followers: HashMap<Digest, Vec<String>>,
    pending: usize,
    // Counters.
    /// Results refused: for a job this server did not queue, or without a valid credential.
    refused_results: u64,
    /// Jobs that ended in a harness failure (not cached, no reward).
    harness_failures: u64,
    evaluations: u64,
    from_store: u64,
    duplicates: u64,
    failed: u64,
    rejected: BTreeMap<&'static str, u64>,
    verdicts: BTreeMap<String, u64>,
    gpu_seconds: f64,
    recent: VecDeque<Instant>,
}

/// Why a submission was not queued.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// 400: a field.
    Field(super::job::FieldError),
    /// 429: the queue is full.
    Full { depth: usize },
    /// 503: the queue could not take it.
    Queue(String),
}

/// The service: shared by the HTTP threads, the embedded workers and the Redis collector.
pub struct Service {
    pub store: Store,
    pub objects: SuiteObjects,
    pub tasks: Vec<(String, Digest)>,
    /// Each task's workload names: a submission naming another is refused.
    pub workloads: BTreeMap<String, Vec<String>>,
    pub caps: Caps,
    pub protocol: Protocol,
    pub started: Instant,
    /// GPUs evaluating (embedded workers, or Redis workers seen).
    pub workers: Mutex<BTreeMap<String, f64>>,
    answers_log: PathBuf,
    jobs_log: PathBuf,
    /// Jobs read from the log that were still queued (queued again by a queue that forgets).
    requeue: Mutex<Vec<JobSpec>>,
    queue: Mutex<Option<Arc<dyn Queue>>>,
    tables: Mutex<Tables>,
    /// Bumped whenever a job finishes: long-polls wait on it.
    changes: tokio::sync::watch::Sender<u64>,
    /// Workers alive now (the embedded threads, or Redis workers whose presence key is fresh).
    alive: std::sync::atomic::AtomicUsize,
    /// GPUs this server's own workers can use (embedded queue; 0 with Redis, whose workers are
    /// elsewhere).
    gpus: std::sync::atomic::AtomicUsize,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("store", &self.store.root())
            .finish_non_exhaustive()
    }
}

/// The answers index's file in the store folder: one `key record feedback verdict` a line.
pub const ANSWERS: &str = "serve/answers";

/// The jobs log's file in the store folder: one [`LoggedJob`] (JSON) a line.
pub const JOBS: &str = "serve/jobs";

/// A job as the jobs log keeps it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct LoggedJob {
    id: String,
    owner: String,
    key: Digest,
    spec: Option<JobSpec>,
    queued_at: Option<String>,
}

/// A job id: 128 bits from the operating system's entropy, as 32 hex digits.
fn job_id() -> Result<String, String> {
    let hi = crate::entropy::draw_u64().map_err(|e| e.to_string())?;
    let lo = crate::entropy::draw_u64().map_err(|e| e.to_string())?;
    Ok(format!("{hi:016x}{lo:016x}"))
}

impl Service {
    /// A service over `store` (whose answers index it reads) for the suite of `objects`.
    pub fn new(
        store: Store,
        objects: SuiteObjects,
        caps: Caps,
        tasks: Vec<(String, Digest)>,
        workloads: BTreeMap<String, Vec<String>>,
    ) -> anyhow::Result<Service> {
        let answers_log = store.root().join(ANSWERS);
        let mut tables = Tables::default();
        match std::fs::read_to_string(&answers_log) {
            Ok(text) => {
                for line in text.lines() {
                    let p: Vec<&str> = line.split(' ').collect();
                    let parsed = match p.as_slice() {
                        [k, r, f, v] => (|| -> Option<(Digest, Answer)> {
                            Some((
                                k.parse().ok()?,
                                Answer {
                                    record: r.parse().ok()?,
                                    feedback: f.parse().ok()?,
                                    verdict: serde_json::from_value(json!(v)).ok()?,
                                    gpu_seconds: 0.0,
                                },
                            ))
                        })(),
                        _ => None,
                    };
                    // A line cut by a crash, or naming objects the store lost, answers nothing.
                    if let Some((k, a)) = parsed
                        && store.contains(&a.record)
                        && store.contains(&a.feedback)
                    {
                        tables.answers.insert(k, a);
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => anyhow::bail!("reading {}: {e}", answers_log.display()),
        }
        if let Some(dir) = answers_log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let jobs_log = store.root().join(JOBS);
        let requeue = Self::load_jobs(&jobs_log, &mut tables)?;
        Ok(Service {
            store,
            objects,
            tasks,
            workloads,
            caps,
            protocol: Protocol::default(),
            started: Instant::now(),
            workers: Mutex::new(BTreeMap::new()),
            answers_log,
            jobs_log,
            requeue: Mutex::new(requeue),
            queue: Mutex::new(None),
            tables: Mutex::new(tables),
            changes: tokio::sync::watch::Sender::new(0),
            alive: std::sync::atomic::AtomicUsize::new(0),
            gpus: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Reads the jobs log into `t` (the answers index already read): a job whose key has an
    /// answer is done, one that was queued is queued again; returns the latter's specs. The
    /// log is written again with the jobs kept (the newest [`KEPT_JOBS`]).
    fn load_jobs(path: &std::path::Path, t: &mut Tables) -> anyhow::Result<Vec<JobSpec>> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => anyhow::bail!("reading {}: {e}", path.display()),
        };
        // A line cut by a crash is skipped; the newest jobs are kept.
        let logged: Vec<LoggedJob> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let logged = &logged[logged.len().saturating_sub(KEPT_JOBS)..];
        let now = Instant::now();
        let mut requeue = Vec::new();
        let mut kept = String::new();
        for j in logged {
            let state = if let Some(a) = t.answers.get(&j.key) {
                State::Done(a.clone())
            } else if let Some(spec) = &j.spec {
                t.pending += 1;
                t.queued.insert(j.key, j.id.clone());
                requeue.push(spec.clone());
                State::Queued
            } else if t.queued.contains_key(&j.key) {
                t.followers.entry(j.key).or_default().push(j.id.clone());
                State::Queued
            } else {
                State::Failed("the server stopped before this job's evaluation ended".into())
            };
            t.jobs.insert(
                j.id.clone(),
                Entry {
                    key: j.key,
                    owner: j.owner.clone(),
                    spec: j.spec.clone(),
                    queued_at: j.queued_at.clone(),
                    submitted: now,
                    finished: (!matches!(state, State::Queued)).then_some(now),
                    cached: j.spec.is_none(),
                    state,
                    results: 0,
                },
            );
            t.order.push_back(j.id.clone());
            kept.push_str(&serde_json::to_string(j)?);
            kept.push('\n');
        }
        crate::destination::write_atomic(path, kept.as_bytes())
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        Ok(requeue)
    }

    /// Where jobs go from now on; jobs still queued when the server last stopped are queued
    /// again when the queue forgot them.
    pub fn set_queue(&self, queue: Arc<dyn Queue>) -> Result<(), String> {
        let again = std::mem::take(&mut *self.requeue.lock().unwrap_or_else(|e| e.into_inner()));
        if queue.forgets_on_restart() && !again.is_empty() {
            queue.push_all(&again)?;
        }
        *self.queue.lock().unwrap_or_else(|e| e.into_inner()) = Some(queue);
        Ok(())
    }

    /// A receiver that sees a new value whenever a job finishes.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Appends jobs to the jobs log; a failure is a warning (the job runs; only a restart
    /// would forget it).
    fn log_jobs(&self, jobs: &[LoggedJob]) {
        let mut text = String::new();
        for j in jobs {
            if let Ok(line) = serde_json::to_string(j) {
                text.push_str(&line);
                text.push('\n');
            }
        }
        let logged = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.jobs_log)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        if let Err(e) = logged {
            eprintln!(
                "warning: {}: jobs were not logged: {e}",
                self.jobs_log.display()
            );
        }
    }

    fn tables(&self) -> std::sync::MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Jobs queued and not finished.
    pub fn depth(&self) -> usize {
        self.tables().pending
    }

    /// Counts a refused request, by reason.
    pub fn refused(&self, reason: &'static str) {
        *self.tables().rejected.entry(reason).or_default() += 1;
    }

    /// Makes jobs of `subs` for `owner` (all or none): an id each, answered from the store
    /// when an identical submission has a record (unless `fresh`), else queued.
    ///
    /// The job table is locked to decide and again to settle, never while the queue takes the
    /// jobs (a push to a slow Redis stalls this submission only). The jobs are in the table
    /// before they are pushed, so a worker's result can never arrive for a job the table does
    /// not have yet; a push that fails takes them out again (and fails whatever followed them).
    pub fn submit(&self, subs: Vec<Submission>, owner: &str) -> Result<Vec<String>, Refusal> {
        let at = |i: usize, field: &str| {
            if subs.len() > 1 {
                format!("items[{i}].{field}")
            } else {
                field.to_string()
            }
        };
        let mut made = Vec::with_capacity(subs.len());
        for (i, s) in subs.iter().enumerate() {
            let Some(task) = self.objects.task(&s.task) else {
                return Err(Refusal::Field(super::job::FieldError {
                    field: at(i, "task"),
                    message: format!("no task `{}` in the suite", s.task),
                }));
            };
            if let Some(e) = self.unknown_workload(s) {
                return Err(Refusal::Field(super::job::FieldError {
                    field: at(i, &e.field),
                    message: e.message,
                }));
            }
            made.push(s.key(task, &self.protocol));
        }
        if subs.len() > self.caps.max_queue {
            // It would never fit: a 429 would have the client retry forever.
            return Err(Refusal::Field(super::job::FieldError {
                field: "items".into(),
                message: format!(
                    "{} submissions can never be queued at once (at most {}); send smaller batches",
                    subs.len(),
                    self.caps.max_queue
                ),
            }));
        }
        let mut ids = Vec::with_capacity(subs.len());
        for _ in &subs {
            ids.push(job_id().map_err(Refusal::Queue)?);
        }
        let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(queue) = queue else {
            return Err(Refusal::Queue("no queue".into()));
        };
        let now = Instant::now();
        // 1. Decide, and put every job in the table (locked).
        let mut jobs = Vec::new();
        let mut logged = Vec::with_capacity(subs.len());
        {
            let mut t = self.tables();
            let mut batch_first: HashMap<Digest, String> = HashMap::new();
            let new = subs
                .iter()
                .zip(&made)
                .filter(|(s, k)| {
                    s.fresh || !(t.answers.contains_key(*k) || t.queued.contains_key(*k))
                })
                .count();
            if t.pending + new > self.caps.max_queue {
                drop(t);
                self.refused("queue_full");
                return Err(Refusal::Full {
                    depth: self.depth(),
                });
            }
            for ((s, key), id) in subs.iter().zip(&made).zip(&ids) {
                let known = if s.fresh {
                    None
                } else {
                    t.answers.get(key).cloned()
                };
                let leader = t.queued.get(key).or(batch_first.get(key)).cloned();
                let (state, cached, spec) = match (known, leader, s.fresh) {
                    (Some(a), _, _) => {
                        t.from_store += 1;
                        (State::Done(a), true, None)
                    }
                    (None, Some(_), false) => {
                        // An identical submission is being evaluated: this one shares its answer.
                        t.from_store += 1;
                        t.followers.entry(*key).or_default().push(id.clone());
                        (State::Queued, true, None)
                    }
                    _ => {
                        let seed = match s.seed {
                            Some(seed) => seed,
                            None => crate::entropy::draw_u64()
                                .map_err(|e| Refusal::Queue(e.to_string()))?,
                        };
                        let spec = JobSpec {
                            id: id.clone(),
                            key: *key,
                            suite_hash: self.objects.suite_hash,
                            task: s.task.clone(),
                            arch: s.arch,
                            candidate: s.candidate.clone(),
                            seed,
                            seed_from_client: s.seed.is_some(),
                            workloads: s.workloads.clone(),
                            no_timing: s.correctness_only,
                            entry: s.entry.clone(),
                            protocol: self.protocol.clone(),
                            timeout_s: self.caps.timeout_s,
                        };
                        jobs.push(spec.clone());
                        batch_first.insert(*key, id.clone());
                        t.pending += 1;
                        t.queued.insert(*key, id.clone());
                        (State::Queued, false, Some(spec))
                    }
                };
                logged.push(LoggedJob {
                    id: id.clone(),
                    owner: owner.to_string(),
                    key: *key,
                    spec: spec.clone(),
                    queued_at: None,
                });
                t.jobs.insert(
                    id.clone(),
                    Entry {
                        key: *key,
                        owner: owner.to_string(),
                        spec,
                        queued_at: None,
                        submitted: now,
                        finished: matches!(state, State::Done(_)).then_some(now),
                        cached,
                        state,
                        results: 0,
                    },
                );
                t.order.push_back(id.clone());
            }
        }
        // 2. Queue the new jobs (unlocked).
        let pushed = if jobs.is_empty() {
            Ok(Vec::new())
        } else {
            queue.push_all(&jobs)
        };
        // 3. Settle (locked).
        let mut t = self.tables();
        match pushed {
            Ok(places) => {
                for (job, place) in jobs.iter().zip(places) {
                    if let Some(e) = t.jobs.get_mut(&job.id) {
                        e.queued_at.clone_from(&place);
                    }
                    if let Some(l) = logged.iter_mut().find(|l| l.id == job.id) {
                        l.queued_at = place;
                    }
                }
                Self::forget_old(&mut t);
                drop(t);
                self.log_jobs(&logged);
                Ok(ids)
            }
            Err(m) => {
                for id in &ids {
                    t.jobs.remove(id);
                }
                t.order.retain(|o| !ids.contains(o));
                for job in &jobs {
                    t.pending = t.pending.saturating_sub(1);
                    if t.queued.get(&job.key) == Some(&job.id) {
                        t.queued.remove(&job.key);
                    }
                    for f in t.followers.remove(&job.key).unwrap_or_default() {
                        if let Some(other) = t.jobs.get_mut(&f) {
                            other.finished = Some(Instant::now());
                            other.state =
                                State::Failed(format!("the queue could not take it: {m}"));
                        }
                    }
                }
                drop(t);
                self.changes.send_modify(|g| *g = g.wrapping_add(1));
                Err(Refusal::Queue(m))
            }
        }
    }

    /// The first workload `s` names that its task does not have (the field and a message
    /// naming the valid ones).
    fn unknown_workload(&self, s: &Submission) -> Option<super::job::FieldError> {
        let valid = self.workloads.get(&s.task)?;
        s.workloads.iter().enumerate().find_map(|(i, w)| {
            (!valid.contains(w)).then(|| super::job::FieldError {
                field: format!("workloads[{i}]"),
                message: format!(
                    "`{w}` is not a workload of {}; it has: {}",
                    s.task,
                    valid.join(", ")
                ),
            })
        })
    }

    fn forget_old(t: &mut Tables) {
        while t.order.len() > KEPT_JOBS {
            let Some(front) = t.order.front().cloned() else {
                break;
            };
            if matches!(t.jobs.get(&front).map(|e| &e.state), Some(State::Queued)) {
                break;
            }
            t.order.pop_front();
            t.jobs.remove(&front);
        }
    }

    /// The job `id` as queued, for checking a worker's result against it: `None` when this
    /// server did not queue it.
    pub fn queued_spec(&self, id: &str) -> Option<JobSpec> {
        self.tables().jobs.get(id).and_then(|e| e.spec.clone())
    }

    /// Where job `id` sits in the queue (its Redis stream entry), for the server to delete.
    pub fn queued_at(&self, id: &str) -> Option<String> {
        self.tables().jobs.get(id).and_then(|e| e.queued_at.clone())
    }

    /// Counts a result refused (for a job this server did not queue, or not made by a worker).
    pub fn refuse_result(&self) {
        self.tables().refused_results += 1;
    }

    /// A worker's result for job `id`. Only the first result of a job counts; a later one (a
    /// job delivered again after its worker died) is counted as a duplicate and dropped, and
    /// so is one for a job this server did not queue. Returns whether it was the first.
    pub fn complete(&self, id: &str, result: Result<Answer, String>) -> bool {
        let mut t = self.tables();
        let Some(e) = t.jobs.get_mut(id) else {
            t.refused_results += 1;
            return false;
        };
        e.results += 1;
        if !matches!(e.state, State::Queued) || e.spec.is_none() {
            t.duplicates += 1;
            return false;
        }
        let key = e.key;
        e.finished = Some(Instant::now());
        let state = |result: &Result<Answer, String>| match result {
            Ok(a) if a.verdict == Verdict::Other => State::HarnessFailure(a.clone()),
            Ok(a) => State::Done(a.clone()),
            Err(m) => State::Failed(m.clone()),
        };
        e.state = state(&result);
        t.pending = t.pending.saturating_sub(1);
        t.queued.remove(&key);
        // Jobs that shared this one's evaluation get its result.
        for f in t.followers.remove(&key).unwrap_or_default() {
            if let Some(other) = t.jobs.get_mut(&f) {
                other.finished = Some(Instant::now());
                other.state = state(&result);
            }
        }
        match result {
            Ok(a) if a.verdict == Verdict::Other => t.harness_failures += 1,
            Ok(a) => {
                t.evaluations += 1;
                *t.verdicts
                    .entry(a.verdict.as_str().to_string())
                    .or_default() += 1;
                t.gpu_seconds += a.gpu_seconds;
                let now = Instant::now();
                t.recent.push_back(now);
                while t
                    .recent
                    .front()
                    .is_some_and(|f| now.duration_since(*f) > Duration::from_secs(60))
                {
                    t.recent.pop_front();
                }
                self.keep(&mut t, key, a);
            }
            Err(_) => t.failed += 1,
        }
        drop(t);
        self.changes.send_modify(|g| *g = g.wrapping_add(1));
        true
    }

    /// Makes `a` the answer to `key` in the index (in memory and in its file).
    fn keep(&self, t: &mut Tables, key: Digest, a: Answer) {
        let line = format!(
            "{} {} {} {}\n",
            key.hex(),
            a.record.hex(),
            a.feedback.hex(),
            a.verdict.as_str()
        );
        t.answers.insert(key, a);
        let logged = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.answers_log)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = logged {
            eprintln!(
                "warning: {}: the answer was not kept: {e}",
                self.answers_log.display()
            );
        }
    }

    /// Whether job `id` of `owner` is still queued; `None` when `owner` has no such job.
    pub fn queued(&self, id: &str, owner: &str) -> Option<bool> {
        let t = self.tables();
        let e = t.jobs.get(id).filter(|e| e.owner == owner)?;
        Some(matches!(e.state, State::Queued))
    }

    /// Job `id`'s view for `owner`; `None` when `owner` has no such job (another client's job
    /// is as unknown as one that never was).
    pub fn view(&self, id: &str, owner: &str) -> Option<Value> {
        let t = self.tables();
        let e = t.jobs.get(id).filter(|e| e.owner == owner)?;
        let latency = e
            .finished
            .map(|f| f.duration_since(e.submitted).as_secs_f64());
        let (state, cached, results) = (e.state.clone(), e.cached, e.results);
        drop(t);
        let mut v = json!({
            "id": id,
            "cached": cached,
            "results": results,
            "latency_s": latency,
        });
        match state {
            State::Queued => v["state"] = "queued".into(),
            State::Failed(m) => {
                v["state"] = "failed".into();
                v["error"] = m.into();
            }
            State::HarnessFailure(a) => {
                v["state"] = "harness_failure".into();
                v["retryable"] = true.into();
                v["reward"] = Value::Null;
                let why = self
                    .store
                    .get(&a.record)
                    .ok()
                    .and_then(|b| crate::record::decode_record(&a.record, &b).ok())
                    .map(|r| r.outcome.message)
                    .unwrap_or_default();
                v["error"] = crate::secrets::mask_host_paths(&why).into();
                v["record_digest"] = a.record.hex().into();
            }
            State::Done(a) => {
                v["state"] = "done".into();
                match self.answer_view(&a) {
                    Ok(fields) => {
                        for (k, x) in fields {
                            v[k] = x;
                        }
                    }
                    Err(m) => {
                        v["state"] = "failed".into();
                        v["error"] = m.into();
                    }
                }
            }
        }
        Some(v)
    }

    /// The record (as stored), its digest, the feedback text and the reward's fields.
    fn answer_view(&self, a: &Answer) -> Result<Vec<(&'static str, Value)>, String> {
        let bytes = self
            .store
            .get(&a.record)
            .map_err(|e| format!("record {}: {e}", a.record))?;
        let record: Value = serde_json::from_slice(&bytes)
            .map_err(|e| format!("record {}: not JSON: {e}", a.record))?;
        let decoded = crate::record::decode_record(&a.record, &bytes)
            .map_err(|e| format!("record {}: {e}", a.record))?;
        let feedback = self
            .store
            .get(&a.feedback)
            .map_err(|e| format!("feedback {}: {e}", a.feedback))?;
        let interval = decoded.min_speedup().and_then(|m| {
            decoded
                .outcome
                .workloads
                .iter()
                .filter_map(|w| w.timing.as_ref())
                .find(|t| t.speedup == Some(m))
                .and_then(|t| t.speedup_ci95)
        });
        Ok(vec![
            ("record_digest", a.record.hex().into()),
            ("record", record),
            ("feedback", String::from_utf8_lossy(&feedback).into()),
            (
                "reward",
                json!({
                    "verdict": decoded.verdict.as_str(),
                    "correct": decoded.is_correct(),
                    "correct_on_target": decoded.correct_on_target(),
                    "speedup": decoded.min_speedup(),
                    "speedup_ci95": interval,
                    // A seed the client chose fixed every input in advance: such a record is
                    // never ranked, and a training loop may weigh it as it sees fit.
                    "seed_given": decoded.seed_given,
                }),
            ),
        ])
    }

    /// Notes time spent by worker `name` (for the GPU busy share).
    pub fn worker_busy(&self, name: &str, seconds: f64) {
        *self
            .workers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(name.to_string())
            .or_default() += seconds;
    }

    /// The metrics in Prometheus' text format.
    pub fn metrics(&self) -> String {
        let t = self.tables();
        let up = self.started.elapsed().as_secs_f64().max(1e-9);
        let window = up.min(60.0);
        let workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        let busy: f64 = workers.values().sum();
        let mut s = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, lines: Vec<(String, String)>| {
            s.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
            for (labels, value) in lines {
                s.push_str(&format!("{name}{labels} {value}\n"));
            }
        };
        let one = |v: String| vec![(String::new(), v)];
        metric(
            "ptxbench_queue_depth",
            "gauge",
            "Jobs queued or being evaluated.",
            one(t.pending.to_string()),
        );
        metric(
            "ptxbench_evaluations_total",
            "counter",
            "Evaluations finished with a record.",
            one(t.evaluations.to_string()),
        );
        metric(
            "ptxbench_evaluations_per_second",
            "gauge",
            "Evaluations finished per second over the last minute.",
            one(format!("{:.3}", t.recent.len() as f64 / window)),
        );
        metric(
            "ptxbench_answered_from_store_total",
            "counter",
            "Submissions answered by an identical submission's record.",
            one(t.from_store.to_string()),
        );
        metric(
            "ptxbench_duplicate_results_total",
            "counter",
            "Results of a job that already had one (delivered again): dropped.",
            one(t.duplicates.to_string()),
        );
        metric(
            "ptxbench_refused_results_total",
            "counter",
            "Results dropped: for a job this server did not queue, without a valid worker credential, or not the job's record.",
            one(t.refused_results.to_string()),
        );
        metric(
            "ptxbench_harness_failures_total",
            "counter",
            "Jobs that ended in a harness failure (no GPU, a worker that died of its own causes): no verdict, no reward, not cached.",
            one(t.harness_failures.to_string()),
        );
        metric(
            "ptxbench_failed_jobs_total",
            "counter",
            "Jobs that ended without a record.",
            one(t.failed.to_string()),
        );
        metric(
            "ptxbench_verdicts_total",
            "counter",
            "Evaluations by verdict.",
            t.verdicts
                .iter()
                .map(|(v, n)| (format!("{{verdict=\"{v}\"}}"), n.to_string()))
                .collect(),
        );
        metric(
            "ptxbench_rejected_requests_total",
            "counter",
            "Requests refused, by reason.",
            t.rejected
                .iter()
                .map(|(r, n)| (format!("{{reason=\"{r}\"}}"), n.to_string()))
                .collect(),
        );
        metric(
            "ptxbench_gpu_busy_seconds_total",
            "counter",
            "Seconds workers spent in the GPU part of evaluations.",
            one(format!("{:.3}", t.gpu_seconds)),
        );
        metric(
            "ptxbench_gpu_busy_share",
            "gauge",
            "GPU busy time over workers times uptime (above 1 while correctness-only evaluations share a GPU).",
            one(format!("{:.4}", busy / (up * workers.len().max(1) as f64))),
        );
        metric(
            "ptxbench_workers",
            "gauge",
            "Workers seen.",
            one(workers.len().to_string()),
        );
        s
    }

    /// Notes the workers alive now and the GPUs this server's own workers have (`None`: the
    /// workers are on other hosts, Redis).
    pub fn set_alive(&self, workers: usize, gpus: Option<usize>) {
        use std::sync::atomic::Ordering::Relaxed;
        self.alive.store(workers, Relaxed);
        self.gpus.store(gpus.unwrap_or(usize::MAX), Relaxed);
    }

    /// The health document: `status` is `ok` only when a worker is alive to take jobs.
    pub fn health(&self) -> Value {
        use std::sync::atomic::Ordering::Relaxed;
        let alive = self.alive.load(Relaxed);
        let gpus = self.gpus.load(Relaxed);
        let gpus = (gpus != usize::MAX).then_some(gpus);
        let status = match (alive, gpus) {
            (0, _) => "no_workers",
            (_, Some(0)) => "no_gpu",
            _ => "ok",
        };
        json!({
            "status": status,
            "suite_hash": self.objects.suite_hash.hex(),
            "queue_depth": self.depth(),
            "workers_alive": alive,
            "gpus": gpus,
            "workers_seen": self.workers.lock().unwrap_or_else(|e| e.into_inner()).len(),
            "harness_failures": self.tables().harness_failures,
            "uptime_s": self.started.elapsed().as_secs_f64(),
        })
    }
}
