//! The generation loop against the canned chat server on 127.0.0.1: repair turns, transient
//! HTTP failures, spend caps and resumption.

use ptxbench::digest::Digest;
use ptxbench::engine::Verdict;
use ptxbench::generate::chat::Message;
use ptxbench::generate::journal::Journal;
use ptxbench::record::Record;
use ptxbench::store::Store;

use super::*;
use crate::canned::{CannedServer, Directive};

fn trajectory(store: &Store, journal: &Journal) -> serde_json::Value {
    let d = *journal
        .trajectories
        .values()
        .next()
        .expect("a finished trajectory");
    store.get_json(&d).expect("the trajectory object")
}

fn digests(v: &serde_json::Value) -> Vec<Digest> {
    serde_json::from_value(v.clone()).expect("digests")
}

#[test]
fn repair_turns_are_recorded_linked_and_fed_back() {
    let canned = canned_dir(
        &[
            (0, truncated_answer()),
            (1, NO_BLOCK_ANSWER.to_string()),
            (2, unbound_answer()),
        ],
        "",
    );
    let server = CannedServer::start(canned.path(), 0).expect("server");
    let work = tempfile::tempdir().expect("work");
    // Every answer fails the static check, so the GPU is never asked for (a dry run).
    let (code, stdout, stderr) = generate(
        work.path(),
        &manifest(&server.url(), 1, "[1, 3]", ""),
        &["--allow-no-gpu"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    // Issue 43: each verdict with the stage that decided it; a plan that does not bind is the
    // static check's finding, as `check` reports it.
    assert!(
        stdout.contains("turns recorded: 3 (extraction at static 2, runtime at static 1)"),
        "{stdout}"
    );
    let store = Store::open(work.path().join("artifacts"));
    let journal = Journal::load(&work.path().join("out")).expect("journal");
    assert_eq!(journal.turns.len(), 3, "{stdout}\n{stderr}");
    let t = trajectory(&store, &journal);
    assert_eq!(t["stop"], "turn limit", "{t}");
    let records = digests(&t["record_digests"]);
    assert_eq!(records.len(), 3);
    let recs: Vec<Record> = records
        .iter()
        .map(|d| store.get_json(d).expect("record"))
        .collect();
    assert_eq!(recs[0].verdict, Verdict::Extraction);
    assert_eq!(recs[1].verdict, Verdict::Extraction);
    assert_eq!(recs[2].verdict, Verdict::Runtime);
    assert_eq!(recs[2].outcome.stage, ptxbench::record::Stage::Static);
    assert!(
        recs[2].outcome.message.contains('D'),
        "{}",
        recs[2].outcome.message
    );
    for (i, r) in recs.iter().enumerate() {
        assert_eq!(r.turn, Some(i as u32));
        assert_eq!(r.entry, "Canned Model");
        assert_eq!(r.model.as_deref(), Some("canned-model"));
        assert_eq!(
            r.previous_digest,
            if i == 0 { None } else { Some(records[i - 1]) }
        );
    }
    // The third turn's conversation: system, prompt, then (answer, feedback) twice.
    let convo: Vec<Message> = serde_json::from_slice(
        &store
            .get(&recs[2].prompt_digest.expect("prompt"))
            .expect("blob"),
    )
    .expect("messages");
    let roles: Vec<&str> = convo.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "user", "assistant", "user"]
    );
    assert!(
        convo[3].content.contains("Result: extraction"),
        "{}",
        convo[3].content
    );
    // What happened, not a guess at why (issue 59: the reply's finish reason says that).
    assert!(
        convo[3].content.contains("ends inside a code block"),
        "{}",
        convo[3].content
    );
    assert!(
        convo[3]
            .content
            .contains("executed at run time: not measured")
    );
    assert_eq!(convo[4].content, NO_BLOCK_ANSWER);
    let response = store
        .get(&recs[2].response_digest.expect("response"))
        .expect("blob");
    assert_eq!(String::from_utf8_lossy(&response), unbound_answer());
    // Exchanges: request and reply bodies stored, usage and reasoning tokens read.
    for d in digests(&t["exchange_digests"]) {
        let x: serde_json::Value = store.get_json(&d).expect("exchange");
        assert_eq!(x["usage"]["reasoning_tokens"], 0, "{x}");
        assert!(
            x["usage"]["total_tokens"].as_u64().is_some_and(|n| n > 0),
            "{x}"
        );
        let body: serde_json::Value = serde_json::from_slice(
            &store
                .get(
                    &x["request_body_digest"]
                        .as_str()
                        .expect("digest")
                        .parse()
                        .expect("hex"),
                )
                .expect("request body"),
        )
        .expect("json");
        assert_eq!(body["model"], "canned-model");
        assert_eq!(body["seed"], 7);
        assert_eq!(body["max_tokens"], 4096);
    }
    assert_eq!(server.served().len(), 3);
    let generation: Digest = std::fs::read_to_string(work.path().join("out/generation.digest"))
        .expect("generation.digest")
        .trim()
        .parse()
        .expect("hex");
    assert_closure(&store, generation);
    let run: Digest = std::fs::read_to_string(work.path().join("out/run-sm_90a.digest"))
        .expect("run digest")
        .trim()
        .parse()
        .expect("hex");
    let run: serde_json::Value = store.get_json(&run).expect("run");
    assert_eq!(digests(&run["record_digests"]).len(), 3);
    // The API key is sent, never stored.
    assert_nowhere(work.path(), SECRET);
}

/// Issue 43: a harness failure (here: evaluating without a GPU) is never the model's verdict
/// and never a silent success: the run exits 3 naming it, publishes nothing, and the next run
/// grades the kept answer again without asking the model.
#[test]
fn issue_43_a_harness_failure_is_graded_again_without_a_request() {
    let canned = canned_dir(&[(0, truncated_answer()), (1, good_answer())], "");
    let server = CannedServer::start(canned.path(), 0).expect("server");
    let work = tempfile::tempdir().expect("work");
    let text = manifest(&server.url(), 1, "[1, 4]", "");
    let (code, stdout, stderr) = generate(work.path(), &text, &["--allow-no-gpu"]);
    assert_eq!(code, 3, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("harness failure (not the model's verdict)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("graded again, without a request"),
        "{stderr}"
    );
    assert!(!work.path().join("out/generation.digest").exists());
    let journal = Journal::load(&work.path().join("out")).expect("journal");
    assert!(journal.trajectories.is_empty(), "not finished");
    let turns = journal.turns_of("canned-model/gemm_n4096_k4096/sm_90a/v1/r1");
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[1].verdict, Verdict::Other);
    assert!(turns[1].next_prompt_digest.is_none(), "never fed back");
    let (exchange, first_record) = (turns[1].exchange_digest, turns[1].record_digest);
    assert_eq!(server.served().len(), 2);

    let (code, stdout, stderr) = generate(work.path(), &text, &["--allow-no-gpu"]);
    assert_eq!(code, 3, "{stdout}\n{stderr}");
    assert_eq!(server.served().len(), 2, "no request for a kept answer");
    let journal = Journal::load(&work.path().join("out")).expect("journal");
    let turns = journal.turns_of("canned-model/gemm_n4096_k4096/sm_90a/v1/r1");
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[1].exchange_digest, exchange, "the same answer");
    let store = Store::open(work.path().join("artifacts"));
    let again: Record = store.get_json(&turns[1].record_digest).expect("record");
    let first: Record = store
        .get_json(&first_record)
        .expect("the first record is kept");
    assert_eq!(again.response_digest, first.response_digest);
    assert_eq!(again.prompt_digest, first.prompt_digest);
    assert_eq!(again.previous_digest, Some(turns[0].record_digest));
}

/// Issue 43: a `--no-eval` generation is published with its entry (a leaderboard row before
/// evaluation), and the same command without `--no-eval` later evaluates the kept answers in
/// their trajectories, asking the model nothing for them.
#[test]
fn issue_43_a_no_eval_generation_is_evaluated_later_in_its_trajectories() {
    let canned = canned_dir(&[(0, good_answer())], "");
    let server = CannedServer::start(canned.path(), 0).expect("server");
    let work = tempfile::tempdir().expect("work");
    let text = manifest(&server.url(), 1, "[1]", "");
    let (code, stdout, stderr) = generate(work.path(), &text, &["--no-eval"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("turns recorded: 1 (not evaluated 1)"),
        "{stdout}"
    );
    let store = Store::open(work.path().join("artifacts"));
    let run: Digest = std::fs::read_to_string(work.path().join("out/run-sm_90a.digest"))
        .expect("a --no-eval generation has its run")
        .trim()
        .parse()
        .expect("hex");
    let run: serde_json::Value = store.get_json(&run).expect("run");
    let kept: Record = store
        .get_json(&digests(&run["record_digests"])[0])
        .expect("record");
    assert_eq!(kept.entry, "Canned Model");
    assert_eq!(kept.outcome.stage, ptxbench::record::Stage::NotEvaluated);

    // Later, "on a GPU machine" (here a dry run without one): the kept answer is graded.
    let (code, stdout, stderr) = generate(work.path(), &text, &["--allow-no-gpu"]);
    assert_eq!(server.served().len(), 1, "nothing asked again");
    assert_eq!(
        code, 3,
        "no GPU here: a harness failure\n{stdout}\n{stderr}"
    );
    let journal = Journal::load(&work.path().join("out")).expect("journal");
    let turns = journal.turns_of("canned-model/gemm_n4096_k4096/sm_90a/v1/r1");
    assert_eq!(turns.len(), 1);
    let graded: Record = store.get_json(&turns[0].record_digest).expect("record");
    assert_eq!(graded.entry, kept.entry);
    assert_eq!(graded.response_digest, kept.response_digest);
    assert_eq!(graded.prompt_digest, kept.prompt_digest);
    assert_ne!(graded.outcome.stage, ptxbench::record::Stage::NotEvaluated);
}

#[test]
fn transient_failures_are_retried_and_every_attempt_is_recorded() {
    let canned = canned_dir(&[(0, good_answer())], "429 1\n500\nslow 3\ndrop\n");
    let server = CannedServer::start(canned.path(), 0).expect("server");
    let work = tempfile::tempdir().expect("work");
    let (code, stdout, stderr) = generate(
        work.path(),
        &manifest(&server.url(), 1, "[1, 4]", ""),
        &["--no-eval"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let store = Store::open(work.path().join("artifacts"));
    let journal = Journal::load(&work.path().join("out")).expect("journal");
    assert_eq!(journal.turns.len(), 1, "--no-eval is single-turn");
    assert_eq!(journal.spent.requests, 5);
    let t = trajectory(&store, &journal);
    let x: serde_json::Value = store
        .get_json(&digests(&t["exchange_digests"])[0])
        .expect("exchange");
    let outcomes: Vec<&str> = x["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a["outcome"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        outcomes,
        ["http 429", "http 500", "timeout", "connection", "ok"],
        "{x}"
    );
    assert!(
        x["attempts"][0]["waited_ms"]
            .as_u64()
            .is_some_and(|w| w >= 1000),
        "Retry-After honoured: {x}"
    );
    assert!(
        x["attempts"][0]["body_digest"].is_string(),
        "the 429 body is kept: {x}"
    );
    let served: Vec<Directive> = server.served().into_iter().map(|s| s.directive).collect();
    assert_eq!(served.len(), 5);
    let record: Record = store
        .get_json(&digests(&t["record_digests"])[0])
        .expect("record");
    if record.outcome.stage == ptxbench::record::Stage::NotEvaluated {
        // NVRTC made PTX here: the candidate is written out for `ptxbench run`.
        assert!(work.path().join("out/eval-sm_90a.yaml").is_file());
        assert!(record.kernel_source_digest.is_some() && record.ptx_digest.is_some());
    }
    assert_nowhere(work.path(), SECRET);
}

#[test]
fn an_interrupted_run_resumes_without_asking_for_finished_turns() {
    let canned = canned_dir(
        &[
            (0, truncated_answer()),
            (1, NO_BLOCK_ANSWER.to_string()),
            (2, unbound_answer()),
        ],
        "",
    );
    let server = CannedServer::start(canned.path(), 0).expect("server");
    let work = tempfile::tempdir().expect("work");
    let text = manifest(&server.url(), 2, "[1, 3]", "");
    let (code, stdout, stderr) = generate(
        work.path(),
        &text,
        &["--allow-no-gpu", "--max-requests", "4"],
    );
    assert_eq!(
        code, 3,
        "a cap stops the run incomplete:\n{stdout}\n{stderr}"
    );
    assert!(stderr.contains("request cap reached"), "{stderr}");
    let journal = Journal::load(&work.path().join("out")).expect("journal");
    assert_eq!(journal.turns.len(), 4);
    assert_eq!(server.served().len(), 4);
    assert!(!work.path().join("out/generation.digest").exists());

    let (code, stdout, stderr) = generate(work.path(), &text, &["--allow-no-gpu"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let served = server.served();
    assert_eq!(
        served.len(),
        6,
        "only the two unfinished turns are asked for"
    );
    for turn in 0..3 {
        assert_eq!(
            served.iter().filter(|s| s.turn == turn).count(),
            2,
            "turn {turn}"
        );
    }
    let store = Store::open(work.path().join("artifacts"));
    let journal = Journal::load(&work.path().join("out")).expect("journal");
    assert_eq!(journal.turns.len(), 6);
    assert_eq!(journal.trajectories.len(), 2);
    for d in journal.trajectories.values() {
        assert_closure(&store, *d);
        let t: serde_json::Value = store.get_json(d).expect("trajectory");
        assert_eq!(digests(&t["record_digests"]).len(), 3);
    }
    // A third run asks for nothing.
    let (code, _, stderr) = generate(work.path(), &text, &["--allow-no-gpu"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(server.served().len(), 6);
}

#[test]
fn a_bad_manifest_names_the_file_and_the_field() {
    let work = tempfile::tempdir().expect("work");
    let text = manifest("ftp://127.0.0.1:1/v1", 1, "[1]", "");
    let (code, _, stderr) = generate(work.path(), &text, &["--allow-no-gpu"]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("gen.yaml") && stderr.contains("models[0].endpoint"),
        "{stderr}"
    );
}

/// Issue 59, item 12: Ctrl-C ends a run with a word on what is kept and how to go on (it ended
/// with none).
#[test]
fn issue_59_ctrl_c_says_what_is_kept() {
    let canned = canned_dir(&[(0, good_answer())], "slow 30\n");
    let server = CannedServer::start(canned.path(), 0).expect("server");
    let work = tempfile::tempdir().expect("work");
    let child = generate_command(
        work.path(),
        &manifest(&server.url(), 1, "[1]", "").replace("timeout_s: 1\n", "timeout_s: 60\n"),
        &["--no-eval"],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("generate starts");
    // Until its first completion request is in flight (held by the server for 30 s).
    let start = std::time::Instant::now();
    while server.served().is_empty() && start.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let out = child.wait_with_output().expect("generate ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted (Ctrl-C)") && stderr.contains("run the same command"),
        "{stderr}"
    );
}

/// Issue 59, item 12: a reply cut at its token limit (`finish_reason: length`) inside a code
/// block gets a record that says so, not a guess ("truncated output?").
#[test]
fn issue_59_a_reply_cut_at_the_token_limit_says_so() {
    let cut = "Here is my kernel.\n\n```ptx\n.version 8.0\n.target sm_90a\n".to_string();
    let canned = canned_dir(&[(0, cut)], "length\n");
    let server = CannedServer::start(canned.path(), 0).expect("server");
    let work = tempfile::tempdir().expect("work");
    let (code, stdout, stderr) = generate(
        work.path(),
        &manifest(&server.url(), 1, "[1]", ""),
        &["--no-eval"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let journal = Journal::load(&work.path().join("out")).expect("journal");
    let turns = journal.turns_of("canned-model/gemm_n4096_k4096/sm_90a/v1/r1");
    assert_eq!(turns.len(), 1);
    let store = Store::open(work.path().join("artifacts"));
    let record: Record = store.get_json(&turns[0].record_digest).expect("record");
    let message = &record.outcome.message;
    assert!(
        message.contains("finish_reason: length") && !message.contains("truncated output?"),
        "{message}"
    );
}
