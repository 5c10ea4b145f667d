//! A client of the service, for `generate` (`eval.endpoint`): submits one evaluation, waits
//! for its record and returns the record's outcome.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::job::{Submission, Submitted};
use crate::engine::{Outcome, Request, Verdict};
use crate::record::Stage;

/// The environment variable that holds the service's bearer token (client and server).
pub const TOKEN_ENV: &str = "PTXBENCH_SERVE_TOKEN";

/// The GPU part of `req` (PTX that passed the static check) through the service at
/// `endpoint`: the outcome of the service's record, or a harness failure (`other`, never
/// blamed on the candidate) saying why there is none.
pub fn evaluate_request(endpoint: &str, req: &Request, timeout: Duration) -> Outcome {
    let sub = Submission {
        task: req.task.id.clone(),
        arch: req.arch,
        candidate: Submitted::Kernel {
            cuda: false,
            kernel: req.ptx.clone(),
            plan: req.plan.clone(),
        },
        seed: Some(req.seed),
        workloads: req.workloads.clone(),
        correctness_only: req.no_timing,
        fresh: false,
        entry: "generate".into(),
        deadline_s: None,
    };
    evaluate(endpoint, &sub, timeout).unwrap_or_else(|e| {
        Outcome::failed(
            Verdict::Other,
            Stage::Worker,
            format!("evaluation service: {e}"),
        )
    })
}

/// Attempts of one request that a connection error or a full queue may cost before the
/// evaluation is given up as the harness's failure.
const MAX_RETRIES: u32 = 6;

/// The wait before retry `n` (1-based): 1, 2, 4, … seconds, at most 30.
fn backoff(n: u32) -> Duration {
    Duration::from_secs((1u64 << n.saturating_sub(1).min(5)).min(30))
}

/// An HTTP agent for the service: statuses are answers, not errors; no redirects; each call
/// within `timeout`.
fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(timeout))
        .build()
        .new_agent()
}

/// Whether the service at `endpoint` answers its health check (`GET /healthz`, which needs no
/// token); the reason when it does not.
pub fn reachable(endpoint: &str) -> Result<(), String> {
    let base = endpoint.trim_end_matches('/');
    match agent(Duration::from_secs(10))
        .get(format!("{base}/healthz"))
        .call()
    {
        Ok(r) if r.status().is_success() => Ok(()),
        Ok(r) => Err(format!(
            "{base}/healthz answered HTTP {}",
            r.status().as_u16()
        )),
        Err(e) => Err(format!("{base}: {e}")),
    }
}

/// Evaluates `sub` through the service at `endpoint` (its base URL), waiting at most
/// `timeout`; returns the outcome of the record the service made.
pub fn evaluate(endpoint: &str, sub: &Submission, timeout: Duration) -> Result<Outcome, String> {
    let base = endpoint.trim_end_matches('/');
    let token = std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty());
    let agent = agent(Duration::from_secs(90));
    let auth = |r: ureq::RequestBuilder<ureq::typestate::WithoutBody>| match &token {
        Some(t) => r.header("Authorization", format!("Bearer {t}")),
        None => r,
    };
    let read = |resp: Result<ureq::http::Response<ureq::Body>, ureq::Error>| {
        let mut resp = resp.map_err(|e| format!("{base}: {e}"))?;
        let status = resp.status().as_u16();
        let body = resp
            .body_mut()
            .with_config()
            .limit(256 * 1024 * 1024)
            .read_to_vec()
            .map_err(|e| format!("{base}: {e}"))?;
        let v: Value = serde_json::from_slice(&body)
            .map_err(|e| format!("{base}: HTTP {status}, not JSON: {e}"))?;
        Ok::<_, String>((status, v))
    };
    let body = serde_json::to_vec(&sub.to_json()).map_err(|e| e.to_string())?;
    let deadline = Instant::now() + timeout;
    // One key for every attempt of this submission: a retry after a lost reply makes no second
    // job.
    let key = format!(
        "generate-{:016x}{:016x}",
        crate::entropy::draw_u64().map_err(|e| e.to_string())?,
        crate::entropy::draw_u64().map_err(|e| e.to_string())?
    );
    let mut failures = 0u32;
    let id = loop {
        let mut post = agent
            .post(format!("{base}/v1/evaluations"))
            .header("Content-Type", "application/json")
            .header("Idempotency-Key", &key);
        if let Some(t) = &token {
            post = post.header("Authorization", format!("Bearer {t}"));
        }
        match read(post.send(&body[..])) {
            Ok((202, v)) => break v["id"].as_str().unwrap_or_default().to_string(),
            Ok((429 | 503, _)) | Err(_) if Instant::now() < deadline && failures < MAX_RETRIES => {
                failures += 1;
                std::thread::sleep(backoff(failures));
            }
            Ok((status, v)) => return Err(format!("{base}: HTTP {status}: {}", v["error"])),
            Err(e) => return Err(e),
        }
    };
    failures = 0;
    loop {
        let url = format!("{base}/v1/evaluations/{id}?wait=30");
        let answer = match read(auth(agent.get(&url)).call()) {
            Err(_) if Instant::now() < deadline && failures < MAX_RETRIES => {
                failures += 1;
                std::thread::sleep(backoff(failures));
                continue;
            }
            other => other?,
        };
        match answer {
            (200, v) if v["state"] == "done" => {
                return serde_json::from_value(v["record"]["outcome"].clone())
                    .map_err(|e| format!("{base}: job {id}: the record's outcome: {e}"));
            }
            (200, v) => return Err(format!("{base}: job {id}: {}", v["error"])),
            (202, _) if Instant::now() < deadline => {}
            (202, _) => return Err(format!("{base}: job {id}: no result in {timeout:?}")),
            (status, v) => return Err(format!("{base}: job {id}: HTTP {status}: {}", v["error"])),
        }
    }
}
