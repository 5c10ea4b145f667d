//! `ptxbench run LIST`: evaluate a list of (candidate, task) pairs on every GPU of the host
//! (see `crate::runner`); prints what happened and the run object to name in a manifest.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::runner::pairs::Shard;
use crate::runner::{self, RunOptions};

use super::verify::StoreArgs;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The run list (YAML).
    pub list: PathBuf,
    /// The run folder, for the resumption index (default: <store>/runs/<list name>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Take only the i-th of n equal shares of the pairs (0-based), e.g. `--shard 0/4`.
    #[arg(long)]
    pub shard: Option<Shard>,
    /// GPUs to use (default: all).
    #[arg(long)]
    pub gpus: Option<usize>,
    /// Base seed of every evaluation (default: the list's `seed`, else drawn from the
    /// operating system's entropy when the run starts and kept for its resumption).
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Evaluate nothing: make the run object from the records already made.
    #[arg(long)]
    pub publish_only: bool,
    /// Start each evaluation's worker only when the evaluation comes, and compile in it (no
    /// spare worker, no compiling ahead, no harness shared between workers): the same
    /// protocol without the overlap, to compare.
    #[arg(long)]
    pub cold_workers: bool,
}

pub fn run(a: RunArgs, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let suite_dir = std::path::absolute(super::suite_dir(dir)?)?;
    let suite = super::load_suite(Some(suite_dir))?;
    let store = a.store.open()?;
    let exe = std::env::current_exe().context("locating the ptxbench executable")?;
    let opts = RunOptions {
        list: a.list.clone(),
        out: a.out,
        shard: a.shard,
        gpus: a.gpus,
        seed: a.seed,
        publish_only: a.publish_only,
        cold_workers: a.cold_workers,
    };
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let report = runner::run(&store, &suite, &exe, &opts, &bar)
        .with_context(|| format!("running {}", a.list.display()))?;
    bar.finish_and_clear();
    eprintln!(
        "{}: {} pairs, {} done by an earlier start, seed {} ({:?}); checked after {:.1} s, evaluated after {:.1} s",
        report.name,
        report.pairs,
        report.resumed,
        report.seed,
        report.seed_origin,
        report.check_seconds,
        report.evaluated_after
    );
    for s in &report.skipped {
        eprintln!("  not evaluated (--publish-only): {s}");
    }
    for f in &report.failures {
        eprintln!("error: {f}");
    }
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
    table.set_header([
        "evaluation",
        "task",
        "verdict",
        "expected",
        "min speedup",
        "record",
    ]);
    for r in &report.rows {
        table.add_row([
            r.evaluation.clone(),
            r.task.clone(),
            r.verdict.as_str().to_string(),
            r.expected.map_or("-".into(), |x| x.as_str().to_string()),
            r.min_speedup.map_or("-".into(), |s| format!("{s:.3}")),
            r.record.short(12),
        ]);
    }
    println!("{table}");
    println!(
        "run object {} (add it to a manifest's `runs:` to show it)",
        report.run_digest
    );
    let mismatches = report.mismatches();
    println!(
        "{} records; {mismatches} differ from their expected verdict; index in {}",
        report.rows.len(),
        report.out.display()
    );
    Ok(if mismatches == 0 && report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
