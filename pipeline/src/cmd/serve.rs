//! `ptxbench serve`: evaluations over HTTP (see `pipeline/openapi.yaml` and `crate::serve`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::serve::client::TOKEN_ENV;
use crate::serve::redis::{DEFAULT_STREAM, Streams};
use crate::serve::service::Caps;
use crate::serve::{ServeOptions, http, start};

use super::verify::StoreArgs;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address to listen on (anything but loopback needs a token).
    #[arg(long, default_value = "127.0.0.1:8420")]
    pub bind: SocketAddr,
    /// A file holding the bearer token (default: the PTXBENCH_SERVE_TOKEN environment
    /// variable; neither: no token, loopback only).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Send jobs to workers on other hosts through Redis (`redis://[:password@]host[:port][/db]`);
    /// default: worker threads in this process, one per GPU.
    #[arg(long, value_name = "URL")]
    pub queue: Option<String>,
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
    /// HTTP handler threads (each waiting client holds one).
    #[arg(long, default_value_t = 64)]
    pub threads: usize,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// The token from `file`, else from the environment; an empty one is an error.
pub fn read_token(file: Option<&PathBuf>) -> anyhow::Result<Option<String>> {
    let token = match file {
        Some(f) => Some(
            std::fs::read_to_string(f)
                .with_context(|| format!("reading the token file {}", f.display()))?
                .trim()
                .to_string(),
        ),
        None => std::env::var(TOKEN_ENV).ok(),
    };
    match token {
        Some(t) if t.is_empty() => anyhow::bail!("the bearer token is empty"),
        t => Ok(t),
    }
}

pub fn run(a: ServeArgs, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let suite_dir = std::path::absolute(super::suite_dir(dir)?)?;
    let suite = super::load_suite(Some(suite_dir))?;
    let store = a.store.open()?;
    let gpus = a
        .gpus
        .unwrap_or_else(|| crate::cuda::driver::device_count().unwrap_or(0).max(1));
    let opts = ServeOptions {
        bind: a.bind,
        token: read_token(a.token_file.as_ref())?,
        caps: Caps {
            max_body: a.max_body,
            max_batch: a.max_batch,
            max_queue: a.max_queue,
            timeout_s: a.timeout,
        },
        queue: a.queue.map(|url| Streams {
            url,
            prefix: a.stream.clone(),
        }),
        gpus,
        threads: a.threads,
        exe: std::env::current_exe().context("locating the ptxbench executable")?,
    };
    let started = start(store, suite, &opts)?;
    eprintln!(
        "listening on http://{} ({}; {})",
        started.addr,
        match &opts.queue {
            Some(s) => format!("jobs to {} stream {}", s.url, s.prefix),
            None => format!("{gpus} embedded worker(s)"),
        },
        if opts.token.is_some() {
            "bearer token required"
        } else {
            "no token: loopback only"
        }
    );
    http::serve(started.server, started.service, opts.token, opts.threads);
    Ok(ExitCode::SUCCESS)
}
