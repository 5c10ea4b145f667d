//! `ptxbench run LIST`: evaluate a list of (candidate, task) pairs on every GPU of the host.
//!
//! The list (YAML) names evaluations: a kernel file, a plan file, and task ids (with `*`
//! wildcards), optionally restricted to some workloads. Each pair's result is written under
//! the output folder as `<key>.json`, where the key hashes everything the result depends on
//! (PTX, plan, task, seed, protocol, arch): an interrupted run resumes without redoing
//! finished pairs, and `--shard i/n` splits the pairs between hosts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::arch::Arch;
use crate::candidate::Candidate;
use crate::check::{self, CheckOptions};
use crate::digest::Digest;
use crate::engine::{Outcome, Protocol, Request, Verdict, worker};
use crate::record::{RECORD_SCHEMA, RUN_SCHEMA, Record, Role, RunObject};
use crate::store::Store;
use crate::task::{Suite, glob_match};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The run list (YAML).
    pub list: PathBuf,
    /// Where results go (default: artifacts/runs/<list name>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Take only the i-th of n equal shares of the pairs (0-based), e.g. `--shard 0/4`.
    #[arg(long)]
    pub shard: Option<String>,
    /// GPUs to use (default: all).
    #[arg(long)]
    pub gpus: Option<usize>,
    /// The artifact store the records go to (default: the nearest `artifacts/`).
    #[arg(long)]
    pub store: Option<PathBuf>,
    /// Evaluate nothing: store the results already in the output folder as records.
    #[arg(long)]
    pub publish_only: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunList {
    name: String,
    arch: Arch,
    #[serde(default = "one")]
    seed: u64,
    #[serde(default)]
    protocol: Option<Protocol>,
    #[serde(default = "default_timeout")]
    timeout_s: u64,
    evaluations: Vec<EvaluationSpec>,
}

fn one() -> u64 {
    1
}
fn default_timeout() -> u64 {
    300
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EvaluationSpec {
    name: String,
    /// Paths relative to the list file.
    kernel: PathBuf,
    plan: PathBuf,
    tasks: Vec<String>,
    #[serde(default)]
    workloads: Vec<String>,
    #[serde(default)]
    no_timing: bool,
    /// What the list's author expects (checked and reported, never used to grade).
    #[serde(default)]
    expect: Option<Verdict>,
    /// Overrides the list's worker time limit.
    #[serde(default)]
    timeout_s: Option<u64>,
    /// `entry` (default) or `harness-test` (known-bad kernels, kept off the leaderboard).
    #[serde(default)]
    role: Role,
    /// The leaderboard entry its records belong to (default: the evaluation's name), so that
    /// several evaluations of one submission (one per task family, say) make one entry.
    #[serde(default)]
    entry: Option<String>,
}

/// One stored result.
#[derive(Debug, Serialize, Deserialize)]
pub struct RunResult {
    pub schema: String,
    pub evaluation: String,
    pub task: String,
    pub task_digest: Digest,
    pub arch: Arch,
    pub ptx_digest: Option<Digest>,
    pub plan_digest: Digest,
    pub cubin_digest: Option<Digest>,
    pub seed: u64,
    pub protocol: Protocol,
    pub workloads: Vec<String>,
    pub expected: Option<Verdict>,
    pub outcome: Outcome,
}

/// Verdict, expected verdict and min speedup of one (evaluation, task) pair.
type SummaryRow = (Verdict, Option<Verdict>, Option<f64>);

/// What a pair's record stores besides the result: CUDA C++ source, PTX made here, plan.
struct PairTexts {
    source: Option<String>,
    ptx: Option<String>,
    plan: String,
    role: Role,
    entry: String,
}

struct Item {
    key: Digest,
    /// What the record stores by digest: the CUDA C++ source (if any), the PTX, the plan.
    source: Option<String>,
    ptx: Option<String>,
    plan: String,
    role: Role,
    entry: String,
    req: Option<Request>,
    timeout: Duration,
    result: RunResult,
}

fn parse_shard(s: &str) -> anyhow::Result<(usize, usize)> {
    let (i, n) = s.split_once('/').context("--shard takes i/n, e.g. 0/4")?;
    let (i, n): (usize, usize) = (i.parse()?, n.parse()?);
    anyhow::ensure!(n > 0 && i < n, "--shard {s}: need 0 <= i < n");
    Ok((i, n))
}

pub fn run(a: RunArgs, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let suite_dir = std::path::absolute(super::suite_dir(dir)?)?;
    let suite =
        Suite::load(&suite_dir).with_context(|| format!("loading {}", suite_dir.display()))?;
    let text = super::read_text(&a.list)?;
    let options = serde_saphyr::options! { strict_booleans: true, duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error };
    let list: RunList = serde_saphyr::from_str_with_options(&text, options)
        .with_context(|| format!("{}: not a valid run list", a.list.display()))?;
    let base = a.list.parent().unwrap_or(Path::new("."));
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("artifacts/runs").join(&list.name));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let protocol = list.protocol.clone().unwrap_or_default();

    // Expand the list into pairs, with the static check done here (CPU).
    let mut items: Vec<Item> = Vec::new();
    for (ei, e) in list.evaluations.iter().enumerate() {
        let kernel = base.join(&e.kernel);
        let plan = base.join(&e.plan);
        let cand = Candidate::from_files(&kernel, &plan)
            .with_context(|| format!("evaluations[{ei}] ({})", e.name))?;
        let tasks: Vec<_> = suite
            .tasks
            .iter()
            .filter(|t| e.tasks.iter().any(|p| glob_match(p, t.id.as_str())))
            .collect();
        anyhow::ensure!(
            !tasks.is_empty(),
            "evaluations[{ei}] ({}): no task matches {:?}",
            e.name,
            e.tasks
        );
        for task in tasks {
            let report = check::check(
                &cand,
                task,
                &CheckOptions {
                    arch: list.arch,
                    compile_for: Vec::new(),
                },
            );
            let ptx_digest = report.ptx_digest;
            let plan_digest = Digest::of(cand.plan.as_bytes());
            let mut key = blake3::Hasher::new();
            for part in [
                ptx_digest.map(|d| d.hex()).unwrap_or_default(),
                plan_digest.hex(),
                task.digest().hex(),
                list.arch.to_string(),
                list.seed.to_string(),
                serde_json::to_string(&protocol)?,
                e.workloads.join(","),
                e.no_timing.to_string(),
            ] {
                key.update(part.as_bytes());
                key.update(b"\0");
            }
            let key = Digest::from_hasher(&key);
            let static_fail = check::static_outcome(&report);
            let counted = match (&static_fail, &report.ptx) {
                (None, Some(ptx)) => crate::evidence::engine::counted_copy(task, list.arch, ptx)
                    .unwrap_or_else(|err| {
                        eprintln!(
                            "warning: {} on {}: no dynamic target evidence: {err}",
                            e.name, task.id
                        );
                        None
                    }),
                _ => None,
            };
            let req = static_fail.is_none().then(|| Request {
                suite_dir: suite_dir.clone(),
                task: task.id.to_string(),
                arch: list.arch,
                ptx: report.ptx.clone().unwrap_or_default(),
                plan: cand.plan.clone(),
                seed: list.seed,
                protocol: protocol.clone(),
                workloads: e.workloads.clone(),
                no_timing: e.no_timing,
                counted: counted.clone(),
                gpu: 0,
            });
            items.push(Item {
                key,
                source: (cand.lang == crate::candidate::KernelLang::Cuda)
                    .then(|| cand.kernel.clone()),
                ptx: report.ptx.clone(),
                plan: cand.plan.clone(),
                role: e.role,
                entry: e.entry.clone().unwrap_or_else(|| e.name.clone()),
                req,
                timeout: Duration::from_secs(e.timeout_s.unwrap_or(list.timeout_s)),
                result: RunResult {
                    schema: "ptxbench.run-result/1".into(),
                    evaluation: e.name.clone(),
                    task: task.id.to_string(),
                    task_digest: task.digest(),
                    arch: list.arch,
                    ptx_digest,
                    plan_digest,
                    cubin_digest: None,
                    seed: list.seed,
                    protocol: protocol.clone(),
                    workloads: e.workloads.clone(),
                    expected: e.expect,
                    outcome: static_fail
                        .unwrap_or_else(|| Outcome::failed(Verdict::Other, "queued", "")),
                },
            });
        }
    }
    // An entry has one record per task: two evaluations of one entry on one task would collide.
    let mut owner: BTreeMap<(&str, &str), &str> = BTreeMap::new();
    for it in &items {
        let (eval, task) = (it.result.evaluation.as_str(), it.result.task.as_str());
        if let Some(other) = owner.insert((it.entry.as_str(), task), eval) {
            anyhow::bail!(
                "{}: evaluations `{other}` and `{eval}` both give entry `{}` a record for task {task}; give one of them its own `entry`",
                a.list.display(),
                it.entry
            );
        }
    }
    if let Some(s) = &a.shard {
        let (i, n) = parse_shard(s)?;
        items = items
            .into_iter()
            .enumerate()
            .filter(|(k, _)| k % n == i)
            .map(|(_, it)| it)
            .collect();
    }
    let total = items.len();
    let keys: std::collections::BTreeSet<String> =
        items.iter().map(|it| format!("{}.json", it.key)).collect();
    let texts: BTreeMap<String, PairTexts> = items
        .iter()
        .map(|it| {
            let t = PairTexts {
                source: it.source.clone(),
                ptx: it.ptx.clone(),
                plan: it.plan.clone(),
                role: it.role,
                entry: it.entry.clone(),
            };
            (format!("{}.json", it.key), t)
        })
        .collect();
    let (done, mut todo): (Vec<Item>, Vec<Item>) = items
        .into_iter()
        .partition(|it| out.join(format!("{}.json", it.key)).is_file());
    if a.publish_only {
        for it in &todo {
            eprintln!(
                "  not evaluated, not published: {} on {}",
                it.result.evaluation, it.result.task
            );
        }
        todo.clear();
    }
    eprintln!(
        "{total} pairs: {} already done, {} to evaluate",
        done.len(),
        todo.len()
    );
    for it in todo.iter().take(5) {
        eprintln!(
            "  to evaluate: {} on {}",
            it.result.evaluation, it.result.task
        );
    }
    let gpus = if todo.iter().any(|it| it.req.is_some()) {
        let n = crate::cuda::driver::device_count().context("counting GPUs")?;
        anyhow::ensure!(n > 0, "no GPU on this machine");
        a.gpus.unwrap_or(n).min(n).max(1)
    } else {
        1
    };
    let exe = std::env::current_exe()?;
    let bar = indicatif::ProgressBar::new(todo.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let queue = Arc::new(Mutex::new(todo));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    std::thread::scope(|scope| {
        for gpu in 0..gpus {
            let queue = Arc::clone(&queue);
            let failures = Arc::clone(&failures);
            let (exe, out, bar, suite) = (&exe, &out, &bar, &suite);
            scope.spawn(move || {
                loop {
                    let Some(mut it) = queue.lock().unwrap_or_else(|e| e.into_inner()).pop() else {
                        break;
                    };
                    bar.set_message(format!("{} on {}", it.result.evaluation, it.result.task));
                    if let Some(mut req) = it.req.take() {
                        req.gpu = gpu;
                        // The PTX that runs is kept beside the result: a record must store
                        // exactly these bytes (another NVRTC may make other PTX from the source).
                        let ptx_file = out.join(format!("{}.ptx", Digest::of(req.ptx.as_bytes())));
                        if let Err(e) = std::fs::write(&ptx_file, &req.ptx) {
                            failures
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(format!("{}: {e}", ptx_file.display()));
                        }
                        let mut outcome = worker::run_isolated(exe, &req, it.timeout);
                        if let Some(task) = suite.get(&it.result.task) {
                            outcome.evidence = crate::evidence::engine::evidence_of(
                                task,
                                it.result.arch,
                                &outcome,
                            );
                        }
                        if let Some(cubin) = &outcome.cubin {
                            let d = Digest::of(cubin);
                            it.result.cubin_digest = Some(d);
                            let _ = std::fs::write(out.join(format!("{d}.cubin")), cubin);
                        }
                        it.result.outcome = outcome;
                    }
                    if let Err(e) = write_result(out, &it) {
                        failures
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(e.to_string());
                    }
                    bar.inc(1);
                }
            });
        }
    });
    bar.finish_and_clear();
    for f in failures.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        eprintln!("error: {f}");
    }
    // Summary of this list's pairs (results of older versions of a candidate may share the
    // folder; they are kept, not shown).
    let mut rows: BTreeMap<(String, String), SummaryRow> = BTreeMap::new();
    for name in &keys {
        let p = out.join(name);
        if let Ok(bytes) = std::fs::read(&p)
            && let Ok(r) = serde_json::from_slice::<RunResult>(&bytes)
        {
            rows.insert(
                (r.evaluation, r.task),
                (r.outcome.verdict, r.expected, r.outcome.min_speedup),
            );
        }
    }
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
    table.set_header(["evaluation", "task", "verdict", "expected", "min speedup"]);
    let mut mismatches = 0;
    for ((e, t), (v, x, s)) in &rows {
        if x.is_some_and(|x| x != *v) {
            mismatches += 1;
        }
        table.add_row([
            e.clone(),
            t.clone(),
            v.as_str().to_string(),
            x.map_or("-".into(), |x| x.as_str().to_string()),
            s.map_or("-".into(), |s| format!("{s:.3}")),
        ]);
    }
    println!("{table}");
    let store_root = match &a.store {
        Some(s) => s.clone(),
        None => Store::discover(&std::env::current_dir()?)
            .context("no artifacts/ store here or above; pass --store")?,
    };
    let store = Store::open(store_root);
    let run_digest = publish(&store, &out, &texts, &list, &text, suite.digest())?;
    println!("run object {run_digest} (add it to a manifest's `runs:` to show it)");
    std::fs::write(out.join("run.digest"), format!("{run_digest}\n"))?;
    println!(
        "{} results in {}; {} differ from their expected verdict",
        rows.len(),
        out.display(),
        mismatches
    );
    Ok(if mismatches == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Stores every result of this list as a record (with its source, PTX, plan and cubin) and the
/// run object listing them. Idempotent: the same results give the same digests.
fn publish(
    store: &Store,
    out: &Path,
    texts: &BTreeMap<String, PairTexts>,
    list: &RunList,
    list_text: &str,
    suite_hash: Digest,
) -> anyhow::Result<Digest> {
    let mut records: Vec<((String, String), Digest)> = Vec::new();
    for (
        name,
        PairTexts {
            source,
            ptx,
            plan,
            role,
            entry,
        },
    ) in texts
    {
        let path = out.join(name);
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let r: RunResult = serde_json::from_slice(&bytes)
            .with_context(|| format!("reading {}", path.display()))?;
        let put_text = |t: &Option<String>| t.as_ref().map(|t| store.put(t.as_bytes())).transpose();
        // The PTX that ran: kept beside the result, or the one made here if it is the same.
        let ptx_digest = match r.ptx_digest {
            None => None,
            Some(d) => {
                let bytes = match std::fs::read(out.join(format!("{d}.ptx"))) {
                    Ok(b) => b,
                    Err(_) => match ptx {
                        Some(p) if Digest::of(p.as_bytes()) == d => p.clone().into_bytes(),
                        _ => anyhow::bail!(
                            "{name}: the PTX {d} that ran is not in {} and this machine's NVRTC makes other PTX; re-run the pair",
                            out.display()
                        ),
                    },
                };
                Some(store.put(&bytes)?)
            }
        };
        let cubin_digest = match r.cubin_digest {
            Some(d) => {
                let cubin = std::fs::read(out.join(format!("{d}.cubin")))
                    .with_context(|| format!("the cubin {d} of {name}"))?;
                Some(store.put(&cubin)?)
            }
            None => None,
        };
        let record = Record {
            schema: RECORD_SCHEMA.into(),
            entry: entry.clone(),
            role: *role,
            model: None,
            task: r.task.clone(),
            task_hash: r.task_digest,
            suite_hash,
            arch: r.arch,
            provenance: "measured".into(),
            kernel_source_digest: put_text(source)?,
            ptx_digest,
            plan_digest: store.put(plan.as_bytes())?,
            cubin_digest,
            prompt_digest: None,
            response_digest: None,
            turn: None,
            previous_digest: None,
            seed: r.seed,
            protocol: r.protocol.clone(),
            workloads_selected: r.workloads.clone(),
            expected: r.expected,
            verdict: r.outcome.verdict,
            min_speedup: r.outcome.min_speedup,
            outcome: r.outcome,
        };
        records.push((
            (record.entry.clone(), record.task.clone()),
            store.put_object(&record)?,
        ));
    }
    records.sort();
    let run = RunObject {
        schema: RUN_SCHEMA.into(),
        name: list.name.clone(),
        arch: list.arch,
        list_digest: store.put(list_text.as_bytes())?,
        suite_hash,
        record_digests: records.into_iter().map(|(_, d)| d).collect(),
    };
    Ok(store.put_object(&run)?)
}

fn write_result(out: &Path, it: &Item) -> anyhow::Result<()> {
    let path = out.join(format!("{}.json", it.key));
    let tmp = out.join(format!("{}.json.tmp", it.key));
    std::fs::write(&tmp, serde_json::to_vec_pretty(&it.result)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}
