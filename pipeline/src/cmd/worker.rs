//! `ptxbench worker --queue redis://…`: one GPU's worker for a service's Redis queue. (With a
//! folder instead, the internal worker that evaluates one request in this process.)

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;

use crate::serve::job::{WORKER_SECRET_ENV, WorkerKey};
use crate::serve::redis::{DEFAULT_STREAM, Streams, WorkerOptions, work};
use crate::serve::resp::{RedisError, Target};
use crate::store::Store;

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Internal: evaluate the request in this folder (used by `eval`, `run` and `serve`).
    #[arg(
        hide = true,
        conflicts_with = "queue",
        required_unless_present = "queue"
    )]
    pub dir: Option<PathBuf>,
    /// Internal: the token the folder's worker writes before each protocol word.
    #[arg(long, hide = true, requires = "dir", default_value = "")]
    pub token: String,
    /// Internal: how many requests the folder's worker may serve, each in a fresh context.
    #[arg(long, hide = true, requires = "dir", default_value_t = 1)]
    pub evaluations: usize,
    /// The service's Redis (`redis://host[:port][/db]`, or `rediss://…` for TLS; the password
    /// from PTXBENCH_REDIS_PASSWORD or --redis-password-file, the ACL user from
    /// PTXBENCH_REDIS_USER).
    #[arg(long, value_name = "URL")]
    pub queue: Option<String>,
    /// A file holding the Redis password (default: PTXBENCH_REDIS_PASSWORD).
    #[arg(long, value_name = "FILE", requires = "queue")]
    pub redis_password_file: Option<PathBuf>,
    /// A file holding the workers' secret, the server's (default: PTXBENCH_WORKER_SECRET).
    #[arg(long, value_name = "FILE", requires = "queue")]
    pub worker_secret_file: Option<PathBuf>,
    /// Internal: a folder the worker's harness PTX is shared through (read when there, else
    /// compiled and left there for the next worker).
    #[arg(long, hide = true, requires = "dir", value_name = "DIR")]
    pub harness_cache: Option<PathBuf>,
    /// The Redis streams' name prefix (the server's `--stream`).
    #[arg(long, default_value = DEFAULT_STREAM)]
    pub stream: String,
    /// Which GPU (run one worker per GPU; with a folder, the GPU this evaluation runs on).
    #[arg(long, default_value_t = 0)]
    pub gpu: usize,
    /// Where records are made before they go to the server (default: a temporary folder).
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// Seconds a job may go without its worker's heartbeat before another worker takes it.
    #[arg(long, default_value_t = 60)]
    pub claim_after: u64,
    /// Deliveries after which a job gets a harness verdict (`other`) instead of a run.
    #[arg(long, default_value_t = 3)]
    pub max_deliveries: u64,
    /// Stop after this many jobs (default: never).
    #[arg(long)]
    pub max_jobs: Option<usize>,
    /// Jobs taken beyond the one on the GPU, so that ptxas compiles them while it evaluates
    /// (more keeps a fast GPU busy; fewer leaves more of a short queue to other workers).
    #[arg(long, default_value_t = 3)]
    pub ahead: usize,
}

pub fn run(a: WorkerArgs, tasks: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    if let Some(dir) = a.dir {
        crate::engine::worker::serve(
            &dir,
            a.gpu,
            &a.token,
            a.harness_cache.as_deref(),
            a.evaluations,
        )
        .with_context(|| format!("worker in {}", dir.display()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let url = a.queue.context("--queue is required")?;
    let target = Target::new(&url, a.redis_password_file.as_deref())
        .map_err(|e| anyhow::anyhow!("--queue: {e}"))?;
    let key = WorkerKey::from_file_or_env(a.worker_secret_file.as_deref())
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .with_context(|| {
            format!("a worker needs the server's worker secret (--worker-secret-file or {WORKER_SECRET_ENV})")
        })?;
    let suite_dir = std::path::absolute(super::suite_dir(tasks)?)?;
    let suite = super::load_suite(Some(suite_dir))?;
    let scratch;
    let store = match &a.store {
        Some(d) => Store::open(d),
        None => {
            scratch = tempfile::Builder::new()
                .prefix("ptxbench-worker-")
                .tempdir()
                .context("making the worker's store")?;
            Store::open(scratch.path())
        }
    };
    let exe = std::env::current_exe().context("locating the ptxbench executable")?;
    let bench = crate::serve::bench(store, suite, exe)?;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "host".into());
    let streams = Streams {
        target,
        prefix: a.stream,
    };
    streams
        .check_suite(&bench.objects.suite_hash)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let opts = WorkerOptions {
        streams,
        name: format!("{host}-{}-gpu{}", std::process::id(), a.gpu),
        gpu: a.gpu,
        claim_after: Duration::from_secs(a.claim_after.max(1)),
        max_deliveries: a.max_deliveries.max(1),
        max_jobs: a.max_jobs,
        ahead: a.ahead,
        key,
    };
    eprintln!("worker {} taking jobs from {}", opts.name, opts.streams);
    // Redis gone away (a restart, the network): connect again; a job this worker held is
    // taken over by another after --claim-after, or by this one when it is back.
    loop {
        match work(&bench, &opts) {
            Ok(()) => return Ok(ExitCode::SUCCESS),
            Err(e @ (RedisError::Io(_) | RedisError::Protocol(_))) => {
                eprintln!("worker {}: {e}; connecting again in 2 s", opts.name);
                std::thread::sleep(Duration::from_secs(2));
            }
            Err(e) => return Err(e).with_context(|| format!("worker on {}", opts.streams)),
        }
    }
}
