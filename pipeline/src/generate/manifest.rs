//! Generation manifests (`ptxbench generate GEN.yaml`): which models meet which tasks, how often
//! and for how many turns, and what the run may spend.
//!
//! Parsing is strict (unknown fields, duplicate keys and non-`true`/`false` booleans are errors)
//! and every error names the file and the field. A parsed [`GenManifest`] is valid: at least one
//! model, task pattern, arch, variant and replica; turn limits positive; endpoints `http(s)://`;
//! model names unique. Defaults mirror the paper: prompt variants 1-3, 4 replicas, turn limits
//! 1, 4 and 8 (a trajectory runs to the largest limit; the smaller limits are read from its
//! first turns). API keys are never in the file: a model names the environment variable that
//! holds its key, and the key is read at run time only. With no `seed`, each generation draws
//! one from the operating system's entropy when it starts (and records it); a given seed
//! reproduces a generation.
//!
//! Every number is bounded, so that no manifest can overflow a clock or fill the memory:
//! timeouts 1 s to [`MAX_TIMEOUT_S`] (a day), replicas up to [`MAX_REPLICAS`], turn limits up to
//! [`MAX_TURNS`], concurrency up to [`MAX_CONCURRENCY`], GPUs up to [`MAX_GPUS`], attempts up to
//! [`MAX_ATTEMPTS`], retry delays up to [`MAX_DELAY_MS`], `max_tokens` up to
//! [`MAX_SAMPLING_TOKENS`]; and the work list is at most [`MAX_TRAJECTORIES`] trajectories
//! (checked before it is built).
//!
//! ```yaml
//! generate: 1
//! name: example
//! tasks: ["gemm_n4096_k*"]
//! archs: [sm_90a]
//! models:
//!   - name: qwen3.6-27b
//!     endpoint: http://127.0.0.1:8000/v1
//!     api_key_env: VLLM_API_KEY
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::arch::Arch;

/// The generation-manifest format this code reads.
pub const FORMAT: u32 = 1;

/// The longest timeout (a request's or an evaluation's), seconds: a day.
pub const MAX_TIMEOUT_S: u64 = 86_400;
pub const MAX_REPLICAS: u32 = 1000;
pub const MAX_TURNS: u32 = 64;
/// Requests in flight at once for one model.
pub const MAX_CONCURRENCY: usize = 256;
pub const MAX_GPUS: usize = 64;
/// Attempts of one request.
pub const MAX_ATTEMPTS: u32 = 100;
/// The longest wait between two attempts, milliseconds: an hour.
pub const MAX_DELAY_MS: u64 = 3_600_000;
/// The largest `sampling.max_tokens`.
pub const MAX_SAMPLING_TOKENS: u64 = 10_000_000;
/// The most trajectories one manifest expands into.
pub const MAX_TRAJECTORIES: u64 = 1_000_000;

/// A parsed and validated generation manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenManifest {
    /// Format version (1).
    pub generate: u32,
    /// Names the run objects (`<name>-<arch>`).
    pub name: String,
    /// Task ids or `*` patterns.
    pub tasks: Vec<String>,
    pub archs: Vec<Arch>,
    #[serde(default = "default_variants")]
    pub variants: Vec<u8>,
    #[serde(default = "default_replicas")]
    pub replicas: u32,
    /// Turn limits the metrics are read at; a trajectory runs to the largest.
    #[serde(default = "default_turn_limits")]
    pub turn_limits: Vec<u32>,
    /// The system message that opens every conversation (none when absent).
    #[serde(default = "default_system")]
    pub system: Option<String>,
    /// Base of the evaluation seeds and of the retry jitter; drawn at run time when absent.
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub eval: EvalSettings,
    #[serde(default)]
    pub limits: SpendLimits,
    #[serde(default)]
    pub retry: RetryPolicy,
    pub models: Vec<ModelSpec>,
}

/// One model behind an OpenAI-compatible chat-completions endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// The model name sent to the endpoint (and the record's `model`).
    pub name: String,
    /// The record's `entry` (the leaderboard's name); `name` when absent.
    #[serde(default)]
    pub display_name: Option<String>,
    /// Base URL (`.../v1`) or the full `.../chat/completions` URL.
    pub endpoint: String,
    /// The environment variable holding the API key (sent as a bearer token; never stored).
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub sampling: Sampling,
    /// Requests in flight at once for this model.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// Client timeout of one request (connect to last byte), seconds.
    #[serde(default = "default_request_timeout")]
    pub timeout_s: u64,
}

/// Sampling settings sent with every request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sampling {
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub top_p: Option<f64>,
    #[serde(default = "default_max_tokens")]
    pub max_tokens: Option<u64>,
    /// Passed through into the request body as is (e.g. `seed`, `reasoning_effort`).
    #[serde(default)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            temperature: None,
            top_p: None,
            max_tokens: default_max_tokens(),
            extra: BTreeMap::new(),
        }
    }
}

/// How candidates are evaluated between turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalSettings {
    /// Wall-clock limit of one evaluation worker, seconds.
    #[serde(default = "default_eval_timeout")]
    pub timeout_s: u64,
    /// Correctness only (no speedup; a correct kernel then ends its trajectory).
    #[serde(default)]
    pub no_timing: bool,
    /// Evaluate only these workloads (all when empty).
    #[serde(default)]
    pub workloads: Vec<String>,
    /// GPUs evaluations may use (on each, a timed evaluation at a time, or correctness-only
    /// ones two at a time: see [`crate::engine::evaluator::Evaluator::at_once`]).
    #[serde(default = "default_gpus")]
    pub gpus: usize,
    /// A `ptxbench serve` to evaluate on instead of this host's GPUs (its base URL; the
    /// token, if it needs one, in `PTXBENCH_SERVE_TOKEN`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
}

impl Default for EvalSettings {
    fn default() -> Self {
        EvalSettings {
            timeout_s: default_eval_timeout(),
            no_timing: false,
            workloads: Vec::new(),
            gpus: default_gpus(),
            endpoint: None,
        }
    }
}

/// Hard caps on what the run spends, over every invocation on the same output folder.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpendLimits {
    /// HTTP requests sent, retries included.
    #[serde(default)]
    pub max_requests: Option<u64>,
    /// Total tokens the endpoint reported (checked before each request, so one reply may
    /// overshoot by its own size).
    #[serde(default)]
    pub max_tokens: Option<u64>,
}

/// Retries of one request: exponential backoff with seeded jitter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryPolicy {
    /// Attempts per request, the first included.
    #[serde(default = "default_attempts")]
    pub max_attempts: u32,
    #[serde(default = "default_base_delay")]
    pub base_delay_ms: u64,
    #[serde(default = "default_max_delay")]
    pub max_delay_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: default_attempts(),
            base_delay_ms: default_base_delay(),
            max_delay_ms: default_max_delay(),
        }
    }
}

fn default_variants() -> Vec<u8> {
    vec![1, 2, 3]
}
fn default_replicas() -> u32 {
    4
}
fn default_turn_limits() -> Vec<u32> {
    vec![1, 4, 8]
}
fn default_system() -> Option<String> {
    Some(
        "You are an expert GPU kernel engineer. Answer with exactly one kernel block and one \
         launch-plan block, in the format the user asks for."
            .into(),
    )
}
fn default_concurrency() -> usize {
    4
}
fn default_request_timeout() -> u64 {
    900
}
fn default_max_tokens() -> Option<u64> {
    Some(32768)
}
fn default_eval_timeout() -> u64 {
    300
}
fn default_gpus() -> usize {
    1
}
fn default_attempts() -> u32 {
    6
}
fn default_base_delay() -> u64 {
    1000
}
fn default_max_delay() -> u64 {
    60_000
}

/// Why a generation manifest cannot be used; always names the file (and the field).
#[derive(Debug, thiserror::Error)]
pub enum GenManifestError {
    #[error("{}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {message}", .path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{}: field `{field}`: {message}", .path.display())]
    Invalid {
        path: PathBuf,
        field: String,
        message: String,
    },
}

impl GenManifest {
    /// Reads and validates the manifest at `path`.
    pub fn load(path: &Path) -> Result<GenManifest, GenManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| GenManifestError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        GenManifest::parse(&text, path)
    }

    /// Parses and validates manifest text; `path` is used in errors only.
    pub fn parse(text: &str, path: &Path) -> Result<GenManifest, GenManifestError> {
        let options = serde_saphyr::options! {
            strict_booleans: true,
            duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
        };
        let m: GenManifest = serde_saphyr::from_str_with_options(text, options).map_err(|e| {
            GenManifestError::Parse {
                path: path.to_path_buf(),
                message: e.to_string(),
            }
        })?;
        m.validate(path)?;
        Ok(m)
    }

    /// The number of turns every trajectory may take.
    pub fn max_turns(&self) -> u32 {
        self.turn_limits.iter().copied().max().unwrap_or(1)
    }

    fn validate(&self, path: &Path) -> Result<(), GenManifestError> {
        let invalid = |field: &str, message: &str| GenManifestError::Invalid {
            path: path.to_path_buf(),
            field: field.to_string(),
            message: message.to_string(),
        };
        if self.generate != FORMAT {
            return Err(invalid(
                "generate",
                &format!(
                    "format {} is not supported (this build reads {FORMAT})",
                    self.generate
                ),
            ));
        }
        if self.name.trim().is_empty()
            || !self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(invalid(
                "name",
                "must be non-empty letters, digits, `-`, `_`, `.`",
            ));
        }
        if self.tasks.is_empty() {
            return Err(invalid("tasks", "list at least one task id or pattern"));
        }
        if self.archs.is_empty() {
            return Err(invalid("archs", "list at least one architecture"));
        }
        if self.variants.is_empty() {
            return Err(invalid("variants", "list at least one prompt variant"));
        }
        for (i, v) in self.variants.iter().enumerate() {
            crate::prompt::Variant::new(*v).map_err(|e| invalid(&format!("variants[{i}]"), &e))?;
        }
        if self.variants.iter().collect::<BTreeSet<_>>().len() != self.variants.len() {
            return Err(invalid("variants", "a variant is listed twice"));
        }
        let within = |field: &str, v: u64, lo: u64, hi: u64, unit: &str| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(invalid(
                    field,
                    &format!("{v} is out of range: must be {lo} to {hi}{unit}"),
                ))
            }
        };
        within(
            "replicas",
            u64::from(self.replicas),
            1,
            u64::from(MAX_REPLICAS),
            "",
        )?;
        if self.turn_limits.is_empty() || self.turn_limits.contains(&0) {
            return Err(invalid(
                "turn_limits",
                "list positive turn limits, e.g. [1, 4, 8]",
            ));
        }
        if self.max_turns() > MAX_TURNS {
            return Err(invalid(
                "turn_limits",
                &format!("at most {MAX_TURNS} turns per trajectory"),
            ));
        }
        within("eval.gpus", self.eval.gpus as u64, 1, MAX_GPUS as u64, "")?;
        if let Some(e) = &self.eval.endpoint
            && !(e.starts_with("http://") || e.starts_with("https://"))
        {
            return Err(invalid(
                "eval.endpoint",
                "must start with http:// or https://",
            ));
        }
        within(
            "eval.timeout_s",
            self.eval.timeout_s,
            1,
            MAX_TIMEOUT_S,
            " seconds",
        )?;
        within(
            "retry.max_attempts",
            u64::from(self.retry.max_attempts),
            1,
            u64::from(MAX_ATTEMPTS),
            "",
        )?;
        within(
            "retry.max_delay_ms",
            self.retry.max_delay_ms,
            0,
            MAX_DELAY_MS,
            " ms",
        )?;
        if self.retry.base_delay_ms > self.retry.max_delay_ms {
            return Err(invalid(
                "retry.base_delay_ms",
                "must not exceed retry.max_delay_ms",
            ));
        }
        if self.models.is_empty() {
            return Err(invalid("models", "list at least one model"));
        }
        let mut names = BTreeSet::new();
        let mut entries = BTreeSet::new();
        for (i, m) in self.models.iter().enumerate() {
            let f = |field: &str| format!("models[{i}].{field}");
            if m.name.trim().is_empty() {
                return Err(invalid(&f("name"), "must not be empty"));
            }
            if !names.insert(m.name.as_str()) {
                return Err(invalid(
                    &f("name"),
                    &format!("`{}` is listed twice", m.name),
                ));
            }
            if !entries.insert(m.entry()) {
                return Err(invalid(
                    &f("display_name"),
                    &format!("`{}` names another model too", m.entry()),
                ));
            }
            if !(m.endpoint.starts_with("http://") || m.endpoint.starts_with("https://")) {
                return Err(invalid(
                    &f("endpoint"),
                    "must start with http:// or https://",
                ));
            }
            if let Some(v) = &m.api_key_env
                && (v.is_empty() || v.contains('='))
            {
                return Err(invalid(
                    &f("api_key_env"),
                    "must be an environment variable name",
                ));
            }
            within(
                &f("concurrency"),
                m.concurrency as u64,
                1,
                MAX_CONCURRENCY as u64,
                "",
            )?;
            within(&f("timeout_s"), m.timeout_s, 1, MAX_TIMEOUT_S, " seconds")?;
            let s = &m.sampling;
            if s.temperature.is_some_and(|t| !(0.0..=2.0).contains(&t)) {
                return Err(invalid(&f("sampling.temperature"), "must be within 0..=2"));
            }
            if s.top_p.is_some_and(|t| !(t > 0.0 && t <= 1.0)) {
                return Err(invalid(&f("sampling.top_p"), "must be within (0, 1]"));
            }
            if let Some(n) = s.max_tokens {
                within(&f("sampling.max_tokens"), n, 1, MAX_SAMPLING_TOKENS, "")?;
            }
            for k in s.extra.keys() {
                if ["model", "messages", "stream"].contains(&k.as_str()) {
                    return Err(invalid(
                        &format!("models[{i}].sampling.extra.{k}"),
                        "is set by the pipeline and cannot be passed through",
                    ));
                }
            }
        }
        Ok(())
    }
}

impl ModelSpec {
    /// The record's `entry`: the display name, else the model name.
    pub fn entry(&self) -> &str {
        self.display_name.as_deref().unwrap_or(&self.name)
    }

    /// The chat-completions URL.
    pub fn url(&self) -> String {
        let base = self.endpoint.trim_end_matches('/');
        if base.ends_with("/chat/completions") {
            base.to_string()
        } else {
            format!("{base}/chat/completions")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_43_the_example_asks_for_the_core_tasks_and_no_key() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests/generate-example.yaml");
        let m = GenManifest::load(&path).expect("the example parses");
        let core: Vec<String> = crate::metrics::core_set::CORE_TASKS
            .iter()
            .map(|t| t.to_string())
            .collect();
        assert_eq!(m.tasks, core);
        assert!(
            m.models.iter().all(|x| x.api_key_env.is_none()),
            "optional; a local vLLM needs none"
        );
        // Issue 59, item 11: a sampling seed in `extra` would send byte-identical requests for
        // every replica of a task and variant, so replicas and pass@k would mean little.
        assert!(m.replicas > 1);
        assert!(
            m.models
                .iter()
                .all(|x| !x.sampling.extra.contains_key("seed")),
            "the example fixes the sampling seed of every replica"
        );
        assert_eq!(m.seed, None, "the evaluation seed is drawn at run time");
    }

    const MINIMAL: &str = "generate: 1\nname: t\ntasks: [gemm_n4096_k4096]\narchs: [sm_90a]\nmodels:\n  - {name: m, endpoint: \"http://127.0.0.1:1/v1\"}\n";

    #[test]
    fn defaults_mirror_the_paper() {
        let m = GenManifest::parse(MINIMAL, Path::new("g.yaml")).expect("valid");
        assert_eq!(m.variants, vec![1, 2, 3]);
        assert_eq!(m.replicas, 4);
        assert_eq!(m.turn_limits, vec![1, 4, 8]);
        assert_eq!(m.max_turns(), 8);
        assert_eq!(m.models[0].url(), "http://127.0.0.1:1/v1/chat/completions");
    }

    #[test]
    fn errors_name_the_file_and_the_field() {
        let bad = MINIMAL.replace("http://", "ftp://");
        let e = GenManifest::parse(&bad, Path::new("g.yaml"))
            .expect_err("ftp is refused")
            .to_string();
        assert!(
            e.contains("g.yaml") && e.contains("models[0].endpoint"),
            "{e}"
        );
        let unknown = format!("{MINIMAL}colour: blue\n");
        let e = GenManifest::parse(&unknown, Path::new("g.yaml"))
            .expect_err("unknown field")
            .to_string();
        assert!(e.contains("g.yaml") && e.contains("colour"), "{e}");
        let zero = MINIMAL.replace("archs", "turn_limits: [0]\narchs");
        let e = GenManifest::parse(&zero, Path::new("g.yaml"))
            .expect_err("zero turns")
            .to_string();
        assert!(e.contains("turn_limits"), "{e}");
    }

    #[test]
    fn issue_15_huge_numbers_are_clear_errors_naming_the_field() {
        let cases = [
            (
                MINIMAL.replace("endpoint:", "timeout_s: 18446744073709551615, endpoint:"),
                "models[0].timeout_s",
            ),
            (
                MINIMAL.replace("archs", "replicas: 4294967295\narchs"),
                "replicas",
            ),
            (
                MINIMAL.replace("archs", "turn_limits: [1, 4294967295]\narchs"),
                "turn_limits",
            ),
            (
                MINIMAL.replace("endpoint:", "concurrency: 18446744073709551615, endpoint:"),
                "models[0].concurrency",
            ),
            (
                MINIMAL.replace("archs", "eval: {timeout_s: 18446744073709551615}\narchs"),
                "eval.timeout_s",
            ),
            (
                MINIMAL.replace("archs", "eval: {gpus: 100000}\narchs"),
                "eval.gpus",
            ),
            (
                MINIMAL.replace("archs", "retry: {max_attempts: 4294967295}\narchs"),
                "retry.max_attempts",
            ),
            (
                MINIMAL.replace(
                    "archs",
                    "retry: {base_delay_ms: 1, max_delay_ms: 18446744073709551615}\narchs",
                ),
                "retry.max_delay_ms",
            ),
        ];
        for (text, field) in cases {
            let e = GenManifest::parse(&text, Path::new("g.yaml"))
                .expect_err(field)
                .to_string();
            assert!(
                e.contains("g.yaml") && e.contains(&format!("field `{field}`")),
                "{field}: {e}"
            );
        }
        let m = GenManifest::parse(MINIMAL, Path::new("g.yaml")).expect("valid");
        assert_eq!(m.seed, None, "no seed: drawn at run time");
    }
}
