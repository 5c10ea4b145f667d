//! The service's state: jobs by id, the answers index (submission key → record), the queue
//! the jobs go to, and the counters the metrics show.
//!
//! Jobs are kept in a log beside the answers index (`serve/jobs`, one JSON line a job), so a
//! server started again on the same store knows every job id it gave out: a job still queued
//! is queued again (embedded) or still in its stream (Redis), and its result is accepted when
//! it comes. A job id is 128 random bits, and a job belongs to the client that submitted it.
//!
//! A queued job ends early when its client cancels it or its deadline passes: it leaves the
//! queue (the in-process queue, or its Redis stream entry, deleted by the id the server
//! recorded), and a result that arrives for it later is dropped. The log keeps these ends and
//! the clients' idempotency keys, so neither is forgotten by a restart.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
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
    /// Takes `job` out of the queue, where it sits at `queued_at` (the Redis stream entry the
    /// server recorded when it added the job, never a name a worker gave); returns whether it
    /// was still there. A worker that took it already runs it, and its result is dropped.
    fn cancel(&self, job: &JobSpec, queued_at: Option<&str>) -> Result<bool, String>;
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
    /// Cancelled by its client while it was queued.
    Cancelled,
    /// Still queued when its deadline passed.
    Expired,
}

/// How a queued job ended early (in the jobs log).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum Ended {
    Cancelled,
    Expired,
}

impl Ended {
    fn state(self) -> State {
        match self {
            Ended::Cancelled => State::Cancelled,
            Ended::Expired => State::Expired,
        }
    }
}

/// The states a job's view names (the OpenAPI document's `Result.state`).
pub const STATES: [&str; 6] = [
    "queued",
    "done",
    "harness_failure",
    "failed",
    "cancelled",
    "expired",
];

/// The longest idempotency key, characters.
pub const MAX_IDEMPOTENCY_KEY: usize = 200;

/// A request's idempotency key (the `Idempotency-Key` header) and whether it is a batch.
#[derive(Debug, Clone)]
pub struct Idempotency {
    pub key: String,
    pub batch: bool,
}

impl Idempotency {
    /// The key of an `Idempotency-Key` header: 1 to [`MAX_IDEMPOTENCY_KEY`] printable ASCII
    /// characters.
    pub fn new(key: &[u8], batch: bool) -> Result<Idempotency, String> {
        if key.is_empty() || key.len() > MAX_IDEMPOTENCY_KEY {
            return Err(format!(
                "has {} characters; a key has 1 to {MAX_IDEMPOTENCY_KEY}",
                key.len()
            ));
        }
        if let Some(b) = key.iter().find(|b| !(0x20..=0x7e).contains(*b)) {
            return Err(format!(
                "holds the byte 0x{b:02x}; a key is printable ASCII"
            ));
        }
        Ok(Idempotency {
            key: String::from_utf8_lossy(key).into_owned(),
            batch,
        })
    }
}

/// What an idempotency key was first used for.
#[derive(Debug, Clone)]
struct Idem {
    /// The request it came with (its submissions as read, and whether a batch).
    fingerprint: Digest,
    ids: Vec<String>,
    /// Its jobs are queued (a request with the key is still being queued otherwise).
    settled: bool,
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
    /// The seconds it may wait in the queue, as submitted.
    deadline_s: Option<u64>,
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
    /// When queued jobs expire, soonest first.
    deadlines: BTreeSet<(Instant, String)>,
    /// Idempotency keys by client and key.
    idempotency: HashMap<(String, String), Idem>,
    /// The first job of each request with an idempotency key: the key is forgotten with it.
    idempotency_of: HashMap<String, (String, String)>,
    // Counters.
    /// Results refused: for a job this server did not queue, or without a valid credential.
    refused_results: u64,
    /// Jobs that ended in a harness failure (not cached, no reward).
    harness_failures: u64,
    evaluations: u64,
    from_store: u64,
    duplicates: u64,
    failed: u64,
    cancelled: u64,
    expired: u64,
    /// Results of jobs cancelled or expired before they came: dropped.
    dropped_results: u64,
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
    /// 422: the client used this idempotency key with another request.
    KeyReused(String),
    /// 409: a request with this idempotency key is being queued now.
    KeyInFlight(String),
}

/// Why a job was not cancelled.
#[derive(Debug, Clone, PartialEq)]
pub enum CancelRefusal {
    /// 404: the client has no such job.
    NotFound,
    /// 409: it is finished, or identical submissions wait for its evaluation.
    Conflict(String),
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
    /// Jobs whose deadline passed while the server was down: taken out of a queue that
    /// remembers (their stream entries).
    withdraw: Mutex<Vec<Placed>>,
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
    /// The seconds it may wait in the queue, and when they pass (milliseconds since the Unix
    /// epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deadline_s: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_ms: Option<u64>,
    /// How it ended early (folded in when the log is written again at a start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ended: Option<Ended>,
}

/// An idempotency key as the jobs log keeps it: the ids of the request it came with.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct LoggedKey {
    owner: String,
    idempotency_key: String,
    fingerprint: Digest,
    ids: Vec<String>,
}

/// A line of the jobs log.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
enum Logged {
    Job(Box<LoggedJob>),
    /// A queued job that ended early.
    End {
        id: String,
        ended: Ended,
    },
    Key(LoggedKey),
}

/// A job as queued and where the queue holds it (its Redis stream entry), to take it out.
type Placed = (JobSpec, Option<String>);

/// Milliseconds since the Unix epoch.
fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
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
        let (requeue, withdraw) = Self::load_jobs(&jobs_log, &mut tables)?;
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
            withdraw: Mutex::new(withdraw),
            queue: Mutex::new(None),
            tables: Mutex::new(tables),
            changes: tokio::sync::watch::Sender::new(0),
            alive: std::sync::atomic::AtomicUsize::new(0),
            gpus: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Reads the jobs log into `t` (the answers index already read): a job whose key has an
    /// answer is done, one that was queued is queued again, one that ended early (cancelled,
    /// or its deadline passed, also while the server was down) stays ended; returns the specs
    /// to queue again and the jobs to take out of a queue that remembers them. The log is
    /// written again with the jobs kept (the newest [`KEPT_JOBS`]), their ends folded in, and
    /// the idempotency keys whose jobs are all kept.
    fn load_jobs(
        path: &std::path::Path,
        t: &mut Tables,
    ) -> anyhow::Result<(Vec<JobSpec>, Vec<Placed>)> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok((Vec::new(), Vec::new()));
            }
            Err(e) => anyhow::bail!("reading {}: {e}", path.display()),
        };
        // A line cut by a crash is skipped; the newest jobs are kept.
        let mut logged = Vec::new();
        let mut ends: HashMap<String, Ended> = HashMap::new();
        let mut keys = Vec::new();
        for line in text.lines() {
            match serde_json::from_str::<Logged>(line) {
                Ok(Logged::Job(j)) => logged.push(*j),
                Ok(Logged::End { id, ended }) => {
                    ends.insert(id, ended);
                }
                Ok(Logged::Key(k)) => keys.push(k),
                Err(_) => {}
            }
        }
        let first = logged.len().saturating_sub(KEPT_JOBS);
        let logged = &mut logged[first..];
        let now = Instant::now();
        let now_ms = unix_ms();
        // Queued evaluations that ended: they go on only for identical submissions that wait.
        let mut ended_leaders = Vec::new();
        // Ended while the server was down.
        let mut newly_ended = BTreeSet::new();
        for j in logged.iter_mut() {
            if let Some(e) = ends.get(&j.id) {
                j.ended = Some(*e);
            }
            let answer = t.answers.get(&j.key).cloned();
            if j.ended.is_none() && answer.is_none() && j.expires_ms.is_some_and(|ms| ms <= now_ms)
            {
                j.ended = Some(Ended::Expired);
                newly_ended.insert(j.id.clone());
            }
            let state = match (j.ended, answer, &j.spec) {
                (Some(e), None, Some(_)) => {
                    t.pending += 1;
                    t.queued.insert(j.key, j.id.clone());
                    ended_leaders.push((j.id.clone(), j.key));
                    e.state()
                }
                (Some(e), _, _) => e.state(),
                (None, Some(a), _) => State::Done(a),
                (None, None, Some(_)) => {
                    t.pending += 1;
                    t.queued.insert(j.key, j.id.clone());
                    State::Queued
                }
                (None, None, None) if t.queued.contains_key(&j.key) => {
                    t.followers.entry(j.key).or_default().push(j.id.clone());
                    State::Queued
                }
                (None, None, None) => {
                    State::Failed("the server stopped before this job's evaluation ended".into())
                }
            };
            if matches!(state, State::Queued)
                && let Some(ms) = j.expires_ms
            {
                let at = now + Duration::from_millis(ms.saturating_sub(now_ms));
                t.deadlines.insert((at, j.id.clone()));
            }
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
                    deadline_s: j.deadline_s,
                },
            );
            t.order.push_back(j.id.clone());
        }
        // An evaluation that ended, and that no identical submission waits for, is not queued;
        // it leaves a queue that remembers it when it ended while the server was down, or went
        // on for followers that no longer wait.
        let had_followers: BTreeSet<Digest> = logged
            .iter()
            .filter(|j| j.spec.is_none())
            .map(|j| j.key)
            .collect();
        let mut withdraw = Vec::new();
        for (id, key) in &ended_leaders {
            let leads = t.queued.get(key) == Some(id);
            let followed = t.followers.get(key).is_some_and(|f| !f.is_empty());
            if leads && followed {
                continue;
            }
            if leads {
                t.queued.remove(key);
            }
            t.pending = t.pending.saturating_sub(1);
            if (newly_ended.contains(id) || had_followers.contains(key))
                && let Some(e) = t.jobs.get(id)
                && let Some(spec) = &e.spec
            {
                withdraw.push((spec.clone(), e.queued_at.clone()));
            }
        }
        let requeue = logged
            .iter()
            .filter_map(|j| {
                let e = t.jobs.get(&j.id)?;
                let queued =
                    matches!(e.state, State::Queued) || t.queued.get(&j.key) == Some(&j.id);
                queued.then(|| j.spec.clone()).flatten()
            })
            .collect();
        let mut kept = String::new();
        for j in logged.iter() {
            kept.push_str(&serde_json::to_string(&Logged::Job(Box::new(j.clone())))?);
            kept.push('\n');
        }
        for k in keys {
            if !k.ids.iter().all(|id| t.jobs.contains_key(id)) || k.ids.is_empty() {
                continue;
            }
            kept.push_str(&serde_json::to_string(&Logged::Key(k.clone()))?);
            kept.push('\n');
            let client = (k.owner, k.idempotency_key);
            t.idempotency_of.insert(k.ids[0].clone(), client.clone());
            t.idempotency.insert(
                client,
                Idem {
                    fingerprint: k.fingerprint,
                    ids: k.ids,
                    settled: true,
                },
            );
        }
        crate::destination::write_atomic(path, kept.as_bytes())
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        Ok((requeue, withdraw))
    }

    /// Where jobs go from now on; jobs still queued when the server last stopped are queued
    /// again when the queue forgot them, and jobs whose deadline passed meanwhile are taken
    /// out of a queue that remembers them.
    pub fn set_queue(&self, queue: Arc<dyn Queue>) -> Result<(), String> {
        let again = std::mem::take(&mut *self.requeue.lock().unwrap_or_else(|e| e.into_inner()));
        let gone = std::mem::take(&mut *self.withdraw.lock().unwrap_or_else(|e| e.into_inner()));
        if queue.forgets_on_restart() {
            if !again.is_empty() {
                queue.push_all(&again)?;
            }
        } else {
            Self::take_out(queue.as_ref(), &gone);
        }
        *self.queue.lock().unwrap_or_else(|e| e.into_inner()) = Some(queue);
        Ok(())
    }

    /// Takes jobs out of `queue`; a failure is a warning (a worker that runs such a job has its
    /// result dropped).
    fn take_out(queue: &dyn Queue, jobs: &[Placed]) {
        for (job, at) in jobs {
            if let Err(e) = queue.cancel(job, at.as_deref()) {
                eprintln!(
                    "warning: job {} stays in the queue ({e}); its result will be dropped",
                    job.id
                );
            }
        }
    }

    /// A receiver that sees a new value whenever a job finishes.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Appends jobs (and what became of them) to the jobs log; a failure is a warning (the
    /// job runs; only a restart would forget it).
    fn log_jobs(&self, jobs: &[Logged]) {
        let mut text = String::new();
        for j in jobs {
            if let Ok(line) = serde_json::to_string(j) {
                text.push_str(&line);
                text.push('\n');
            }
        }
        append_or_warn(&self.jobs_log, &text, "jobs were not logged");
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
    /// when an identical submission has a record (unless `fresh`), else queued. With an
    /// idempotency key the client used before for the same request, the ids it got then, and
    /// no new job; with one it used for another request, [`Refusal::KeyReused`].
    ///
    /// The job table is locked to decide and again to settle, never while the queue takes the
    /// jobs (a push to a slow Redis stalls this submission only). The jobs are in the table
    /// before they are pushed, so a worker's result can never arrive for a job the table does
    /// not have yet; a push that fails takes them out again (and fails whatever followed them).
    pub fn submit(
        &self,
        subs: Vec<Submission>,
        owner: &str,
        idem: Option<&Idempotency>,
    ) -> Result<Vec<String>, Refusal> {
        let at = |i: usize, field: &str| {
            if subs.len() > 1 {
                format!("items[{i}].{field}")
            } else {
                field.to_string()
            }
        };
        // What the key is bound to: the submissions as read (not their bytes) and the endpoint.
        let idem = idem.map(|k| {
            let items: Vec<Value> = subs.iter().map(Submission::to_json).collect();
            let fingerprint = Digest::of(
                &serde_json::to_vec(&json!({"batch": k.batch, "items": items}))
                    .expect("JSON serialises"),
            );
            ((owner.to_string(), k.key.clone()), fingerprint)
        });
        if let Some((client, fingerprint)) = &idem
            && let Some(done) = Self::idempotent(&self.tables(), client, fingerprint)
        {
            return done;
        }
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
        let now_ms = unix_ms();
        // 1. Decide, and put every job in the table (locked).
        let mut jobs = Vec::new();
        let mut logged = Vec::with_capacity(subs.len());
        {
            let mut t = self.tables();
            // Again, locked: a request with the same key may have come meanwhile.
            if let Some((client, fingerprint)) = &idem
                && let Some(done) = Self::idempotent(&t, client, fingerprint)
            {
                return done;
            }
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
                // A deadline counts while the job waits; an answered one has none to keep.
                let deadline_s = s.deadline_s.filter(|_| matches!(state, State::Queued));
                if let Some(d) = deadline_s {
                    t.deadlines
                        .insert((now + Duration::from_secs(d), id.clone()));
                }
                logged.push(LoggedJob {
                    id: id.clone(),
                    owner: owner.to_string(),
                    key: *key,
                    spec: spec.clone(),
                    queued_at: None,
                    deadline_s,
                    expires_ms: deadline_s.map(|d| now_ms.saturating_add(d * 1000)),
                    ended: None,
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
                        deadline_s,
                    },
                );
                t.order.push_back(id.clone());
            }
            if let Some((client, fingerprint)) = &idem {
                t.idempotency.insert(
                    client.clone(),
                    Idem {
                        fingerprint: *fingerprint,
                        ids: ids.clone(),
                        settled: false,
                    },
                );
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
                let mut lines: Vec<Logged> = logged
                    .into_iter()
                    .map(|j| Logged::Job(Box::new(j)))
                    .collect();
                if let Some((client, fingerprint)) = idem {
                    if let Some(i) = t.idempotency.get_mut(&client) {
                        i.settled = true;
                    }
                    t.idempotency_of.insert(ids[0].clone(), client.clone());
                    lines.push(Logged::Key(LoggedKey {
                        owner: client.0,
                        idempotency_key: client.1,
                        fingerprint,
                        ids: ids.clone(),
                    }));
                }
                Self::forget_old(&mut t);
                drop(t);
                self.log_jobs(&lines);
                Ok(ids)
            }
            Err(m) => {
                for id in &ids {
                    t.jobs.remove(id);
                }
                t.order.retain(|o| !ids.contains(o));
                if let Some((client, _)) = &idem {
                    t.idempotency.remove(client);
                }
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

    /// The answer to a request with an idempotency key `client` used before: the same ids
    /// for the same request, a refusal for another (or while the first is being queued).
    /// `None`: the key is new (or its jobs are forgotten).
    fn idempotent(
        t: &Tables,
        client: &(String, String),
        fingerprint: &Digest,
    ) -> Option<Result<Vec<String>, Refusal>> {
        let i = t.idempotency.get(client)?;
        if i.settled && !i.ids.iter().all(|id| t.jobs.contains_key(id)) {
            return None;
        }
        Some(if i.fingerprint != *fingerprint {
            Err(Refusal::KeyReused(client.1.clone()))
        } else if !i.settled {
            Err(Refusal::KeyInFlight(client.1.clone()))
        } else {
            Ok(i.ids.clone())
        })
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
            // A job queued, or one that ended whose evaluation goes on for others, is kept.
            if let Some(e) = t.jobs.get(&front)
                && (matches!(e.state, State::Queued) || t.queued.get(&e.key) == Some(&front))
            {
                break;
            }
            t.order.pop_front();
            t.jobs.remove(&front);
            if let Some(client) = t.idempotency_of.remove(&front) {
                t.idempotency.remove(&client);
            }
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

    /// Whether a result for job `id` would be dropped: the job was cancelled or expired, and
    /// no identical submission waits for its evaluation (a worker need not run it, and the
    /// server stores nothing of its result).
    pub fn result_dropped(&self, id: &str) -> bool {
        let t = self.tables();
        t.jobs.get(id).is_some_and(|e| {
            matches!(e.state, State::Cancelled | State::Expired)
                && t.queued.get(&e.key).is_none_or(|l| l != id)
        })
    }

    /// A worker's result for job `id`. Only the first result of a job counts; a later one (a
    /// job delivered again after its worker died) is counted as a duplicate and dropped, and
    /// so is one for a job this server did not queue. A result for a job that was cancelled or
    /// expired is dropped and changes nothing, unless identical submissions wait for its
    /// evaluation: they get it (the job itself stays as it ended). Returns whether it counted.
    pub fn complete(&self, id: &str, result: Result<Answer, String>) -> bool {
        let mut t = self.tables();
        let Some(e) = t.jobs.get_mut(id) else {
            t.refused_results += 1;
            return false;
        };
        e.results += 1;
        let (key, queued, ended) = (
            e.key,
            matches!(e.state, State::Queued),
            matches!(e.state, State::Cancelled | State::Expired),
        );
        if !(queued || ended) || e.spec.is_none() {
            t.duplicates += 1;
            return false;
        }
        if ended && t.queued.get(&key).is_none_or(|l| l != id) {
            t.dropped_results += 1;
            return false;
        }
        let state = |result: &Result<Answer, String>| match result {
            Ok(a) if a.verdict == Verdict::Other => State::HarnessFailure(a.clone()),
            Ok(a) => State::Done(a.clone()),
            Err(m) => State::Failed(m.clone()),
        };
        if queued && let Some(e) = t.jobs.get_mut(id) {
            e.finished = Some(Instant::now());
            e.state = state(&result);
        }
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

    /// Cancels job `id` of `owner` while it is queued: it leaves the queue and ends
    /// `cancelled` (cancelling it again changes nothing). A finished job, and one whose
    /// evaluation identical submissions wait for, is not cancelled.
    pub fn cancel(&self, id: &str, owner: &str) -> Result<(), CancelRefusal> {
        let mut t = self.tables();
        let e = t
            .jobs
            .get(id)
            .filter(|e| e.owner == owner)
            .ok_or(CancelRefusal::NotFound)?;
        let ended = match &e.state {
            State::Queued => None,
            State::Cancelled => return Ok(()),
            State::Expired => Some("expired (its deadline passed while it was queued)"),
            State::Done(_) => Some("done"),
            State::HarnessFailure(_) => Some("finished (a harness failure)"),
            State::Failed(_) => Some("finished (failed)"),
        };
        if let Some(how) = ended {
            return Err(CancelRefusal::Conflict(format!(
                "evaluation `{id}` is {how}; only a queued evaluation can be cancelled"
            )));
        }
        let key = e.key;
        let followers = t.followers.get(&key).map_or(0, Vec::len);
        if e.spec.is_some() && t.queued.get(&key).is_some_and(|l| l == id) && followers > 0 {
            return Err(CancelRefusal::Conflict(format!(
                "evaluation `{id}` is not cancelled: {followers} identical submission(s) share \
                 its evaluation and wait for its result"
            )));
        }
        let withdraw = Self::end(&mut t, id, Ended::Cancelled);
        drop(t);
        self.settle_ends(
            &[id.to_string()],
            Ended::Cancelled,
            withdraw.into_iter().collect(),
        );
        Ok(())
    }

    /// Ends every queued job whose deadline has passed (`expired`: it leaves the queue, and a
    /// result that comes later is dropped); returns how many. Called about every second.
    pub fn expire_due(&self) -> usize {
        let now = Instant::now();
        let mut t = self.tables();
        let (mut ended, mut withdraw) = (Vec::new(), Vec::new());
        while let Some((at, id)) = t.deadlines.first().cloned() {
            if at > now {
                break;
            }
            t.deadlines.pop_first();
            if t.jobs
                .get(&id)
                .is_some_and(|e| matches!(e.state, State::Queued))
            {
                withdraw.extend(Self::end(&mut t, &id, Ended::Expired));
                ended.push(id);
            }
        }
        drop(t);
        if !ended.is_empty() {
            self.settle_ends(&ended, Ended::Expired, withdraw);
        }
        ended.len()
    }

    /// Ends queued job `id` early: returns the job to take out of the queue, if any. A job
    /// that identical submissions follow goes on for them (its evaluation stays queued); a
    /// follower that ends stops waiting, and when it was the last one an evaluation whose own
    /// job ended is taken out of the queue too.
    fn end(t: &mut Tables, id: &str, how: Ended) -> Option<Placed> {
        let e = t.jobs.get_mut(id)?;
        e.state = how.state();
        e.finished = Some(Instant::now());
        let (key, spec, at) = (e.key, e.spec.clone(), e.queued_at.clone());
        match how {
            Ended::Cancelled => t.cancelled += 1,
            Ended::Expired => t.expired += 1,
        }
        if let Some(spec) = spec {
            let leads = t.queued.get(&key).is_some_and(|l| l == id);
            if leads && t.followers.get(&key).is_some_and(|f| !f.is_empty()) {
                return None;
            }
            if leads {
                t.queued.remove(&key);
            }
            t.pending = t.pending.saturating_sub(1);
            return Some((spec, at));
        }
        let f = t.followers.get_mut(&key)?;
        f.retain(|x| x != id);
        if !f.is_empty() {
            return None;
        }
        t.followers.remove(&key);
        let leader = t.queued.get(&key)?;
        let l = t.jobs.get(leader)?;
        if !matches!(l.state, State::Cancelled | State::Expired) {
            return None;
        }
        let w = (l.spec.clone()?, l.queued_at.clone());
        t.queued.remove(&key);
        t.pending = t.pending.saturating_sub(1);
        Some(w)
    }

    /// After jobs ended early (the table unlocked): takes them out of the queue, logs their
    /// ends and wakes those who wait on them.
    fn settle_ends(&self, ids: &[String], how: Ended, withdraw: Vec<Placed>) {
        let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(q) = queue {
            Self::take_out(q.as_ref(), &withdraw);
        }
        let lines: Vec<Logged> = ids
            .iter()
            .map(|id| Logged::End {
                id: id.clone(),
                ended: how,
            })
            .collect();
        self.log_jobs(&lines);
        self.changes.send_modify(|g| *g = g.wrapping_add(1));
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
        append_or_warn(&self.answers_log, &line, "the answer was not kept");
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
        let (state, cached, results, deadline) =
            (e.state.clone(), e.cached, e.results, e.deadline_s);
        drop(t);
        let mut v = json!({
            "id": id,
            "cached": cached,
            "results": results,
            "latency_s": latency,
        });
        match state {
            State::Queued => v["state"] = "queued".into(),
            State::Cancelled => {
                v["state"] = "cancelled".into();
                v["error"] = "cancelled by its client while it was queued".into();
            }
            State::Expired => {
                v["state"] = "expired".into();
                v["error"] = format!(
                    "still queued when its deadline ({} s) passed",
                    deadline.unwrap_or_default()
                )
                .into();
            }
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
            "ptxbench_cancelled_jobs_total",
            "counter",
            "Jobs their clients cancelled while they were queued.",
            one(t.cancelled.to_string()),
        );
        metric(
            "ptxbench_expired_jobs_total",
            "counter",
            "Jobs still queued when their deadline passed.",
            one(t.expired.to_string()),
        );
        metric(
            "ptxbench_dropped_results_total",
            "counter",
            "Results of jobs cancelled or expired before they came: dropped.",
            one(t.dropped_results.to_string()),
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

/// Appends `text` to the log at `path`; a failure is printed as a warning naming the log, and
/// the request that wrote it still completes.
fn append_or_warn(path: &std::path::Path, text: &str, what: &str) {
    let logged = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = logged {
        eprintln!("warning: {}: {what}: {e}", path.display());
    }
}
