//! `ptxbench verify [MANIFEST]`: re-hash the whole store, or one manifest's closure, and list
//! every missing, corrupt or malformed object with what refers to it, and every record, run,
//! task or suite object that does not decode (through `crate::record`, older versions by their
//! adapter). Exit 1 if any.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context as _;
use clap::Args;

use crate::manifest::Manifest;
use crate::record;
use crate::store::Store;
use crate::store::closure;
use crate::store::verify::verify_store;

/// Where the store is (shared by the store subcommands).
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// The store folder (default: `artifacts/` here or in the nearest parent that has one).
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
}

impl StoreArgs {
    /// The store: the flag, else the nearest `artifacts/` folder.
    pub fn open(&self) -> anyhow::Result<Store> {
        if let Some(d) = &self.store {
            return Ok(Store::open(d));
        }
        let cwd = std::env::current_dir().context("reading the current folder")?;
        Store::discover(&cwd).map(Store::open).with_context(|| {
            format!(
                "no artifacts/ folder in {} or its parents; pass --store DIR",
                cwd.display()
            )
        })
    }
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// A manifest: verify only its closure (default: every object in the store).
    pub manifest: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Hashing threads for a whole-store verify (default: the number of cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Remove the temp files that interrupted writes left in the store (never the file of a
    /// write in progress).
    #[arg(long)]
    pub sweep: bool,
}

pub fn run(a: VerifyArgs, tasks_dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let store = a.store.open()?;
    if a.sweep {
        for p in store.sweep_temp()? {
            eprintln!("removed leftover temp file {}", p.display());
        }
    }
    for t in store.leftover_temp()? {
        if t.stale {
            eprintln!(
                "warning: leftover temp file of an interrupted write: {} (`ptxbench verify --sweep` removes it)",
                t.path.display()
            );
        } else {
            eprintln!(
                "note: temp file of a write in progress: {}",
                t.path.display()
            );
        }
    }
    let start = Instant::now();
    let undecoded;
    let (problems, summary) = match &a.manifest {
        Some(path) => {
            let manifest = Manifest::load(path)?;
            if let Ok(suite) = super::load_suite(tasks_dir)
                && (suite.version != manifest.suite.version
                    || suite.digest() != manifest.suite.hash)
            {
                eprintln!(
                    "warning: {} names suite {} {}, but the task suite here is {} {}",
                    path.display(),
                    manifest.suite.version,
                    manifest.suite.hash,
                    suite.version,
                    suite.digest()
                );
            }
            let c = closure::closure(&store, &manifest.roots(path));
            undecoded = record::undecodable(&store, c.objects.iter().copied());
            let summary = format!(
                "{} objects ({} bytes) in the closure of {}",
                c.objects.len(),
                c.bytes,
                path.display()
            );
            (c.problems, summary)
        }
        None => {
            let threads = a
                .threads
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            let r = verify_store(&store, threads)?;
            undecoded = record::undecodable(&store, store.list()?);
            for s in &r.strays {
                eprintln!("warning: stray file in the store: {}", s.display());
            }
            let secs = start.elapsed().as_secs_f64();
            let summary = format!(
                "{} objects ({} typed), {} bytes in {} in {secs:.2} s ({:.2} GB/s)",
                r.objects,
                r.typed,
                r.bytes,
                store.root().display(),
                r.bytes as f64 / secs.max(1e-9) / 1e9
            );
            (r.problems, summary)
        }
    };
    let mut out = String::new();
    for p in &problems {
        out.push_str(&format!("{p}\n"));
    }
    for (d, e) in &undecoded {
        out.push_str(&format!("undecodable {d}: {e}\n"));
    }
    let code = if problems.is_empty() && undecoded.is_empty() {
        out.push_str(&format!("ok: {summary}\n"));
        ExitCode::SUCCESS
    } else {
        out.push_str(&format!(
            "FAILED: {} problem objects, {} that this ptxbench cannot read; {summary}\n",
            problems.len(),
            undecoded.len()
        ));
        ExitCode::from(1)
    };
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("writing to stdout"),
        _ => Ok(code),
    }
}
