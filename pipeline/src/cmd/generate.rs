//! `ptxbench generate GEN.yaml`: models write kernels, the engine grades them, the results are
//! fed back for repair turns; and `ptxbench serve-canned DIR` (hidden), the loopback server
//! that replays canned answers for tests and dry runs.
//!
//! Output folder (default `artifacts/generate/<name>`): `journal.json` (what is finished, so a
//! second invocation resumes), `generation.digest` and `run-<arch>.digest` once every trajectory
//! has ended, and with `--no-eval` the candidates (`candidates/…`) and a run list per arch
//! (`eval-<arch>.yaml`) for `ptxbench run` to evaluate later.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use serde::Serialize;

use crate::arch::Arch;
use crate::digest::Digest;
use crate::engine::Verdict;
use crate::generate::chat::ChatClient;
use crate::generate::journal::Journal;
use crate::generate::manifest::GenManifest;
use crate::generate::trajectory::{self, Context, End};
use crate::generate::{TrajectorySpec, canned, work_list};
use crate::record::{RUN_SCHEMA, RunObject};
use crate::store::Store;
use crate::task::Suite;

pub const GENERATION_SCHEMA: &str = "ptxbench.generation/1";

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// The generation manifest (YAML).
    pub manifest: PathBuf,
    /// Do not evaluate: one turn per trajectory, candidates written out for `ptxbench run`.
    #[arg(long)]
    pub no_eval: bool,
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

#[derive(Debug, Args)]
pub struct ServeCannedArgs {
    /// A folder with `turn-<n>.md` answers and an optional `faults.txt`.
    pub dir: PathBuf,
    /// Port on 127.0.0.1 (0: any free port, printed).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
}

/// Lists the runs and trajectories of one generation manifest.
#[derive(Debug, Serialize)]
struct GenerationObject {
    schema: String,
    name: String,
    manifest_digest: Digest,
    no_eval: bool,
    /// One `ptxbench.run` per arch (none with `--no-eval`).
    run_digests: Vec<Digest>,
    /// In work-list order.
    trajectory_digests: Vec<Digest>,
}

pub fn serve_canned(a: ServeCannedArgs) -> anyhow::Result<ExitCode> {
    let server = canned::CannedServer::start(&a.dir, a.port).map_err(anyhow::Error::msg)?;
    println!("serving {} on {}", a.dir.display(), server.url());
    server.wait();
    Ok(ExitCode::SUCCESS)
}

pub fn run(a: GenerateArgs, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let suite_dir = std::path::absolute(super::suite_dir(dir)?)?;
    let suite =
        Suite::load(&suite_dir).with_context(|| format!("loading {}", suite_dir.display()))?;
    let manifest = GenManifest::load(&a.manifest)?;
    let manifest_text = super::read_text(&a.manifest)?;
    let (specs, skipped) = work_list(&manifest, &suite)
        .map_err(|e| anyhow::anyhow!("{}: {e}", a.manifest.display()))?;
    for s in &skipped {
        eprintln!("skipped: {s}");
    }
    let mut clients = Vec::new();
    for (i, m) in manifest.models.iter().enumerate() {
        let key = match &m.api_key_env {
            Some(var) => Some(std::env::var(var).with_context(|| {
                format!(
                    "{}: field `models[{i}].api_key_env`: the environment variable {var} is not set",
                    a.manifest.display()
                )
            })?),
            None => None,
        };
        clients.push(ChatClient::new(
            m.url(),
            key,
            Duration::from_secs(m.timeout_s),
        ));
    }
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("artifacts/generate").join(&manifest.name));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let store_root = match &a.store {
        Some(s) => s.clone(),
        None => Store::discover(&std::env::current_dir()?)
            .context("no artifacts/ store here or above; pass --store")?,
    };
    let store = Store::open(store_root);
    let journal = Journal::load(&out)?;
    let mut limits = manifest.limits.clone();
    limits.max_requests = a.max_requests.or(limits.max_requests);
    limits.max_tokens = a.max_tokens.or(limits.max_tokens);
    let finished_before = specs
        .iter()
        .filter(|s| journal.trajectories.contains_key(&s.key))
        .count();
    eprintln!(
        "{} trajectories ({} models; turn limit {}): {finished_before} already finished; spent so far: {} requests, {} tokens",
        specs.len(),
        manifest.models.len(),
        if a.no_eval { 1 } else { manifest.max_turns() },
        journal.spent.requests,
        journal.spent.tokens
    );
    let ctx = Context {
        store: &store,
        suite: &suite,
        suite_dir: suite_dir.clone(),
        manifest: &manifest,
        out: out.clone(),
        exe: std::env::current_exe().context("locating the ptxbench executable")?,
        no_eval: a.no_eval,
        limits,
        journal: Mutex::new(journal),
        gpus: (0..manifest.eval.gpus).map(|_| Mutex::new(())).collect(),
        capped: AtomicBool::new(false),
    };

    let bar = indicatif::ProgressBar::new(specs.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:30} {pos}/{len} trajectories {elapsed} {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let ends: Mutex<BTreeMap<String, End>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|scope| {
        for (mi, model) in manifest.models.iter().enumerate() {
            let queue: Arc<Mutex<Vec<&TrajectorySpec>>> = Arc::new(Mutex::new(
                specs.iter().filter(|s| s.model == mi).rev().collect(),
            ));
            for _ in 0..model.concurrency {
                let queue = Arc::clone(&queue);
                let (ctx, bar, ends, client) = (&ctx, &bar, &ends, &clients[mi]);
                scope.spawn(move || {
                    loop {
                        let Some(spec) = queue.lock().unwrap_or_else(|e| e.into_inner()).pop()
                        else {
                            break;
                        };
                        let end = trajectory::run(ctx, client, spec);
                        let spent = ctx.journal.lock().unwrap_or_else(|e| e.into_inner()).spent;
                        bar.set_message(format!(
                            "{} requests, {} tokens",
                            spent.requests, spent.tokens
                        ));
                        bar.inc(1);
                        ends.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(spec.key.clone(), end);
                    }
                });
            }
        }
    });
    bar.finish_and_clear();
    let ends = ends.into_inner().unwrap_or_else(|e| e.into_inner());
    let journal = ctx.journal.into_inner().unwrap_or_else(|e| e.into_inner());
    journal.save(&out)?;

    // What happened.
    let mut caps = Vec::new();
    let mut failures = Vec::new();
    let mut stops: BTreeMap<String, usize> = BTreeMap::new();
    for (key, end) in &ends {
        match end {
            End::Finished { stop, .. } => {
                let class = stop.split(':').next().unwrap_or(stop).to_string();
                *stops.entry(class).or_default() += 1;
            }
            End::Capped(why) => caps.push(why.clone()),
            End::Failed(why) => failures.push(format!("{key}: {why}")),
        }
    }
    let mut verdicts: BTreeMap<&str, usize> = BTreeMap::new();
    for t in journal.turns.values() {
        *verdicts.entry(t.verdict.as_str()).or_default() += 1;
    }
    let mut summary = String::new();
    let _ = writeln!(
        summary,
        "spent: {} requests, {} tokens (all invocations on {})",
        journal.spent.requests,
        journal.spent.tokens,
        out.display()
    );
    let _ = writeln!(
        summary,
        "turns recorded: {} ({})",
        journal.turns.len(),
        verdicts
            .iter()
            .map(|(v, n)| format!("{v} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        summary,
        "trajectories ended: {} of {} ({})",
        stops.values().sum::<usize>(),
        specs.len(),
        stops
            .iter()
            .map(|(s, n)| format!("{s} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    print!("{summary}");
    for f in &failures {
        eprintln!("failed (will be retried by the next run): {f}");
    }
    if let Some(why) = caps.first() {
        eprintln!(
            "stopped: {why}; {} trajectories unfinished. Run again (with a higher cap) to resume; finished turns are not requested again.",
            caps.len()
        );
    }
    let complete = specs
        .iter()
        .all(|s| journal.trajectories.contains_key(&s.key));
    if a.no_eval {
        write_candidates(&store, &journal, &specs, &out, &manifest)?;
    }
    if !complete {
        eprintln!(
            "incomplete: run objects are published once every trajectory has ended ({} of {} have)",
            specs
                .iter()
                .filter(|s| journal.trajectories.contains_key(&s.key))
                .count(),
            specs.len()
        );
        return Ok(ExitCode::from(3));
    }

    // Publish: a run object per arch (all turns' records), then the generation object.
    let manifest_digest = store.put(manifest_text.as_bytes())?;
    let mut run_digests = Vec::new();
    if !a.no_eval {
        for &arch in &manifest.archs {
            let mut records: Vec<Digest> = journal
                .turns
                .iter()
                .filter(|(k, _)| {
                    specs
                        .iter()
                        .any(|s| s.arch == arch && k.starts_with(&format!("{}#", s.key)))
                })
                .map(|(_, t)| t.record_digest)
                .collect();
            if records.is_empty() {
                continue;
            }
            records.sort();
            let run = RunObject {
                schema: RUN_SCHEMA.into(),
                name: format!("{}-{arch}", manifest.name),
                arch,
                list_digest: manifest_digest,
                suite_hash: suite.digest(),
                record_digests: records,
            };
            let d = store.put_object(&run)?;
            std::fs::write(out.join(format!("run-{arch}.digest")), format!("{d}\n"))?;
            println!(
                "run object {d} ({} on {arch}; add it to a manifest's `runs:`)",
                run.name
            );
            run_digests.push(d);
        }
    }
    let generation = GenerationObject {
        schema: GENERATION_SCHEMA.into(),
        name: manifest.name.clone(),
        manifest_digest,
        no_eval: a.no_eval,
        run_digests,
        trajectory_digests: specs
            .iter()
            .filter_map(|s| journal.trajectories.get(&s.key).copied())
            .collect(),
    };
    let d = store.put_object(&generation)?;
    std::fs::write(out.join("generation.digest"), format!("{d}\n"))?;
    println!("generation object {d}");
    Ok(ExitCode::SUCCESS)
}

#[derive(Serialize)]
struct RunListOut {
    name: String,
    arch: Arch,
    evaluations: Vec<EvaluationOut>,
}

#[derive(Serialize)]
struct EvaluationOut {
    name: String,
    kernel: String,
    plan: String,
    tasks: Vec<String>,
}

/// With `--no-eval`: each candidate that passed the static check, as files, and a run list per
/// arch that `ptxbench run` evaluates.
fn write_candidates(
    store: &Store,
    journal: &Journal,
    specs: &[TrajectorySpec],
    out: &Path,
    manifest: &GenManifest,
) -> anyhow::Result<()> {
    let mut lists: BTreeMap<Arch, Vec<EvaluationOut>> = BTreeMap::new();
    for s in specs {
        let Some(t) = journal.turns_of(&s.key).first().copied() else {
            continue;
        };
        let record = crate::record::load_record(store, &t.record_digest)?;
        if record.verdict != Verdict::Other || record.outcome.stage != "not-evaluated" {
            continue;
        }
        let (kernel_digest, kernel_name) = match (record.kernel_source_digest, record.ptx_digest) {
            (Some(d), _) => (d, "kernel.cu"),
            (None, Some(d)) => (d, "kernel.ptx"),
            (None, None) => continue,
        };
        let slug: String = s
            .key
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let dir = out.join("candidates").join(&slug);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(dir.join(kernel_name), store.get(&kernel_digest)?)
            .with_context(|| format!("writing {}", dir.display()))?;
        std::fs::write(dir.join("plan.yaml"), store.get(&record.plan_digest)?)
            .with_context(|| format!("writing {}", dir.display()))?;
        lists.entry(s.arch).or_default().push(EvaluationOut {
            name: s.key.clone(),
            kernel: format!("candidates/{slug}/{kernel_name}"),
            plan: format!("candidates/{slug}/plan.yaml"),
            tasks: vec![s.task.clone()],
        });
    }
    for (arch, evaluations) in lists {
        let n = evaluations.len();
        let list = RunListOut {
            name: format!("{}-{arch}", manifest.name),
            arch,
            evaluations,
        };
        let path = out.join(format!("eval-{arch}.yaml"));
        let text = serde_saphyr::to_string(&list).context("writing the run list")?;
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        println!(
            "{n} candidates to evaluate later: ptxbench run {} --out <dir>",
            path.display()
        );
    }
    Ok(())
}
