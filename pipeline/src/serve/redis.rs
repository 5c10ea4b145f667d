//! The queue past one host: Redis Streams with consumer groups.
//!
//! The server adds each job to `<stream>:jobs`; workers (`ptxbench worker --queue`) read it
//! in the group `workers`. A worker runs jobs through the stages `run` uses (the next few
//! checked and compiled while one is on the GPU) and keeps every job it holds claimed (a
//! heartbeat resets their idle time); it makes the record in its own store, adds the result
//! (the record and every object of its closure but the suite's) to `<stream>:results`, then
//! acknowledges the job. A job whose worker died goes idle and another worker takes it over
//! (`XAUTOCLAIM`), alone (see [`work`]); once a job has been delivered more than
//! `max_deliveries` times, the next worker records a harness verdict without running it, so a
//! job that kills workers ends and never loops. The
//! server reads results in the group `server`, checks and stores the objects, counts the
//! first result of a job only (a job delivered twice may be evaluated twice, but it is
//! recorded once), acknowledges and deletes the result and the job.
//!
//! Whoever can write to Redis is not trusted: a result counts only when it is for a job this
//! server queued, carries a MAC under the workers' credential ([`WorkerKey`], never the
//! clients' token) that binds it to that job, and its record is that job's record (task, seed,
//! workloads, candidate, protocol). Anything else is dropped and counted. The server deletes
//! a job's stream entry by the id Redis gave it when it was added, never by a name a result
//! carries. A worker refuses to start when the server's suite (kept at `<stream>:suite`) is not
//! its own.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::job::{Answer, Bench, JobSpec, WorkerKey};
use super::resp::{Connection, RedisError, Reply, entries};
use super::service::{Queue, Service};
use crate::digest::Digest;
use crate::record::task::SuiteObjects;
use crate::store::Store;
use crate::store::object::{Content, classify};

/// The default stream name prefix.
pub const DEFAULT_STREAM: &str = "ptxbench";
const WORKERS: &str = "workers";
const SERVER: &str = "server";

/// Where the streams are.
#[derive(Debug, Clone)]
pub struct Streams {
    pub target: super::resp::Target,
    pub prefix: String,
}

impl std::fmt::Display for Streams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} stream {}", self.target, self.prefix)
    }
}

impl Streams {
    fn jobs(&self) -> String {
        format!("{}:jobs", self.prefix)
    }
    fn results(&self) -> String {
        format!("{}:results", self.prefix)
    }
    fn suite(&self) -> String {
        format!("{}:suite", self.prefix)
    }
    /// A worker's presence key (expires unless the worker renews it).
    fn presence(&self, worker: &str) -> String {
        format!("{}:worker:{worker}", self.prefix)
    }

    /// How many workers renewed their presence key lately.
    fn workers_alive(&self, c: &mut Connection) -> Result<usize, RedisError> {
        let pattern = format!("{}:worker:*", self.prefix);
        let mut cursor = "0".to_string();
        let mut n = 0;
        loop {
            let r = c.call(&[
                b"SCAN",
                cursor.as_bytes(),
                b"MATCH",
                pattern.as_bytes(),
                b"COUNT",
                b"1000",
            ])?;
            let items = r.items();
            cursor = items.first().and_then(Reply::text).unwrap_or_default();
            n += items.get(1).map_or(0, |k| k.items().len());
            if cursor == "0" || cursor.is_empty() {
                return Ok(n);
            }
        }
    }

    /// Publishes the server's suite hash for workers to compare with theirs.
    pub fn announce_suite(&self, suite: &Digest) -> Result<(), RedisError> {
        self.connect()?
            .call(&[b"SET", self.suite().as_bytes(), suite.hex().as_bytes()])
            .map(|_| ())
    }

    /// Refuses a worker whose suite is not the server's (when a server announced one).
    pub fn check_suite(&self, ours: &Digest) -> Result<(), String> {
        let mut c = self.connect().map_err(|e| e.to_string())?;
        let theirs = c
            .call(&[b"GET", self.suite().as_bytes()])
            .map_err(|e| e.to_string())?;
        match theirs.text() {
            Some(t) if t != ours.hex() => Err(format!(
                "the server on stream `{}` evaluates task suite {t}, this worker has {}; start the \
                 worker with the server's suite (--tasks)",
                self.prefix,
                ours.hex()
            )),
            _ => Ok(()),
        }
    }

    /// A connection with both groups made (from the start of the streams, so jobs added
    /// before the first worker came are read).
    pub fn connect(&self) -> Result<Connection, RedisError> {
        let mut c = Connection::to(&self.target)?;
        for (stream, group) in [(self.jobs(), WORKERS), (self.results(), SERVER)] {
            match c.call(&[
                b"XGROUP",
                b"CREATE",
                stream.as_bytes(),
                group.as_bytes(),
                b"0",
                b"MKSTREAM",
            ]) {
                Ok(_) => {}
                Err(RedisError::Server(m)) if m.starts_with("BUSYGROUP") => {}
                Err(e) => return Err(e),
            }
        }
        Ok(c)
    }
}

/// A worker's result, as it travels in the results stream (the objects travel beside it).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ResultMeta {
    job: String,
    /// The job's entry in the jobs stream as the worker read it (shown in logs; the server
    /// deletes the entry it recorded when it added the job).
    entry: String,
    worker: String,
    result: Result<Answer, String>,
    /// [`WorkerKey::mac`] of the result for the job.
    mac: String,
}

/// The server's side: adds jobs.
#[derive(Debug)]
pub struct RedisQueue {
    streams: Streams,
    key: WorkerKey,
    conn: Mutex<Option<Connection>>,
}

impl RedisQueue {
    pub fn new(streams: Streams, key: WorkerKey) -> Result<RedisQueue, RedisError> {
        let conn = streams.connect()?;
        Ok(RedisQueue {
            streams,
            key,
            conn: Mutex::new(Some(conn)),
        })
    }

    /// Runs `f` on the connection, connecting again once if it failed.
    fn with<T>(
        &self,
        f: impl Fn(&mut Connection) -> Result<T, RedisError>,
    ) -> Result<T, RedisError> {
        let mut guard = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = guard.as_mut() {
            match f(c) {
                Err(RedisError::Io(_) | RedisError::Protocol(_)) => *guard = None,
                other => return other,
            }
        }
        let mut c = self.streams.connect()?;
        let r = f(&mut c);
        *guard = Some(c);
        r
    }
}

impl Queue for RedisQueue {
    /// Adds the jobs in one round trip (pipelined `XADD`s). A failure part way leaves the
    /// jobs already added in the stream; the server forgets their ids, so their results are
    /// dropped as results of unknown jobs.
    fn push_all(&self, jobs: &[JobSpec]) -> Result<Vec<Option<String>>, String> {
        let stream = self.streams.jobs();
        let bodies = jobs
            .iter()
            .map(|j| Ok((serde_json::to_vec(j)?, self.key.mac_job(j))))
            .collect::<Result<Vec<_>, serde_json::Error>>()
            .map_err(|e| e.to_string())?;
        // Each job carries the server's MAC: a worker runs no job someone else added.
        let commands: Vec<Vec<&[u8]>> = bodies
            .iter()
            .map(|(b, mac)| {
                vec![
                    &b"XADD"[..],
                    stream.as_bytes(),
                    b"*",
                    b"job",
                    b.as_slice(),
                    b"mac",
                    mac.as_bytes(),
                ]
            })
            .collect();
        self.with(|c| c.pipeline(&commands))
            .map(|replies| replies.iter().map(Reply::text).collect())
            .map_err(|e| format!("queueing {} jobs: {e}", jobs.len()))
    }

    fn forgets_on_restart(&self) -> bool {
        false
    }

    /// Deletes the job's stream entry by the id Redis gave it when the server added it. A
    /// worker that read it already runs it (and its result is dropped).
    fn cancel(&self, job: &JobSpec, queued_at: Option<&str>) -> Result<bool, String> {
        let Some(entry) = queued_at else {
            return Ok(false);
        };
        let stream = self.streams.jobs();
        self.with(|c| c.call(&[b"XDEL", stream.as_bytes(), entry.as_bytes()]))
            .map(|r| r == Reply::Int(1))
            .map_err(|e| format!("deleting job {}'s stream entry {entry}: {e}", job.id))
    }
}

/// Starts the thread that stores the workers' results into `service`'s store.
pub fn collect(service: Arc<Service>, streams: Streams, key: WorkerKey) {
    std::thread::spawn(move || {
        // Results read but not acknowledged before a restart first, then new ones.
        let mut from = "0".to_string();
        loop {
            if let Err(e) = collect_some(&service, &streams, &key, &mut from) {
                eprintln!("warning: reading results from redis: {e}; again in 1 s");
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    });
}

fn collect_some(
    service: &Service,
    streams: &Streams,
    key: &WorkerKey,
    from: &mut String,
) -> Result<(), RedisError> {
    let mut c = streams.connect()?;
    let mut counted = Instant::now() - Duration::from_secs(60);
    loop {
        // Workers alive, for /healthz: every few seconds.
        if counted.elapsed() >= Duration::from_secs(2) {
            service.set_alive(streams.workers_alive(&mut c)?, None);
            counted = Instant::now();
        }
        let reply = c.call(&[
            b"XREADGROUP",
            b"GROUP",
            SERVER.as_bytes(),
            b"server",
            b"COUNT",
            b"64",
            b"BLOCK",
            b"1000",
            b"STREAMS",
            streams.results().as_bytes(),
            from.as_bytes(),
        ])?;
        let batch: Vec<_> = reply
            .items()
            .iter()
            .flat_map(|s| entries(s.items().get(1).unwrap_or(&Reply::Array(None))))
            .collect();
        if batch.is_empty() && from == "0" {
            *from = ">".into();
        }
        for e in batch {
            let job_entry = apply(service, key, &e);
            let id = e.id.as_bytes();
            c.call(&[b"XACK", streams.results().as_bytes(), SERVER.as_bytes(), id])?;
            c.call(&[b"XDEL", streams.results().as_bytes(), id])?;
            if let Some(j) = job_entry {
                c.call(&[b"XDEL", streams.jobs().as_bytes(), j.as_bytes()])?;
            }
        }
    }
}

/// Checks one result against the job this server queued, stores its objects and completes
/// the job; returns the job's stream entry (as Redis named it when the job was added). A
/// result for a job this server did not queue, without a valid MAC, or whose record is not the
/// job's is dropped and counted, and deletes nothing.
fn apply(service: &Service, key: &WorkerKey, e: &super::resp::Entry) -> Option<String> {
    let meta: ResultMeta = match e.get("meta").map(serde_json::from_slice) {
        Some(Ok(m)) => m,
        _ => {
            eprintln!("warning: result {} has no readable `meta`; dropped", e.id);
            service.refuse_result();
            return None;
        }
    };
    let Some(job) = service.queued_spec(&meta.job) else {
        eprintln!(
            "warning: result {} is for job {:?}, which this server did not queue; dropped",
            e.id, meta.job
        );
        service.refuse_result();
        return None;
    };
    if !key.verify(&job, &meta.result, &meta.mac) {
        eprintln!(
            "warning: result {} for job {} does not carry the workers' credential; dropped",
            e.id, meta.job
        );
        service.refuse_result();
        return None;
    }
    if service.result_dropped(&meta.job) {
        // Cancelled or expired: nothing of it is stored, and its state stays.
        service.complete(&meta.job, Err("cancelled or expired".into()));
        return service.queued_at(&meta.job);
    }
    let mut result = meta.result.clone();
    if let Ok(a) = &result {
        let mut problem = None;
        for (k, bytes) in &e.fields {
            if k.starts_with(b"o")
                && let Err(err) = service.store.put(bytes)
            {
                problem = Some(format!("storing a result object: {err}"));
            }
        }
        match reachable(
            &service.store,
            &[a.record, a.feedback],
            &suite_objects(&service.objects),
        ) {
            Ok(found) => {
                if let Some((d, _)) = found.iter().find(|(_, b)| b.is_none()) {
                    problem = Some(format!("the result's record needs {d}, which did not come"));
                }
            }
            Err(e) => problem = Some(format!("the result's record: {e}")),
        }
        if problem.is_none() {
            problem = match service
                .store
                .get(&a.record)
                .map_err(|e| e.to_string())
                .and_then(|bytes| {
                    crate::record::decode_record(&a.record, &bytes).map_err(|e| e.to_string())
                }) {
                Ok(r) if r.verdict != a.verdict => {
                    Some("the record's verdict is not the result's".to_string())
                }
                Ok(r) => super::job::record_mismatch(&job, &r),
                Err(e) => Some(format!("the result's record: {e}")),
            };
        }
        if let Some(p) = problem {
            result = Err(format!("job {} from {}: {p}", meta.job, meta.worker));
        } else {
            service.worker_busy(&meta.worker, a.gpu_seconds);
        }
    }
    service.complete(&meta.job, result);
    service.queued_at(&meta.job)
}

/// How a Redis worker behaves.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    pub streams: Streams,
    /// This consumer's name (unique per process).
    pub name: String,
    pub gpu: usize,
    /// A job idle this long (its worker stopped beating) is taken over.
    pub claim_after: Duration,
    /// Deliveries after which a job is given a harness verdict instead of a run.
    pub max_deliveries: u64,
    /// Stop after this many jobs (for tests; `None`: never).
    pub max_jobs: Option<usize>,
    /// Jobs taken beyond the one on the GPU, checked and compiled while it evaluates.
    pub ahead: usize,
    /// The workers' credential: every result carries a MAC under it.
    pub key: WorkerKey,
}

/// A job taken from the stream: its entry id, the job, and the harness verdict it gets
/// instead of a run when it was delivered too often.
struct Taken {
    entry: String,
    job: JobSpec,
    gave_up: Option<String>,
    started: Instant,
}

/// The jobs a worker holds (taken, not yet acknowledged), shared by the thread that takes
/// them, the heartbeat and the thread that sends results.
#[derive(Default)]
struct Held {
    state: Mutex<HeldState>,
    changed: std::sync::Condvar,
}

#[derive(Default)]
struct HeldState {
    ids: BTreeSet<String>,
    /// A job delivered before is held: nothing else is taken until it is done (see [`work`]).
    alone: Option<String>,
    taken: usize,
    /// The first Redis error; the worker then takes nothing more and returns it.
    failed: Option<RedisError>,
    /// Every job is done (the heartbeat stops).
    over: bool,
}

impl Held {
    fn lock(&self) -> std::sync::MutexGuard<'_, HeldState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn fail(&self, e: RedisError) {
        self.lock().failed.get_or_insert(e);
        self.changed.notify_all();
    }
    fn release(&self, entry: &str) {
        let mut s = self.lock();
        s.ids.remove(entry);
        if s.alone.as_deref() == Some(entry) {
            s.alone = None;
        }
        self.changed.notify_all();
    }
}

/// Lets go of a held job when dropped.
struct Release<'a>(&'a Held, &'a str);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.0.release(self.1);
    }
}

/// Takes jobs and returns results until `max_jobs` (forever by default), through the stages
/// `run` uses ([`crate::engine::stages::staged`]): the jobs after the one on the GPU (up to
/// `ahead` of them) are checked and compiled on CPU threads while it evaluates, and results are
/// sent from a thread behind. Every job held is kept claimed by one heartbeat.
///
/// A job that was delivered before (its worker died holding it) is evaluated alone: it is taken
/// only when nothing else is held, and nothing else is taken while it is held. So when a job
/// kills its worker, the jobs taken beside it are delivered once more at most, and only the
/// job itself reaches `max_deliveries`. While a job waits to be taken over, a busy worker takes
/// no new ones until it has none, so orphaned jobs are never starved by a long queue.
pub fn work(bench: &Bench, o: &WorkerOptions) -> Result<(), RedisError> {
    let held = Held::default();
    let mut take = o.streams.connect()?;
    let send = Mutex::new(o.streams.connect()?);
    let idle = o.claim_after.as_millis().to_string();
    let jobs = o.streams.jobs();
    let next = || -> Option<Taken> {
        loop {
            let empty = {
                let mut s = held.lock();
                while s.failed.is_none() && (s.alone.is_some() || s.ids.len() > o.ahead) {
                    s = held.changed.wait(s).unwrap_or_else(|e| e.into_inner());
                }
                if s.failed.is_some() || o.max_jobs.is_some_and(|m| s.taken >= m) {
                    return None;
                }
                s.ids.is_empty()
            };
            match take_one(&mut take, o, &jobs, &idle, empty, &held) {
                Ok(Some(t)) => return Some(t),
                Ok(None) => {}
                Err(e) => {
                    held.fail(e);
                    return None;
                }
            }
        }
    };
    std::thread::scope(|s| {
        s.spawn(|| heartbeat(o, &held));
        crate::engine::stages::staged(
            std::iter::from_fn(next),
            1,
            bench.evaluator.at_once(),
            // A panic in a stage ends its job with an error result (sent like any other), so
            // the job is answered and let go, never held or delivered again.
            |t: Taken| {
                let ready = bench.prepare_job(t.job.clone());
                (t, ready)
            },
            |_, (t, ready), _| {
                let ran = bench.run_job(&t.job.id, ready, o.gpu, t.gave_up.as_deref());
                (t, ran)
            },
            |(t, ran)| {
                // Let go of the job however this ends (a panic here included).
                let _release = Release(&held, &t.entry);
                let result = bench.store_job(&t.job.id, ran);
                let mut c = send.lock().unwrap_or_else(|e| e.into_inner());
                if let Err(e) = send_result(bench, o, &mut c, &t, result) {
                    // The job stays pending: another worker (or this one, connected again)
                    // takes it over after `claim_after`.
                    held.fail(e);
                }
            },
        );
        held.lock().over = true;
        held.changed.notify_all();
    });
    match held.lock().failed.take() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Takes the next job: when nothing is held, one whose worker died first (then it is held
/// alone), else a new one. `None` when there was none within a second, or the entry was no
/// job (acknowledged and dropped), or a job waits to be taken over and this worker still holds
/// others (it takes it once they are done).
fn take_one(
    c: &mut Connection,
    o: &WorkerOptions,
    jobs: &str,
    idle: &str,
    empty: bool,
    held: &Held,
) -> Result<Option<Taken>, RedisError> {
    let mut next = Vec::new();
    if empty {
        let claimed = c.call(&[
            b"XAUTOCLAIM",
            jobs.as_bytes(),
            WORKERS.as_bytes(),
            o.name.as_bytes(),
            idle.as_bytes(),
            b"0-0",
            b"COUNT",
            b"1",
        ])?;
        next = entries(claimed.items().get(1).unwrap_or(&Reply::Array(None)));
    } else {
        let orphan = c.call(&[
            b"XPENDING",
            jobs.as_bytes(),
            WORKERS.as_bytes(),
            b"IDLE",
            idle.as_bytes(),
            b"-",
            b"+",
            b"1",
        ])?;
        if !orphan.items().is_empty() {
            // Let the held jobs finish, then take it over alone.
            let mut s = held.lock();
            while s.failed.is_none() && !s.ids.is_empty() {
                s = held.changed.wait(s).unwrap_or_else(|e| e.into_inner());
            }
            return Ok(None);
        }
    }
    if next.is_empty() {
        let read = c.call(&[
            b"XREADGROUP",
            b"GROUP",
            WORKERS.as_bytes(),
            o.name.as_bytes(),
            b"COUNT",
            b"1",
            b"BLOCK",
            b"1000",
            b"STREAMS",
            jobs.as_bytes(),
            b">",
        ])?;
        next = read
            .items()
            .iter()
            .flat_map(|s| entries(s.items().get(1).unwrap_or(&Reply::Array(None))))
            .collect();
    }
    let Some(e) = next.into_iter().next() else {
        return Ok(None);
    };
    let job: Option<JobSpec> = match e.get("job").map(serde_json::from_slice) {
        Some(Ok(j)) => Some(j),
        _ => None,
    };
    let mac = e.get("mac").map(String::from_utf8_lossy);
    let job = match (job, mac) {
        (Some(j), Some(mac)) if o.key.verify_job(&j, &mac) => j,
        (j, _) => {
            eprintln!(
                "warning: job entry {} is {}; acknowledged and dropped",
                e.id,
                if j.is_some() {
                    "a job the server did not add (no valid MAC)"
                } else {
                    "not a job"
                }
            );
            c.call(&[
                b"XACK",
                jobs.as_bytes(),
                WORKERS.as_bytes(),
                e.id.as_bytes(),
            ])?;
            return Ok(None);
        }
    };
    let pending = c.call(&[
        b"XPENDING",
        jobs.as_bytes(),
        WORKERS.as_bytes(),
        e.id.as_bytes(),
        e.id.as_bytes(),
        b"1",
    ])?;
    let deliveries = match pending.items().first().map(Reply::items) {
        Some([_, _, _, Reply::Int(n)]) => u64::try_from(*n).unwrap_or(0),
        _ => 1,
    };
    let gave_up = (deliveries > o.max_deliveries).then(|| {
        format!(
            "the job was delivered {deliveries} times and the worker that took it stopped each \
             time before it finished (killed or crashed); it was not run again"
        )
    });
    let mut s = held.lock();
    s.ids.insert(e.id.clone());
    s.taken += 1;
    if deliveries > 1 {
        s.alone = Some(e.id.clone());
    }
    Ok(Some(Taken {
        entry: e.id,
        job,
        gave_up,
        started: Instant::now(),
    }))
}

/// Adds a job's result (with the objects of its record's closure) to the results stream, then
/// acknowledges the job.
fn send_result(
    bench: &Bench,
    o: &WorkerOptions,
    c: &mut Connection,
    t: &Taken,
    result: Result<Answer, String>,
) -> Result<(), RedisError> {
    let mut fields: Vec<(String, Vec<u8>)> = Vec::new();
    if let Ok(a) = &result {
        // The server holds the suite's objects (it checked the suite is the same).
        let objects = reachable(
            &bench.store,
            &[a.record, a.feedback],
            &suite_objects(&bench.objects),
        )
        .map_err(RedisError::Protocol)?;
        // One missing here is missing at the server too, which then fails the job.
        for bytes in objects.into_iter().filter_map(|(_, b)| b) {
            fields.push((format!("o{}", fields.len()), bytes));
        }
    }
    let meta = ResultMeta {
        job: t.job.id.clone(),
        entry: t.entry.clone(),
        worker: o.name.clone(),
        mac: o.key.mac(&t.job, &result),
        result,
    };
    let meta = serde_json::to_vec(&meta).map_err(|e| RedisError::Protocol(e.to_string()))?;
    let results = o.streams.results();
    let mut args: Vec<&[u8]> = vec![b"XADD", results.as_bytes(), b"*", b"meta", &meta];
    for (k, v) in &fields {
        args.push(k.as_bytes());
        args.push(v);
    }
    c.call(&args)?;
    let jobs = o.streams.jobs();
    c.call(&[
        b"XACK",
        jobs.as_bytes(),
        WORKERS.as_bytes(),
        t.entry.as_bytes(),
    ])?;
    eprintln!(
        "job {} done in {:.2} s ({} objects)",
        t.job.id,
        t.started.elapsed().as_secs_f64(),
        fields.len()
    );
    Ok(())
}

/// Keeps every job `held` claimed (their idle time reset every third of `claim_after`), so
/// that no other worker takes over a job that is only slow or waiting its turn here. Returns
/// when the worker is done.
fn heartbeat(o: &WorkerOptions, held: &Held) {
    let every = (o.claim_after / 3).max(Duration::from_millis(100));
    let jobs = o.streams.jobs();
    let mut conn = Connection::to(&o.streams.target).ok();
    // Present from the start, not one beat later.
    let ttl = (every * 3).as_millis().max(1000).to_string();
    let key = o.streams.presence(&o.name);
    let gpu = o.gpu.to_string();
    if let Some(c) = conn.as_mut() {
        let _ = c.call(&[
            b"SET",
            key.as_bytes(),
            gpu.as_bytes(),
            b"PX",
            ttl.as_bytes(),
        ]);
    }
    loop {
        let ids: Vec<String> = {
            let s = held.lock();
            if s.over {
                return;
            }
            let (s, _) = held
                .changed
                .wait_timeout_while(s, every, |s| !s.over)
                .unwrap_or_else(|e| e.into_inner());
            if s.over {
                return;
            }
            s.ids.iter().cloned().collect()
        };
        if conn.is_none() {
            conn = Connection::to(&o.streams.target).ok();
        }
        // This worker's presence, for the server's /healthz: it expires when the beats stop.
        if let Some(c) = conn.as_mut()
            && c.call(&[
                b"SET",
                key.as_bytes(),
                gpu.as_bytes(),
                b"PX",
                ttl.as_bytes(),
            ])
            .is_err()
        {
            conn = None;
        }
        if ids.is_empty() {
            continue;
        }
        if conn.is_none() {
            conn = Connection::to(&o.streams.target).ok();
        }
        let mut args: Vec<&[u8]> = vec![
            b"XCLAIM",
            jobs.as_bytes(),
            WORKERS.as_bytes(),
            o.name.as_bytes(),
            b"0",
        ];
        args.extend(ids.iter().map(|i| i.as_bytes()));
        args.push(b"JUSTID");
        let beat = conn.as_mut().map(|c| c.call(&args));
        if !matches!(beat, Some(Ok(_))) {
            conn = None;
        }
    }
}

/// The digests of the suite's objects (which the server and every worker hold).
fn suite_objects(o: &SuiteObjects) -> BTreeSet<Digest> {
    o.tasks
        .values()
        .map(|(d, _)| *d)
        .chain([o.digest])
        .collect()
}

/// An object reached, with its bytes (`None`: not in the store).
type Found = (Digest, Option<Vec<u8>>);

/// Every object reachable from `roots` but those in `known` (the suite's, which reference
/// nothing else), each with its bytes (`None`: not in `store`).
fn reachable(
    store: &Store,
    roots: &[Digest],
    known: &BTreeSet<Digest>,
) -> Result<Vec<Found>, String> {
    let mut seen: BTreeSet<Digest> = BTreeSet::new();
    let mut todo: Vec<Digest> = roots.to_vec();
    let mut out = Vec::new();
    while let Some(d) = todo.pop() {
        if known.contains(&d) || !seen.insert(d) {
            continue;
        }
        if !store.contains(&d) {
            out.push((d, None));
            continue;
        }
        let bytes = store.get(&d).map_err(|e| format!("{d}: {e}"))?;
        if let Content::Object(o) = classify(&bytes).map_err(|e| format!("{d}: {e}"))? {
            todo.extend(o.references.iter().map(|r| r.digest));
        }
        out.push((d, Some(bytes)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Redis of `PTXBENCH_TEST_REDIS` (`.ci/run` starts one); without it the test is
    /// skipped, unless PTXBENCH_REQUIRE_REDIS=1.
    fn test_redis(test: &str) -> Option<String> {
        let url = std::env::var("PTXBENCH_TEST_REDIS").ok();
        if url.is_none() {
            assert!(
                std::env::var_os("PTXBENCH_REQUIRE_REDIS").is_none_or(|v| v != "1"),
                "Redis required but PTXBENCH_TEST_REDIS is not set"
            );
            eprintln!("SKIP {test}: no PTXBENCH_TEST_REDIS");
        }
        url
    }

    use super::super::job::test_job as job;

    #[test]
    fn a_held_job_is_let_go_even_when_its_last_stage_panics() {
        let held = Held::default();
        {
            let mut s = held.lock();
            s.ids.extend(["a".to_string(), "b".to_string()]);
            s.alone = Some("b".into());
        }
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _release = Release(&held, "b");
            panic!("sending the result failed badly");
        }));
        assert!(out.is_err());
        let s = held.lock();
        assert_eq!(s.ids.iter().collect::<Vec<_>>(), ["a"], "b let go");
        assert_eq!(s.alone, None, "the worker may take jobs again");
    }

    #[test]
    fn a_job_a_dead_worker_left_waits_for_the_held_ones_then_is_taken_alone() {
        let Some(url) = test_redis("a_job_a_dead_worker_left_waits_for_the_held_ones") else {
            return;
        };
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let streams = Streams {
            target: crate::serve::resp::Target::plain(&url),
            prefix: format!("unit-alone-{}-{nanos}", std::process::id()),
        };
        let key = WorkerKey::new("unit-test-worker-secret-0123456789abcdef").expect("key");
        let jobs = streams.jobs();
        let mut c = streams.connect().expect("redis");
        let mut add = |id: &str| -> String {
            let j = job(id);
            let json = serde_json::to_vec(&j).expect("json");
            let mac = key.mac_job(&j);
            match c
                .call(&[
                    b"XADD",
                    jobs.as_bytes(),
                    b"*",
                    b"job",
                    &json,
                    b"mac",
                    mac.as_bytes(),
                ])
                .expect("xadd")
            {
                Reply::Bulk(Some(b)) => String::from_utf8(b).expect("id"),
                other => panic!("{other:?}"),
            }
        };
        let (orphan, new) = (add("orphan"), add("new"));
        // A worker that died read the first job.
        c.call(&[
            b"XREADGROUP",
            b"GROUP",
            WORKERS.as_bytes(),
            b"dead",
            b"COUNT",
            b"1",
            b"STREAMS",
            jobs.as_bytes(),
            b">",
        ])
        .expect("read");
        let o = WorkerOptions {
            streams: streams.clone(),
            name: "live".into(),
            gpu: 0,
            claim_after: Duration::from_millis(200),
            max_deliveries: 3,
            max_jobs: None,
            ahead: 3,
            key: key.clone(),
        };
        let idle = "200";
        std::thread::sleep(Duration::from_millis(300));
        // This worker holds a job: it takes nothing new (the orphan is not starved) and waits
        // until what it holds is done.
        let held = Held::default();
        held.lock().ids.insert("held".into());
        let start = Instant::now();
        let waited = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(300));
                held.release("held");
            });
            take_one(&mut c, &o, &jobs, idle, false, &held).expect("redis")
        });
        assert!(
            waited.is_none(),
            "took a job while one waited to be taken over"
        );
        assert!(
            start.elapsed() >= Duration::from_millis(250),
            "{:?}",
            start.elapsed()
        );
        // Holding nothing, it takes the orphan over, alone (a second delivery: run again).
        let t = take_one(&mut c, &o, &jobs, idle, true, &held)
            .expect("redis")
            .expect("the orphan");
        assert_eq!(
            (t.entry.as_str(), t.job.id.as_str()),
            (orphan.as_str(), "orphan")
        );
        assert_eq!(t.gave_up, None);
        assert_eq!(held.lock().alone.as_deref(), Some(orphan.as_str()));
        // Done (acknowledged): the next job is new, and not alone.
        c.call(&[
            b"XACK",
            jobs.as_bytes(),
            WORKERS.as_bytes(),
            orphan.as_bytes(),
        ])
        .expect("ack");
        held.release(&t.entry);
        assert_eq!(held.lock().alone, None);
        let t = take_one(&mut c, &o, &jobs, idle, true, &held)
            .expect("redis")
            .expect("the new job");
        assert_eq!(t.entry, new);
        assert_eq!(held.lock().alone, None);
        assert_eq!(held.lock().ids.len(), 1);
        let _ = c.call(&[b"DEL", jobs.as_bytes(), streams.results().as_bytes()]);
    }
}
