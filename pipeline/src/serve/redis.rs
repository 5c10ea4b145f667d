//! The queue past one host: Redis Streams with consumer groups.
//!
//! The server adds each job to `<stream>:jobs`; workers (`ptxbench worker --queue`) read it
//! in the group `workers`. A worker keeps the job claimed while it evaluates (a heartbeat
//! resets its idle time), makes the record in its own store, adds the result (the record and
//! every object of its closure but the suite's) to `<stream>:results`, then acknowledges the
//! job. A job whose worker died goes idle and another worker takes it over (`XAUTOCLAIM`);
//! once a job has been delivered more than `max_deliveries` times, the next worker records a
//! harness verdict without running it, so a job that kills workers ends and never loops. The
//! server reads results in the group `server`, checks and stores the objects, counts the
//! first result of a job only (a job delivered twice may be evaluated twice, but it is
//! recorded once), acknowledges and deletes the result and the job.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::job::{Answer, Bench, JobSpec};
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
    pub url: String,
    pub prefix: String,
}

impl Streams {
    fn jobs(&self) -> String {
        format!("{}:jobs", self.prefix)
    }
    fn results(&self) -> String {
        format!("{}:results", self.prefix)
    }

    /// A connection with both groups made (from the start of the streams, so jobs added
    /// before the first worker came are read).
    pub fn connect(&self) -> Result<Connection, RedisError> {
        let mut c = Connection::open(&self.url)?;
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
    /// The job's submission key (for a server that started again since it queued the job).
    key: Digest,
    /// The job's entry in the jobs stream, deleted once the result is stored.
    entry: String,
    worker: String,
    result: Result<Answer, String>,
}

/// The server's side: adds jobs.
#[derive(Debug)]
pub struct RedisQueue {
    streams: Streams,
    conn: Mutex<Option<Connection>>,
}

impl RedisQueue {
    pub fn new(streams: Streams) -> Result<RedisQueue, RedisError> {
        let conn = streams.connect()?;
        Ok(RedisQueue {
            streams,
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
    fn push_all(&self, jobs: &[JobSpec]) -> Result<(), String> {
        let stream = self.streams.jobs();
        let bodies = jobs
            .iter()
            .map(serde_json::to_vec)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        let commands: Vec<Vec<&[u8]>> = bodies
            .iter()
            .map(|b| vec![&b"XADD"[..], stream.as_bytes(), b"*", b"job", b.as_slice()])
            .collect();
        self.with(|c| c.pipeline(&commands))
            .map(|_| ())
            .map_err(|e| format!("queueing {} jobs: {e}", jobs.len()))
    }
}

/// Starts the thread that stores the workers' results into `service`'s store.
pub fn collect(service: Arc<Service>, streams: Streams) {
    std::thread::spawn(move || {
        // Results read but not acknowledged before a restart first, then new ones.
        let mut from = "0".to_string();
        loop {
            if let Err(e) = collect_some(&service, &streams, &mut from) {
                eprintln!("warning: reading results from redis: {e}; again in 1 s");
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    });
}

fn collect_some(service: &Service, streams: &Streams, from: &mut String) -> Result<(), RedisError> {
    let mut c = streams.connect()?;
    loop {
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
            let job_entry = apply(service, &e);
            let id = e.id.as_bytes();
            c.call(&[b"XACK", streams.results().as_bytes(), SERVER.as_bytes(), id])?;
            c.call(&[b"XDEL", streams.results().as_bytes(), id])?;
            if let Some(j) = job_entry {
                c.call(&[b"XDEL", streams.jobs().as_bytes(), j.as_bytes()])?;
            }
        }
    }
}

/// Stores one result's objects and completes its job; returns the job's stream entry.
fn apply(service: &Service, e: &super::resp::Entry) -> Option<String> {
    let meta: ResultMeta = match e.get("meta").map(serde_json::from_slice) {
        Some(Ok(m)) => m,
        _ => {
            eprintln!("warning: result {} has no readable `meta`; dropped", e.id);
            return None;
        }
    };
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
        if let Some(p) = problem {
            result = Err(format!("job {} from {}: {p}", meta.job, meta.worker));
        } else {
            service.worker_busy(&meta.worker, a.gpu_seconds);
        }
    }
    if !service.complete(&meta.job, result.clone())
        && let Ok(a) = result
    {
        service.adopt(meta.key, a);
    }
    Some(meta.entry)
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
}

/// Takes jobs and returns results until `max_jobs` (forever by default).
pub fn work(bench: &Bench, o: &WorkerOptions) -> Result<(), RedisError> {
    let mut c = o.streams.connect()?;
    let idle = o.claim_after.as_millis().to_string();
    let jobs = o.streams.jobs();
    let mut done = 0usize;
    while o.max_jobs.is_none_or(|m| done < m) {
        // A job whose worker died first, then a new one.
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
        let mut next = entries(claimed.items().get(1).unwrap_or(&Reply::Array(None)));
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
        for e in next {
            one(bench, o, &mut c, &e)?;
            done += 1;
        }
    }
    Ok(())
}

fn one(
    bench: &Bench,
    o: &WorkerOptions,
    c: &mut Connection,
    e: &super::resp::Entry,
) -> Result<(), RedisError> {
    let jobs = o.streams.jobs();
    let ack = |c: &mut Connection| {
        c.call(&[
            b"XACK",
            jobs.as_bytes(),
            WORKERS.as_bytes(),
            e.id.as_bytes(),
        ])
    };
    let job: JobSpec = match e.get("job").map(serde_json::from_slice) {
        Some(Ok(j)) => j,
        _ => {
            eprintln!(
                "warning: job entry {} is not a job; acknowledged and dropped",
                e.id
            );
            ack(c)?;
            return Ok(());
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
    let started = Instant::now();
    let result = heartbeat(o, &e.id, || bench.evaluate(&job, o.gpu, gave_up.as_deref()));
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
        job: job.id.clone(),
        key: job.key,
        entry: e.id.clone(),
        worker: o.name.clone(),
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
    ack(c)?;
    eprintln!(
        "job {} done in {:.2} s ({} objects)",
        job.id,
        started.elapsed().as_secs_f64(),
        fields.len()
    );
    Ok(())
}

/// Runs `f` while a thread keeps job `id` claimed (its idle time reset every third of
/// `claim_after`), so that no other worker takes over a job that is only slow.
fn heartbeat<T>(o: &WorkerOptions, id: &str, f: impl FnOnce() -> T) -> T {
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(move || {
            let every = (o.claim_after / 3).max(Duration::from_millis(100));
            let mut conn = None;
            // Ends as soon as the evaluation does (the sender is dropped).
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every)
            {
                if conn.is_none() {
                    conn = Connection::open(&o.streams.url).ok();
                }
                let beat = conn.as_mut().map(|c| {
                    c.call(&[
                        b"XCLAIM",
                        o.streams.jobs().as_bytes(),
                        WORKERS.as_bytes(),
                        o.name.as_bytes(),
                        b"0",
                        id.as_bytes(),
                        b"JUSTID",
                    ])
                });
                if !matches!(beat, Some(Ok(_))) {
                    conn = None;
                }
            }
        });
        let out = f();
        drop(stop);
        out
    })
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
