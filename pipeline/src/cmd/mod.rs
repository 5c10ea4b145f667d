//! Subcommands, one file each. This is the CLI edge: errors become `anyhow` with context here.
//!
//! What a command prints for its user goes through `out!` and `outln!`, which return an
//! error instead of panicking when standard output cannot be written ([`write_stdout`]).

/// `print!` that returns a `Result` (see [`write_stdout`]) instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cmd::write_stdout(format_args!($($arg)*))
    };
}

/// `println!` that returns a `Result` (see [`write_stdout`]) instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cmd::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

mod audit;
mod baseline;
mod bundle;
mod check;
mod eval;
mod evidence;
mod export;
mod generate;
mod import;
mod prompt;
mod reference;
mod run;
mod serve;
mod show;
mod site;
mod site_cost;
mod tasks;
mod verify;
mod worker;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

use crate::task::Suite;

/// PTXBench: evaluate LLM-written, architecture-specific GPU kernels.
#[derive(Debug, Parser)]
#[command(
    name = "ptxbench",
    version,
    about,
    after_help = "Evaluate your own model (a vLLM, SGLang or hosted OpenAI-compatible endpoint): README.md, \"Evaluate your model\"; start from manifests/generate-example.yaml."
)]
pub struct Cli {
    /// The task-suite folder (default: `tasks/` here or in the nearest parent that has one).
    #[arg(long, global = true, value_name = "DIR")]
    pub tasks: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List, show, validate or import task definitions.
    #[command(subcommand)]
    Tasks(tasks::TasksCommand),
    /// Print the prompt for a task, architecture and variant.
    Prompt(prompt::PromptArgs),
    /// Statically check a candidate (a model response, or a folder with a kernel and a plan).
    Check(check::CheckArgs),
    /// Re-hash the artifact store (or one manifest's closure) and list missing or corrupt objects.
    Verify(verify::VerifyArgs),
    /// Show a stored object by hash or unique prefix (`--raw`: its exact bytes).
    Show(show::ShowArgs),
    /// Write a manifest and its closure to a deterministic zip.
    Bundle(bundle::BundleArgs),
    /// Import a bundle, checking every hash and path before anything lands.
    Import(import::ImportArgs),
    /// Store a folder of published (reported) data byte-for-byte, with an import object.
    ImportReported(import::ImportReportedArgs),
    /// Build the static leaderboard site from a manifest and its store (no GPU needed).
    Site(site::SiteArgs),
    /// Export data of a manifest (the metrics table as Parquet or CSV).
    #[command(subcommand)]
    Export(export::ExportCommand),
    /// Re-run the evaluation a record describes on this GPU and compare with the record.
    Audit(audit::AuditArgs),
    /// Evaluate a candidate on the GPU: correctness, then timing against the library.
    Eval(eval::EvalArgs),
    /// Prove a kernel's target instructions: SASS inventory, and Nsight Compute counts if given.
    Evidence(evidence::EvidenceArgs),
    /// Evaluate a list of (candidate, task) pairs on every GPU; resumable, shardable.
    Run(run::RunArgs),
    /// Prompt a model behind an OpenAI-compatible endpoint (vLLM, SGLang, hosted), evaluate,
    /// feed back; resumable (README: "Evaluate your model").
    Generate(generate::GenerateArgs),
    /// Time the library baseline alone on a task's workloads and check its outputs.
    Baseline(baseline::BaselineArgs),
    /// Run the harness's fp32 reference for one workload and write inputs and outputs.
    Reference(reference::ReferenceArgs),
    /// Measure what the counted copy's counters cost a CTA, for a reference kernel.
    SiteCost(site_cost::SiteCostArgs),
    /// Serve evaluations over HTTP: submit, poll, tasks, health, metrics.
    Serve(serve::ServeArgs),
    /// Take evaluations from a service's Redis queue (one worker per GPU).
    Worker(worker::WorkerArgs),
    /// Internal: compile one candidate's CUDA C++ from stdin (the compiler sandbox's child).
    #[command(hide = true, name = "compile-cuda")]
    CompileCuda,
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    // This executable compiles candidates in the sandbox, whatever its file is called.
    if let Ok(exe) = std::env::current_exe() {
        crate::sandbox::serve_from(exe);
    }
    let tasks_dir = cli.tasks.clone();
    match cli.command {
        Command::Tasks(c) => tasks::run(c, tasks_dir),
        Command::Prompt(a) => prompt::run(a, tasks_dir),
        Command::Check(a) => check::run(a, tasks_dir),
        Command::Verify(a) => verify::run(a, tasks_dir),
        Command::Show(a) => show::run(a),
        Command::Bundle(a) => bundle::run(a),
        Command::Import(a) => import::run(a),
        Command::ImportReported(a) => import::run_reported(a),
        Command::Site(a) => site::run(a, tasks_dir),
        Command::Export(c) => export::run(c, tasks_dir),
        Command::Eval(a) => eval::run(a, tasks_dir),
        Command::Baseline(a) => baseline::run(a, tasks_dir),
        Command::Evidence(a) => evidence::run(a, tasks_dir),
        Command::Audit(a) => audit::run(a),
        Command::Run(a) => run::run(a, tasks_dir),
        Command::Generate(a) => generate::run(a, tasks_dir),
        Command::Reference(a) => reference::run(a, tasks_dir),
        Command::SiteCost(a) => site_cost::run(a, tasks_dir),
        Command::Serve(a) => serve::run(a, tasks_dir),
        Command::Worker(a) => worker::run(a, tasks_dir),
        Command::CompileCuda => {
            crate::sandbox::nvrtc::serve().context("compile-cuda")?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The suite folder: the flag, else `tasks/` in the current folder or the nearest parent.
fn suite_dir(flag: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(d) = flag {
        return Ok(d);
    }
    let cwd = std::env::current_dir().context("reading the current folder")?;
    cwd.ancestors()
        .map(|d| d.join("tasks"))
        .find(|d| d.join("suite.yaml").is_file())
        .with_context(|| {
            format!(
                "no task suite (tasks/suite.yaml) in {} or its parents; pass --tasks DIR",
                cwd.display()
            )
        })
}

/// The task `id` of `suite`, or an error that names it.
fn task<'a>(suite: &'a Suite, id: &str) -> anyhow::Result<&'a crate::task::Task> {
    suite
        .get(id)
        .with_context(|| format!("no task `{id}` in the suite"))
}

fn load_suite(flag: Option<PathBuf>) -> anyhow::Result<Suite> {
    let dir = suite_dir(flag)?;
    Suite::load(&dir).with_context(|| format!("loading the task suite in {}", dir.display()))
}

/// The GPU and the wall-clock limit of a command's harness work, which runs in a worker
/// process ([`crate::engine::harness_work`]).
#[derive(Debug, clap::Args)]
pub struct WorkerFlags {
    #[arg(long, default_value_t = 0)]
    pub gpu: usize,
    /// Wall-clock limit of the worker process that runs it, in seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
}

impl WorkerFlags {
    /// Runs `work` in a worker process; `take` reads its exchange folder (see
    /// [`crate::engine::worker::run_harness`]). `what` names the work in errors.
    fn run<R>(
        &self,
        what: &str,
        work: &crate::engine::harness_work::Work,
        take: impl FnOnce(&Path) -> Result<R, String>,
    ) -> anyhow::Result<(crate::engine::harness_work::HarnessAnswer, R)> {
        let exe = std::env::current_exe().context("locating the ptxbench executable")?;
        let limit = std::time::Duration::from_secs(self.timeout);
        crate::engine::worker::run_harness(&exe, self.gpu, work, limit, take)
            .map_err(|e| anyhow::anyhow!("{what}: {e}"))
    }
}

fn read_text(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// Writes `args` to standard output and flushes it. A closed pipe keeps its `io::Error`
/// (`main` ends the command quietly with status 141); any other failure (a full disk,
/// `> /dev/full`) is one line naming standard output and why, which `main` prints before
/// exiting with status 2.
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(e.into()),
        Err(e) => Err(anyhow::anyhow!("cannot write to standard output: {e}")),
    }
}
