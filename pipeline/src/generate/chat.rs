//! The chat-completions client: one HTTP attempt at a time, and what a reply says.
//!
//! [`ChatClient::attempt`] sends exact request bytes and returns the exact reply bytes with the
//! status and the latency, or an [`AttemptError`] that says whether trying again can help
//! (429, 5xx, timeouts, dropped connections) or not (other 4xx, a bad URL). Retrying, backoff
//! and spend are the caller's ([`super::backoff`], [`super::trajectory`]). The API key travels
//! in the `Authorization` header only; it is never part of the bytes returned or stored.
//!
//! A redirect is never followed (another origin would answer in the model's name, and get the
//! key): it is an [`AttemptError::Redirect`] with its status and location. Token counts
//! saturate: a usage of 2^63 or beyond reads as `u64::MAX` (a negative one as 0), never wraps.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// One message of a conversation, as the chat-completions API writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    /// A message whose content is redacted of every secret this process holds: a message
    /// is sent to an endpoint and stored, so no secret may ride in it.
    pub fn new(role: &str, content: impl Into<String>) -> Message {
        let content: String = content.into();
        let content = match crate::secrets::redact(&content) {
            std::borrow::Cow::Borrowed(_) => content,
            std::borrow::Cow::Owned(clean) => clean,
        };
        Message {
            role: role.to_string(),
            content,
        }
    }
}

/// Token usage as the endpoint reported it (zeros where it reported nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Reasoning tokens, where the API reports them (`completion_tokens_details`).
    pub reasoning_tokens: Option<u64>,
    pub total_tokens: u64,
}

/// What a successful reply says.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The assistant's text (empty when the reply had none).
    pub content: String,
    /// `stop`, `length` (cut off at max_tokens), ...
    pub finish_reason: Option<String>,
    pub usage: Usage,
}

/// A reply with a status the caller accepts (2xx).
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
    pub latency_ms: u64,
}

/// Why one attempt gave no usable reply.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AttemptError {
    #[error("HTTP {status}{}: {}", .retry_after.map(|d| format!(" (Retry-After {} s)", d.as_secs())).unwrap_or_default(), snippet(.body))]
    Status {
        status: u16,
        retry_after: Option<Duration>,
        body: Vec<u8>,
    },
    #[error(
        "HTTP {status}: redirect to `{location}` not followed (a chat endpoint must answer itself; point `endpoint` at the final URL if it is trusted)"
    )]
    Redirect {
        status: u16,
        location: String,
        body: Vec<u8>,
    },
    #[error("timed out: {0}")]
    Timeout(String),
    #[error("connection failed or dropped: {0}")]
    Connection(String),
    #[error("the reply is not a chat completion: {0}")]
    Malformed(String),
    #[error("request refused by the client: {0}")]
    Fatal(String),
}

fn snippet(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(body);
    let s = s.trim();
    if s.chars().count() > 300 {
        format!("{}…", s.chars().take(300).collect::<String>())
    } else {
        s.to_string()
    }
}

impl AttemptError {
    /// Whether another attempt may succeed.
    pub fn retryable(&self) -> bool {
        match self {
            AttemptError::Status { status, .. } => *status == 429 || *status >= 500,
            AttemptError::Redirect { .. } => false,
            AttemptError::Timeout(_) | AttemptError::Connection(_) | AttemptError::Malformed(_) => {
                true
            }
            AttemptError::Fatal(_) => false,
        }
    }

    /// The server's `Retry-After`, if it sent one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            AttemptError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The body the server sent with a refused reply, if any.
    pub fn body(&self) -> Option<&[u8]> {
        match self {
            AttemptError::Status { body, .. } | AttemptError::Redirect { body, .. } => {
                Some(body.as_slice()).filter(|b| !b.is_empty())
            }
            _ => None,
        }
    }

    /// A one-line summary for exchange objects and logs.
    pub fn summary(&self) -> String {
        match self {
            AttemptError::Status { status, .. } | AttemptError::Redirect { status, .. } => {
                format!("http {status}")
            }
            AttemptError::Timeout(_) => "timeout".into(),
            AttemptError::Connection(_) => "connection".into(),
            AttemptError::Malformed(_) => "malformed".into(),
            AttemptError::Fatal(_) => "fatal".into(),
        }
    }
}

/// A blocking client for one endpoint.
pub struct ChatClient {
    agent: ureq::Agent,
    url: String,
    api_key: Option<String>,
    /// The whole-request timeout of a completion.
    timeout: Duration,
}

impl std::fmt::Debug for ChatClient {
    // Never prints the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatClient")
            .field("url", &self.url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .finish()
    }
}

/// The longest `GET …/models` waits (less when the model's own request timeout is shorter).
pub const LIST_TIMEOUT: Duration = Duration::from_secs(15);

impl ChatClient {
    /// A client with a whole-request timeout.
    pub fn new(url: String, api_key: Option<String>, timeout: Duration) -> ChatClient {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(timeout))
            .max_idle_connections(0)
            .build()
            .new_agent();
        ChatClient {
            agent,
            url,
            api_key,
            timeout,
        }
    }

    /// Sends `body` (JSON) once.
    pub fn attempt(&self, body: &[u8]) -> Result<Reply, AttemptError> {
        let start = Instant::now();
        let mut req = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/json");
        if let Some(k) = &self.api_key {
            req = req.header("Authorization", format!("Bearer {k}"));
        }
        let mut resp = req.send(body).map_err(classify)?;
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let location = resp.headers().get("location").map(|v| {
            crate::secrets::redact(&String::from_utf8_lossy(v.as_bytes()))
                .chars()
                .take(500)
                .collect()
        });
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(64 * 1024 * 1024)
            .read_to_vec()
            .map_err(classify)?;
        // An endpoint may echo the key (or any secret of this process) back: nothing it sends
        // is kept, shown or fed back with one in it.
        let bytes = crate::secrets::redact_reply(&bytes);
        let latency_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
        if (300..400).contains(&status) {
            return Err(AttemptError::Redirect {
                status,
                location: location.unwrap_or_else(|| "(no Location header)".into()),
                body: bytes,
            });
        }
        if !(200..300).contains(&status) {
            return Err(AttemptError::Status {
                status,
                retry_after,
                body: bytes,
            });
        }
        Ok(Reply {
            status,
            body: bytes,
            latency_ms,
        })
    }
}

/// `GET …/models`: what an OpenAI-compatible server lists.
#[derive(Deserialize)]
struct RawModels {
    data: Vec<RawModel>,
}

#[derive(Deserialize)]
struct RawModel {
    id: String,
}

impl ChatClient {
    /// The endpoint's model listing (`GET <base>/models`, the base being the chat URL without
    /// its `/chat/completions`), with the API key; no completion is requested.
    pub fn list_models(&self) -> Result<Vec<String>, AttemptError> {
        let base = self
            .url
            .strip_suffix("/chat/completions")
            .unwrap_or(&self.url);
        // A server that is up answers its listing at once; one still loading its model (or
        // one that never answers) should not hold the preflight for a whole request timeout.
        let mut req = self
            .agent
            .get(format!("{base}/models"))
            .config()
            .timeout_global(Some(LIST_TIMEOUT.min(self.timeout)))
            .build();
        if let Some(k) = &self.api_key {
            req = req.header("Authorization", format!("Bearer {k}"));
        }
        let mut resp = req.call().map_err(classify)?;
        let status = resp.status().as_u16();
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(16 * 1024 * 1024)
            .read_to_vec()
            .map_err(classify)?;
        let bytes = crate::secrets::redact_reply(&bytes);
        if !(200..300).contains(&status) {
            return Err(AttemptError::Status {
                status,
                retry_after: None,
                body: bytes,
            });
        }
        let list: RawModels = serde_json::from_slice(&bytes)
            .map_err(|e| AttemptError::Malformed(format!("a model list was expected: {e}")))?;
        Ok(list.data.into_iter().map(|m| m.id).collect())
    }
}

fn classify(e: ureq::Error) -> AttemptError {
    match e {
        ureq::Error::Timeout(t) => AttemptError::Timeout(t.to_string()),
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
            AttemptError::Timeout(io.to_string())
        }
        ureq::Error::Io(io) => AttemptError::Connection(io.to_string()),
        ureq::Error::ConnectionFailed | ureq::Error::HostNotFound => {
            AttemptError::Connection(e.to_string())
        }
        ureq::Error::Protocol(p) => AttemptError::Connection(p.to_string()),
        ureq::Error::BadUri(_) | ureq::Error::Http(_) | ureq::Error::InvalidProxyUrl => {
            AttemptError::Fatal(e.to_string())
        }
        other => AttemptError::Connection(other.to_string()),
    }
}

#[derive(Deserialize)]
struct RawReply {
    #[serde(default)]
    choices: Vec<RawChoice>,
    #[serde(default)]
    usage: Option<RawUsage>,
}

#[derive(Deserialize)]
struct RawChoice {
    #[serde(default)]
    message: Option<RawMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct RawMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct RawUsage {
    #[serde(default, deserialize_with = "saturating")]
    prompt_tokens: u64,
    #[serde(default, deserialize_with = "saturating")]
    completion_tokens: u64,
    #[serde(default, deserialize_with = "saturating")]
    total_tokens: u64,
    #[serde(default)]
    completion_tokens_details: Option<RawDetails>,
}

#[derive(Deserialize)]
struct RawDetails {
    #[serde(default, deserialize_with = "saturating_opt")]
    reasoning_tokens: Option<u64>,
}

/// A token count as any JSON number (or null): clamped to `0..=u64::MAX`, never wrapped.
fn saturating<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    saturating_opt(d).map(Option::unwrap_or_default)
}

fn saturating_opt<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = Option::<serde_json::Number>::deserialize(d)?;
    Ok(v.map(|n| {
        n.as_u64().unwrap_or_else(|| match n.as_f64() {
            Some(f) if f > 0.0 => f.min(u64::MAX as f64) as u64,
            _ => 0,
        })
    }))
}

/// Reads a chat-completions reply body.
pub fn parse_completion(body: &[u8]) -> Result<Completion, AttemptError> {
    let raw: RawReply =
        serde_json::from_slice(body).map_err(|e| AttemptError::Malformed(e.to_string()))?;
    let choice = raw.choices.into_iter().next().ok_or_else(|| {
        AttemptError::Malformed(format!("no `choices` in the reply: {}", snippet(body)))
    })?;
    let usage = raw.usage.map_or(Usage::default(), |u| Usage {
        prompt_tokens: u.prompt_tokens,
        completion_tokens: u.completion_tokens,
        reasoning_tokens: u.completion_tokens_details.and_then(|d| d.reasoning_tokens),
        total_tokens: if u.total_tokens > 0 {
            u.total_tokens
        } else {
            u.prompt_tokens.saturating_add(u.completion_tokens)
        },
    });
    Ok(Completion {
        content: choice.message.and_then(|m| m.content).unwrap_or_default(),
        finish_reason: choice.finish_reason,
        usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_with_reasoning_tokens_is_read() {
        let body = br#"{"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"length"}],
            "usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8,"completion_tokens_details":{"reasoning_tokens":2}}}"#;
        let c = parse_completion(body).expect("a completion");
        assert_eq!(c.content, "hi");
        assert_eq!(c.finish_reason.as_deref(), Some("length"));
        assert_eq!(c.usage.reasoning_tokens, Some(2));
        assert_eq!(c.usage.total_tokens, 8);
        assert!(parse_completion(b"{\"choices\":[]}").is_err());
        assert!(parse_completion(b"<html>").is_err());
    }

    #[test]
    fn issue_15_token_counts_saturate() {
        let body = br#"{"choices":[{"message":{"content":"x"}}],
            "usage":{"prompt_tokens":9223372036854775808,"completion_tokens":9223372036854775808}}"#;
        let c = parse_completion(body).expect("a completion");
        assert_eq!(
            c.usage.total_tokens,
            u64::MAX,
            "2^63 + 2^63 must not wrap to 0"
        );
        let body = br#"{"choices":[{"message":{"content":"x"}}],
            "usage":{"prompt_tokens":1e30,"completion_tokens":-5,"total_tokens":184467440737095516150,
                     "completion_tokens_details":{"reasoning_tokens":1e300}}}"#;
        let c = parse_completion(body).expect("a completion");
        assert_eq!(c.usage.prompt_tokens, u64::MAX);
        assert_eq!(c.usage.completion_tokens, 0);
        assert_eq!(c.usage.total_tokens, u64::MAX);
        assert_eq!(c.usage.reasoning_tokens, Some(u64::MAX));
    }

    #[test]
    fn issue_15_a_200_without_choices_shows_its_body() {
        let e = parse_completion(br#"{"error":{"message":"quota exceeded for this key"}}"#)
            .expect_err("no choices")
            .to_string();
        assert!(e.contains("quota exceeded for this key"), "{e}");
    }

    #[test]
    fn only_transient_failures_are_retried() {
        let st = |status| AttemptError::Status {
            status,
            retry_after: None,
            body: Vec::new(),
        };
        assert!(st(429).retryable() && st(503).retryable());
        assert!(!st(400).retryable() && !st(401).retryable());
        assert!(AttemptError::Timeout("x".into()).retryable());
        assert!(!AttemptError::Fatal("x".into()).retryable());
    }
}
