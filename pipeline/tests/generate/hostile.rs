//! Regression tests of issue 15 for generation (and the drawn seed of issue 13): a misbehaving
//! server on loopback, kills in flight, and numbers too large for a clock or a memory.

use std::process::Stdio;
use std::time::{Duration, Instant};

use ptxbench::generate::journal::Journal;
use ptxbench::store::Store;

use super::*;
use crate::canned::CannedServer;

/// `ptxbench generate` as a child process (for kills).
fn spawn_generate(work: &Path, manifest_text: &str, args: &[&str]) -> std::process::Child {
    generate_command(work, manifest_text, args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ptxbench starts")
}

/// Waits until the server has received a request (it may still be answering it).
fn wait_for_a_request(server: &CannedServer) {
    let start = Instant::now();
    while server.served().is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no request arrived"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn issue_15_a_redirect_to_another_origin_is_not_followed() {
    let other_dir = canned_dir(&[(0, good_answer())], "");
    let other = CannedServer::start(other_dir.path(), 0).expect("server");
    let faults = format!("redirect {}/chat/completions\n", other.url());
    let first_dir = canned_dir(&[(0, good_answer())], &faults);
    let first = CannedServer::start(first_dir.path(), 0).expect("server");
    let work = tempfile::tempdir().expect("work");
    let (code, stdout, stderr) = generate(
        work.path(),
        &manifest(&first.url(), 1, "[1]", ""),
        &["--no-eval"],
    );
    assert_eq!(code, 3, "unfinished:\n{stdout}\n{stderr}");
    assert!(
        stderr.contains("HTTP 302") && stderr.contains("not followed"),
        "{stderr}"
    );
    assert_eq!(first.served().len(), 1, "a redirect is not retried");
    assert!(other.served().is_empty(), "the other origin is never asked");
    let journal = Journal::load(&work.path().join("out")).expect("journal");
    assert!(
        journal.turns.is_empty(),
        "no answer is recorded as the model's"
    );
    assert_nowhere(work.path(), SECRET);
}

#[test]
fn issue_15_usage_of_2_63_tokens_does_not_defeat_max_tokens() {
    let canned = canned_dir(&[(0, good_answer())], "usage 9223372036854775808\n");
    let server = CannedServer::start(canned.path(), 0).expect("server");
    let work = tempfile::tempdir().expect("work");
    let (code, stdout, stderr) = generate(
        work.path(),
        &manifest(&server.url(), 3, "[1]", ""),
        &["--no-eval", "--max-tokens", "100000"],
    );
    assert_eq!(code, 3, "{stdout}\n{stderr}");
    assert!(stderr.contains("token cap reached"), "{stderr}");
    // Issue 59, item 12: which cap, and that prompts are not reserved ahead.
    assert!(
        stderr.contains("`limits.max_tokens` (or --max-tokens) is 100000")
            && stderr.contains("prompt's tokens count when it is answered"),
        "{stderr}"
    );
    assert_eq!(
        server.served().len(),
        1,
        "the cap holds after the huge reply"
    );
    let journal = Journal::load(&work.path().join("out")).expect("journal");
    assert_eq!(journal.spent.tokens, u64::MAX, "saturated, not wrapped");
}

#[test]
fn issue_15_requests_are_charged_before_they_are_sent_and_hold_across_kills() {
    let canned = canned_dir(&[(0, good_answer())], "slow 5\n");
    let server = CannedServer::start(canned.path(), 0).expect("server");
    let work = tempfile::tempdir().expect("work");
    let text = manifest(&server.url(), 2, "[1]", "");
    let mut child = spawn_generate(work.path(), &text, &["--no-eval", "--max-requests", "1"]);
    wait_for_a_request(&server);
    // The request is in flight: kill -9.
    child.kill().expect("kill");
    child.wait().expect("reaped");
    let journal = Journal::load(&work.path().join("out")).expect("journal");
    assert_eq!(
        journal.spent.requests, 1,
        "the request was journalled before it was sent"
    );
    assert_eq!(
        journal.spent.tokens, 4096,
        "its reservation (max_tokens) counts as spent"
    );
    let (code, stdout, stderr) =
        generate(work.path(), &text, &["--no-eval", "--max-requests", "1"]);
    assert_eq!(code, 3, "{stdout}\n{stderr}");
    assert!(stderr.contains("request cap reached"), "{stderr}");
    assert_eq!(server.served().len(), 1, "nothing over the cap");
}

#[test]
fn issue_15_a_second_generate_on_the_same_folder_is_refused() {
    // The first run's one request stays unanswered for longer than the second run can take
    // even on a loaded machine (with 3 s, the first sometimes got its answer and moved on to
    // its next request before the second one was done, and the count below saw both).
    let canned = canned_dir(&[(0, good_answer())], "slow 20\n");
    let server = CannedServer::start(canned.path(), 0).expect("server");
    let work = tempfile::tempdir().expect("work");
    let text = manifest(&server.url(), 1, "[1]", "");
    let mut first = spawn_generate(work.path(), &text, &["--no-eval"]);
    wait_for_a_request(&server);
    let (code, _, stderr) = generate(work.path(), &text, &["--no-eval"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("another `ptxbench generate` is running"),
        "{stderr}"
    );
    assert_eq!(server.served().len(), 1, "the second one sent nothing");
    first.kill().expect("kill");
    first.wait().expect("reaped");
}

fn generation_object(work: &Path) -> serde_json::Value {
    let d: ptxbench::digest::Digest = std::fs::read_to_string(work.join("out/generation.digest"))
        .expect("generation.digest")
        .trim()
        .parse()
        .expect("hex");
    Store::open(work.join("artifacts"))
        .get_json(&d)
        .expect("generation object")
}

#[test]
fn issue_13_a_drawn_seed_is_recorded_and_reused_on_resume() {
    let canned = canned_dir(&[(0, good_answer())], "");
    let server = CannedServer::start(canned.path(), 0).expect("server");
    let work = tempfile::tempdir().expect("work");
    let text = manifest(&server.url(), 2, "[1]", "");
    let (code, _, stderr) = generate(work.path(), &text, &["--no-eval", "--max-requests", "1"]);
    assert_eq!(code, 3, "{stderr}");
    let seed = Journal::load(&work.path().join("out"))
        .expect("journal")
        .seed
        .expect("the drawn seed is journalled");
    assert!(stderr.contains(&format!("seed {seed}, drawn")), "{stderr}");
    let (code, _, stderr) = generate(work.path(), &text, &["--no-eval"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!("seed {seed}, drawn")),
        "reused: {stderr}"
    );
    let g = generation_object(work.path());
    assert_eq!(g["seed"], seed);
    assert_eq!(g["seed_drawn"], true);
    let store = Store::open(work.path().join("artifacts"));
    for (r, d) in g["trajectory_digests"]
        .as_array()
        .expect("trajectories")
        .iter()
        .enumerate()
    {
        let d: ptxbench::digest::Digest = d.as_str().expect("hex").parse().expect("digest");
        let t: serde_json::Value = store.get_json(&d).expect("trajectory");
        let expected = seed
            .wrapping_mul(1_000_000)
            .wrapping_add(1000 + r as u64 + 1);
        assert_eq!(t["seed"], expected, "{t}");
    }
    // Another generation draws another seed; a given seed is kept.
    let again = tempfile::tempdir().expect("work");
    let (code, _, stderr) = generate(again.path(), &text, &["--no-eval"]);
    assert_eq!(code, 0, "{stderr}");
    assert_ne!(generation_object(again.path())["seed"], seed);
    let given = tempfile::tempdir().expect("work");
    let with_seed = text.replace("archs:", "seed: 77\narchs:");
    let (code, _, stderr) = generate(given.path(), &with_seed, &["--no-eval"]);
    assert_eq!(code, 0, "{stderr}");
    let g = generation_object(given.path());
    assert_eq!(
        (g["seed"].clone(), g["seed_drawn"].clone()),
        (77.into(), false.into())
    );
}

#[test]
fn issue_15_huge_replicas_and_timeouts_are_clear_errors() {
    let work = tempfile::tempdir().expect("work");
    for (text, field) in [
        (
            manifest("http://127.0.0.1:1/v1", 1, "[1]", "")
                .replace("replicas: 1", "replicas: 4294967295"),
            "replicas",
        ),
        (
            manifest("http://127.0.0.1:1/v1", 1, "[1]", "")
                .replace("timeout_s: 1", "timeout_s: 18446744073709551615"),
            "models[0].timeout_s",
        ),
    ] {
        let start = Instant::now();
        let (code, _, stderr) = generate(work.path(), &text, &["--max-requests", "3"]);
        assert_eq!(code, 2, "{stderr}");
        assert!(
            stderr.contains("gen.yaml") && stderr.contains(&format!("field `{field}`")),
            "{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}

/// Issue 41: a model whose kernel includes the process's environment (or a host file) gets a
/// refusal that names the include; the API key reaches neither the endpoint (in any request
/// body) nor any file of the store or the output.
#[test]
fn issue_41_an_include_of_the_environment_leaks_no_key() {
    let hostile =
        good_answer().replacen("```cuda\n", "```cuda\n#include \"/proc/self/environ\"\n", 1);
    assert_ne!(hostile, good_answer());
    let canned = canned_dir(&[(0, hostile), (1, good_answer())], "");
    let server = CannedServer::start(canned.path(), 0).expect("server");
    let work = tempfile::tempdir().expect("work");
    let (code, stdout, stderr) = generate(
        work.path(),
        &manifest(&server.url(), 1, "[1, 4]", ""),
        &["--allow-no-gpu"],
    );
    let served = server.served();
    assert!(served.len() >= 2, "{stdout}\n{stderr}");
    for s in &served {
        let body = String::from_utf8_lossy(&s.body);
        assert!(
            !body.contains(SECRET),
            "request {} carries the key",
            s.index
        );
        assert!(!body.contains("PTXBENCH_TEST_KEY"), "request {}", s.index);
    }
    // The repair prompt says what was refused, and why.
    let second = String::from_utf8_lossy(&served[1].body);
    assert!(second.contains("/proc/self/environ"), "{second}");
    assert!(second.contains("is refused"), "{second}");
    assert_nowhere(work.path(), SECRET);
    let _ = code;
}

/// Issue 55, finding 3: an endpoint that echoes the API key back (in an error body, in an extra
/// field and JSON-escaped in the answer) got it stored in raw bodies and attempt details.
#[test]
fn issue_55_a_key_the_endpoint_echoes_is_stored_nowhere() {
    let dir = canned_dir(&[(0, good_answer())], "echo-key-error\necho-key-ok\n");
    let server = CannedServer::start(dir.path(), 0).expect("server");
    let work = tempfile::tempdir().expect("work");
    let (code, stdout, stderr) = generate(
        work.path(),
        &manifest(&server.url(), 1, "[1]", ""),
        &["--no-eval"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(server.served().len(), 2, "one error, one answer");
    let escaped: String = format!("Bearer {SECRET}")
        .chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect();
    assert_nowhere(work.path(), SECRET);
    assert_nowhere(work.path(), &escaped);
    assert!(!stdout.contains(SECRET) && !stderr.contains(SECRET));
}
