//! Worker processes: each evaluation runs in a child `ptxbench worker` with a wall-clock limit.
//!
//! The parent writes the [`Request`] as JSON to the child's stdin and reads the [`Outcome`]
//! (JSON) and the cubin from files in a private folder. A child that outlives its limit is
//! killed (verdict timeout); one that dies without an outcome (a fault the driver turned into
//! a crash) is a runtime verdict. The GPU context dies with the process, so the next candidate
//! starts on a healthy GPU.

use crate::record::Stage;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{Outcome, Request, Verdict};

/// File names inside the exchange folder.
pub const OUTCOME_FILE: &str = "outcome.json";
pub const CUBIN_FILE: &str = "kernel.cubin";

/// Runs `req` in a child process of `exe` (`ptxbench`), killing it after `limit`.
pub fn run_isolated(exe: &Path, req: &Request, limit: Duration) -> Outcome {
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            return Outcome::failed(Verdict::Other, Stage::Worker, format!("temp folder: {e}"));
        }
    };
    let body = match serde_json::to_vec(req) {
        Ok(b) => b,
        Err(e) => return Outcome::failed(Verdict::Other, Stage::Worker, e.to_string()),
    };
    let mut cmd = Command::new(exe);
    // The worker runs a candidate: it gets no API key or token of ours.
    crate::secrets::scrub(&mut cmd);
    let mut child = match cmd
        .arg("worker")
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            return Outcome::failed(
                Verdict::Other,
                Stage::Worker,
                format!("starting {}: {e}", exe.display()),
            );
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(&body);
    }
    let mut stderr = child.stderr.take();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = stderr.as_mut() {
            let _ = std::io::Read::read_to_string(e, &mut s);
        }
        s
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    let stderr = crate::secrets::redact(&err_reader.join().unwrap_or_default()).into_owned();
    let tail: String = stderr
        .chars()
        .rev()
        .take(2000)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let Some(status) = status else {
        return Outcome::failed(
            Verdict::Timeout,
            Stage::Worker,
            format!(
                "no result within {} s; the worker was killed (a hang?)",
                limit.as_secs()
            ),
        );
    };
    let outcome_path = dir.path().join(OUTCOME_FILE);
    match std::fs::read(&outcome_path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Outcome>(&b).ok())
    {
        Some(mut o) => {
            o.cubin = std::fs::read(dir.path().join(CUBIN_FILE)).ok();
            o
        }
        None => Outcome::failed(
            Verdict::Runtime,
            Stage::Worker,
            format!("the worker died ({status}) without a result; its last output:\n{tail}"),
        ),
    }
}

/// The child's side: read the request from stdin, evaluate, write the outcome.
pub fn serve(dir: &Path) -> std::io::Result<()> {
    let mut body = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin(), &mut body)?;
    let outcome = match serde_json::from_slice::<Request>(&body) {
        Ok(req) => super::evaluate::evaluate(&req),
        Err(e) => Outcome::failed(Verdict::Other, Stage::Worker, format!("bad request: {e}")),
    };
    if let Some(cubin) = &outcome.cubin {
        std::fs::write(dir.join(CUBIN_FILE), cubin)?;
    }
    let json = serde_json::to_vec(&outcome).map_err(std::io::Error::other)?;
    // Write then rename: a half-written outcome must never be read as a result.
    let tmp = dir.join("outcome.json.tmp");
    std::fs::write(&tmp, json)?;
    std::fs::rename(tmp, dir.join(OUTCOME_FILE))
}
