//! `ptxbench serve` and `ptxbench worker --queue`, as processes, over real HTTP on loopback
//! and a real Redis. On a machine without a GPU the workers run the static part of each
//! evaluation, which decides the candidates used here (no kernel in the response, or a kernel
//! that reaches the GPU part and is given up on).

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ptxbench::serve::resp::{Connection, Reply};
use serde_json::{Value, json};

use super::root;

const TASK: &str = "gemm_n4096_k4096";

/// A running `ptxbench serve` or `worker`, killed when dropped.
struct Proc {
    child: Child,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The workers' secret the tests' servers and workers share.
const WORKER_SECRET: &str = "test-worker-secret-0123456789abcdef";

fn spawn(args: &[&str]) -> Proc {
    let child = Command::new(env!("CARGO_BIN_EXE_ptxbench"))
        .args(args)
        .env("PTXBENCH_WORKER_SECRET", WORKER_SECRET)
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ptxbench starts");
    Proc { child }
}

/// Starts a server and returns it with its base URL (read from its first line).
fn serve(store: &Path, extra: &[&str]) -> (Proc, String) {
    let store = store.to_str().expect("UTF-8 path");
    let mut args = vec!["serve", "--store", store, "--bind", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let mut p = spawn(&args);
    let mut line = String::new();
    let stderr = p.child.stderr.take().expect("piped");
    let mut reader = BufReader::new(stderr);
    reader.read_line(&mut line).expect("a first line");
    // Keep draining the server's messages so that it never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    (p, url)
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(90)))
        .build()
        .new_agent()
}

/// Status, headers we look at, and the JSON body (or the text as a string).
fn call(
    method: &str,
    url: &str,
    token: Option<&str>,
    body: Option<&[u8]>,
) -> (u16, Option<String>, Value) {
    send(method, url, token, &[], body)
}

/// [`call`] with more request headers.
fn send(
    method: &str,
    url: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> (u16, Option<String>, Value) {
    let a = agent();
    let mut extra: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if let Some(t) = token {
        extra.push(("Authorization".into(), format!("Bearer {t}")));
    }
    let resp = match (method, body) {
        ("POST", Some(b)) => {
            let mut r = a.post(url).header("Content-Type", "application/json");
            for (k, v) in &extra {
                r = r.header(k, v);
            }
            r.send(b)
        }
        ("DELETE", _) => {
            let mut r = a.delete(url);
            for (k, v) in &extra {
                r = r.header(k, v);
            }
            r.call()
        }
        _ => {
            let mut r = a.get(url);
            for (k, v) in &extra {
                r = r.header(k, v);
            }
            r.call()
        }
    };
    let mut resp = resp.expect("the server answers");
    let status = resp.status().as_u16();
    let retry = resp
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap_or_default().to_string());
    let text = resp.body_mut().read_to_string().expect("a body");
    let v = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, retry, v)
}

fn post(url: &str, body: &Value) -> (u16, Option<String>, Value) {
    call(
        "POST",
        url,
        None,
        Some(&serde_json::to_vec(body).expect("JSON")),
    )
}

fn wait(base: &str, id: &str) -> Value {
    let (status, _, v) = call(
        "GET",
        &format!("{base}/v1/evaluations/{id}?wait=60"),
        None,
        None,
    );
    assert_eq!(status, 200, "{v}");
    v
}

#[test]
fn serve_evaluates_over_http_and_answers_identical_submissions_from_the_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("store");
    let (_server, base) = serve(
        &store,
        &[
            "--max-batch",
            "6",
            "--max-body",
            "20000",
            "--max-queue",
            "4",
        ],
    );

    let (status, _, health) = call("GET", &format!("{base}/healthz"), None, None);
    assert_eq!(status, 200);
    // The embedded workers are alive; without a GPU the server says so (`no_gpu`).
    let gpus = health["gpus"].as_u64().expect("a GPU count");
    assert_eq!(
        health["status"].as_str(),
        Some(if gpus == 0 { "no_gpu" } else { "ok" }),
        "{health}"
    );
    assert!(health["workers_alive"].as_u64() >= Some(1), "{health}");
    let (_, _, tasks) = call("GET", &format!("{base}/v1/tasks"), None, None);
    assert!(
        tasks["tasks"]
            .as_array()
            .expect("a list")
            .iter()
            .any(|t| t["id"] == TASK)
    );

    // A response without a kernel: the static check decides it.
    let sub = json!({"task": TASK, "response": "I cannot write this kernel.", "seed": 11});
    let (status, _, v) = post(&format!("{base}/v1/evaluations"), &sub);
    assert_eq!(status, 202, "{v}");
    let first = wait(&base, v["id"].as_str().expect("an id"));
    assert_eq!(first["state"], "done", "{first}");
    assert_eq!(first["reward"]["verdict"], "extraction");
    assert_eq!(first["reward"]["correct"], false);
    assert_eq!(first["cached"], false);
    assert!(
        first["feedback"]
            .as_str()
            .expect("text")
            .contains("extraction"),
        "{first}"
    );
    // The record is in the store, under its digest, as the API shows it.
    let digest = first["record_digest"].as_str().expect("a digest");
    let s = ptxbench::store::Store::open(&store);
    let d: ptxbench::digest::Digest = digest.parse().expect("hex");
    let bytes = s.get(&d).expect("the record is stored");
    assert_eq!(
        serde_json::from_slice::<Value>(&bytes).expect("JSON"),
        first["record"]
    );
    assert_eq!(first["record"]["seed"], 11);
    assert_eq!(first["record"]["task"], TASK);

    // The same submission again: answered from the store; `fresh` evaluates again.
    let (_, _, v) = post(&format!("{base}/v1/evaluations"), &sub);
    let again = wait(&base, v["id"].as_str().expect("an id"));
    assert_eq!(
        (again["cached"].as_bool(), again["record_digest"].as_str()),
        (Some(true), Some(digest))
    );
    let mut fresh = sub.clone();
    fresh["fresh"] = true.into();
    let (_, _, v) = post(&format!("{base}/v1/evaluations"), &fresh);
    assert_eq!(
        wait(&base, v["id"].as_str().expect("an id"))["cached"],
        false
    );

    // A batch: ids in order; a bad item names its field and queues nothing.
    let items = json!({"items": [
        {"task": TASK, "response": "none", "seed": 1},
        {"task": TASK, "response": "none either", "seed": 2},
    ]});
    let (status, _, v) = post(&format!("{base}/v1/batches"), &items);
    assert_eq!(status, 202, "{v}");
    for id in v["ids"].as_array().expect("ids") {
        assert_eq!(
            wait(&base, id.as_str().expect("an id"))["reward"]["verdict"],
            "extraction"
        );
    }
    let cases = [
        (
            json!({"items": [{"task": TASK, "response": "x"}, {"task": "no_such", "response": "x"}]}),
            "items[1].task",
        ),
        (
            json!({"items": [{"task": TASK, "response": "x", "seed": "one"}]}),
            "items[0].seed",
        ),
        (
            json!({"items": [{"task": TASK, "kernel": "k"}]}),
            "items[0].plan",
        ),
        (json!({"things": []}), "items"),
    ];
    for (body, field) in cases {
        let (status, _, v) = post(&format!("{base}/v1/batches"), &body);
        assert_eq!(
            (status, v["field"].as_str()),
            (400, Some(field)),
            "{body} → {v}"
        );
    }
    let (status, _, v) = post(&format!("{base}/v1/evaluations"), &json!({"task": TASK}));
    assert_eq!(
        (status, v["field"].as_str()),
        (400, Some("response")),
        "{v}"
    );
    let (status, _, _) = call(
        "POST",
        &format!("{base}/v1/evaluations"),
        None,
        Some(b"{not json"),
    );
    assert_eq!(status, 400);

    // Caps: a batch over --max-batch and a body over --max-body are 413; a batch larger than
    // --max-queue can never be queued, a 400 (a 429 would have the client retry forever; the
    // 429 of a full queue is tested with Redis and no worker).
    let batch = |n: u64, seed: u64| json!({"items": (0..n).map(|i| json!({"task": TASK, "response": "x", "seed": seed + i})).collect::<Vec<_>>()});
    assert_eq!(post(&format!("{base}/v1/batches"), &batch(7, 100)).0, 413);
    let big = json!({"task": TASK, "response": "x".repeat(30_000)});
    assert_eq!(post(&format!("{base}/v1/evaluations"), &big).0, 413);
    let (status, _, v) = post(&format!("{base}/v1/batches"), &batch(5, 200));
    assert_eq!(status, 400, "{v}");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("can never be queued")),
        "{v}"
    );

    let (status, _, metrics) = call("GET", &format!("{base}/metrics"), None, None);
    let metrics = metrics.as_str().expect("text").to_string();
    assert_eq!(status, 200);
    for m in [
        "ptxbench_queue_depth ",
        "ptxbench_evaluations_per_second ",
        "ptxbench_verdicts_total{verdict=\"extraction\"} ",
        "ptxbench_gpu_busy_share ",
        "ptxbench_answered_from_store_total 1",
        "ptxbench_rejected_requests_total{reason=\"too_large\"} 2",
    ] {
        assert!(metrics.contains(m), "{m} in\n{metrics}");
    }
    let (status, _, v) = call("GET", &format!("{base}/v1/evaluations/nope"), None, None);
    assert_eq!(status, 404, "{v}");

    // A server started again on the same store answers from the store what the first made.
    drop(_server);
    let (_server, base) = serve(&store, &[]);
    let (_, _, v) = post(&format!("{base}/v1/evaluations"), &sub);
    let after = wait(&base, v["id"].as_str().expect("an id"));
    assert_eq!(
        (after["cached"].as_bool(), after["record_digest"].as_str()),
        (Some(true), Some(digest)),
        "{after}"
    );

    // The Python client (standard library only), as a training loop would call it.
    let mut py = Command::new("python3")
        .arg(root().join("pipeline/python/ptxbench_client.py"))
        .args([base.as_str(), "--task", TASK, "--seed", "5", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    std::io::Write::write_all(py.stdin.as_mut().expect("piped"), b"Sorry, no kernel.")
        .expect("write");
    drop(py.stdin.take());
    let out = py.wait_with_output().expect("python3 ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("\"verdict\": \"extraction\"") && stdout.contains("reward 0.0"),
        "{stdout}"
    );
}

#[test]
fn a_token_guards_everything_but_health_and_none_means_loopback_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("store");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret-token-0123456789\n").expect("write");
    let (_server, base) = serve(
        &store,
        &["--token-file", token_file.to_str().expect("UTF-8")],
    );
    assert_eq!(call("GET", &format!("{base}/healthz"), None, None).0, 200);
    assert_eq!(call("GET", &format!("{base}/v1/tasks"), None, None).0, 401);
    assert_eq!(
        call(
            "GET",
            &format!("{base}/metrics"),
            Some("wrong-token!"),
            None
        )
        .0,
        401
    );
    assert_eq!(
        call(
            "GET",
            &format!("{base}/v1/tasks"),
            Some("s3cret-token-0123456789"),
            None
        )
        .0,
        200
    );

    let out = Command::new(env!("CARGO_BIN_EXE_ptxbench"))
        .args([
            "serve",
            "--store",
            store.to_str().expect("UTF-8"),
            "--bind",
            "0.0.0.0:0",
        ])
        .env_remove("PTXBENCH_SERVE_TOKEN")
        .current_dir(root())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("loopback only"),
        "{stderr}"
    );
}

/// A Redis for the test: `PTXBENCH_TEST_REDIS` (CI starts one), else a `redis-server` on a
/// free port started here; `None` (skip) when there is none, unless `PTXBENCH_REQUIRE_REDIS=1`.
fn redis(test: &str) -> Option<(String, Option<Proc>)> {
    if let Ok(url) = std::env::var("PTXBENCH_TEST_REDIS") {
        return Some((url, None));
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let started = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .spawn();
    match started {
        Ok(child) => {
            let url = format!("redis://127.0.0.1:{port}");
            let deadline = Instant::now() + Duration::from_secs(10);
            while Connection::open(&url).is_err() {
                assert!(Instant::now() < deadline, "redis-server did not start");
                std::thread::sleep(Duration::from_millis(50));
            }
            Some((url, Some(Proc { child })))
        }
        Err(e) => {
            assert!(
                std::env::var_os("PTXBENCH_REQUIRE_REDIS").is_none_or(|v| v != "1"),
                "{test}: redis-server required: {e}"
            );
            eprintln!("SKIP {test}: no redis-server ({e})");
            None
        }
    }
}

/// A stream prefix of its own, so that tests sharing one Redis never see each other's jobs.
fn stream(test: &str) -> String {
    format!(
        "t-{test}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    )
}

#[test]
fn redis_workers_return_records_and_a_job_that_kills_workers_ends_with_a_verdict() {
    let Some((url, _redis)) = redis("redis_workers") else {
        return;
    };
    let prefix = stream("workers");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("store");
    let (_server, base) = serve(&store, &["--queue", &url, "--stream", &prefix]);

    // A kernel that passes the static check (it needs a GPU next), taken by three workers
    // that die holding it: one reads it, two more take it over.
    let kernel = std::fs::read_to_string(root().join("tasks/candidates/nvcc_simt_gemm/kernel.ptx"))
        .expect("read");
    let plan = std::fs::read_to_string(root().join("tasks/candidates/nvcc_simt_gemm/plan.yaml"))
        .expect("read");
    let (status, _, v) = post(
        &format!("{base}/v1/evaluations"),
        &json!({"task": TASK, "kernel": kernel, "plan": plan, "seed": 3}),
    );
    assert_eq!(status, 202, "{v}");
    let killer = v["id"].as_str().expect("an id").to_string();
    let mut c = Connection::open(&url).expect("redis");
    let jobs = format!("{prefix}:jobs");
    let read = c
        .call(&[
            b"XREADGROUP",
            b"GROUP",
            b"workers",
            b"dead-1",
            b"COUNT",
            b"1",
            b"STREAMS",
            jobs.as_bytes(),
            b">",
        ])
        .expect("read");
    let entry = ptxbench::serve::resp::entries(&read.items()[0].items()[1]);
    assert_eq!(entry.len(), 1, "{read:?}");
    for dead in ["dead-2", "dead-3"] {
        c.call(&[
            b"XCLAIM",
            jobs.as_bytes(),
            b"workers",
            dead.as_bytes(),
            b"0",
            entry[0].id.as_bytes(),
        ])
        .expect("claim");
    }

    // Then jobs the static check decides, and two live workers.
    let items: Vec<Value> = (0..6)
        .map(|i| json!({"task": TASK, "response": format!("no code {i}"), "seed": i}))
        .collect();
    let (status, _, v) = post(&format!("{base}/v1/batches"), &json!({"items": items}));
    assert_eq!(status, 202, "{v}");
    let worker = |n: &str| {
        let ws = dir.path().join(n);
        spawn(&[
            "worker",
            "--queue",
            &url,
            "--stream",
            &prefix,
            "--claim-after",
            "1",
            "--max-deliveries",
            "3",
            "--store",
            ws.to_str().expect("UTF-8"),
        ])
    };
    let (_w1, _w2) = (worker("w1"), worker("w2"));
    let s = ptxbench::store::Store::open(&store);
    for id in v["ids"].as_array().expect("ids") {
        let r = wait(&base, id.as_str().expect("an id"));
        assert_eq!(
            (r["state"].as_str(), r["reward"]["verdict"].as_str()),
            (Some("done"), Some("extraction")),
            "{r}"
        );
        assert_eq!(r["results"], 1, "{r}");
        // The worker's record and its closure are in the server's store.
        let d: ptxbench::digest::Digest = r["record_digest"]
            .as_str()
            .expect("digest")
            .parse()
            .expect("hex");
        let walk = ptxbench::store::closure::closure(
            &s,
            &[ptxbench::store::closure::Root {
                digest: d,
                label: "test".into(),
                expect: None,
            }],
        );
        assert!(walk.is_complete(), "{:?}", walk.problems);
    }
    // The harness gave up on it: no verdict on the candidate, no reward, retryable.
    let r = wait(&base, &killer);
    assert_eq!(
        (r["state"].as_str(), r["retryable"].as_bool()),
        (Some("harness_failure"), Some(true)),
        "{r}"
    );
    assert!(r["reward"].is_null(), "{r}");
    let message = r["error"].as_str().expect("a message");
    assert!(message.contains("delivered 4 times"), "{message}");

    // Everything acknowledged and deleted: nothing left to deliver.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let pending = c.call(&[b"XLEN", jobs.as_bytes()]).expect("xlen");
        if pending == Reply::Int(0) {
            break;
        }
        assert!(Instant::now() < deadline, "jobs left: {pending:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[path = "../support/canned.rs"]
mod canned;

#[test]
fn generate_evaluates_through_a_service_when_its_manifest_names_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_server, base) = serve(&dir.path().join("service-store"), &[]);
    // A model that answers with the known-good SIMT GEMM: it passes the static check, so its
    // GPU part goes to the service (which, without a GPU, records `other: no GPU`).
    let cand = root().join("tasks/candidates/simt/gemm");
    let read = |f: &str| std::fs::read_to_string(cand.join(f)).expect("candidate file");
    let answers = dir.path().join("canned");
    std::fs::create_dir(&answers).expect("mkdir");
    std::fs::write(
        answers.join("turn-0.md"),
        format!(
            "```cuda\n{}```\n\n```yaml\n{}```\n",
            read("kernel.cu"),
            read("plan.yaml")
        ),
    )
    .expect("answer");
    let chat = canned::CannedServer::start(&answers, 0).expect("canned server");
    let manifest = format!(
        "generate: 1\nname: via-service\ntasks: [{TASK}]\narchs: [sm_90a]\nvariants: [1]\nreplicas: 1\nturn_limits: [1]\neval: {{endpoint: \"{base}\", timeout_s: 60}}\nmodels:\n  - {{name: canned-model, endpoint: \"{}\", timeout_s: 5}}\n",
        chat.url()
    );
    let gen_path = dir.path().join("gen.yaml");
    std::fs::write(&gen_path, manifest).expect("manifest");
    let out = Command::new(env!("CARGO_BIN_EXE_ptxbench"))
        .arg("--tasks")
        .arg(root().join("tasks"))
        .arg("generate")
        .arg(&gen_path)
        .arg("--out")
        .arg(dir.path().join("out"))
        .arg("--store")
        .arg(dir.path().join("artifacts"))
        .output()
        .expect("generate runs");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The service made one record, of the PTX that generate's static check produced.
    let (_, _, metrics) = call("GET", &format!("{base}/metrics"), None, None);
    let metrics = metrics.as_str().expect("text").to_string();
    // Without a GPU here the evaluation is the harness's failure: counted as such, never as a
    // verdict (on a GPU machine it is an evaluation).
    assert!(
        metrics.contains("ptxbench_evaluations_total 1\n")
            || metrics.contains("ptxbench_harness_failures_total 1\n"),
        "{metrics}\n{log}"
    );
    // Generate's own record carries the service's outcome.
    let store = ptxbench::store::Store::open(dir.path().join("artifacts"));
    let records: Vec<_> = store
        .list()
        .expect("list")
        .into_iter()
        .filter_map(|d| ptxbench::record::load_record(&store, &d).ok())
        .collect();
    assert_eq!(records.len(), 1, "{log}");
    assert_eq!(
        records[0].verdict,
        ptxbench::record::Verdict::Other,
        "{log}"
    );
    assert!(
        records[0].outcome.message.contains("no GPU"),
        "{}",
        records[0].outcome.message
    );
}

#[test]
fn a_service_record_is_the_record_run_makes_of_the_same_pair() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cand = root().join("tasks/candidates/nvcc_simt_gemm");
    // A real kernel with a line that is not PTX: the static check decides it, so `run` needs
    // no GPU either.
    let kernel =
        std::fs::read_to_string(cand.join("kernel.ptx")).expect("kernel") + "\nthis is not ptx;\n";
    let plan = std::fs::read_to_string(cand.join("plan.yaml")).expect("plan");
    std::fs::write(dir.path().join("kernel.ptx"), &kernel).expect("write");
    std::fs::write(dir.path().join("plan.yaml"), &plan).expect("write");
    std::fs::write(
        dir.path().join("list.yaml"),
        format!("name: same\narch: sm_90a\nevaluations:\n  - {{name: broken, entry: service, kernel: kernel.ptx, plan: plan.yaml, tasks: [{TASK}]}}\n"),
    )
    .expect("write");
    let run_store = dir.path().join("run-store");
    let out = Command::new(env!("CARGO_BIN_EXE_ptxbench"))
        .arg("run")
        .arg(dir.path().join("list.yaml"))
        .args(["--seed", "9", "--store"])
        .arg(&run_store)
        .arg("--out")
        .arg(dir.path().join("run"))
        .current_dir(root())
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let index: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("run/index.json")).expect("index"))
            .expect("JSON");
    let digest: ptxbench::digest::Digest = index["records"]
        .as_object()
        .expect("records")
        .values()
        .next()
        .expect("one")
        .as_str()
        .expect("hex")
        .parse()
        .expect("digest");
    let ran: Value = serde_json::from_slice(
        &ptxbench::store::Store::open(&run_store)
            .get(&digest)
            .expect("record"),
    )
    .expect("JSON");

    let (_server, base) = serve(&dir.path().join("service-store"), &[]);
    let (_, _, v) = post(
        &format!("{base}/v1/evaluations"),
        &json!({"task": TASK, "kernel": kernel, "plan": plan, "seed": 9}),
    );
    let served = wait(&base, v["id"].as_str().expect("an id"));
    assert_eq!(served["reward"]["verdict"], "compilation", "{served}");
    let mut served = served["record"].clone();
    let mut ran = ran;
    // What only a run list names.
    for r in [&mut served, &mut ran] {
        r.as_object_mut().expect("object").remove("evaluation");
    }
    assert_eq!(served, ran);
}

#[test]
fn a_server_started_again_keeps_the_results_of_jobs_queued_before() {
    let Some((url, _redis)) = redis("restart") else {
        return;
    };
    let prefix = stream("restart");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("store");
    let sub = json!({"task": TASK, "response": "queued before a restart", "seed": 1});
    let (first, base) = serve(&store, &["--queue", &url, "--stream", &prefix]);
    let (status, _, v) = post(&format!("{base}/v1/evaluations"), &sub);
    assert_eq!(status, 202, "{v}");
    let id = v["id"].as_str().expect("an id").to_string();
    assert_eq!(id.len(), 32, "128 random bits: {id}");
    drop(first);
    // The job is evaluated while the new server runs: it knows the job's id from its log.
    let (_second, base) = serve(&store, &["--queue", &url, "--stream", &prefix]);
    let ws = dir.path().join("w");
    let _worker = spawn(&[
        "worker",
        "--queue",
        &url,
        "--stream",
        &prefix,
        "--store",
        ws.to_str().expect("UTF-8"),
    ]);
    let r = wait(&base, &id);
    assert_eq!(
        (r["state"].as_str(), r["reward"]["verdict"].as_str()),
        (Some("done"), Some("extraction")),
        "{r}"
    );
    let (_, _, v) = post(&format!("{base}/v1/evaluations"), &sub);
    let r = wait(&base, v["id"].as_str().expect("an id"));
    assert_eq!(
        (r["cached"].as_bool(), r["reward"]["verdict"].as_str()),
        (Some(true), Some("extraction")),
        "{r}"
    );
}

// Issue 56: the service on a network. Every test below talks to the real server (and, where
// it says so, the real Redis and workers) over loopback.

/// Sends raw bytes on a new connection and returns what came back before the server closed it
/// or `wait` passed.
fn raw(addr: &str, bytes: &[u8], wait: Duration) -> String {
    use std::io::{Read as _, Write as _};
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(wait)).expect("timeout");
    s.write_all(bytes).expect("write");
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let start = Instant::now();
    while start.elapsed() < wait {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn host(base: &str) -> String {
    base.trim_start_matches("http://").to_string()
}

/// Finding 1: `Content-Length: 100000000000000` on `GET /healthz` aborted the process, and
/// `2^64-1` panicked a handler thread (64 of them ended the server).
#[test]
fn issue_56_a_huge_content_length_crashes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut server, base) = serve(&dir.path().join("store"), &[]);
    let addr = host(&base);
    for length in ["100000000000000", "18446744073709551615"] {
        for _ in 0..70 {
            let _ = raw(
                &addr,
                format!("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n")
                    .as_bytes(),
                Duration::from_millis(50),
            );
        }
        let post = raw(
            &addr,
            format!("POST /v1/evaluations HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n")
                .as_bytes(),
            Duration::from_secs(2),
        );
        // Refused before a byte of it is read: 413, or 431 where hyper finds no length in it.
        assert!(
            post.starts_with("HTTP/1.1 413") || post.starts_with("HTTP/1.1 431"),
            "{post}"
        );
    }
    assert!(
        server.child.try_wait().expect("status").is_none(),
        "the server died"
    );
    assert_eq!(call("GET", &format!("{base}/healthz"), None, None).0, 200);
}

/// Finding 2: 64 POSTs that announced a body and sent none held every handler thread, and
/// `/healthz` timed out.
#[test]
fn issue_56_slow_clients_hold_nothing_another_client_needs() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().expect("temp dir");
    let (_server, base) = serve(&dir.path().join("store"), &["--threads", "4"]);
    let addr = host(&base);
    let mut held = Vec::new();
    for i in 0..200 {
        let mut s = std::net::TcpStream::connect(&addr).expect("connect");
        let head = if i % 2 == 0 {
            // A body announced and never sent.
            "POST /v1/evaluations HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n{\"ta"
        } else {
            // A head never finished.
            "POST /v1/evaluations HTTP/1.1\r\nHost: x\r\nContent-"
        };
        s.write_all(head.as_bytes()).expect("write");
        held.push(s);
    }
    let start = Instant::now();
    let (status, _, v) = call("GET", &format!("{base}/healthz"), None, None);
    assert_eq!(status, 200, "{v}");
    let (status, _, _) = call("GET", &format!("{base}/v1/tasks"), None, None);
    assert_eq!(status, 200);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "answered in {:?}",
        start.elapsed()
    );
    // A body that never comes ends in a 408 (after the body timeout), and the connection is
    // closed: nothing is held for as long as the sender likes.
    drop(held);
}

/// Finding 3: three pipelined POSTs on one connection made three jobs and got one response.
#[test]
fn issue_56_pipelined_requests_get_a_response_each() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_server, base) = serve(&dir.path().join("store"), &[]);
    let mut bytes = Vec::new();
    for i in 0..3 {
        let body =
            json!({"task": TASK, "response": format!("pipelined {i}"), "seed": i}).to_string();
        bytes.extend_from_slice(
            format!(
                "POST /v1/evaluations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
    }
    let out = raw(&host(&base), &bytes, Duration::from_secs(3));
    assert_eq!(out.matches("HTTP/1.1 202").count(), 3, "{out}");
}

/// A long-poll holds no thread: with 2 blocking threads, 30 clients waiting on a job that
/// never finishes (Redis, no worker) leave the server free for everyone else.
#[test]
fn issue_56_long_polls_hold_no_thread() {
    let Some((url, _redis)) = redis("long_polls") else {
        return;
    };
    let prefix = stream("long-polls");
    let dir = tempfile::tempdir().expect("temp dir");
    let (_server, base) = serve(
        &dir.path().join("store"),
        &[
            "--queue",
            &url,
            "--stream",
            &prefix,
            "--threads",
            "2",
            "--max-queue",
            "2",
        ],
    );
    let (status, _, v) = post(
        &format!("{base}/v1/evaluations"),
        &json!({"task": TASK, "response": "never evaluated", "seed": 1}),
    );
    assert_eq!(status, 202, "{v}");
    let id = v["id"].as_str().expect("id").to_string();
    let waiters: Vec<_> = (0..30)
        .map(|_| {
            let url = format!("{base}/v1/evaluations/{id}?wait=8");
            std::thread::spawn(move || call("GET", &url, None, None).0)
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let start = Instant::now();
    let (status, _, _) = post(
        &format!("{base}/v1/evaluations"),
        &json!({"task": TASK, "response": "another client", "seed": 2}),
    );
    assert_eq!(status, 202);
    assert_eq!(call("GET", &format!("{base}/v1/tasks"), None, None).0, 200);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    for w in waiters {
        assert_eq!(
            w.join().expect("waiter"),
            202,
            "still queued after the wait"
        );
    }
    // The queue is full (2 jobs, no worker): a submission that fits later is a 429 with
    // Retry-After.
    let (status, retry, v) = post(
        &format!("{base}/v1/evaluations"),
        &json!({"task": TASK, "response": "a third", "seed": 3}),
    );
    assert_eq!(status, 429, "{v}");
    assert!(
        retry.is_some_and(|r| r.parse::<u32>().is_ok_and(|s| s > 0)),
        "{v}"
    );
}

/// Finding 2: a paused Redis stalled every request, `/healthz` included, because the push
/// happened with the job table locked.
#[test]
fn issue_56_a_paused_redis_stalls_only_the_submissions_waiting_on_it() {
    let Some((url, _redis)) = redis("paused") else {
        return;
    };
    let prefix = stream("paused");
    let dir = tempfile::tempdir().expect("temp dir");
    let (_server, base) = serve(
        &dir.path().join("store"),
        &["--queue", &url, "--stream", &prefix],
    );
    let mut c = Connection::open(&url).expect("redis");
    c.call(&[b"CLIENT", b"PAUSE", b"3000", b"WRITE"])
        .expect("pause");
    let submit = {
        let url = format!("{base}/v1/evaluations");
        std::thread::spawn(move || {
            post(
                &url,
                &json!({"task": TASK, "response": "while paused", "seed": 9}),
            )
            .0
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    let (status, _, v) = call("GET", &format!("{base}/healthz"), None, None);
    assert_eq!(status, 200, "{v}");
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(
        submit.join().expect("submit"),
        202,
        "queued once Redis is back"
    );
}

/// Findings on Redis: anyone who can write to it answered a queued job first with a made-up
/// record (kept and cached), answered a job nobody had submitted yet, and deleted another
/// job's stream entry by naming it. None of it counts now; a real worker's result does.
#[test]
fn issue_56_a_result_not_made_by_a_worker_is_dropped() {
    let Some((url, _redis)) = redis("forged") else {
        return;
    };
    let prefix = stream("forged");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("store");
    let (_server, base) = serve(&store, &["--queue", &url, "--stream", &prefix]);
    let sub = json!({"task": TASK, "response": "an honest submission", "seed": 5});
    let (status, _, v) = post(&format!("{base}/v1/evaluations"), &sub);
    assert_eq!(status, 202, "{v}");
    let id = v["id"].as_str().expect("id").to_string();
    let (_, _, other) = post(
        &format!("{base}/v1/evaluations"),
        &json!({"task": TASK, "response": "another job", "seed": 6}),
    );
    let other = other["id"].as_str().expect("id").to_string();
    let mut c = Connection::open(&url).expect("redis");
    let jobs = format!("{prefix}:jobs");
    let results = format!("{prefix}:results");
    let listed = c
        .call(&[b"XRANGE", jobs.as_bytes(), b"-", b"+"])
        .expect("xrange");
    let entries = ptxbench::serve::resp::entries(&listed);
    assert_eq!(entries.len(), 2);
    // A made-up record: `correct`, and an answer object the forger stored with it.
    let record = br#"{"made":"up"}"#;
    let digest = ptxbench::digest::Digest::of(record);
    let forged = |job: &str, mac: &str| {
        json!({
            "job": job,
            "entry": entries[1].id,
            "worker": "forger",
            "result": {"Ok": {"record": digest.hex(), "feedback": digest.hex(), "verdict": "correct", "gpu_seconds": 1.0}},
            "mac": mac,
        })
        .to_string()
    };
    for meta in [
        forged(&id, &"0".repeat(64)),
        forged(&id, "not hex"),
        forged("00000000000000000000000000000000", &"0".repeat(64)),
    ] {
        c.call(&[
            b"XADD",
            results.as_bytes(),
            b"*",
            b"meta",
            meta.as_bytes(),
            b"o0",
            record,
        ])
        .expect("xadd");
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, _, m) = call("GET", &format!("{base}/metrics"), None, None);
        if m.as_str()
            .is_some_and(|m| m.contains("ptxbench_refused_results_total 3\n"))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the forged results were not refused: {m}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Nothing answered, nothing deleted.
    let (status, _, v) = call("GET", &format!("{base}/v1/evaluations/{id}"), None, None);
    assert_eq!((status, v["state"].as_str()), (202, Some("queued")), "{v}");
    assert_eq!(
        c.call(&[b"XLEN", jobs.as_bytes()]).expect("xlen"),
        Reply::Int(2),
        "the other job's entry is still there"
    );
    // A job added by someone else is not run by a worker, and a real worker answers both.
    c.call(&[
        b"XADD",
        jobs.as_bytes(),
        b"*",
        b"job",
        br#"{"not":"the server's"}"#,
    ])
    .expect("xadd");
    let ws = dir.path().join("w");
    let _worker = spawn(&[
        "worker",
        "--queue",
        &url,
        "--stream",
        &prefix,
        "--store",
        ws.to_str().expect("UTF-8"),
    ]);
    for job in [&id, &other] {
        let r = wait(&base, job);
        assert_eq!(
            (
                r["state"].as_str(),
                r["reward"]["verdict"].as_str(),
                r["results"].as_u64()
            ),
            (Some("done"), Some("extraction"), Some(1)),
            "{r}"
        );
    }
    // The forged record never entered the server's store.
    assert!(!ptxbench::store::Store::open(&store).contains(&digest));
}

/// Findings on reading: job ids were sequential and any token holder read every client's
/// jobs; a 1-character token was accepted.
#[test]
fn issue_56_a_client_reads_only_its_own_jobs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("store");
    let tokens = dir.path().join("tokens");
    std::fs::write(
        &tokens,
        "client-a-token-0123456789\nclient-b-token-0123456789\n",
    )
    .expect("write");
    let (_server, base) = serve(&store, &["--token-file", tokens.to_str().expect("UTF-8")]);
    let body =
        serde_json::to_vec(&json!({"task": TASK, "response": "mine", "seed": 1})).expect("json");
    let (status, _, v) = call(
        "POST",
        &format!("{base}/v1/evaluations"),
        Some("client-a-token-0123456789"),
        Some(&body),
    );
    assert_eq!(status, 202, "{v}");
    let id = v["id"].as_str().expect("id");
    assert!(
        id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit()),
        "{id}"
    );
    let url = format!("{base}/v1/evaluations/{id}?wait=30");
    let (status, _, _) = call("GET", &url, Some("client-a-token-0123456789"), None);
    assert_eq!(status, 200);
    let (status, _, v) = call("GET", &url, Some("client-b-token-0123456789"), None);
    assert_eq!(status, 404, "{v}");

    std::fs::write(&tokens, "x\n").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_ptxbench"))
        .args([
            "serve",
            "--store",
            store.to_str().expect("UTF-8"),
            "--token-file",
        ])
        .arg(&tokens)
        .current_dir(root())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("at least 16"),
        "{stderr}"
    );
}

/// Finding 4 and the input findings: an unknown workload was dropped and an evaluation that
/// ran none was `correct`; `["M70,M232"]` matched `["M70","M232"]`'s cache key; duplicate
/// keys (the last won) and control characters in `entry` were accepted.
#[test]
fn issue_56_inputs_mean_what_they_say() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_server, base) = serve(&dir.path().join("store"), &[]);
    let url = format!("{base}/v1/evaluations");
    for workloads in [json!(["M7O"]), json!(["M70,M232"])] {
        let (status, _, v) = post(
            &url,
            &json!({"task": TASK, "response": "x", "workloads": workloads}),
        );
        assert_eq!(
            (status, v["field"].as_str()),
            (400, Some("workloads[0]")),
            "{v}"
        );
        let e = v["error"].as_str().unwrap_or_default();
        assert!(
            e.contains("M70") && e.contains("M8192"),
            "names the valid ones: {e}"
        );
    }
    let dup = format!(r#"{{"task": "{TASK}", "response": "x", "seed": 1, "seed": 2}}"#);
    let (status, _, v) = call("POST", &url, None, Some(dup.as_bytes()));
    assert_eq!(status, 400, "{v}");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("`seed` is given twice")),
        "{v}"
    );
    for entry in ["a\u{0}b", "two\nlines", "<script>x</script>"] {
        let (status, _, v) = post(
            &url,
            &json!({"task": TASK, "response": "x", "entry": entry}),
        );
        assert_eq!(
            (status, v["field"].as_str()),
            (400, Some("entry")),
            "{entry:?}: {v}"
        );
    }
    // The valid list works, and means exactly those workloads.
    let (status, _, v) = post(
        &url,
        &json!({"task": TASK, "response": "x", "workloads": ["M70", "M232"]}),
    );
    assert_eq!(status, 202, "{v}");
}

/// Finding 5: a client-chosen seed was recorded exactly like a drawn one, though it fixes every
/// input of the evaluation in advance. It is marked in the record and the reward now.
#[test]
fn issue_56_a_client_chosen_seed_is_marked() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_server, base) = serve(&dir.path().join("store"), &[]);
    let url = format!("{base}/v1/evaluations");
    let (_, _, v) = post(
        &url,
        &json!({"task": TASK, "response": "chosen", "seed": 5}),
    );
    let chosen = wait(&base, v["id"].as_str().expect("id"));
    assert_eq!(chosen["record"]["seed_given"], true, "{chosen}");
    assert_eq!(chosen["reward"]["seed_given"], true, "{chosen}");
    let (_, _, v) = post(&url, &json!({"task": TASK, "response": "drawn"}));
    let drawn = wait(&base, v["id"].as_str().expect("id"));
    assert!(drawn["record"].get("seed_given").is_none(), "{drawn}");
    assert_eq!(drawn["reward"]["seed_given"], false, "{drawn}");
}

/// Finding 6: a harness failure (no GPU, a dead worker) came back as verdict `other` with reward
/// 0, the same as a model's failure, and was cached: resubmitting returned the "no GPU" record.
/// It is a state of its own now, with no reward, never cached; /healthz says whether any worker
/// is alive.
#[test]
fn issue_56_a_harness_failure_is_no_verdict_and_is_never_cached() {
    let Some((url, _redis)) = redis("harness") else {
        return;
    };
    let prefix = stream("harness");
    let dir = tempfile::tempdir().expect("temp dir");
    let (_server, base) = serve(
        &dir.path().join("store"),
        &["--queue", &url, "--stream", &prefix],
    );
    let (_, _, health) = call("GET", &format!("{base}/healthz"), None, None);
    assert_eq!(health["status"], "no_workers", "{health}");
    let ws = dir.path().join("w");
    let _worker = spawn(&[
        "worker",
        "--queue",
        &url,
        "--stream",
        &prefix,
        "--store",
        ws.to_str().expect("UTF-8"),
    ]);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, _, h) = call("GET", &format!("{base}/healthz"), None, None);
        if h["workers_alive"] == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the worker never showed: {h}");
        std::thread::sleep(Duration::from_millis(200));
    }
    if ptxbench::cuda::driver::device_count().unwrap_or(0) > 0 {
        eprintln!(
            "SKIP the no-GPU half of issue_56_a_harness_failure_is_no_verdict_and_is_never_cached: this machine has a GPU"
        );
        return;
    }
    // A kernel that passes the static check needs the GPU this machine lacks.
    let cand = root().join("tasks/candidates/nvcc_simt_gemm");
    let sub = json!({
        "task": TASK,
        "kernel": std::fs::read_to_string(cand.join("kernel.ptx")).expect("kernel"),
        "plan": std::fs::read_to_string(cand.join("plan.yaml")).expect("plan"),
        "seed": 3,
    });
    for round in 0..2 {
        let (status, _, v) = post(&format!("{base}/v1/evaluations"), &sub);
        assert_eq!(status, 202, "{v}");
        let r = wait(&base, v["id"].as_str().expect("id"));
        assert_eq!(r["state"], "harness_failure", "round {round}: {r}");
        assert_eq!(
            r["cached"], false,
            "round {round}: never answered from a cache: {r}"
        );
        assert!(r["reward"].is_null(), "{r}");
        let error = r["error"].as_str().expect("why");
        assert!(error.contains("no GPU") || error.contains("GPU"), "{error}");
        let home = std::env::var("HOME").unwrap_or_default();
        assert!(
            home.len() < 2 || !error.contains(&home),
            "a host path: {error}"
        );
    }
}

// Training loops: cancelling, deadlines, idempotency keys, many states at once, the caps, and
// the Python client. Every test talks to the real server (and Redis, where the queue matters)
// over loopback.

const TOKEN_A: &str = "client-a-token-0123456789";
const TOKEN_B: &str = "client-b-token-0123456789";

/// A token file with two clients, A and B.
fn two_clients(dir: &Path) -> String {
    let tokens = dir.join("tokens");
    std::fs::write(&tokens, format!("{TOKEN_A}\n{TOKEN_B}\n")).expect("write");
    tokens.to_str().expect("UTF-8").to_string()
}

/// Submits `body` as `token`'s and returns the id (202 expected).
fn submit_as(base: &str, token: Option<&str>, body: &Value) -> String {
    let (status, _, v) = call(
        "POST",
        &format!("{base}/v1/evaluations"),
        token,
        Some(&serde_json::to_vec(body).expect("JSON")),
    );
    assert_eq!(status, 202, "{v}");
    v["id"].as_str().expect("an id").to_string()
}

/// The job ids in the jobs stream now.
fn stream_jobs(c: &mut Connection, prefix: &str) -> Vec<String> {
    let listed = c
        .call(&[b"XRANGE", format!("{prefix}:jobs").as_bytes(), b"-", b"+"])
        .expect("xrange");
    ptxbench::serve::resp::entries(&listed)
        .iter()
        .filter_map(|e| e.get("job"))
        .filter_map(|j| serde_json::from_slice::<Value>(j).ok())
        .filter_map(|j| j["id"].as_str().map(str::to_string))
        .collect()
}

/// A metric's value (`name` with its labels, if any), read with `token`.
fn metric_as(base: &str, token: Option<&str>, name: &str) -> f64 {
    let (_, _, m) = call("GET", &format!("{base}/metrics"), token, None);
    let m = m.as_str().expect("text").to_string();
    m.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{m}"))
}

/// A metric's value on a server without tokens.
fn metric(base: &str, name: &str) -> f64 {
    metric_as(base, None, name)
}

/// Polls job `id` until `until` holds of its view, for at most `secs` seconds.
fn poll_until(
    base: &str,
    token: Option<&str>,
    id: &str,
    secs: u64,
    until: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let (_, _, v) = call("GET", &format!("{base}/v1/evaluations/{id}"), token, None);
        if until(&v) {
            return v;
        }
        assert!(Instant::now() < deadline, "job {id}: {v}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn cancel_takes_a_queued_job_out_of_its_stream_and_a_later_result_is_dropped() {
    let Some((url, _redis)) = redis("cancel") else {
        return;
    };
    let prefix = stream("cancel");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("store");
    let tokens = two_clients(dir.path());
    let args = [
        "--queue",
        &url,
        "--stream",
        &prefix,
        "--token-file",
        &tokens,
    ];
    let (server, base) = serve(&store, &args);
    let (a, b) = (Some(TOKEN_A), Some(TOKEN_B));
    let taken = submit_as(
        &base,
        a,
        &json!({"task": TASK, "response": "a worker took me", "seed": 1}),
    );
    let one = submit_as(
        &base,
        a,
        &json!({"task": TASK, "response": "cancel me", "seed": 2}),
    );
    let shared_body = json!({"task": TASK, "response": "shared", "seed": 3});
    let shared = submit_as(&base, a, &shared_body);
    // Another client's identical submission shares its evaluation (no stream entry of its own).
    let follower = submit_as(&base, b, &shared_body);
    let mut c = Connection::open(&url).expect("redis");
    assert_eq!(
        stream_jobs(&mut c, &prefix),
        [taken.as_str(), one.as_str(), shared.as_str()]
    );
    // A worker (holding the workers' secret) reads the first job.
    let jobs = format!("{prefix}:jobs");
    let read = c
        .call(&[
            b"XREADGROUP",
            b"GROUP",
            b"workers",
            b"slow",
            b"COUNT",
            b"1",
            b"STREAMS",
            jobs.as_bytes(),
            b">",
        ])
        .expect("read");
    let entry = ptxbench::serve::resp::entries(&read.items()[0].items()[1])
        .pop()
        .expect("an entry");
    let spec: ptxbench::serve::job::JobSpec =
        serde_json::from_slice(entry.get("job").expect("job")).expect("a job");
    assert_eq!(spec.id, taken);

    let cancel = |id: &str, token: Option<&str>| {
        call(
            "DELETE",
            &format!("{base}/v1/evaluations/{id}"),
            token,
            None,
        )
    };
    // Only its client may cancel it.
    assert_eq!(cancel(&one, b).0, 404);
    let (status, _, v) = cancel(&one, a);
    assert_eq!(
        (status, v["state"].as_str()),
        (200, Some("cancelled")),
        "{v}"
    );
    assert!(
        v["error"].as_str().is_some_and(|e| e.contains("cancelled")),
        "{v}"
    );
    // Its stream entry is gone: no worker will run it. Cancelling again changes nothing.
    assert_eq!(
        stream_jobs(&mut c, &prefix),
        [taken.as_str(), shared.as_str()]
    );
    assert_eq!(cancel(&one, a).0, 200);
    // A job another submission follows is not cancelled; the follower itself may be.
    let (status, _, v) = cancel(&shared, a);
    assert_eq!(status, 409, "{v}");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("1 identical submission")),
        "{v}"
    );
    let (status, _, v) = cancel(&follower, b);
    assert_eq!(
        (status, v["state"].as_str()),
        (200, Some("cancelled")),
        "{v}"
    );
    assert_eq!(
        stream_jobs(&mut c, &prefix),
        [taken.as_str(), shared.as_str()]
    );
    // The job the worker holds: cancelled, its entry deleted; the worker's result, with a
    // valid MAC, comes later and is dropped without changing anything.
    let (status, _, v) = cancel(&taken, a);
    assert_eq!(
        (status, v["state"].as_str()),
        (200, Some("cancelled")),
        "{v}"
    );
    assert_eq!(stream_jobs(&mut c, &prefix), [shared.as_str()]);
    let key = ptxbench::serve::job::WorkerKey::new(WORKER_SECRET).expect("key");
    let result: Result<ptxbench::serve::job::Answer, String> = Err("it ran anyway".into());
    let meta = json!({
        "job": taken,
        "entry": entry.id,
        "worker": "slow",
        "result": result,
        "mac": key.mac(&spec, &result),
    })
    .to_string();
    c.call(&[
        b"XADD",
        format!("{prefix}:results").as_bytes(),
        b"*",
        b"meta",
        meta.as_bytes(),
    ])
    .expect("xadd");
    let deadline = Instant::now() + Duration::from_secs(20);
    while metric_as(&base, a, "ptxbench_dropped_results_total") < 1.0 {
        assert!(Instant::now() < deadline, "the result was not dropped");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, _, v) = call("GET", &format!("{base}/v1/evaluations/{taken}"), a, None);
    assert_eq!(v["state"], "cancelled", "{v}");
    assert_eq!(metric_as(&base, a, "ptxbench_refused_results_total"), 0.0);
    assert_eq!(metric_as(&base, a, "ptxbench_failed_jobs_total"), 0.0);

    // A real worker runs what is left: the shared job, never the cancelled ones.
    let ws = dir.path().join("w");
    let _worker = spawn(&[
        "worker",
        "--queue",
        &url,
        "--stream",
        &prefix,
        "--store",
        ws.to_str().expect("UTF-8"),
    ]);
    let (_, _, v) = call(
        "GET",
        &format!("{base}/v1/evaluations/{shared}?wait=60"),
        a,
        None,
    );
    assert_eq!(
        (v["state"].as_str(), v["results"].as_u64()),
        (Some("done"), Some(1)),
        "{v}"
    );
    // Finished: a 409.
    let (status, _, v) = cancel(&shared, a);
    assert_eq!(status, 409, "{v}");
    assert!(
        v["error"].as_str().is_some_and(|e| e.contains("done")),
        "{v}"
    );
    assert_eq!(metric_as(&base, a, "ptxbench_cancelled_jobs_total"), 3.0);
    std::thread::sleep(Duration::from_millis(500));
    let (_, _, v) = call("GET", &format!("{base}/v1/evaluations/{one}"), a, None);
    assert_eq!(
        (v["state"].as_str(), v["results"].as_u64()),
        (Some("cancelled"), Some(0)),
        "{v}"
    );

    // A server started again on the same store knows how each ended.
    drop(server);
    let (_server, base) = serve(&store, &args);
    for (id, token, state) in [
        (&one, a, "cancelled"),
        (&taken, a, "cancelled"),
        (&follower, b, "cancelled"),
        (&shared, a, "done"),
    ] {
        let (_, _, v) = call("GET", &format!("{base}/v1/evaluations/{id}"), token, None);
        assert_eq!(v["state"], state, "{id}: {v}");
    }
}

#[test]
fn a_job_still_queued_at_its_deadline_expires_and_leaves_the_queue() {
    let Some((url, _redis)) = redis("deadline") else {
        return;
    };
    let prefix = stream("deadline");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("store");
    let args = ["--queue", &url, "--stream", &prefix];
    let (server, base) = serve(&store, &args);
    for bad in [json!(0), json!(86_401), json!(1.5), json!("60")] {
        let (status, _, v) = post(
            &format!("{base}/v1/evaluations"),
            &json!({"task": TASK, "response": "x", "deadline_s": bad}),
        );
        assert_eq!(
            (status, v["field"].as_str()),
            (400, Some("deadline_s")),
            "{v}"
        );
    }
    let sub = |response: &str, seed: u64, deadline: Option<u64>| {
        let mut body = json!({"task": TASK, "response": response, "seed": seed});
        if let Some(d) = deadline {
            body["deadline_s"] = d.into();
        }
        submit_as(&base, None, &body)
    };
    let lone = sub("expires alone", 1, Some(1));
    // Its evaluation is shared by a submission without a deadline: it expires for its client,
    // and the evaluation goes on for the other.
    let leader = sub("expires, shared", 2, Some(1));
    let follower = sub("expires, shared", 2, None);
    // A follower with a deadline expires; the job it followed stays.
    let waiting = sub("waits", 3, None);
    let impatient = sub("waits", 3, Some(1));
    let mut c = Connection::open(&url).expect("redis");
    assert_eq!(
        stream_jobs(&mut c, &prefix),
        [lone.as_str(), leader.as_str(), waiting.as_str()]
    );
    for id in [&lone, &leader, &impatient] {
        let v = poll_until(&base, None, id, 10, |v| v["state"] != "queued");
        assert_eq!(v["state"], "expired", "{v}");
        assert!(
            v["error"]
                .as_str()
                .is_some_and(|e| e.contains("deadline (1 s)")),
            "{v}"
        );
    }
    for id in [&follower, &waiting] {
        let (status, _, v) = call("GET", &format!("{base}/v1/evaluations/{id}"), None, None);
        assert_eq!((status, v["state"].as_str()), (202, Some("queued")), "{v}");
    }
    assert_eq!(
        stream_jobs(&mut c, &prefix),
        [leader.as_str(), waiting.as_str()]
    );
    assert_eq!(metric(&base, "ptxbench_expired_jobs_total"), 3.0);
    // An expired job cannot be cancelled.
    let (status, _, _) = call(
        "DELETE",
        &format!("{base}/v1/evaluations/{lone}"),
        None,
        None,
    );
    assert_eq!(status, 409);

    // A deadline that passes while the server is down: expired at the next start, and its
    // stream entry deleted.
    let offline = sub("expires offline", 4, Some(2));
    assert!(stream_jobs(&mut c, &prefix).contains(&offline));
    drop(server);
    std::thread::sleep(Duration::from_millis(2500));
    let (_server, base) = serve(&store, &args);
    for (id, state) in [
        (&offline, "expired"),
        (&lone, "expired"),
        (&leader, "expired"),
        (&impatient, "expired"),
        (&follower, "queued"),
        (&waiting, "queued"),
    ] {
        let (_, _, v) = call("GET", &format!("{base}/v1/evaluations/{id}"), None, None);
        assert_eq!(v["state"], state, "{id}: {v}");
    }
    assert_eq!(
        stream_jobs(&mut c, &prefix),
        [leader.as_str(), waiting.as_str()]
    );

    // A worker: the follower gets the evaluation its expired leader went on with.
    let ws = dir.path().join("w");
    let _worker = spawn(&[
        "worker",
        "--queue",
        &url,
        "--stream",
        &prefix,
        "--store",
        ws.to_str().expect("UTF-8"),
    ]);
    for id in [&follower, &waiting] {
        let r = wait(&base, id);
        assert_eq!(
            (r["state"].as_str(), r["reward"]["verdict"].as_str()),
            (Some("done"), Some("extraction")),
            "{r}"
        );
    }
    let (_, _, v) = call(
        "GET",
        &format!("{base}/v1/evaluations/{leader}"),
        None,
        None,
    );
    assert_eq!(v["state"], "expired", "{v}");
}

#[test]
fn idempotency_keys_status_of_many_and_limits() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("store");
    let tokens = two_clients(dir.path());
    let args = [
        "--token-file",
        tokens.as_str(),
        "--max-batch",
        "3",
        "--max-queue",
        "50",
        "--max-body",
        "100000",
        "--timeout",
        "77",
    ];
    let (server, base) = serve(&store, &args);
    let (a, b) = (Some(TOKEN_A), Some(TOKEN_B));

    // The caps.
    let (status, _, lim) = call("GET", &format!("{base}/v1/limits"), a, None);
    assert_eq!(status, 200, "{lim}");
    for (k, v) in [
        ("max_batch", json!(3)),
        ("max_queue", json!(50)),
        ("max_body", json!(100_000)),
        ("timeout_s", json!(77)),
        ("max_wait_s", json!(60.0)),
        ("max_connections", json!(1024)),
        ("header_timeout_s", json!(10.0)),
        ("body_timeout_s", json!(30.0)),
        ("min_token_len", json!(16)),
        ("max_deadline_s", json!(86_400)),
        ("max_idempotency_key_len", json!(200)),
    ] {
        assert_eq!(lim[k], v, "{k}: {lim}");
    }
    assert_eq!(call("GET", &format!("{base}/v1/limits"), None, None).0, 401);

    // The same key and request: the same id, no new job.
    let jobs_logged = || {
        std::fs::read_to_string(store.join("serve/jobs"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"owner\"") && l.contains("\"key\""))
            .count()
    };
    let url = format!("{base}/v1/evaluations");
    let body =
        serde_json::to_vec(&json!({"task": TASK, "response": "once", "seed": 1})).expect("json");
    let with_key = |key: &str, token: Option<&str>, url: &str, body: &[u8]| {
        send("POST", url, token, &[("Idempotency-Key", key)], Some(body))
    };
    let (status, _, v) = with_key("key 1", a, &url, &body);
    assert_eq!(status, 202, "{v}");
    let id = v["id"].as_str().expect("id").to_string();
    let (status, _, v) = with_key("key 1", a, &url, &body);
    assert_eq!((status, v["id"].as_str()), (202, Some(id.as_str())), "{v}");
    assert_eq!(jobs_logged(), 1);
    // Another request with it: 422, naming the key; nothing queued.
    let other =
        serde_json::to_vec(&json!({"task": TASK, "response": "twice", "seed": 1})).expect("json");
    let (status, _, v) = with_key("key 1", a, &url, &other);
    assert_eq!(
        (status, v["field"].as_str()),
        (422, Some("Idempotency-Key")),
        "{v}"
    );
    assert!(
        v["error"].as_str().is_some_and(|e| e.contains("`key 1`")),
        "{v}"
    );
    assert_eq!(jobs_logged(), 1);
    // Another client's key of the same name is its own.
    let (status, _, v) = with_key("key 1", b, &url, &body);
    assert_eq!(status, 202, "{v}");
    let ids_b = v["id"].as_str().expect("id").to_string();
    assert_ne!(ids_b, id);
    // A batch.
    let batch_url = format!("{base}/v1/batches");
    let batch = serde_json::to_vec(&json!({"items": [
        {"task": TASK, "response": "batch 1", "seed": 1},
        {"task": TASK, "response": "batch 2", "seed": 1},
    ]}))
    .expect("json");
    let (status, _, first) = with_key("key 2", a, &batch_url, &batch);
    assert_eq!(status, 202, "{first}");
    let (_, _, again) = with_key("key 2", a, &batch_url, &batch);
    assert_eq!(first["ids"], again["ids"]);
    assert_eq!(jobs_logged(), 4);
    // The same submission as a batch is another request.
    let one_batch =
        serde_json::to_vec(&json!({"items": [{"task": TASK, "response": "once", "seed": 1}]}))
            .expect("json");
    assert_eq!(with_key("key 1", a, &batch_url, &one_batch).0, 422);
    // Keys are 1 to 200 printable ASCII characters.
    for bad in [String::new(), "k".repeat(201)] {
        let (status, _, v) = with_key(&bad, a, &url, &body);
        assert_eq!(
            (status, v["field"].as_str()),
            (400, Some("Idempotency-Key")),
            "{bad:?}: {v}"
        );
    }
    let raw_body = String::from_utf8(body.clone()).expect("UTF-8");
    let out = raw(
        &host(&base),
        format!(
            "POST /v1/evaluations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN_A}\r\nIdempotency-Key: caf\u{e9}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{raw_body}",
            raw_body.len()
        )
        .as_bytes(),
        Duration::from_secs(2),
    );
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");

    // Many states at once, in order; another client's id and an unknown one are errors there.
    let ids: Vec<String> = first["ids"]
        .as_array()
        .expect("ids")
        .iter()
        .map(|i| i.as_str().expect("id").to_string())
        .collect();
    for i in ids.iter().chain([&id]) {
        let (status, _, _) = call(
            "GET",
            &format!("{base}/v1/evaluations/{i}?wait=60"),
            a,
            None,
        );
        assert_eq!(status, 200);
    }
    let status_url = format!("{base}/v1/evaluations/status");
    let ask = |token: Option<&str>, body: Value| {
        call(
            "POST",
            &status_url,
            token,
            Some(&serde_json::to_vec(&body).expect("json")),
        )
    };
    let (status, _, v) = ask(a, json!({"ids": [ids[0], ids_b, ids[1]]}));
    assert_eq!(status, 200, "{v}");
    let results = v["results"].as_array().expect("results");
    assert_eq!(results.len(), 3);
    assert_eq!(
        (results[0]["id"].as_str(), results[0]["state"].as_str()),
        (Some(ids[0].as_str()), Some("done"))
    );
    assert_eq!(results[0]["reward"]["verdict"], "extraction");
    assert_eq!(
        results[1],
        json!({"id": ids_b, "error": format!("no evaluation `{ids_b}`")})
    );
    assert_eq!(results[2]["id"].as_str(), Some(ids[1].as_str()));
    let (status, _, v) = ask(b, json!({"ids": [ids_b]}));
    assert_eq!(
        (status, v["results"][0]["id"].as_str()),
        (200, Some(ids_b.as_str())),
        "{v}"
    );
    assert!(v["results"][0]["state"].is_string(), "{v}");
    assert_eq!(ask(a, json!({"ids": ["1", "2", "3", "4"]})).0, 413);
    assert_eq!(ask(a, json!({"ids": [1]})).2["field"], "ids[0]");
    assert_eq!(ask(a, json!({"idz": []})).2["field"], "ids");
    assert_eq!(call("GET", &status_url, a, None).0, 405);
    // Cancelling: a finished job is a 409, another client's or an unknown one a 404.
    let delete =
        |i: &str, token| call("DELETE", &format!("{base}/v1/evaluations/{i}"), token, None);
    assert_eq!(delete(&id, a).0, 409);
    assert_eq!(delete(&id, b).0, 404);
    assert_eq!(delete("0123456789abcdef0123456789abcdef", a).0, 404);

    // Keys survive a restart.
    drop(server);
    let (_server, base) = serve(&store, &args);
    let (status, _, v) = with_key("key 1", a, &format!("{base}/v1/evaluations"), &body);
    assert_eq!((status, v["id"].as_str()), (202, Some(id.as_str())), "{v}");
    let (_, _, again) = with_key("key 2", a, &format!("{base}/v1/batches"), &batch);
    assert_eq!(first["ids"], again["ids"]);
    assert_eq!(
        with_key("key 1", a, &format!("{base}/v1/evaluations"), &other).0,
        422
    );
    assert_eq!(jobs_logged(), 4);
}

/// The Python client (standard library only) against a server with embedded workers and one
/// on Redis with no worker (jobs stay queued): `pipeline/python/test_ptxbench_client.py`.
#[test]
fn the_python_client_against_the_real_server() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_embedded, base) = serve(
        &dir.path().join("store"),
        &["--max-queue", "3", "--max-batch", "4"],
    );
    let queued = redis("python_client").map(|(url, redis)| {
        let prefix = stream("python");
        let (server, base) = serve(
            &dir.path().join("queue-store"),
            &["--queue", &url, "--stream", &prefix, "--max-queue", "2"],
        );
        (base, server, redis)
    });
    let mut py = Command::new("python3");
    py.args(["-m", "unittest", "-v", "test_ptxbench_client"])
        .current_dir(root().join("pipeline/python"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PTXBENCH_TEST_SERVER", &base)
        .env(
            "PTXBENCH_TEST_KERNEL",
            root().join("tasks/candidates/nvcc_simt_gemm"),
        )
        .env_remove("PTXBENCH_SERVE_TOKEN");
    if let Some((q, _, _)) = &queued {
        py.env("PTXBENCH_TEST_QUEUE_SERVER", q);
    }
    let out = py.output().expect("python3 runs");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{log}");
    assert!(log.contains("OK"), "{log}");
    if queued.is_some() {
        assert!(!log.contains("skipped"), "{log}");
    }
}
