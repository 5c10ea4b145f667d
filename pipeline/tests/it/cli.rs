//! The `ptxbench` binary as a user runs it.

use crate::ptxbench;

#[test]
fn tasks_check_passes_on_the_committed_suite() {
    let (code, out, err) = ptxbench(&["tasks", "check"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("ok: "), "{out}");
}

#[test]
fn tasks_list_and_show() {
    let (code, out, _) = ptxbench(&["tasks", "list"]);
    assert_eq!(code, 0);
    assert!(out.contains("gemm_n7168_k5120") && out.contains("mha_bwd_d128_causal"));
    let (code, out, _) = ptxbench(&["tasks", "show", "mha_with_lse_d64"]);
    assert_eq!(code, 0);
    assert!(out.contains("LSE"), "{out}");
    let (code, _, err) = ptxbench(&["tasks", "show", "nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("no task `nope`"), "{err}");
}

#[test]
fn prompt_command_prints_the_prompt() {
    let (code, out, _) = ptxbench(&[
        "prompt",
        "gemm_n7168_k5120",
        "--arch",
        "sm_90a",
        "--variant",
        "3",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("A pipeline pattern that works on Hopper"));
    let (code, _, err) = ptxbench(&["prompt", "gemm_n7168_k5120", "--variant", "4"]);
    assert_eq!(code, 2);
    assert!(err.contains("variant 4 does not exist"), "{err}");
}

#[test]
fn check_reports_a_bad_response_as_an_extraction_failure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let resp = dir.path().join("response.md");
    std::fs::write(&resp, "I could not do it.").expect("write");
    let (code, out, _) = ptxbench(&[
        "check",
        resp.to_str().expect("utf-8"),
        "--task",
        "gemm_n7168_k5120",
        "--json",
    ]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["failure"]["class"], "extraction");
}

#[test]
fn tasks_import_writes_a_valid_task_and_never_overwrites() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("gemm_n4096_k4096.yaml");
    let def = crate::fixture("tasks/flashinfer/gemm_n4096_k4096.json");
    let wl = crate::fixture("tasks/flashinfer/gemm_n4096_k4096.jsonl");
    let args = [
        "tasks",
        "import",
        def.to_str().expect("utf-8"),
        "--workloads",
        wl.to_str().expect("utf-8"),
        "-o",
        out.to_str().expect("utf-8"),
    ];
    let (code, _, err) = ptxbench(&args);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("note:"),
        "the defaults it filled in are listed: {err}"
    );
    let text = std::fs::read_to_string(&out).expect("written");
    let task = ptxbench::task::Task::from_yaml(&text, &out).expect("the imported task validates");
    assert_eq!(task.id.as_str(), "gemm_n4096_k4096");
    // A second import must not replace the file.
    let (code, _, err) = ptxbench(&args);
    assert_eq!(code, 2);
    assert!(err.contains("refusing to overwrite"), "{err}");
}

#[test]
fn a_run_list_may_not_give_one_entry_two_records_for_a_task() {
    let dir = tempfile::tempdir().expect("tempdir");
    let simt = crate::root().join("tasks/candidates/simt/gemm");
    let list = dir.path().join("list.yaml");
    let eval = |name: &str, tasks: &str| {
        format!(
            "  - {{name: {name}, entry: SIMT, kernel: {k}, plan: {p}, tasks: [{tasks}]}}\n",
            k = simt.join("kernel.cu").display(),
            p = simt.join("plan.yaml").display()
        )
    };
    let head = "name: clash\narch: sm_90a\nseed: 1\nevaluations:\n";
    std::fs::write(
        &list,
        format!(
            "{head}{}{}",
            eval("a", "gemm_n4096_k4096"),
            eval("b", "gemm_n*")
        ),
    )
    .expect("write");
    let out = dir.path().join("out");
    let store = dir.path().join("artifacts");
    let (list_s, out_s) = (list.to_str().expect("utf-8"), out.to_str().expect("utf-8"));
    let store_s = store.to_str().expect("utf-8");
    let args = [
        "run",
        list_s,
        "--out",
        out_s,
        "--publish-only",
        "--store",
        store_s,
    ];
    let (code, _, err) = ptxbench(&args);
    assert_ne!(code, 0);
    assert!(
        err.contains(
            "evaluations `a` and `b` both give entry `SIMT` a record for task gemm_n4096_k4096"
        ),
        "{err}"
    );
    assert!(
        !store.exists(),
        "nothing is stored before the list is valid"
    );
    // Disjoint tasks under one entry are fine (nothing to publish without results).
    std::fs::write(
        &list,
        format!(
            "{head}{}{}",
            eval("a", "gemm_n4096_k4096"),
            eval("b", "gemm_n128_k2048")
        ),
    )
    .expect("write");
    let (code, out_text, err) = ptxbench(&args);
    assert_eq!(code, 0, "{out_text}{err}");
}

#[test]
fn issue_15_every_command_exits_quietly_on_a_closed_pipe() {
    let cand = crate::root().join("tasks/candidates/simt/gemm");
    let cand = cand.to_str().expect("utf-8");
    let commands: Vec<Vec<&str>> = vec![
        vec!["tasks", "list"],
        vec!["tasks", "show", "gemm_n7168_k5120"],
        vec!["tasks", "check"],
        vec!["prompt", "gemm_n7168_k5120", "--arch", "sm_90a"],
        vec![
            "check",
            cand,
            "--task",
            "gemm_n4096_k4096",
            "--arch",
            "sm_90a",
        ],
        vec!["--help"],
    ];
    for args in commands {
        // The reading end is closed before the command starts: every write to stdout fails.
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let out = with_stdout(&args, writer);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
        let code = out.status.code();
        assert!(
            matches!(code, Some(0 | 141)),
            "{args:?}: exit {code:?}: {err}"
        );
    }
}

#[test]
fn issue_15_plan_yaml_errors_name_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        crate::ptx_fixture("gemm_simt_bf16.sm_90a.ptx"),
        dir.path().join("kernel.ptx"),
    )
    .expect("copy");
    std::fs::write(dir.path().join("plan.yaml"), "launches: [\n").expect("write");
    let d = dir.path().to_str().expect("utf-8");
    let (code, out, err) = ptxbench(&["check", d, "--task", "gemm_n7168_k5120"]);
    assert_ne!(code, 0, "{out}{err}");
    let plan = dir.path().join("plan.yaml");
    let text = format!("{out}{err}");
    assert!(text.contains(&plan.display().to_string()), "{text}");
    assert!(!text.contains("(yaml)"), "{text}");
}

/// Standard output on a full disk (`> /dev/full`): every command ends with one line naming
/// standard output and exit status 2, never a panic.
#[cfg(target_os = "linux")]
#[test]
fn issue_41_a_full_stdout_is_an_error_not_a_panic() {
    let cand = crate::root().join("tasks/candidates/simt/gemm");
    let cand = cand.to_str().expect("utf-8");
    let store = tempfile::tempdir().expect("tempdir");
    let store = store.path().join("artifacts");
    let store = store.to_str().expect("utf-8");
    let check = |json: bool| {
        let mut args = vec![
            "check",
            cand,
            "--task",
            "gemm_n4096_k4096",
            "--arch",
            "sm_90a",
        ];
        if json {
            args.push("--json");
        }
        args
    };
    let commands: Vec<Vec<&str>> = vec![
        vec!["tasks", "list"],
        vec!["tasks", "list", "--json"],
        vec!["tasks", "show", "gemm_n7168_k5120"],
        vec!["tasks", "check"],
        vec!["tasks", "store", "--store", store],
        vec!["prompt", "gemm_n7168_k5120", "--arch", "sm_90a"],
        check(false),
        check(true),
        vec!["evidence", cand, "--task", "gemm_n4096_k4096"],
        // Printed by clap, whose own exit ignored the failure (exit 0, nothing printed).
        vec!["--help"],
        vec!["--version"],
        vec!["tasks", "show", "--help"],
    ];
    for args in commands {
        let full = std::fs::File::options()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let out = with_stdout(&args, full);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        let last = err.lines().last().unwrap_or("");
        assert!(
            last.starts_with("error: cannot write to standard output: ")
                && last.contains("No space left on device"),
            "{args:?}: {err}"
        );
    }
}

/// `ptxbench --tasks tasks/ ARGS` with its standard output on `stdout` (stderr captured).
fn with_stdout(args: &[&str], stdout: impl Into<std::process::Stdio>) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ptxbench"))
        .arg("--tasks")
        .arg(crate::root().join("tasks"))
        .args(args)
        .stdout(stdout)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("runs")
}

/// Issue 56, finding 4 (and integrity v4 item 5): an unknown workload name was dropped, and an
/// evaluation that ran no workload was `correct`. `eval` and run lists now refuse it as a
/// usage error naming the valid ones, before anything is stored or run.
#[test]
fn issue_56_an_unknown_workload_is_a_usage_error() {
    let simt = crate::root().join("tasks/candidates/simt/gemm");
    let (code, _, err) = ptxbench(&[
        "eval",
        simt.to_str().expect("utf-8"),
        "--task",
        "gemm_n4096_k4096",
        "--workload",
        "M7O",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("`M7O` is not a workload of gemm_n4096_k4096") && err.contains("M70"),
        "{err}"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let list = dir.path().join("list.yaml");
    std::fs::write(
        &list,
        format!(
            "name: w\narch: sm_90a\nseed: 1\nevaluations:\n  - {{name: a, kernel: {k}, plan: {p}, tasks: [gemm_n4096_k4096], workloads: [\"M70,M232\"]}}\n",
            k = simt.join("kernel.cu").display(),
            p = simt.join("plan.yaml").display()
        ),
    )
    .expect("write");
    let store = dir.path().join("artifacts");
    let (code, _, err) = ptxbench(&[
        "run",
        list.to_str().expect("utf-8"),
        "--out",
        dir.path().join("out").to_str().expect("utf-8"),
        "--publish-only",
        "--store",
        store.to_str().expect("utf-8"),
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains("workloads: `M70,M232` is not a workload"),
        "{err}"
    );
    assert!(
        !store.exists(),
        "nothing is stored before the list is valid"
    );
}

/// Issue 55, finding 5: `tasks import -o` wrote through a dangling link (and into the store's
/// layout folder). The link is refused and what it names is never created.
#[test]
fn issue_55_tasks_import_never_writes_through_a_link() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = dir.path().join("elsewhere.yaml");
    let out = dir.path().join("task.yaml");
    std::os::unix::fs::symlink(&target, &out).expect("link");
    let def = crate::fixture("tasks/flashinfer/gemm_n4096_k4096.json");
    let (code, _, err) = ptxbench(&[
        "tasks",
        "import",
        def.to_str().expect("utf-8"),
        "-o",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(!target.exists(), "written through the link");
    // Inside a store's layout folder: refused by the one atomic-write helper.
    let store = dir.path().join("store");
    ptxbench::store::Store::open(&store)
        .put(b"an object")
        .expect("a store");
    let inside = store.join("v1/blake3/task.yaml");
    let (code, _, err) = ptxbench(&[
        "tasks",
        "import",
        def.to_str().expect("utf-8"),
        "-o",
        inside.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("inside the store"), "{err}");
    assert!(!inside.exists());
}

/// Issue 55, findings 5 and 6: a site inside the store was accepted, and its objects were hard
/// links to the store's files (an edit of the published folder changed the store); a FIFO in
/// place of an object blocked a read forever.
#[test]
fn issue_55_the_site_stays_out_of_the_store_and_copies_its_objects() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = ptxbench::store::Store::open(dir.path().join("artifacts"));
    let digest = store.put(b"stored bytes").expect("put");
    // A site folder inside the store is refused.
    let manifest = crate::root().join("manifests/leaderboard.yaml");
    let inside = dir.path().join("artifacts/public");
    let (code, _, err) = ptxbench(&[
        "site",
        manifest.to_str().expect("utf-8"),
        "--store",
        dir.path().join("artifacts").to_str().expect("utf-8"),
        "-o",
        inside.to_str().expect("utf-8"),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("inside the store"), "{err}");
    assert!(!inside.exists());
    // A FIFO in place of an object is an error, at once.
    let fifo_digest = ptxbench::digest::Digest::of(b"never written");
    let path = store.path_of(&fifo_digest);
    std::fs::create_dir_all(path.parent().expect("folder")).expect("mkdir");
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let start = std::time::Instant::now();
    let e = store.get(&fifo_digest).expect_err("not an object");
    assert!(e.to_string().contains("FIFO"), "{e}");
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    // `verify` reports it as a broken object, not a stray file (it passed before).
    let (code, out, err) = ptxbench(&[
        "verify",
        "--store",
        dir.path().join("artifacts").to_str().expect("utf-8"),
    ]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(format!("{out}{err}").contains("FIFO"), "{out}{err}");
    assert_eq!(
        store.get(&digest).expect("the real object"),
        b"stored bytes"
    );
    // The committed leaderboard's objects are copies: no file of the site is the store's.
    let public = dir.path().join("public");
    let (code, _, err) = ptxbench(&[
        "site",
        manifest.to_str().expect("utf-8"),
        "-o",
        public.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{err}");
    use std::os::unix::fs::MetadataExt as _;
    let mut objects = 0;
    for e in std::fs::read_dir(public.join("objects")).expect("objects/") {
        let m = e.expect("entry").metadata().expect("metadata");
        assert_eq!(m.nlink(), 1, "a site object shares its file with the store");
        objects += 1;
    }
    assert!(objects > 100, "{objects} objects");
}
