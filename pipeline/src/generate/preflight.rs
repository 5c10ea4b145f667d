//! What `generate` checks before it spends anything: the CUDA compiler tools (every answer is
//! compiled and checked), a GPU when it evaluates, and every endpoint reachable with its model
//! listed by `GET …/models`. All problems are gathered into one message; a setup with any
//! problem sends no completion request.
//!
//! A server without a model listing (a 404 or 405 there) is not a problem: the model cannot be
//! confirmed, which [`check`] returns as a note.

use super::chat::{AttemptError, ChatClient};
use super::manifest::GenManifest;
use crate::cuda::CudaLibrary;
use crate::toolchain::Tool;

/// The command that installs the CUDA compiler tools (no GPU needed), as README says.
pub const INSTALL_TOOLS: &str = "export CUDA_HOME=$(pipeline/scripts/install-cuda-tools.sh)";

/// What this generation needs besides the endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    /// A local GPU for the evaluations.
    pub gpu: bool,
    /// The evaluation service of `eval.endpoint`, in its place.
    pub service: bool,
}

/// Checks the tools, the GPU (when `needs.gpu`) and every model's endpoint; returns notes
/// (what could not be confirmed) or every problem found, one a line.
pub fn check(
    manifest: &GenManifest,
    clients: &[ChatClient],
    needs: Needs,
) -> Result<Vec<String>, Vec<String>> {
    let mut problems = tools();
    if needs.gpu {
        problems.extend(gpu(manifest.eval.gpus));
    }
    if let (true, Some(url)) = (needs.service, &manifest.eval.endpoint)
        && let Err(e) = crate::serve::client::reachable(url)
    {
        problems.push(format!(
            "eval.endpoint: the evaluation service is not reachable ({e}); start it with `ptxbench serve` (README: \"Evaluation as a service\")"
        ));
    }
    let mut notes = Vec::new();
    for (i, (m, client)) in manifest.models.iter().zip(clients).enumerate() {
        let at = format!("models[{i}] (`{}` at {})", m.name, m.endpoint);
        match client.list_models() {
            Ok(served) if served.iter().any(|s| s == &m.name) => {}
            Ok(served) => problems.push(format!(
                "{at}: the endpoint does not serve this model; it lists: {} (set `models[{i}].name` to one of them)",
                if served.is_empty() {
                    "nothing".to_string()
                } else {
                    served.join(", ")
                }
            )),
            // vLLM, SGLang and hosted APIs serve under `/v1`: without it the listing and every
            // completion are 404s, which would be retried by every later run.
            Err(AttemptError::Status { status: 404, .. }) if !under_v1(&m.endpoint) => {
                problems.push(format!(
                    "{at}: GET …/models is a 404 and the endpoint's path has no /v1; OpenAI-compatible servers (vLLM, SGLang, hosted APIs) serve under /v1: set `models[{i}].endpoint` to `{}/v1`",
                    m.endpoint.trim_end_matches('/')
                ))
            }
            Err(AttemptError::Status {
                status: 404 | 405, ..
            }) => notes.push(format!(
                "{at}: the endpoint has no model listing (GET …/models), so the model could not be confirmed"
            )),
            Err(e @ AttemptError::Timeout(_)) => problems.push(format!(
                "{at}: no answer to GET …/models ({e}); a server still loading its model answers only when it is ready: wait until `curl {}/models` lists `{}`, then run again",
                m.endpoint.trim_end_matches('/'),
                m.name
            )),
            Err(AttemptError::Status {
                status: status @ (401 | 403),
                ..
            }) => problems.push(format!(
                "{at}: the endpoint refused the request (HTTP {status}): check the key in the variable `models[{i}].api_key_env` names{}",
                if m.api_key_env.is_none() {
                    " (none is set: this endpoint needs one)"
                } else {
                    ""
                }
            )),
            Err(e @ AttemptError::Connection(_)) => {
                problems.push(format!(
                    "{at}: not reachable ({e}); is the server running, or still starting? (vLLM: `vllm serve MODEL --port 8000`; SGLang: `python -m sglang.launch_server --model-path MODEL --port 8000`; wait until `curl …/models` lists the model)"
                ))
            }
            Err(e) => problems.push(format!("{at}: listing its models failed: {e}")),
        }
    }
    if problems.is_empty() {
        Ok(notes)
    } else {
        Err(problems)
    }
}

/// Whether an endpoint's path ends in `/v1` (or a later version), as OpenAI-compatible
/// servers serve.
fn under_v1(endpoint: &str) -> bool {
    let path = endpoint.trim_end_matches('/');
    path.rsplit('/')
        .next()
        .and_then(|last| last.strip_prefix('v'))
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// NVRTC (CUDA C++ answers) and ptxas (every answer's PTX is compiled for the target).
fn tools() -> Vec<String> {
    let mut missing = Vec::new();
    if crate::cuda::library::locate(CudaLibrary::Nvrtc).is_err() {
        missing.push(CudaLibrary::Nvrtc.name());
    }
    if crate::toolchain::locate(Tool::Ptxas).is_err() {
        missing.push("ptxas");
    }
    if missing.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "the CUDA compiler tools are missing ({}), without which no answer can be checked; install them (no GPU needed) with `{INSTALL_TOOLS}`, or set CUDA_HOME to a CUDA 13 toolkit",
        missing.join(", ")
    )]
}

/// At least `wanted` GPUs (the manifest's `eval.gpus`).
fn gpu(wanted: usize) -> Option<String> {
    let advice = "run with --no-eval to generate without evaluating (running the same command later on a GPU machine evaluates the kept answers)";
    match crate::cuda::driver::device_count() {
        Err(e) => Some(format!("no GPU to evaluate on ({e}); {advice}")),
        Ok(0) => Some(format!(
            "no GPU to evaluate on (the driver sees none); {advice}"
        )),
        Ok(n) if n < wanted => Some(format!(
            "`eval.gpus` is {wanted} but the driver sees {n} GPU(s); lower it or {advice}"
        )),
        Ok(_) => None,
    }
}
