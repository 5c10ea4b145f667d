//! `ptxbench serve` and `ptxbench worker --queue`: evaluation as a service.
//!
//! [`http`] is the JSON API (`pipeline/openapi.yaml`); [`service`] holds the jobs, the
//! answers index (identical submissions are answered from the store) and the metrics;
//! [`job`] turns a submission into a job and a job into a record through the one evaluator;
//! jobs go to the [`embedded`] queue (worker threads in the server, one per GPU) or to Redis
//! Streams ([`redis`], over the small client in [`resp`]) for workers on other hosts;
//! [`client`] is what `generate` uses to evaluate through a service.

pub mod client;
pub mod embedded;
pub mod http;
pub mod job;
pub mod redis;
pub mod resp;
pub mod service;
pub mod strict_json;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;

use crate::engine::evaluator::Evaluator;
use crate::record::task::SuiteObjects;
use crate::store::Store;
use crate::task::Suite;

use job::Bench;
use service::{Caps, Service};

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub bind: SocketAddr,
    /// The clients' bearer tokens (one a client); without any the server binds to loopback
    /// only.
    pub auth: http::Auth,
    pub caps: Caps,
    /// Redis Streams for workers on other hosts, and the workers' credential; `None`: the
    /// embedded queue.
    pub queue: Option<(redis::Streams, job::WorkerKey)>,
    /// Embedded worker threads (one per GPU).
    pub gpus: usize,
    /// Threads for blocking work (submissions, reads of the store).
    pub threads: usize,
    /// The `ptxbench` executable of the evaluation workers.
    pub exe: PathBuf,
}

/// A started service: its listening socket and its state.
pub struct Started {
    pub listener: std::net::TcpListener,
    pub service: Arc<Service>,
    pub addr: SocketAddr,
}

impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Started")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// The suite's objects, stored, and the bench the workers evaluate with.
pub fn bench(store: Store, suite: Suite, exe: PathBuf) -> anyhow::Result<Bench> {
    let objects = SuiteObjects::of(&suite).context("the task suite's objects")?;
    objects.put(&store).context("storing the task suite")?;
    Ok(Bench {
        store,
        suite,
        objects,
        evaluator: Evaluator::with_spares(exe),
    })
}

/// Binds, starts the queue and its workers (or the Redis collector); the caller then runs
/// [`http::serve`].
pub fn start(store: Store, suite: Suite, o: &ServeOptions) -> anyhow::Result<Started> {
    if !o.auth.required() && !o.bind.ip().is_loopback() {
        anyhow::bail!(
            "--bind {}: without a token (--token-file or {}) the server listens on loopback only",
            o.bind,
            client::TOKEN_ENV
        );
    }
    let tasks = suite
        .tasks
        .iter()
        .map(|t| (t.id.to_string(), t.digest()))
        .collect();
    let workloads = suite
        .tasks
        .iter()
        .map(|t| {
            (
                t.id.to_string(),
                t.workloads.iter().map(|w| w.name.clone()).collect(),
            )
        })
        .collect();
    let bench = Arc::new(bench(store.clone(), suite, o.exe.clone())?);
    let service = Arc::new(Service::new(
        store,
        bench.objects.clone(),
        o.caps.clone(),
        tasks,
        workloads,
    )?);
    match &o.queue {
        None => {
            let q = Arc::new(embedded::Embedded::default());
            q.start(&service, &bench, o.gpus);
            service.set_alive(
                o.gpus.max(1),
                Some(crate::cuda::driver::device_count().unwrap_or(0)),
            );
            service
                .set_queue(q)
                .map_err(|e| anyhow::anyhow!("queueing the jobs of the last run again: {e}"))?;
        }
        Some((streams, key)) => {
            let q = redis::RedisQueue::new(streams.clone(), key.clone())
                .with_context(|| format!("connecting to {streams}"))?;
            streams
                .announce_suite(&bench.objects.suite_hash)
                .with_context(|| format!("announcing the suite on {streams}"))?;
            service
                .set_queue(Arc::new(q))
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            redis::collect(service.clone(), streams.clone(), key.clone());
        }
    }
    let listener =
        std::net::TcpListener::bind(o.bind).with_context(|| format!("listening on {}", o.bind))?;
    let addr = listener.local_addr().context("the server's address")?;
    Ok(Started {
        listener,
        service,
        addr,
    })
}
