//! `ptxbench generate GEN.yaml`: models write kernels, the engine grades them, the results are
//! fed back for repair turns (the orchestration is [`crate::generate::generation`]).
//!
//! Output folder (default `artifacts/generate/<name>`): `journal.json` (what is finished, so a
//! second invocation resumes), `generation.digest` and `run-<arch>.digest` once every trajectory
//! has ended, and with `--no-eval` the candidates (`candidates/…`) and a run list per arch
//! (`eval-<arch>.yaml`) for `ptxbench run` to evaluate later. Exit 3: unfinished (a cap, a
//! request that kept failing, or a harness failure); run again to resume.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::generate::generation::{GenerateOptions, Generation, Report};
use crate::store::Store;

/// How to go from an endpoint to a leaderboard row.
const AFTER_HELP: &str = "\
Before any request it checks the CUDA compiler tools (install: `export CUDA_HOME=$(pipeline/scripts/install-cuda-tools.sh)`), a GPU (unless --no-eval) and that every endpoint lists its model at GET <endpoint>/models; a setup that cannot run stops with one message.
Start from manifests/generate-example.yaml (the leaderboard's five core tasks); README.md, \"Evaluate your model\", has every command from a vLLM or SGLang server to your model's row on a local leaderboard (the generation object goes under a manifest's `generations:`).
Exit status 3: unfinished (a spend cap, a request that kept failing, or a harness failure); run the same command again: finished turns are not requested again, and answers the harness failed on are graded again without a request.";

#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct GenerateArgs {
    /// The generation manifest (YAML; start from manifests/generate-example.yaml).
    pub manifest: PathBuf,
    /// Do not evaluate: one turn per trajectory, each answer statically checked and kept (no GPU
    /// needed); the same command without it, on a GPU machine, evaluates them later.
    #[arg(long)]
    pub no_eval: bool,
    /// Evaluate although no GPU is found: every evaluation then is a harness failure (a dry run
    /// of the loop; the answers are graded again by a later run).
    #[arg(long)]
    pub allow_no_gpu: bool,
    /// The output folder (journal, digests); default `artifacts/generate/<name>`.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The artifact store (default: the nearest `artifacts/`).
    #[arg(long)]
    pub store: Option<PathBuf>,
    /// Overrides the manifest's `limits.max_requests` (over every invocation on this folder).
    #[arg(long)]
    pub max_requests: Option<u64>,
    /// Overrides the manifest's `limits.max_tokens`.
    #[arg(long)]
    pub max_tokens: Option<u64>,
}

pub fn run(a: GenerateArgs, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let suite_dir = std::path::absolute(super::suite_dir(dir)?)?;
    let out = match &a.out {
        Some(o) => o.clone(),
        None => {
            let m = crate::generate::manifest::GenManifest::load(&a.manifest)?;
            PathBuf::from("artifacts/generate").join(m.name)
        }
    };
    let store_root = match &a.store {
        Some(s) => s.clone(),
        None => Store::discover(&std::env::current_dir()?)
            .context("no artifacts/ store here or above; pass --store")?,
    };
    let store = Store::open(store_root);
    let swept = store.sweep_temp()?;
    if !swept.is_empty() {
        eprintln!(
            "removed {} temp files that interrupted writes had left in the store",
            swept.len()
        );
    }
    on_interrupt(&out)?;
    let generation = Generation::prepare(GenerateOptions {
        manifest: a.manifest.clone(),
        suite_dir,
        out,
        store,
        exe: std::env::current_exe().context("locating the ptxbench executable")?,
        no_eval: a.no_eval,
        allow_no_gpu: a.allow_no_gpu,
        max_requests: a.max_requests,
        max_tokens: a.max_tokens,
    })?;
    for s in generation.skipped() {
        eprintln!("skipped: {s}");
    }
    for n in generation.notes() {
        eprintln!("note: {n}");
    }
    let o = generation.overview();
    eprintln!(
        "{} trajectories ({} models; turn limit {}; seed {}{}): {} already finished; spent so far: {} requests, {} tokens",
        o.trajectories,
        o.models,
        o.turn_limit,
        o.seed.value,
        if o.seed.drawn { ", drawn" } else { "" },
        o.finished_before,
        o.spent.requests,
        o.spent.tokens
    );
    let bar = indicatif::ProgressBar::new(o.trajectories as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:30} {pos}/{len} trajectories {elapsed} {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let report = generation.run(&|spent| {
        bar.set_message(format!(
            "{} requests, {} tokens",
            spent.requests, spent.tokens
        ));
        bar.inc(1);
    })?;
    bar.finish_and_clear();
    print_report(&report);
    Ok(if report.complete {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    })
}

fn print_report(r: &Report) {
    let list = |m: &std::collections::BTreeMap<String, usize>| {
        m.iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "spent: {} requests, {} tokens (all invocations on {})",
        r.spent.requests,
        r.spent.tokens,
        r.out.display()
    );
    println!("turns recorded: {} ({})", r.turns, list(&r.verdicts));
    println!(
        "trajectories ended: {} of {} ({})",
        r.stops.values().sum::<usize>(),
        r.trajectories,
        list(&r.stops)
    );
    for f in &r.failures {
        eprintln!("failed (will be retried by the next run): {f}");
    }
    for h in &r.harness {
        eprintln!("harness failure (not the model's verdict): {h}");
    }
    if !r.harness.is_empty() {
        eprintln!(
            "{} trajectories stopped on a harness failure; fix what it says and run the same command again: their answers are graded again, without a request",
            r.harness.len()
        );
    }
    if let Some(why) = r.caps.first() {
        eprintln!(
            "stopped: {why}; {} trajectories unfinished. Run again (with a higher cap) to resume; finished turns are not requested again.",
            r.caps.len()
        );
    }
    for c in &r.candidates {
        println!(
            "{} candidates kept unevaluated (also as files: {}); the same command without --no-eval, on a GPU machine with this folder and store, evaluates them in their trajectories",
            c.count,
            c.path.display()
        );
    }
    if !r.complete {
        eprintln!(
            "incomplete: run objects are published once every trajectory has ended ({} of {} have)",
            r.ended, r.trajectories
        );
    }
    if let Some(p) = &r.published {
        for (d, name, arch) in &p.runs {
            println!("run object {d} ({name} on {arch})");
        }
        println!(
            "generation object {} (add it to a manifest's `generations:`; README.md, \"Evaluate your model\")",
            p.generation
        );
    }
}

/// Ctrl-C (or a TERM) ends the run with a word on what is kept and how to go on: every finished
/// turn and every charge is already in the journal, written atomically, so nothing is lost.
fn on_interrupt(out: &std::path::Path) -> anyhow::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .context("installing the Ctrl-C handler")?;
    let out = out.to_path_buf();
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            eprintln!(
                "\ninterrupted ({}): the finished turns and the spend so far are kept in {}; run the same command to go on (no finished turn is asked again)",
                if sig == SIGINT { "Ctrl-C" } else { "SIGTERM" },
                out.display()
            );
            std::process::exit(130);
        }
    });
    Ok(())
}
