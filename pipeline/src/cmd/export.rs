//! `ptxbench export results MANIFEST --format parquet|csv -o FILE`: the metrics table of a
//! manifest (what the leaderboard shows) as a file, one row per (source, entry, arch, GPU, task,
//! turn limit) and one per (source, entry, arch, GPU, turn limit) over all tasks.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};

use crate::metrics::export::{Format, write_results};
use crate::site::Context;

#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// The leaderboard's metrics table (Parquet or CSV).
    Results(ResultsArgs),
    /// SFT training data from generation runs: verified kernels or repair-conditioned examples.
    Sft(crate::export::sft::SftArgs),
}

#[derive(Debug, Args)]
pub struct ResultsArgs {
    /// The manifest (default: manifests/leaderboard.yaml here or in the nearest parent).
    pub manifest: Option<PathBuf>,
    #[arg(long, value_enum)]
    pub format: Format,
    /// The file to write (replaced atomically).
    #[arg(short, long, value_name = "FILE")]
    pub out: PathBuf,
    /// The store folder (default: the `artifacts/` nearest the manifest).
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
}

pub fn run(c: ExportCommand, tasks_dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    match c {
        ExportCommand::Sft(a) => crate::export::sft::run(a),
        ExportCommand::Results(a) => {
            let manifest = super::site::manifest_path(a.manifest)?;
            let input = super::site::load_input(&manifest, a.store, tasks_dir)?;
            let ctx = Context::new(&input).context("computing the metrics")?;
            write_results(&ctx.metrics, a.format, &a.out)
                .with_context(|| format!("writing {}", a.out.display()))?;
            eprintln!(
                "wrote {} metric rows ({} per task, {} over all tasks) to {}",
                ctx.metrics.tasks.len() + ctx.metrics.overall.len(),
                ctx.metrics.tasks.len(),
                ctx.metrics.overall.len(),
                a.out.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
