//! `ptxbench run` on the CPU: pairs the static check decides become records the moment they
//! are decided, a re-started run resumes from its index without redoing them, and a seed drawn
//! at the first start is kept for the next.

use ptxbench::record::{self, Verdict};
use ptxbench::runner::seed::SeedOrigin;
use ptxbench::runner::{self, RunOptions};
use ptxbench::store::Store;

/// A run list of one evaluation whose PTX does not parse, on two GEMM tasks.
fn list(dir: &std::path::Path, seed: Option<u64>) -> std::path::PathBuf {
    std::fs::write(dir.join("kernel.ptx"), ".version 8.5\nthis is not PTX\n").expect("write");
    std::fs::write(dir.join("plan.yaml"), "launches: []\n").expect("write");
    let seed = seed.map_or(String::new(), |s| format!("seed: {s}\n"));
    let path = dir.join("broken.yaml");
    std::fs::write(
        &path,
        format!(
            "name: broken\narch: sm_90a\n{seed}evaluations:\n  - {{name: broken, kernel: kernel.ptx, plan: plan.yaml, tasks: [gemm_n4096_k4096, gemm_n128_k2048], role: harness-test, expect: compilation}}\n"
        ),
    )
    .expect("write");
    path
}

/// The options of a plain run of `list`.
fn options(list: std::path::PathBuf) -> RunOptions {
    RunOptions {
        list,
        out: None,
        shard: None,
        gpus: None,
        seed: None,
        publish_only: false,
        cold_workers: false,
    }
}

fn run(store: &Store, opts: &RunOptions) -> runner::RunReport {
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_ptxbench"));
    runner::run(
        store,
        &crate::suite(),
        &exe,
        opts,
        &indicatif::ProgressBar::hidden(),
    )
    .expect("the run is made")
}

#[test]
fn decided_pairs_are_records_at_once_and_a_restart_resumes_with_its_drawn_seed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("artifacts")).without_sync();
    let opts = options(list(dir.path(), None));
    let first = run(&store, &opts);
    assert_eq!((first.pairs, first.resumed, first.rows.len()), (2, 0, 2));
    assert_eq!(first.seed_origin, SeedOrigin::Drawn);
    assert_eq!(first.mismatches(), 0, "{:?}", first.rows);
    for row in &first.rows {
        let r = record::load_record(&store, &row.record).expect("stored");
        assert_eq!((r.verdict, r.seed), (Verdict::Compilation, first.seed));
        assert_eq!(r.evaluation.as_deref(), Some("broken"));
        // The record's closure holds its task definition.
        let task = r.task_digest.expect("a task object");
        assert!(store.contains(&task) && store.contains(&r.suite_digest.expect("suite")));
    }
    assert!(first.out.join("index.json").is_file());

    let again = run(&store, &opts);
    assert_eq!(
        (again.seed, again.seed_origin),
        (first.seed, SeedOrigin::Resumed)
    );
    assert_eq!(again.resumed, 2);
    assert_eq!(again.rows, first.rows);
    assert_eq!(again.run_digest, first.run_digest);

    // A renamed entry keeps the evaluation and relabels its records.
    let text = std::fs::read_to_string(&opts.list).expect("list");
    std::fs::write(
        &opts.list,
        text.replace("role: harness-test", "entry: renamed, role: harness-test"),
    )
    .expect("write");
    let renamed = run(&store, &opts);
    assert_eq!(renamed.resumed, 2);
    for (row, before) in renamed.rows.iter().zip(&first.rows) {
        assert_ne!(row.record, before.record);
        let r = record::load_record(&store, &row.record).expect("stored");
        assert_eq!((r.entry.as_str(), r.seed), ("renamed", first.seed));
    }

    // Another seed is another evaluation.
    let flag = run(
        &store,
        &RunOptions {
            seed: Some(first.seed ^ 1),
            ..opts.clone()
        },
    );
    assert_eq!((flag.seed_origin, flag.resumed), (SeedOrigin::Flag, 0));
    assert_ne!(flag.run_digest, first.run_digest);
}

#[test]
fn a_list_seed_is_used_and_shards_split_the_pairs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("artifacts")).without_sync();
    let opts = RunOptions {
        out: Some(dir.path().join("shard0")),
        shard: Some("0/2".parse().expect("shard")),
        ..options(list(dir.path(), Some(7)))
    };
    let a = run(&store, &opts);
    let b = run(
        &store,
        &RunOptions {
            out: Some(dir.path().join("shard1")),
            shard: Some("1/2".parse().expect("shard")),
            ..opts.clone()
        },
    );
    assert_eq!((a.seed, a.seed_origin), (7, SeedOrigin::List));
    assert_eq!((a.pairs, b.pairs), (1, 1));
    assert_ne!(a.rows[0].task, b.rows[0].task);
}

#[test]
fn a_correctness_only_record_says_so_and_others_keep_their_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("artifacts")).without_sync();
    let timed = list(dir.path(), Some(3));
    let text = std::fs::read_to_string(&timed).expect("read");
    let untimed = dir.path().join("untimed.yaml");
    std::fs::write(
        &untimed,
        text.replace("name: broken\n", "name: untimed\n")
            .replace("role: harness-test", "no_timing: true, role: harness-test"),
    )
    .expect("write");
    for (path, correctness_only) in [(timed, false), (untimed, true)] {
        let report = run(&store, &options(path));
        assert_eq!(report.rows.len(), 2);
        for row in &report.rows {
            let r = record::load_record(&store, &row.record).expect("stored");
            assert_eq!(r.correctness_only, correctness_only, "{}", row.task);
            let json = String::from_utf8(store.get(&row.record).expect("bytes")).expect("utf-8");
            assert_eq!(
                json.contains("correctness_only"),
                correctness_only,
                "{json}"
            );
        }
    }
}

#[test]
fn an_evaluated_record_says_how_long_its_gpu_waited_for_the_cpu() {
    if !crate::cuda_tools("an_evaluated_record_says_how_long_its_gpu_waited_for_the_cpu") {
        return;
    }
    use ptxbench::engine::{COMPILE_AHEAD, GPU_IDLE, HAND_OVER};
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("artifacts")).without_sync();
    let cand = crate::root().join("tasks/candidates/triton_gemm_tma");
    let path = dir.path().join("one.yaml");
    std::fs::write(
        &path,
        format!(
            "name: one\narch: sm_90a\nseed: 5\nevaluations:\n  - {{name: triton, kernel: {}, plan: {}, tasks: [gemm_n4096_k4096], role: harness-test, expect: correct, no_timing: true}}\n",
            cand.join("kernel.ptx").display(),
            cand.join("plan.yaml").display()
        ),
    )
    .expect("write");
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_ptxbench"));
    let report = runner::run(
        &store,
        &crate::suite(),
        &exe,
        &options(path),
        &indicatif::ProgressBar::hidden(),
    );
    if ptxbench::cuda::driver::device_count().is_err() {
        // Without a GPU, `run` evaluates nothing and says why.
        let e = report.expect_err("no GPU, no run").to_string();
        assert!(e.contains("CUDA driver"), "{e}");
        return;
    }
    let report = report.expect("the run is made");
    assert_eq!(report.rows.len(), 1);
    let r = record::load_record(&store, &report.rows[0].record).expect("stored");
    let names: Vec<&str> = r.outcome.seconds.iter().map(|(k, _)| k.as_str()).collect();
    // ptxas ran ahead on a CPU thread, the GPU's thread waited for it (nothing else was
    // queued), and the lane's hand-over closes the clock (on a machine without a GPU the
    // worker answers "no GPU", with the same laps around it).
    assert_eq!(
        &names[..3],
        [COMPILE_AHEAD, GPU_IDLE, "worker start"],
        "{names:?}"
    );
    assert_eq!(names.last(), Some(&HAND_OVER), "{names:?}");
    let (compile, idle) = (r.outcome.seconds[0].1, r.outcome.seconds[1].1);
    assert!(
        idle >= compile * 0.9,
        "the GPU waited for the compile: idle {idle} s, compile {compile} s"
    );
}
