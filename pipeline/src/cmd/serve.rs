//! `ptxbench serve`: evaluations over HTTP (see `pipeline/openapi.yaml` and `crate::serve`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::serve::client::TOKEN_ENV;
use crate::serve::http::Auth;
use crate::serve::job::{WORKER_SECRET_ENV, WorkerKey};
use crate::serve::redis::{DEFAULT_STREAM, Streams};
use crate::serve::resp::Target;
use crate::serve::service::Caps;
use crate::serve::{ServeOptions, http, start};

use super::verify::StoreArgs;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address to listen on (anything but loopback needs a token).
    #[arg(long, default_value = "127.0.0.1:8420")]
    pub bind: SocketAddr,
    /// A file holding the clients' bearer tokens, one a line, each a client that sees only its
    /// own jobs (default: the PTXBENCH_SERVE_TOKEN environment variable; neither: no token,
    /// loopback only). A token has at least 16 characters.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Send jobs to workers on other hosts through Redis (`redis://host[:port][/db]`, or
    /// `rediss://…` for TLS; the password comes from PTXBENCH_REDIS_PASSWORD or
    /// --redis-password-file, the ACL user from PTXBENCH_REDIS_USER); default: worker threads
    /// in this process, one per GPU.
    #[arg(long, value_name = "URL")]
    pub queue: Option<String>,
    /// A file holding the Redis password (default: PTXBENCH_REDIS_PASSWORD).
    #[arg(long, value_name = "FILE", requires = "queue")]
    pub redis_password_file: Option<PathBuf>,
    /// A file holding the workers' secret, which binds their results to their jobs (default:
    /// PTXBENCH_WORKER_SECRET); required with --queue. Not the clients' token.
    #[arg(long, value_name = "FILE", requires = "queue")]
    pub worker_secret_file: Option<PathBuf>,
    /// The Redis streams' name prefix (`<stream>:jobs`, `<stream>:results`).
    #[arg(long, default_value = DEFAULT_STREAM)]
    pub stream: String,
    /// Embedded worker threads (default: one per GPU, one if there is none).
    #[arg(long)]
    pub gpus: Option<usize>,
    /// The largest request body, bytes (over it: 413).
    #[arg(long, default_value_t = 4 << 20)]
    pub max_body: usize,
    /// The most submissions in one batch (over it: 413).
    #[arg(long, default_value_t = 1000)]
    pub max_batch: usize,
    /// The most jobs queued or running (over it: 429 with Retry-After).
    #[arg(long, default_value_t = 20_000)]
    pub max_queue: usize,
    /// Wall-clock limit of one evaluation's worker, seconds.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Threads for blocking work (submissions pushed to Redis, records read from the store);
    /// waiting clients hold none.
    #[arg(long, default_value_t = 64)]
    pub threads: usize,
    /// Connections served at once (more wait in the kernel's queue).
    #[arg(long, default_value_t = 1024)]
    pub max_connections: usize,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// The clients' tokens from `file` (one a line; blank lines skipped), else the one in the
/// environment; none is no token (loopback only).
pub fn read_tokens(file: Option<&PathBuf>) -> anyhow::Result<Vec<String>> {
    let tokens: Vec<String> = match file {
        Some(f) => std::fs::read_to_string(f)
            .with_context(|| format!("reading the token file {}", f.display()))?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect(),
        None => std::env::var(TOKEN_ENV).ok().into_iter().collect(),
    };
    if file.is_some() && tokens.is_empty() {
        anyhow::bail!("the token file holds no token");
    }
    for t in &tokens {
        crate::secrets::register(t);
    }
    Ok(tokens)
}

pub fn run(a: ServeArgs, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let suite_dir = std::path::absolute(super::suite_dir(dir)?)?;
    let suite = super::load_suite(Some(suite_dir))?;
    let store = a.store.open()?;
    let gpus = a
        .gpus
        .unwrap_or_else(|| crate::cuda::driver::device_count().unwrap_or(0).max(1));
    let tokens = read_tokens(a.token_file.as_ref())?;
    let auth = Auth::new(&tokens).map_err(|e| anyhow::anyhow!("the bearer tokens: {e}"))?;
    let queue = match &a.queue {
        None => None,
        Some(url) => {
            let target = Target::new(url, a.redis_password_file.as_deref())
                .map_err(|e| anyhow::anyhow!("--queue: {e}"))?;
            let key = WorkerKey::from_file_or_env(a.worker_secret_file.as_deref())
                .map_err(|e| anyhow::anyhow!("{e}"))?
                .with_context(|| {
                    format!(
                        "--queue needs the workers' secret (--worker-secret-file or {WORKER_SECRET_ENV}): \
                         without it anyone who can write to Redis could answer jobs"
                    )
                })?;
            Some((
                Streams {
                    target,
                    prefix: a.stream.clone(),
                },
                key,
            ))
        }
    };
    let opts = ServeOptions {
        bind: a.bind,
        auth,
        caps: Caps {
            max_body: a.max_body,
            max_batch: a.max_batch,
            max_queue: a.max_queue,
            timeout_s: a.timeout,
        },
        queue,
        gpus,
        threads: a.threads,
        exe: std::env::current_exe().context("locating the ptxbench executable")?,
    };
    let started = start(store, suite, &opts)?;
    eprintln!(
        "listening on http://{} ({}; {})",
        started.addr,
        match &opts.queue {
            Some((s, _)) => format!("jobs to {s}"),
            None => format!("{gpus} embedded worker(s)"),
        },
        if opts.auth.required() {
            "bearer token required"
        } else {
            "no token: loopback only"
        }
    );
    if started.service.health()["status"] == "no_gpu" {
        eprintln!(
            "warning: this machine has no GPU: every evaluation ends as a harness failure (state \
             `harness_failure`, no reward); /healthz says `no_gpu`. Serve on a GPU machine, or \
             start `ptxbench worker --queue` on GPU hosts."
        );
    }
    let limits = http::Limits {
        max_connections: a.max_connections,
        ..http::Limits::default()
    };
    http::serve(
        started.listener,
        started.service,
        opts.auth,
        limits,
        opts.threads,
    )
    .context("serving")?;
    Ok(ExitCode::SUCCESS)
}
