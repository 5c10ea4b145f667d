//! Synthetic records for tests and benchmarks: a store with one run of generated records
//! (entries, tasks of the real suite, trajectories of several turns, every verdict class,
//! timings on the performance workloads, harness tests), and a manifest naming it. Generated
//! from a seed with a fixed generator (splitmix64), so the same options give the same store.
//! Never used for the published leaderboard, and not part of the shipped binary: test binaries
//! and the site benchmark include this file as a module.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use ptxbench::arch::Arch;
use ptxbench::digest::Digest;
use ptxbench::evidence::{DynamicMethod, EvidenceStatus, FamilyEvidence, TargetEvidence};
use ptxbench::record::Stage;
use ptxbench::record::device::{DeviceInfo, KernelAttributes};
use ptxbench::record::task::{SuiteObjects, store_suite};
use ptxbench::record::{
    self, BaselineInfo, Comparison, KernelInfo, Outcome, OutputCheck, Protocol, RECORD_SCHEMA,
    RUN_SCHEMA, Record, Role, RunObject, Stats, StopReason, Timing, Trial, Verdict, WorkloadResult,
};
use ptxbench::store::Store;
use ptxbench::task::{Suite, WorkloadKind};

/// What to generate.
#[derive(Debug, Clone)]
pub struct Options {
    /// Records with role `entry`.
    pub records: usize,
    /// Distinct entries (models) they are spread over.
    pub entries: usize,
    /// Records with role `harness-test`.
    pub harness_tests: usize,
    /// Reference entries (no model: hand-written kernels), each with one correct, timed
    /// record per task.
    pub references: usize,
    /// At most this many tasks of the suite are used (all when 0).
    pub tasks: usize,
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            records: 200,
            entries: 4,
            harness_tests: 3,
            references: 1,
            tasks: 4,
            seed: 7,
        }
    }
}

/// A deterministic generator (splitmix64), the engine's.
pub use ptxbench::engine::estimate::SplitMix as Rng;

fn store_err(what: &str, source: ptxbench::store::StoreError) -> anyhow::Error {
    anyhow::Error::new(source).context(format!("writing synthetic {what}"))
}

fn stats(median: f64, rng: &mut Rng) -> Stats {
    let spread = median * (0.005 + 0.02 * rng.unit());
    Stats {
        n: 40,
        median_ms: median,
        p25_ms: median - spread,
        p75_ms: median + spread,
        min_ms: median - 2.0 * spread,
        max_ms: median + 3.0 * spread,
    }
}

/// A record of the synthetic run: the fields every synthetic record shares.
#[allow(clippy::too_many_arguments)]
fn record(
    suite: &SuiteObjects,
    task: &ptxbench::task::Task,
    entry: &str,
    role: Role,
    plan: Digest,
    seed: u64,
    expected: Option<Verdict>,
    outcome: Outcome,
) -> Record {
    Record {
        schema: RECORD_SCHEMA.into(),
        entry: entry.into(),
        role,
        model: None,
        evaluation: None,
        task: task.id.to_string(),
        task_hash: task.digest(),
        task_digest: suite.task(task.id.as_str()),
        suite_hash: suite.suite_hash,
        suite_digest: Some(suite.digest),
        arch: Arch::Sm90a,
        provenance: "measured".into(),
        kernel_source_digest: None,
        ptx_digest: None,
        plan_digest: plan,
        cubin_digest: None,
        prompt_digest: None,
        response_digest: None,
        turn: None,
        previous_digest: None,
        seed,
        seed_given: false,
        protocol: Protocol::default(),
        workloads_selected: Vec::new(),
        correctness_only: false,
        expected,
        verdict: outcome.verdict,
        min_speedup: outcome.min_speedup,
        outcome,
    }
}

fn device() -> DeviceInfo {
    DeviceInfo {
        name: "NVIDIA H200".into(),
        ordinal: 0,
        compute_capability: (9, 0),
        sm_count: 132,
        l2_bytes: 52_428_800,
        memory_bytes: 150_000_000_000,
        driver_api_version: 13000,
        sm_clock_khz: 1_980_000,
        memory_clock_khz: 3_201_000,
        driver_library: "libcuda.so.1".into(),
        pci_bus_id: String::new(),
    }
}

/// The correctness checks of one output.
fn check(output: &str, ok: bool) -> OutputCheck {
    OutputCheck {
        output: output.into(),
        tolerance: "allclose rtol 0.01 atol 0.01".into(),
        comparison: Comparison {
            elements: 4096,
            violations: if ok { 0 } else { 17 },
            non_finite: 0,
            non_zero: 4096,
            reference_non_zero: 4096,
            first_violation: if ok { None } else { Some(3) },
            max_abs_error: if ok { 0.01 } else { 3.5 },
            relative_l2: if ok { 0.0016 } else { 0.4 },
        },
        passed: ok,
        failure: (!ok).then(|| "17 elements outside tolerance".to_string()),
    }
}

/// A PTX-looking text of about `lines` lines, unique per `tag`.
fn fake_ptx(tag: &str, lines: usize, rng: &mut Rng) -> String {
    let mut s = format!(
        "// Synthetic PTX for {tag} (not a real kernel)\n.version 8.5\n.target sm_90a\n.address_size 64\n\n.visible .entry kernel(\n\t.param .u64 p0,\n\t.param .u64 p1\n)\n{{\n"
    );
    for i in 0..lines {
        let r = rng.next_u64() % 997;
        let _ = match i % 4 {
            0 => writeln!(
                s,
                "\tld.global.v4.u32 {{%r{i}, %r{}, %r{}, %r{}}}, [%rd{r}];",
                i + 1,
                i + 2,
                i + 3
            ),
            1 => writeln!(
                s,
                "\twgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{%f{r}}}, %rd{i}, %rd{};",
                i + 1
            ),
            2 => writeln!(
                s,
                "\tcp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r{r}], [%rd{i}, {{%r1, %r2}}], [%r3];"
            ),
            _ => writeln!(
                s,
                "\tmbarrier.try_wait.parity.shared::cta.b64 %p{i}, [%r{r}], %r{};",
                i % 7
            ),
        };
    }
    s.push_str("\tret;\n}\n");
    s
}

/// Writes the synthetic store into `store` and a manifest at `manifest_path`; returns the
/// run's digest. `reported` (an import object already in the store) is named too, if given.
pub fn generate(
    store: &Store,
    suite: &Suite,
    opts: &Options,
    manifest_path: &Path,
    reported: Option<Digest>,
) -> anyhow::Result<Digest> {
    let mut rng = Rng::new(opts.seed);
    let stored = store_suite(store, suite).context("storing the synthetic suite")?;
    let tasks: Vec<_> = suite
        .tasks
        .iter()
        .filter(|t| t.targets.iter().any(|x| x.arch == Arch::Sm90a))
        .take(if opts.tasks == 0 {
            usize::MAX
        } else {
            opts.tasks
        })
        .collect();
    if tasks.is_empty() {
        anyhow::bail!("the suite has no sm_90a task");
    }
    let entries: Vec<String> = (0..opts.entries.max(1))
        .map(|i| format!("synthetic-model-{i:02}"))
        .collect();
    let skill: Vec<f64> = (0..entries.len()).map(|_| 0.2 + 0.6 * rng.unit()).collect();
    let mut prompts = Vec::new();
    let mut plans = Vec::new();
    for t in &tasks {
        let mut p = Vec::new();
        for v in 1..=3 {
            let mut text = format!(
                "# Synthetic prompt {v} for {}\n\nWrite a kernel for `{}` on sm_90a.\n",
                t.id, t.id
            );
            for i in 0..60 {
                let _ = writeln!(
                    text,
                    "- requirement {i}: use the tensor `{}` as described <exactly> & carefully.",
                    t.inputs[0].name
                );
            }
            p.push(
                store
                    .put(text.as_bytes())
                    .map_err(|e| store_err("prompt", e))?,
            );
        }
        prompts.push(p);
        let plan = format!(
            "launches:\n  - entry: kernel\n    grid: [\"ceil_div(M, 128)\", 1, 1]\n    block: [384, 1, 1]\n    shared_bytes: 0\n    params: [{}]\n",
            t.inputs
                .iter()
                .chain(&t.outputs)
                .map(|x| x.name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        );
        plans.push(
            store
                .put(plan.as_bytes())
                .map_err(|e| store_err("plan", e))?,
        );
    }
    let failures = [
        Verdict::Numerical,
        Verdict::Compilation,
        Verdict::Runtime,
        Verdict::Timeout,
        Verdict::Extraction,
    ];
    let mut record_digests = Vec::with_capacity(opts.records + opts.harness_tests);
    let mut made = 0usize;
    let mut trajectory = 0u64;
    'outer: loop {
        for (ei, entry) in entries.iter().enumerate() {
            for (ti, task) in tasks.iter().enumerate() {
                trajectory += 1;
                let seed = 1_000_000 + trajectory;
                let turns = 1 + rng.below(8) as u32;
                let mut previous = None;
                for turn in 0..turns {
                    if made >= opts.records {
                        break 'outer;
                    }
                    made += 1;
                    let p_correct = (skill[ei] * (0.5 + 0.1 * f64::from(turn))).min(0.95);
                    let verdict = if rng.unit() < p_correct {
                        Verdict::Correct
                    } else {
                        failures[rng.below(failures.len())]
                    };
                    let tag = format!("{entry} {} seed {seed} turn {turn}", task.id);
                    let ptx = (verdict != Verdict::Extraction)
                        .then(|| fake_ptx(&tag, 24, &mut rng))
                        .map(|p| store.put(p.as_bytes()))
                        .transpose()
                        .map_err(|e| store_err("ptx", e))?;
                    let response = format!(
                        "Here is my kernel for {} (turn {turn}).\n\n```ptx\n// see the PTX blob\n```\n\n```yaml\n# plan\n```\n",
                        task.id
                    );
                    let response = store
                        .put(response.as_bytes())
                        .map_err(|e| store_err("response", e))?;
                    let mut workloads = Vec::new();
                    let mut speedups = Vec::new();
                    if matches!(verdict, Verdict::Correct | Verdict::Numerical) {
                        let ok = verdict == Verdict::Correct;
                        for w in task.workloads_of(WorkloadKind::Correctness).take(2) {
                            workloads.push(WorkloadResult {
                                workload: w.name.clone(),
                                performance: false,
                                trials: vec![Trial {
                                    seed: rng.next_u64() >> 1,
                                    outputs: task
                                        .outputs
                                        .iter()
                                        .map(|o| check(&o.name, ok))
                                        .collect(),
                                    guard_bytes_changed: 0,
                                    input_bytes_changed: 0,
                                    passed: ok,
                                    counted: false,
                                }],
                                timing: None,
                            });
                        }
                    }
                    if verdict == Verdict::Correct {
                        for w in task.workloads_of(WorkloadKind::Performance).take(3) {
                            let flops = task.flops_of(w).unwrap_or(1e12);
                            let base_ms = flops / 6.0e11 / (0.6 + 0.4 * rng.unit());
                            let speedup = (skill[ei] * 1.6 * (0.4 + rng.unit())).max(0.02);
                            speedups.push(speedup);
                            workloads.push(WorkloadResult {
                                workload: w.name.clone(),
                                performance: true,
                                trials: Vec::new(),
                                timing: Some(converged(
                                    &mut rng,
                                    flops,
                                    base_ms,
                                    speedup,
                                    vec![1, 7, 12],
                                )),
                            });
                        }
                    }
                    let min_speedup = speedups.iter().copied().min_by(f64::total_cmp);
                    // Even entries carry target evidence (spliced counters), odd ones none.
                    let evidence = (ei % 2 == 0 && ptx.is_some()).then(|| TargetEvidence {
                        arch: Arch::Sm90a,
                        status: EvidenceStatus::DynamicPresent,
                        families: task
                            .target(Arch::Sm90a)
                            .map(|t| t.required.as_slice())
                            .unwrap_or_default()
                            .iter()
                            .map(|f| {
                                let roll = rng.unit();
                                let (status, count) = if roll < 0.7 {
                                    (
                                        EvidenceStatus::DynamicPresent,
                                        Some(1 + rng.below(100_000) as u64),
                                    )
                                } else if roll < 0.85 {
                                    (EvidenceStatus::DynamicNotExecuted, Some(0))
                                } else {
                                    (EvidenceStatus::SassAbsent, None)
                                };
                                let absent = status == EvidenceStatus::SassAbsent;
                                FamilyEvidence {
                                    family: f.family.clone(),
                                    sass_patterns: f.sass.clone(),
                                    status,
                                    static_count: if absent { 0 } else { 12 },
                                    static_opcodes: if absent {
                                        Vec::new()
                                    } else {
                                        vec![format!("{}.SYNTHETIC", f.sass[0].trim_matches('*'))]
                                    },
                                    dynamic_count: count,
                                    method: count.map(|_| DynamicMethod::SplicedCounters),
                                }
                            })
                            .collect(),
                        disassembler: "nvdisasm (synthetic)".into(),
                        notes: vec!["synthetic evidence".into()],
                    });
                    let mut outcome = Outcome::failed(
                        verdict,
                        if verdict == Verdict::Correct {
                            Stage::Done
                        } else {
                            Stage::Correctness
                        },
                        if verdict == Verdict::Correct {
                            String::new()
                        } else {
                            format!("synthetic {} failure <b>not html</b>", verdict.as_str())
                        },
                    );
                    outcome.jit_log = "info    : used 90 registers, 0 bytes lmem".into();
                    outcome.kernels = vec![KernelInfo {
                        entry: "kernel".into(),
                        attributes: KernelAttributes {
                            registers: 90,
                            static_shared_bytes: 0,
                            local_bytes: 0,
                            max_threads_per_block: 384,
                        },
                    }];
                    outcome.workloads = workloads;
                    outcome.device = Some(device());
                    outcome.baseline = Some(BaselineInfo {
                        provider: if task.baseline.library == "cudnn" {
                            "cuDNN"
                        } else {
                            "cuBLASLt"
                        }
                        .into(),
                        version: "synthetic".into(),
                        library: task.baseline.library.clone(),
                        label: None,
                        engine: None,
                    });
                    outcome.harness_compiler = "NVRTC 13.0".into();
                    outcome.min_speedup = min_speedup;
                    outcome.seconds = vec![("jit".into(), 0.1), ("correctness".into(), 0.4)];
                    outcome.evidence = evidence;
                    let mut rec = record(
                        &stored,
                        task,
                        entry,
                        Role::Entry,
                        plans[ti],
                        seed,
                        None,
                        outcome,
                    );
                    rec.model = Some(entry.clone());
                    rec.ptx_digest = ptx;
                    rec.prompt_digest = Some(prompts[ti][(seed % 3) as usize]);
                    rec.response_digest = Some(response);
                    rec.turn = Some(turn);
                    rec.previous_digest = previous;
                    let digest =
                        record::put_record(store, &rec).context("writing a synthetic record")?;
                    record_digests.push(digest);
                    previous = Some(digest);
                }
            }
        }
        if opts.records == 0 {
            break;
        }
    }
    for i in 0..opts.harness_tests {
        let task = tasks[i % tasks.len()];
        let (expected, got) = [
            (Verdict::Numerical, Verdict::Numerical),
            (Verdict::Timeout, Verdict::Timeout),
            (Verdict::Runtime, Verdict::Runtime),
            (Verdict::Numerical, Verdict::Correct),
        ][i % 4];
        let ptx = store
            .put(fake_ptx(&format!("harness test {i}"), 8, &mut rng).as_bytes())
            .map_err(|e| store_err("ptx", e))?;
        let outcome = Outcome::failed(
            got,
            Stage::Correctness,
            format!("synthetic harness test {i}"),
        );
        let mut rec = record(
            &stored,
            task,
            "synthetic-known-bad",
            Role::HarnessTest,
            plans[i % tasks.len()],
            5,
            Some(expected),
            outcome,
        );
        rec.ptx_digest = Some(ptx);
        if i == 0 {
            earlier_definition(store, suite, task, &mut rec)?;
        }
        record_digests.push(record::put_record(store, &rec).context("writing a synthetic record")?);
    }
    for ri in 0..opts.references {
        let entry = format!("synthetic-reference-{ri}");
        for (ti, task) in tasks.iter().enumerate() {
            let mut outcome = Outcome::failed(Verdict::Correct, Stage::Done, String::new());
            let mut speedups = Vec::new();
            for w in task.workloads_of(WorkloadKind::Performance).take(3) {
                let flops = task.flops_of(w).unwrap_or(1e12);
                let base_ms = flops / 6.0e11 / (0.6 + 0.4 * rng.unit());
                let speedup = 0.7 + 0.5 * rng.unit();
                speedups.push(speedup);
                outcome.workloads.push(WorkloadResult {
                    workload: w.name.clone(),
                    performance: true,
                    trials: Vec::new(),
                    timing: Some(converged(&mut rng, flops, base_ms, speedup, vec![2, 5, 9])),
                });
            }
            outcome.device = Some(device());
            outcome.min_speedup = speedups.iter().copied().min_by(f64::total_cmp);
            let ptx = store
                .put(fake_ptx(&format!("{entry} {}", task.id), 24, &mut rng).as_bytes())
                .map_err(|e| store_err("ptx", e))?;
            let mut rec = record(
                &stored,
                task,
                &entry,
                Role::Entry,
                plans[ti],
                9,
                None,
                outcome,
            );
            rec.ptx_digest = Some(ptx);
            record_digests
                .push(record::put_record(store, &rec).context("writing a synthetic record")?);
        }
    }
    record_digests.sort();
    record_digests.dedup();
    let list = store
        .put(format!("synthetic run list, seed {}\n", opts.seed).as_bytes())
        .map_err(|e| store_err("run list", e))?;
    let run = RunObject {
        schema: RUN_SCHEMA.into(),
        name: "synthetic".into(),
        arch: Arch::Sm90a,
        list_digest: list,
        suite_hash: stored.suite_hash,
        record_digests,
    };
    let run_digest = store.put_object(&run).map_err(|e| store_err("run", e))?;
    write_manifest(manifest_path, suite, &[run_digest], reported, &entries)?;
    Ok(run_digest)
}

/// The version of the suite of [`earlier_definition`].
pub const EARLIER_SUITE: &str = "0.9.0";

/// Makes `rec` a record of an earlier definition of `task` (another title), in a suite of its
/// own, [`EARLIER_SUITE`], both stored: what a record measured before a task changed looks like.
fn earlier_definition(
    store: &Store,
    suite: &Suite,
    task: &ptxbench::task::Task,
    rec: &mut Record,
) -> anyhow::Result<()> {
    let mut object = record::TaskObject::from_suite(suite, task)?;
    object.definition = object
        .definition
        .replacen("title: ", "title: (an earlier definition) ", 1);
    let earlier = object.validate()?;
    object.task_hash = earlier.digest();
    let task_digest = store.put_object(&object).context("the earlier task")?;
    let suite = record::SuiteObject {
        schema: record::SUITE_SCHEMA.into(),
        version: EARLIER_SUITE.into(),
        description: "An earlier synthetic suite".into(),
        suite_hash: Digest::of(b"an earlier synthetic suite"),
        task_digests: vec![task_digest],
    };
    rec.task_hash = object.task_hash;
    rec.task_digest = Some(task_digest);
    rec.suite_hash = suite.suite_hash;
    rec.suite_digest = Some(store.put_object(&suite).context("the earlier suite")?);
    Ok(())
}

/// Writes a manifest naming `runs` (and the reported import, if any).
pub fn write_manifest(
    path: &Path,
    suite: &Suite,
    runs: &[Digest],
    reported: Option<Digest>,
    entries: &[String],
) -> anyhow::Result<PathBuf> {
    let mut m = format!(
        "# Synthetic data for tests and benchmarks (ptxbench bench-site); not a leaderboard.\nmanifest: 1\nsuite:\n  version: \"{}\"\n  hash: \"{}\"\nruns:\n",
        suite.version,
        suite.digest()
    );
    for r in runs {
        let _ = writeln!(m, "  - \"{r}\"");
    }
    m.push_str("records: []\nreported:\n");
    if let Some(d) = reported {
        let _ = writeln!(
            m,
            "  - label: \"PTXBench paper (reported)\"\n    import_digest: \"{d}\""
        );
    } else {
        m.truncate(m.len() - "reported:\n".len());
        m.push_str("reported: []\n");
    }
    m.push_str("models:\n");
    for (i, e) in entries.iter().enumerate() {
        let _ = writeln!(
            m,
            "  \"{e}\":\n    display_name: \"{e}\"\n    organisation: \"Synthetic\"\n    release_date: \"2026-{:02}-15\"",
            1 + i % 12
        );
    }
    m.push_str("site:\n  title: \"PTXBench (synthetic)\"\n  base_path: \"/\"\n");
    std::fs::write(path, m).with_context(|| format!("writing {}", path.display()))?;
    Ok(path.to_path_buf())
}

/// One turn of a [`conversation`]: what the model answered, the PTX taken from it, and the
/// feedback it was sent afterwards (`None`: the conversation ends there).
#[derive(Debug, Clone)]
pub struct ChatTurn {
    pub response: String,
    pub ptx: Option<String>,
    pub verdict: Verdict,
    pub feedback: Option<String>,
}

/// A generation trajectory as `generate` stores it: one record per turn, linked by
/// `previous_digest`, each turn's prompt the JSON chat transcript sent (system, task, then every
/// earlier answer and its feedback), in a run named by a manifest at `manifest_path`. With
/// `tamper`, the transcript of the second turn repeats a different answer than the first turn's
/// stored response (what an auditor must be shown). Returns the records in turn order.
pub fn conversation(
    store: &Store,
    suite: &Suite,
    turns: &[ChatTurn],
    tamper: bool,
    manifest_path: &Path,
) -> anyhow::Result<Vec<Digest>> {
    let stored = store_suite(store, suite).context("storing the synthetic suite")?;
    let task = suite
        .tasks
        .iter()
        .find(|t| t.targets.iter().any(|x| x.arch == Arch::Sm90a))
        .context("the suite has no sm_90a task")?;
    let entry = "synthetic-chat-model";
    let plan = store
        .put(b"launches:\n  - entry: kernel\n    grid: [1, 1, 1]\n    block: [128, 1, 1]\n")
        .map_err(|e| store_err("plan", e))?;
    let mut messages = vec![
        serde_json::json!({"role": "system", "content": "You write kernels."}),
        serde_json::json!({"role": "user", "content": format!("Write a kernel for {} <task>.", task.id)}),
    ];
    let mut digests = Vec::new();
    let mut previous = None;
    for (n, t) in turns.iter().enumerate() {
        let prompt = serde_json::to_vec(&messages).context("a transcript")?;
        let mut outcome = Outcome::failed(t.verdict, Stage::Correctness, String::new());
        outcome.device = Some(device());
        let mut rec = record(&stored, task, entry, Role::Entry, plan, 77, None, outcome);
        rec.model = Some(entry.into());
        rec.prompt_digest = Some(store.put(&prompt).map_err(|e| store_err("prompt", e))?);
        rec.response_digest = Some(
            store
                .put(t.response.as_bytes())
                .map_err(|e| store_err("response", e))?,
        );
        rec.ptx_digest = t
            .ptx
            .as_ref()
            .map(|p| store.put(p.as_bytes()))
            .transpose()
            .map_err(|e| store_err("ptx", e))?;
        rec.turn = Some(n as u32);
        rec.previous_digest = previous;
        let d = record::put_record(store, &rec).context("writing a synthetic record")?;
        digests.push(d);
        previous = Some(d);
        let answer = if tamper && n == 0 {
            format!("{} (edited)", t.response)
        } else {
            t.response.clone()
        };
        messages.push(serde_json::json!({"role": "assistant", "content": answer}));
        if let Some(f) = &t.feedback {
            messages.push(serde_json::json!({"role": "user", "content": f}));
        }
    }
    let list = store
        .put(b"synthetic conversation\n")
        .map_err(|e| store_err("run list", e))?;
    let mut record_digests = digests.clone();
    record_digests.sort();
    let run = RunObject {
        schema: RUN_SCHEMA.into(),
        name: "synthetic-conversation".into(),
        arch: Arch::Sm90a,
        list_digest: list,
        suite_hash: stored.suite_hash,
        record_digests,
    };
    let run_digest = store.put_object(&run).map_err(|e| store_err("run", e))?;
    write_manifest(
        manifest_path,
        suite,
        &[run_digest],
        None,
        &[entry.to_string()],
    )?;
    Ok(digests)
}

/// A converged synthetic timing: candidate and library medians drawn around `base_ms` and
/// `base_ms / speedup`, a 1% interval, these launches checked.
fn converged(
    rng: &mut Rng,
    flops: f64,
    base_ms: f64,
    speedup: f64,
    checked_launches: Vec<u32>,
) -> Timing {
    let cand_ms = base_ms / speedup;
    Timing {
        candidate: stats(cand_ms, rng),
        baseline: Some(stats(base_ms, rng)),
        baseline_check: Vec::new(),
        speedup: Some(speedup),
        speedup_ci95: Some([speedup * 0.99, speedup * 1.01]),
        speedup_ci95_within: None,
        between_runs: None,
        stop_reason: Some(StopReason::Converged),
        candidate_tflops: flops / cand_ms / 1e9,
        baseline_tflops: Some(flops / base_ms / 1e9),
        checked_launches,
        recheck_passed: true,
        hardware: None,
        floor: None,
        floor_fraction: None,
        clocks: None,
        state_before: None,
        state_after: None,
    }
}
