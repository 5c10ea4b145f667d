//! Issue 43: `generate` checks its setup before it spends: an unusable one stops with one
//! message naming every problem, and no completion is requested.

use super::*;
use crate::canned::CannedServer;

/// A model the endpoint does not list, and (without `--no-eval`) no GPU: both named in one
/// message, nothing asked, no output folder made.
#[test]
fn issue_43_an_unusable_setup_stops_before_any_request() {
    let canned = canned_dir(&[(0, good_answer())], "");
    std::fs::write(canned.path().join("models.txt"), "org/other-model\n").expect("models.txt");
    let server = CannedServer::start(canned.path(), 0).expect("server");
    let work = tempfile::tempdir().expect("work");
    let (code, stdout, stderr) = generate(work.path(), &manifest(&server.url(), 1, "[1]", ""), &[]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("gen.yaml: this setup cannot run; nothing was sent"),
        "{stderr}"
    );
    assert!(
        stderr.contains("models[0] (`canned-model`")
            && stderr.contains("does not serve this model; it lists: org/other-model"),
        "{stderr}"
    );
    if ptxbench::cuda::driver::device_count().unwrap_or(0) == 0 {
        assert!(
            stderr.contains("no GPU to evaluate on") && stderr.contains("--no-eval"),
            "{stderr}"
        );
    }
    assert!(server.served().is_empty(), "no completion requested");
    assert!(!work.path().join("out").exists(), "nothing written");
}

/// An endpoint nobody listens on is named as unreachable, with how to start a server.
#[test]
fn issue_43_an_unreachable_endpoint_is_named() {
    let port = {
        let l = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("a free port");
        l.local_addr().expect("addr").port()
    };
    let work = tempfile::tempdir().expect("work");
    let url = format!("http://127.0.0.1:{port}/v1");
    let (code, _, stderr) = generate(work.path(), &manifest(&url, 1, "[1]", ""), &["--no-eval"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("not reachable") && stderr.contains("vllm serve"),
        "{stderr}"
    );
}

/// With `eval.endpoint`, the evaluations go to a service: no local GPU is asked for, but a
/// service nobody runs stops the run before any request, naming the field.
#[test]
fn issue_42_43_an_unreachable_evaluation_service_is_named_and_no_gpu_is_asked_for() {
    let canned = canned_dir(&[(0, good_answer())], "");
    let server = CannedServer::start(canned.path(), 0).expect("server");
    let port = {
        let l = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("a free port");
        l.local_addr().expect("addr").port()
    };
    let text = manifest(&server.url(), 1, "[1]", "")
        + &format!("eval: {{endpoint: \"http://127.0.0.1:{port}\"}}\n");
    let work = tempfile::tempdir().expect("work");
    let (code, stdout, stderr) = generate(work.path(), &text, &[]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("eval.endpoint: the evaluation service is not reachable")
            && stderr.contains("ptxbench serve"),
        "{stderr}"
    );
    assert!(!stderr.contains("no GPU to evaluate on"), "{stderr}");
    assert!(server.served().is_empty(), "no completion requested");
}

/// Without the CUDA compiler tools every answer would be a harness failure: the message says
/// how to install them.
#[test]
fn issue_43_missing_cuda_tools_stop_the_run_with_the_install_command() {
    let canned = canned_dir(&[(0, good_answer())], "");
    let server = CannedServer::start(canned.path(), 0).expect("server");
    let work = tempfile::tempdir().expect("work");
    let empty = tempfile::tempdir().expect("an empty CUDA_HOME");
    let out = generate_command(
        work.path(),
        &manifest(&server.url(), 1, "[1]", ""),
        &["--no-eval"],
    )
    .env("CUDA_HOME", empty.path())
    .env("PATH", "/usr/bin:/bin")
    .env_remove("CUDA_PATH")
    .env_remove("PTXBENCH_CUDA_BIN")
    .env_remove("PTXBENCH_CUDA_LIB_PATH")
    .output()
    .expect("ptxbench runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if std::path::Path::new("/usr/local/cuda").exists() {
        eprintln!("skipped: a system CUDA in /usr/local/cuda provides the tools");
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the CUDA compiler tools are missing")
            && stderr.contains("pipeline/scripts/install-cuda-tools.sh"),
        "{stderr}"
    );
    assert!(server.served().is_empty());
}

/// `api_key_env` is optional; naming a variable that is not set says so.
#[test]
fn issue_43_an_unset_key_variable_says_the_field_is_optional() {
    let canned = canned_dir(&[(0, good_answer())], "");
    let server = CannedServer::start(canned.path(), 0).expect("server");
    let work = tempfile::tempdir().expect("work");
    let out = generate_command(
        work.path(),
        &manifest(&server.url(), 1, "[1]", ""),
        &["--no-eval"],
    )
    .env_remove("PTXBENCH_TEST_KEY")
    .output()
    .expect("ptxbench runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("PTXBENCH_TEST_KEY is not set") && stderr.contains("optional"),
        "{stderr}"
    );
    let without =
        manifest(&server.url(), 1, "[1]", "").replace("    api_key_env: PTXBENCH_TEST_KEY\n", "");
    let out = generate_command(work.path(), &without, &["--no-eval"])
        .env_remove("PTXBENCH_TEST_KEY")
        .output()
        .expect("ptxbench runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.served().len(), 1);
}

/// `ptxbench --help` and `generate --help` point to README's section, which exists.
#[test]
fn issue_43_help_points_to_the_readme_section() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    assert!(readme.contains("\n## Evaluate your model\n"));
    for args in [&["--help"][..], &["generate", "--help"][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_ptxbench"))
            .args(args)
            .output()
            .expect("ptxbench runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("README.md, \"Evaluate your model\"")
                && text.contains("manifests/generate-example.yaml"),
            "{args:?}: {text}"
        );
    }
}

/// Issue 59, item 12: an endpoint without `/v1` whose listing is a 404 (as vLLM's and
/// SGLang's root is) stops the run before any request, saying where the API is; it was a note,
/// then a completion request that got a 404 and "will be retried by the next run".
#[test]
fn issue_59_an_endpoint_without_v1_is_named_before_any_request() {
    let canned = canned_dir(&[(0, good_answer())], "");
    std::fs::remove_file(canned.path().join("models.txt")).expect("no listing: a 404");
    let server = CannedServer::start(canned.path(), 0).expect("server");
    let root = server.url().trim_end_matches("/v1").to_string();
    let work = tempfile::tempdir().expect("work");
    let (code, stdout, stderr) =
        generate(work.path(), &manifest(&root, 1, "[1]", ""), &["--no-eval"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(stderr.contains(&format!("`{root}/v1`")), "{stderr}");
    assert!(server.served().is_empty(), "a completion was requested");
}

/// Issue 59, item 12: a server that accepts the connection and never answers (one still
/// loading its model) holds the preflight at most 15 s, not the model's request timeout, and
/// the message says to wait until it lists the model.
#[test]
fn issue_59_a_silent_server_is_named_within_seconds() {
    // Bound and listening, never accepting: connections complete, nothing is answered.
    let silent = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("a port");
    let url = format!("http://{}/v1", silent.local_addr().expect("addr"));
    let work = tempfile::tempdir().expect("work");
    let text = manifest(&url, 1, "[1]", "").replace("timeout_s: 1\n", "timeout_s: 120\n");
    let started = std::time::Instant::now();
    let (code, _, stderr) = generate(work.path(), &text, &["--no-eval"]);
    let took = started.elapsed();
    assert_eq!(code, 2, "{stderr}");
    assert!(took < std::time::Duration::from_secs(40), "{took:?}");
    assert!(stderr.contains("wait until `curl"), "{stderr}");
}
