//! Synthetic records for tests and benchmarks: a store with one run of generated records
//! (entries, tasks of the real suite, trajectories of several turns, every verdict class,
//! timings on the performance workloads, harness tests), and a manifest naming it. Generated
//! from a seed with a fixed generator (splitmix64), so the same options give the same store.
//! Never used for the published leaderboard.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::json;

use crate::digest::Digest;
use crate::store::Store;
use crate::task::{Suite, WorkloadKind};

use super::SiteError;

/// What to generate.
#[derive(Debug, Clone)]
pub struct Options {
    /// Records with role `entry`.
    pub records: usize,
    /// Distinct entries (models) they are spread over.
    pub entries: usize,
    /// Records with role `harness-test`.
    pub harness_tests: usize,
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
            tasks: 4,
            seed: 7,
        }
    }
}

/// A deterministic generator (splitmix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

#[derive(Serialize)]
struct RecordOut<'a> {
    schema: &'static str,
    entry: &'a str,
    role: &'static str,
    model: Option<&'a str>,
    task: &'a str,
    task_hash: Digest,
    suite_hash: Digest,
    arch: &'static str,
    provenance: &'static str,
    kernel_source_digest: Option<Digest>,
    ptx_digest: Option<Digest>,
    plan_digest: Digest,
    cubin_digest: Option<Digest>,
    prompt_digest: Option<Digest>,
    response_digest: Option<Digest>,
    turn: Option<u32>,
    previous_digest: Option<Digest>,
    seed: u64,
    protocol: serde_json::Value,
    workloads_selected: Vec<String>,
    expected: Option<&'static str>,
    verdict: &'static str,
    min_speedup: Option<f64>,
    outcome: serde_json::Value,
}

#[derive(Serialize)]
struct RunOut<'a> {
    schema: &'static str,
    name: &'a str,
    arch: &'static str,
    list_digest: Digest,
    suite_hash: Digest,
    record_digests: Vec<Digest>,
}

fn store_err(what: &str, source: crate::store::StoreError) -> SiteError {
    SiteError::Store {
        what: format!("writing synthetic {what}"),
        source,
    }
}

fn stats(median: f64, rng: &mut Rng) -> serde_json::Value {
    let spread = median * (0.005 + 0.02 * rng.unit());
    json!({
        "n": 40,
        "median_ms": median,
        "p25_ms": median - spread,
        "p75_ms": median + spread,
        "min_ms": median - 2.0 * spread,
        "max_ms": median + 3.0 * spread,
    })
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
) -> Result<Digest, SiteError> {
    let mut rng = Rng::new(opts.seed);
    let suite_hash = suite.digest();
    let task_hashes: Vec<Digest> = suite.tasks.iter().map(|t| t.digest()).collect();
    let task_hash = |id: &str| {
        suite
            .tasks
            .iter()
            .position(|t| t.id.as_str() == id)
            .map(|i| task_hashes[i])
    };
    let tasks: Vec<_> = suite
        .tasks
        .iter()
        .filter(|t| t.targets.iter().any(|x| x.arch == crate::arch::Arch::Sm90a))
        .take(if opts.tasks == 0 {
            usize::MAX
        } else {
            opts.tasks
        })
        .collect();
    if tasks.is_empty() {
        return Err(SiteError::Internal("the suite has no sm_90a task".into()));
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
    let protocol = json!({"trials": 2, "warmup": 5, "iterations": 40, "rotations": 2, "max_timing_seconds": 4.0});
    let verdicts = [
        "correct",
        "numerical",
        "compilation",
        "runtime",
        "timeout",
        "extraction",
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
                        "correct"
                    } else {
                        verdicts[1 + rng.below(verdicts.len() - 1)]
                    };
                    let tag = format!("{entry} {} seed {seed} turn {turn}", task.id);
                    let ptx = (verdict != "extraction")
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
                    if verdict == "correct" || verdict == "numerical" {
                        for w in task.workloads_of(WorkloadKind::Correctness).take(2) {
                            let ok = verdict == "correct";
                            workloads.push(json!({"workload": w.name, "performance": false, "timing": null,
                                "trials": [{"seed": rng.next_u64() >> 1, "guard_bytes_changed": 0, "input_bytes_changed": 0, "passed": ok,
                                    "outputs": task.outputs.iter().map(|o| json!({"output": o.name, "tolerance": "allclose rtol 0.01 atol 0.01",
                                        "comparison": {"elements": 4096, "violations": if ok {0} else {17}, "non_finite": 0, "non_zero": 4096, "reference_non_zero": 4096,
                                            "first_violation": if ok {None} else {Some(3)}, "max_abs_error": if ok {0.01} else {3.5}, "relative_l2": if ok {0.0016} else {0.4}},
                                        "passed": ok, "failure": if ok {None} else {Some("17 elements outside tolerance")}})).collect::<Vec<_>>()}]}));
                        }
                    }
                    if verdict == "correct" {
                        for w in task.workloads_of(WorkloadKind::Performance).take(3) {
                            let flops = task.flops_of(w).unwrap_or(1e12);
                            let base_ms = flops / 6.0e11 / (0.6 + 0.4 * rng.unit());
                            let speedup = (skill[ei] * 1.6 * (0.4 + rng.unit())).max(0.02);
                            let cand_ms = base_ms / speedup;
                            speedups.push(speedup);
                            workloads.push(json!({"workload": w.name, "performance": true,
                                "trials": [],
                                "timing": {"candidate": stats(cand_ms, &mut rng), "baseline": stats(base_ms, &mut rng), "speedup": speedup,
                                    "candidate_tflops": flops / cand_ms / 1e9, "baseline_tflops": flops / base_ms / 1e9, "recheck_passed": true}}));
                        }
                    }
                    let min_speedup = speedups.iter().copied().min_by(f64::total_cmp);
                    // Even entries carry target evidence (spliced counters), odd ones none.
                    let evidence = (ei % 2 == 0 && ptx.is_some()).then(|| {
                        let target = task.target(crate::arch::Arch::Sm90a);
                        let families: Vec<serde_json::Value> = target
                            .map(|t| t.required.as_slice())
                            .unwrap_or_default()
                            .iter()
                            .map(|f| {
                                let roll = rng.unit();
                                let (status, count) = if roll < 0.7 {
                                    ("dynamic_present", Some(1 + rng.below(100_000) as u64))
                                } else if roll < 0.85 {
                                    ("dynamic_not_executed", Some(0))
                                } else {
                                    ("sass_absent", None)
                                };
                                json!({"family": f.family, "sass_patterns": f.sass, "status": status,
                                    "static_count": if status == "sass_absent" {0} else {12},
                                    "static_opcodes": if status == "sass_absent" {vec![]} else {vec![format!("{}.SYNTHETIC", f.sass[0].trim_matches('*'))]},
                                    "dynamic_count": count, "method": count.map(|_| "spliced_counters")})
                            })
                            .collect();
                        json!({"arch": "sm_90a", "status": "dynamic_present", "families": families,
                            "disassembler": "nvdisasm (synthetic)", "notes": ["synthetic evidence"]})
                    });
                    let outcome = json!({
                        "verdict": verdict,
                        "stage": if verdict == "correct" {"done"} else {"correctness"},
                        "message": if verdict == "correct" {String::new()} else {format!("synthetic {verdict} failure <b>not html</b>")},
                        "jit_log": "info    : used 90 registers, 0 bytes lmem",
                        "kernels": [{"entry": "kernel", "attributes": {"registers": 90, "static_shared_bytes": 0, "local_bytes": 0, "max_threads_per_block": 384}}],
                        "workloads": workloads,
                        "device": {"name": "NVIDIA H200", "ordinal": 0, "compute_capability": [9, 0], "sm_count": 132, "l2_bytes": 52428800, "memory_bytes": 150_000_000_000u64, "driver_api_version": 13000, "sm_clock_khz": 1_980_000, "memory_clock_khz": 3_201_000, "driver_library": "libcuda.so.1"},
                        "baseline": {"provider": if task.baseline.library == "cudnn" {"cuDNN"} else {"cuBLASLt"}, "version": "synthetic", "library": task.baseline.library},
                        "harness_compiler": "NVRTC 13.0",
                        "min_speedup": min_speedup,
                        "seconds": [["jit", 0.1], ["correctness", 0.4]],
                        "evidence": evidence,
                    });
                    let rec = RecordOut {
                        schema: "ptxbench.record/1",
                        entry,
                        role: "entry",
                        model: Some(entry),
                        task: task.id.as_str(),
                        task_hash: task_hash(task.id.as_str()).unwrap_or_else(|| task.digest()),
                        suite_hash,
                        arch: "sm_90a",
                        provenance: "measured",
                        kernel_source_digest: None,
                        ptx_digest: ptx,
                        plan_digest: plans[ti],
                        cubin_digest: None,
                        prompt_digest: Some(prompts[ti][(seed % 3) as usize]),
                        response_digest: Some(response),
                        turn: Some(turn),
                        previous_digest: previous,
                        seed,
                        protocol: protocol.clone(),
                        workloads_selected: Vec::new(),
                        expected: None,
                        verdict,
                        min_speedup,
                        outcome,
                    };
                    let digest = store.put_object(&rec).map_err(|e| store_err("record", e))?;
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
            ("numerical", "numerical"),
            ("timeout", "timeout"),
            ("runtime", "runtime"),
            ("numerical", "correct"),
        ][i % 4];
        let ptx = store
            .put(fake_ptx(&format!("harness test {i}"), 8, &mut rng).as_bytes())
            .map_err(|e| store_err("ptx", e))?;
        let rec = RecordOut {
            schema: "ptxbench.record/1",
            entry: "synthetic-known-bad",
            role: "harness-test",
            model: None,
            task: task.id.as_str(),
            task_hash: task_hash(task.id.as_str()).unwrap_or_else(|| task.digest()),
            suite_hash,
            arch: "sm_90a",
            provenance: "measured",
            kernel_source_digest: None,
            ptx_digest: Some(ptx),
            plan_digest: plans[i % tasks.len()],
            cubin_digest: None,
            prompt_digest: None,
            response_digest: None,
            turn: None,
            previous_digest: None,
            seed: 5,
            protocol: protocol.clone(),
            workloads_selected: Vec::new(),
            expected: Some(expected),
            verdict: got,
            min_speedup: None,
            outcome: json!({"verdict": got, "stage": "correctness", "message": format!("synthetic harness test {i}"), "workloads": []}),
        };
        record_digests.push(store.put_object(&rec).map_err(|e| store_err("record", e))?);
    }
    record_digests.sort();
    record_digests.dedup();
    let list = store
        .put(format!("synthetic run list, seed {}\n", opts.seed).as_bytes())
        .map_err(|e| store_err("run list", e))?;
    let run = RunOut {
        schema: "ptxbench.run/1",
        name: "synthetic",
        arch: "sm_90a",
        list_digest: list,
        suite_hash,
        record_digests,
    };
    let run_digest = store.put_object(&run).map_err(|e| store_err("run", e))?;
    write_manifest(manifest_path, suite, &[run_digest], reported, &entries)?;
    Ok(run_digest)
}

/// Writes a manifest naming `runs` (and the reported import, if any).
pub fn write_manifest(
    path: &Path,
    suite: &Suite,
    runs: &[Digest],
    reported: Option<Digest>,
    entries: &[String],
) -> Result<PathBuf, SiteError> {
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
    std::fs::write(path, m).map_err(|source| SiteError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(path.to_path_buf())
}
