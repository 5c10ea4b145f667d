//! The service's state: jobs by id, the answers index (submission key → record), the queue
//! the jobs go to, and the counters the metrics show.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::job::{Answer, JobSpec, Submission};
use crate::digest::Digest;
use crate::engine::Protocol;
use crate::record::task::SuiteObjects;
use crate::store::Store;

/// Where jobs go: the embedded queue or Redis.
pub trait Queue: Send + Sync {
    /// Queues every job of `jobs`, or (on an error) none that a worker can take twice.
    fn push_all(&self, jobs: &[JobSpec]) -> Result<(), String>;
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
    /// No record could be made (a worker with another suite, a store that failed).
    Failed(String),
}

#[derive(Debug)]
struct Entry {
    key: Digest,
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
    next: u64,
    // Counters.
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
    pub caps: Caps,
    pub protocol: Protocol,
    pub started: Instant,
    /// GPUs evaluating (embedded workers, or Redis workers seen).
    pub workers: Mutex<BTreeMap<String, f64>>,
    answers_log: PathBuf,
    nonce: u64,
    queue: Mutex<Option<Arc<dyn Queue>>>,
    tables: Mutex<Tables>,
    changed: Condvar,
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

impl Service {
    /// A service over `store` (whose answers index it reads) for the suite of `objects`.
    pub fn new(
        store: Store,
        objects: SuiteObjects,
        caps: Caps,
        tasks: Vec<(String, Digest)>,
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
        Ok(Service {
            store,
            objects,
            tasks,
            caps,
            protocol: Protocol::default(),
            started: Instant::now(),
            workers: Mutex::new(BTreeMap::new()),
            answers_log,
            nonce: crate::entropy::draw_u64()?,
            queue: Mutex::new(None),
            tables: Mutex::new(tables),
            changed: Condvar::new(),
        })
    }

    /// Where jobs go from now on.
    pub fn set_queue(&self, queue: Arc<dyn Queue>) {
        *self.queue.lock().unwrap_or_else(|e| e.into_inner()) = Some(queue);
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

    /// Makes jobs of `subs` (all or none): an id each, answered from the store when an
    /// identical submission has a record (unless `fresh`), else queued.
    pub fn submit(&self, subs: Vec<Submission>) -> Result<Vec<String>, Refusal> {
        let mut made = Vec::with_capacity(subs.len());
        for (i, s) in subs.iter().enumerate() {
            let Some(task) = self.objects.task(&s.task) else {
                let at = if subs.len() > 1 {
                    format!("items[{i}].task")
                } else {
                    "task".into()
                };
                return Err(Refusal::Field(super::job::FieldError {
                    field: at,
                    message: format!("no task `{}` in the suite", s.task),
                }));
            };
            made.push(s.key(task, &self.protocol));
        }
        let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut t = self.tables();
        let new = subs
            .iter()
            .zip(&made)
            .filter(|(s, k)| s.fresh || !(t.answers.contains_key(k) || t.queued.contains_key(k)))
            .count();
        if t.pending + new > self.caps.max_queue {
            drop(t);
            self.refused("queue_full");
            return Err(Refusal::Full {
                depth: self.depth(),
            });
        }
        // Decide every submission first, queue the new jobs, and only then change the tables:
        // a batch is queued whole or not at all.
        enum Plan {
            Known(Answer),
            Follow,
            New,
        }
        let mut plans = Vec::with_capacity(subs.len());
        let mut ids = Vec::with_capacity(subs.len());
        let mut jobs = Vec::new();
        let mut batch_first: HashMap<Digest, String> = HashMap::new();
        for (k, (s, key)) in subs.iter().zip(&made).enumerate() {
            let id = format!("{:016x}{:08x}", self.nonce, t.next + 1 + k as u64);
            let plan = match (
                s.fresh,
                t.answers.get(key),
                t.queued.get(key).or(batch_first.get(key)),
            ) {
                (false, Some(a), _) => Plan::Known(a.clone()),
                (false, None, Some(_)) => Plan::Follow,
                _ => {
                    let seed = match s.seed {
                        Some(seed) => seed,
                        None => {
                            crate::entropy::draw_u64().map_err(|e| Refusal::Queue(e.to_string()))?
                        }
                    };
                    jobs.push(JobSpec {
                        id: id.clone(),
                        key: *key,
                        suite_hash: self.objects.suite_hash,
                        task: s.task.clone(),
                        arch: s.arch,
                        candidate: s.candidate.clone(),
                        seed,
                        workloads: s.workloads.clone(),
                        no_timing: s.correctness_only,
                        entry: s.entry.clone(),
                        protocol: self.protocol.clone(),
                        timeout_s: self.caps.timeout_s,
                    });
                    batch_first.insert(*key, id.clone());
                    Plan::New
                }
            };
            plans.push(plan);
            ids.push(id);
        }
        if !jobs.is_empty() {
            match &queue {
                Some(q) => q.push_all(&jobs).map_err(Refusal::Queue)?,
                None => return Err(Refusal::Queue("no queue".into())),
            }
        }
        t.next += ids.len() as u64;
        let now = Instant::now();
        for ((plan, key), id) in plans.into_iter().zip(made).zip(&ids) {
            let entry = |state, cached: bool| Entry {
                key,
                submitted: now,
                finished: matches!(state, State::Done(_)).then_some(now),
                cached,
                state,
                results: 0,
            };
            let e = match plan {
                Plan::Known(a) => {
                    t.from_store += 1;
                    entry(State::Done(a), true)
                }
                Plan::Follow => {
                    // An identical submission is being evaluated: this one shares its answer.
                    t.from_store += 1;
                    t.followers.entry(key).or_default().push(id.clone());
                    entry(State::Queued, true)
                }
                Plan::New => {
                    t.pending += 1;
                    t.queued.insert(key, id.clone());
                    entry(State::Queued, false)
                }
            };
            t.jobs.insert(id.clone(), e);
            t.order.push_back(id.clone());
        }
        Self::forget_old(&mut t);
        Ok(ids)
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

    /// A worker's result for job `id`. Only the first result of a job counts; a later one (a
    /// job delivered again after its worker died) is counted as a duplicate and dropped.
    /// Returns whether it was the first.
    pub fn complete(&self, id: &str, result: Result<Answer, String>) -> bool {
        let mut t = self.tables();
        let Some(e) = t.jobs.get_mut(id) else {
            t.duplicates += 1;
            return false;
        };
        e.results += 1;
        if !matches!(e.state, State::Queued) {
            t.duplicates += 1;
            return false;
        }
        let key = e.key;
        e.finished = Some(Instant::now());
        e.state = match &result {
            Ok(a) => State::Done(a.clone()),
            Err(m) => State::Failed(m.clone()),
        };
        t.pending = t.pending.saturating_sub(1);
        t.queued.remove(&key);
        // Jobs that shared this one's evaluation get its result.
        for f in t.followers.remove(&key).unwrap_or_default() {
            if let Some(other) = t.jobs.get_mut(&f) {
                other.finished = Some(Instant::now());
                other.state = match &result {
                    Ok(a) => State::Done(a.clone()),
                    Err(m) => State::Failed(m.clone()),
                };
            }
        }
        match result {
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
        self.changed.notify_all();
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

    /// The answer to a job this server does not know (queued before it started again): its
    /// record is in the store, and an identical submission is answered from it from now on.
    pub fn adopt(&self, key: Digest, a: Answer) {
        let mut t = self.tables();
        if !t.answers.contains_key(&key) {
            self.keep(&mut t, key, a);
        }
    }

    /// Job `id`'s view, waiting up to `wait` for it to finish; `None` for an unknown id.
    pub fn view(&self, id: &str, wait: Duration) -> Option<Value> {
        let deadline = Instant::now() + wait;
        let mut t = self.tables();
        loop {
            let e = t.jobs.get(id)?;
            let now = Instant::now();
            if !matches!(e.state, State::Queued) || now >= deadline {
                break;
            }
            t = self
                .changed
                .wait_timeout(t, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let e = t.jobs.get(id)?;
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
            "Results of a job that already had one (delivered again) or that this server did not queue (queued before it started); the first kind is dropped, the second answers identical submissions.",
            one(t.duplicates.to_string()),
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

    /// The health document.
    pub fn health(&self) -> Value {
        json!({
            "status": "ok",
            "suite_hash": self.objects.suite_hash.hex(),
            "queue_depth": self.depth(),
            "workers": self.workers.lock().unwrap_or_else(|e| e.into_inner()).len(),
            "uptime_s": self.started.elapsed().as_secs_f64(),
        })
    }
}
