//! Issue 45: the one evaluator's CPU part, as every command calls it.

use ptxbench::arch::Arch;
use ptxbench::candidate::Candidate;
use ptxbench::engine::evaluator::{Evaluator, Job, Prepared, Work};
use ptxbench::engine::{Protocol, Verdict};
use ptxbench::record::TaskObject;

use crate::{root, suite};

fn job() -> Job {
    Job {
        arch: Arch::Sm90a,
        seed: 7,
        protocol: Protocol::default(),
        workloads: vec!["M129".into()],
        no_timing: true,
    }
}

#[test]
fn issue_45_a_checked_candidate_gets_a_request_with_its_counted_copy() {
    let suite = suite();
    let task = suite.get("gemm_n4096_k4096").expect("task");
    let object = TaskObject::from_suite(&suite, task).expect("object");
    let dir = root().join("tasks/candidates/triton_gemm_tma");
    let cand = Candidate::from_files(&dir.join("kernel.ptx"), &dir.join("plan.yaml")).expect("c");
    let Prepared { report, work } = Evaluator::prepare(Ok(&cand), task, &object, &job());
    assert!(report.ok(), "{:?}", report.failure);
    let Work::Evaluate(req) = work else {
        panic!("a checked candidate is evaluated")
    };
    assert_eq!((req.seed, req.no_timing), (7, true));
    assert_eq!(req.workloads, ["M129"]);
    assert_eq!(Some(&req.ptx), report.ptx.as_ref());
    let counted = req
        .counted
        .as_ref()
        .expect("a counted copy for a wgmma task");
    assert!(
        counted.families.iter().any(|f| f == "wgmma"),
        "{:?}",
        counted.families
    );
    assert!(
        counted.work.is_some(),
        "the other arithmetic is counted too"
    );
    assert_eq!(req.no_counted_copy, None);
}

#[test]
fn issue_45_a_candidate_the_static_check_fails_is_decided_on_the_cpu() {
    let suite = suite();
    let task = suite.get("gemm_n4096_k4096").expect("task");
    let object = TaskObject::from_suite(&suite, task).expect("object");
    let Prepared { report, work } =
        Evaluator::prepare(Err("no code block".into()), task, &object, &job());
    assert!(!report.ok());
    let Work::Decided(o) = work else {
        panic!("decided without a GPU")
    };
    assert_eq!(o.verdict, Verdict::Extraction);
    assert!(o.message.contains("no code block"), "{}", o.message);
}

/// The GEMM reference candidate's request for one workload.
fn reference_request() -> ptxbench::engine::Request {
    let suite = suite();
    let task = suite.get("gemm_n4096_k4096").expect("task");
    let object = TaskObject::from_suite(&suite, task).expect("object");
    let dir = root().join("tasks/candidates/triton_gemm_tma");
    let cand = Candidate::from_files(&dir.join("kernel.ptx"), &dir.join("plan.yaml")).expect("c");
    match Evaluator::prepare(Ok(&cand), task, &object, &job()).work {
        Work::Evaluate(req) => *req,
        Work::Decided(o) => panic!("decided on the CPU: {}", o.message),
    }
}

#[test]
fn issue_46_a_request_compiled_ahead_carries_both_cubins_to_the_worker() {
    if !crate::cuda_tools("issue_46_a_request_compiled_ahead_carries_both_cubins") {
        return;
    }
    use ptxbench::cuda::driver::Cubin;
    let mut req = reference_request();
    assert_eq!(req.cubin, None);
    req.compile_ahead();
    let elf = |c: &Option<Cubin>| match c {
        Some(Cubin::Made {
            bytes, compiler, ..
        }) => {
            assert!(compiler.starts_with("ptxas "), "{compiler}");
            bytes.starts_with(b"\x7fELF")
        }
        other => panic!("no cubin: {other:?}"),
    };
    assert!(elf(&req.cubin), "the PTX's cubin is an ELF image");
    let counted = req.counted.as_ref().expect("a counted copy");
    assert!(elf(&counted.cubin), "the counted copy's cubin too");
    assert_ne!(req.cubin, counted.cubin, "two modules, two cubins");
    // The worker gets them in its JSON request, byte for byte.
    let back: ptxbench::engine::Request =
        serde_json::from_slice(&serde_json::to_vec(&req).expect("json")).expect("parses");
    assert_eq!(back.cubin, req.cubin);
    assert_eq!(back.counted.and_then(|c| c.cubin), counted.cubin);
}

#[test]
fn issue_46_a_lane_hands_requests_to_fresh_worker_processes_and_keeps_a_spare() {
    use ptxbench::engine::worker::Lane;
    let mut req = reference_request();
    req.cubin = None;
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_ptxbench"));
    let gpus = ptxbench::cuda::driver::device_count().unwrap_or(0);
    // Its workers share the harness's PTX through a folder: the flag must reach them (a
    // worker that refused it would never say ready).
    let harness = tempfile::tempdir().expect("tempdir");
    let mut lane = Lane::new(exe, 0, ptxbench::engine::worker::SPARES)
        .sharing_harness(harness.path().to_path_buf());
    assert!(!lane.has_spare(), "no worker before the first evaluation");
    for round in 0..2 {
        let o = lane.run(&req, std::time::Duration::from_secs(120));
        assert!(
            lane.has_spare(),
            "round {round}: the next worker is started"
        );
        if gpus == 0 {
            // The worker started, said it was ready, took the request and answered it.
            assert_eq!(o.verdict, Verdict::Other, "{}", o.message);
            assert!(o.message.starts_with("no GPU"), "{}", o.message);
        } else {
            assert_eq!(o.verdict, Verdict::Correct, "{}", o.message);
            let shared: Vec<_> = std::fs::read_dir(harness.path())
                .expect("list")
                .map(|e| e.expect("entry").file_name())
                .collect();
            assert_eq!(
                shared.len(),
                1,
                "the first worker left the harness PTX: {shared:?}"
            );
        }
    }
}

/// An executable stand-in for the worker process in `dir`: the shell script `script(template)`,
/// where `template` is the path of an outcome whose message is `message`.
fn stand_in(
    dir: &std::path::Path,
    message: &str,
    script: impl FnOnce(&std::path::Path) -> String,
) -> std::path::PathBuf {
    use ptxbench::engine::Outcome;
    use ptxbench::record::Stage;
    let template = dir.join("outcome.template");
    let o = Outcome::failed(Verdict::Numerical, Stage::Correctness, message);
    std::fs::write(&template, serde_json::to_vec(&o).expect("json")).expect("template");
    let path = dir.join("worker.sh");
    std::fs::write(&path, script(&template)).expect("script");
    let mut perm = std::fs::metadata(&path).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&path, perm).expect("chmod");
    path
}

/// A stand-in worker process that speaks the lane's protocol (the real one needs a GPU to get
/// as far as a second context): it serves requests in one process, writing an outcome whose
/// message is its pid and count, says `again` after each, and dies without an outcome on its
/// third.
fn protocol_worker(dir: &std::path::Path) -> std::path::PathBuf {
    stand_in(dir, "MSG", |template| {
        format!(
            r#"#!/bin/sh
# worker DIR --gpu N --token T --evaluations E
dir=$2; token=$6; n=0
while :; do
  echo "$token ready"
  read -r request || exit 0
  n=$((n+1))
  [ "$n" -eq 3 ] && exit 3
  sed "s/MSG/pid:$$ n:$n/" "{}" > "$dir/outcome.json.tmp"
  mv "$dir/outcome.json.tmp" "$dir/outcome.json"
  echo "$token again"
done
"#,
            template.display()
        )
    })
}

#[test]
fn issue_46_a_worker_serves_several_requests_and_a_death_never_returns_an_old_outcome() {
    use ptxbench::engine::worker::Lane;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut lane = Lane::new(protocol_worker(dir.path()), 0, 0).evaluations_per_worker(3);
    let req = reference_request();
    let limit = std::time::Duration::from_secs(20);
    let outcomes: Vec<_> = (0..4).map(|_| lane.run(&req, limit)).collect();
    let said = |i: usize| -> (String, String) {
        let m = &outcomes[i].message;
        let pid = m.split_whitespace().next().unwrap_or_default().to_string();
        let n = m.split_whitespace().nth(1).unwrap_or_default().to_string();
        (pid, n)
    };
    let (first, second) = (said(0), said(1));
    assert_eq!(outcomes[0].verdict, Verdict::Numerical, "{:?}", outcomes[0]);
    assert_eq!(first.1, "n:1");
    assert_eq!(
        (second.0.as_str(), second.1.as_str()),
        (first.0.as_str(), "n:2"),
        "the second request went to the same process"
    );
    // Its third request: it died without an outcome; the second's file is not read again.
    assert_eq!(outcomes[2].verdict, Verdict::Runtime, "{:?}", outcomes[2]);
    assert!(
        outcomes[2].message.contains("without a result"),
        "{}",
        outcomes[2].message
    );
    let fourth = said(3);
    assert_eq!(fourth.1, "n:1", "a fresh process took the fourth");
    assert_ne!(fourth.0, first.0, "{:?}", outcomes[3].message);
}

/// A stand-in worker process (one request each) that notes in `log` when it took its request
/// and when it answered it, and whether the request was timed.
fn logging_worker(dir: &std::path::Path, log: &std::path::Path) -> std::path::PathBuf {
    stand_in(dir, "stand-in", |template| {
        format!(
            r#"#!/bin/sh
# worker DIR --gpu N --token T --evaluations E
dir=$2; token=$6
echo "$token ready"
read -r request || exit 0
case "$request" in *'"no_timing":true'*) kind=untimed;; *) kind=timed;; esac
start=$(date +%s%N)
sleep 0.3
echo "$kind $start $(date +%s%N)" >> "{log}"
cp "{template}" "$dir/outcome.json"
echo "$token done"
"#,
            log = log.display(),
            template = template.display()
        )
    })
}

#[test]
fn issue_46_correctness_only_evaluations_share_a_gpu_and_a_timed_one_has_it_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("log");
    let evaluator = Evaluator::new(logging_worker(dir.path(), &log)).untimed_at_once(2);
    assert_eq!(evaluator.at_once(), 2);
    let untimed = reference_request();
    let mut timed = untimed.clone();
    timed.no_timing = false;
    let limit = std::time::Duration::from_secs(30);
    // Two callers on GPU 0, as a run list's two threads of that GPU would call.
    std::thread::scope(|s| {
        for order in [[&untimed, &timed, &untimed], [&untimed, &untimed, &timed]] {
            let evaluator = &evaluator;
            s.spawn(move || {
                for req in order {
                    let o = evaluator.on_gpu(req, 0, limit);
                    assert_eq!(o.message, "stand-in", "{o:?}");
                }
            });
        }
    });
    let spans: Vec<(String, u128, u128)> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[0].to_string(),
                f[1].parse().expect("ns"),
                f[2].parse().expect("ns"),
            )
        })
        .collect();
    assert_eq!(spans.len(), 6, "{spans:?}");
    let overlap = |a: &(String, u128, u128), b: &(String, u128, u128)| a.1 < b.2 && b.1 < a.2;
    let mut shared = 0;
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            if overlap(a, b) {
                assert!(
                    a.0 == "untimed" && b.0 == "untimed",
                    "a timed evaluation overlapped another: {a:?} {b:?}"
                );
                shared += 1;
            }
        }
    }
    assert!(
        shared >= 1,
        "no two correctness-only evaluations overlapped: {spans:?}"
    );
}

#[test]
fn issue_46_a_worker_that_never_gets_ready_is_a_harness_failure() {
    use ptxbench::engine::worker::Lane;
    let req = reference_request();
    // `true` exits at once without saying ready.
    let mut lane = Lane::new("true".into(), 0, 0);
    let o = lane.run(&req, std::time::Duration::from_secs(10));
    assert_eq!(o.verdict, Verdict::Other, "{}", o.message);
    assert!(o.message.contains("did not start"), "{}", o.message);
}

#[test]
fn issue_46_an_outcome_clock_covers_the_cpu_compile_and_the_whole_lane() {
    if !crate::cuda_tools("issue_46_an_outcome_clock_covers_the_cpu_compile_and_the_whole_lane") {
        return;
    }
    use ptxbench::engine::{COMPILE_AHEAD, HAND_OVER, SETUP};
    let mut req = reference_request();
    req.compile_ahead();
    let compiled = req.compile_seconds.expect("compile_ahead times itself");
    assert!(compiled > 0.0);
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_ptxbench"));
    let evaluator = Evaluator::new(exe);
    let start = std::time::Instant::now();
    let o = evaluator.on_gpu(&req, 0, std::time::Duration::from_secs(120));
    let wall = start.elapsed().as_secs_f64();
    let names: Vec<&str> = o.seconds.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names.first(), Some(&COMPILE_AHEAD), "{names:?}");
    assert_eq!(
        o.seconds[0].1, compiled,
        "ptxas's time as compile_ahead measured it"
    );
    assert_eq!(names.get(1), Some(&"worker start"), "{names:?}");
    assert_eq!(names.last(), Some(&HAND_OVER), "{names:?}");
    // The lane's laps (all but the CPU's compile and a spare's setup, which ran before the
    // request) add up to the lane's time, never to more than the call took.
    let lane: f64 = o
        .seconds
        .iter()
        .filter(|(k, _)| k != COMPILE_AHEAD && !k.starts_with(SETUP))
        .map(|(_, s)| s)
        .sum();
    assert!(
        lane > 0.0 && lane <= wall + 1e-6,
        "lane {lane} s, call {wall} s: {names:?}"
    );
    assert!(o.seconds.iter().all(|(_, s)| *s >= 0.0), "{:?}", o.seconds);
}

/// Integrity v4 item 5 / issue 56 finding 4: a selection of workloads the task does not have
/// ran nothing and was `correct`. The one evaluator decides it on the CPU, never `correct`,
/// whatever command called it.
#[test]
fn issue_56_an_evaluation_that_would_run_no_workload_is_never_correct() {
    let suite = suite();
    let task = suite.get("gemm_n4096_k4096").expect("task");
    let object = TaskObject::from_suite(&suite, task).expect("object");
    let dir = root().join("tasks/candidates/triton_gemm_tma");
    let cand = Candidate::from_files(&dir.join("kernel.ptx"), &dir.join("plan.yaml")).expect("c");
    for names in [vec!["M7O".to_string()], vec!["M70,M232".to_string()]] {
        let job = Job {
            workloads: names.clone(),
            ..job()
        };
        let Prepared { work, .. } = Evaluator::prepare(Ok(&cand), task, &object, &job);
        let Work::Decided(o) = work else {
            panic!("{names:?}: decided without a GPU")
        };
        assert_eq!(o.verdict, Verdict::Other, "{names:?}");
        assert!(o.message.contains("is not a workload of"), "{}", o.message);
    }
}

/// Issue 58: generate's trajectories ask one evaluation at a time from many threads; the queue
/// runs them through the scheduler `run` and `serve` use (compiled ahead, a worker on a free
/// lane of a GPU, the evidence after), answers each asker, and drains when dropped.
#[test]
fn issue_58_the_queue_answers_every_asking_thread_through_the_shared_scheduler() {
    if !crate::cuda_tools("issue_58_the_queue_answers_every_asking_thread") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("log");
    let evaluator = Evaluator::new(logging_worker(dir.path(), &log)).untimed_at_once(2);
    let queue =
        ptxbench::engine::evaluator::Queue::start(evaluator, 1, std::time::Duration::from_secs(30));
    let req = reference_request();
    let answers: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4).map(|_| s.spawn(|| queue.evaluate(&req))).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("asker"))
            .collect()
    });
    drop(queue);
    for o in &answers {
        assert_eq!(o.message, "stand-in", "{o:?}");
        // Compiled ahead on the CPU before a worker got it, as `run` does.
        assert_eq!(
            o.seconds.first().map(|(k, _)| k.as_str()),
            Some(ptxbench::engine::COMPILE_AHEAD),
            "{:?}",
            o.seconds
        );
    }
    let ran = std::fs::read_to_string(&log).expect("log").lines().count();
    assert_eq!(ran, 4, "each asked evaluation ran once");
}

/// Issue 58: `baseline` and `reference` run their GPU work in a worker process, never in the
/// command's own. The worker reads the work line, opens the GPU (or says why it cannot) and
/// answers in its exchange folder; a reference's files are taken out before the folder goes.
#[test]
fn issue_58_harness_work_runs_in_a_worker_process() {
    use ptxbench::engine::harness_work::{Produced, Work};
    let suite = ptxbench::task::Suite::load(&crate::root().join("tasks")).expect("suite");
    let task = suite.get("gemm_n4096_k4096").expect("task");
    let object = ptxbench::record::TaskObject::from_suite(&suite, task).expect("object");
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_ptxbench"));
    let gpus = ptxbench::cuda::driver::device_count().unwrap_or(0);
    let work = Work::Reference {
        task: object.clone(),
        workload: "M232".into(),
        seed: 3,
    };
    let (answer, names) = ptxbench::engine::worker::run_harness(
        &exe,
        0,
        &work,
        std::time::Duration::from_secs(120),
        |dir| {
            let listed = std::fs::read_dir(dir.join("reference"))
                .map(|d| d.filter_map(|e| e.ok()).count())
                .unwrap_or(0);
            Ok(listed)
        },
    )
    .expect("the worker answers");
    if gpus == 0 {
        assert_eq!(answer.device, None);
        let why = answer.result.expect_err("no GPU, no reference");
        assert!(why.starts_with("no GPU"), "{why}");
        assert_eq!(names, 0);
    } else {
        match answer.result.expect("a reference") {
            // A and B in, C out, and the index.
            Produced::Reference(files) => assert_eq!((files.len(), names), (4, 4), "{files:?}"),
            other => panic!("answered {other:?}"),
        }
    }
    // An evaluation never goes this way (it needs a lane's timing gate and outcome).
    let mut req = reference_request();
    req.cubin = None;
    let refused = ptxbench::engine::worker::run_harness(
        &exe,
        0,
        &Work::Evaluate(Box::new(req)),
        std::time::Duration::from_secs(5),
        |_| Ok(()),
    );
    assert!(refused.is_err());
    // An unknown workload is the worker's clear answer, not a crash.
    let work = Work::Baseline {
        task: object,
        workloads: vec!["M404".into()],
        seed: 1,
        protocol: ptxbench::engine::Protocol::default(),
    };
    let (answer, ()) = ptxbench::engine::worker::run_harness(
        &exe,
        0,
        &work,
        std::time::Duration::from_secs(120),
        |_| Ok(()),
    )
    .expect("the worker answers");
    let why = answer.result.expect_err("no such workload");
    if gpus > 0 {
        assert!(why.contains("has no workload `M404`"), "{why}");
    } else {
        assert!(why.starts_with("no GPU"), "{why}");
    }
}
