//! A loopback chat-completions server that replays canned answers (tests and dry runs). Test
//! support, not part of the shipped binary: the test binaries include it, and so does the
//! `canned-server` example that `pipeline/scripts/generate-loopback.sh` starts.
//!
//! It speaks enough HTTP/1.1 for any chat-completions client: `POST …/chat/completions` with a
//! JSON body, one request per connection (`Connection: close`). A folder configures it:
//! - `turn-<n>.md`: the assistant's text for a request whose conversation already holds `n`
//!   assistant messages (0 = the first answer); later turns reuse the highest `n`;
//! - `faults.txt` (optional): one directive per incoming request, in arrival order, then every
//!   request is answered normally: `ok`, `429 <retry-after seconds>`, `500`,
//!   `slow <seconds>` (answer after a delay), `drop` (send half the reply, then close),
//!   `length` (answer, with `finish_reason: length`),
//!   `redirect <url>` (a 302 to the URL), `usage <n>` (answer, reporting `n` prompt and `n`
//!   completion tokens), `echo-key-error` (a 500 quoting the request's `Authorization`),
//!   `echo-key-ok` (answer, with the `Authorization` plain in an extra field and JSON-escaped
//!   in the content);
//! - `models.txt` (optional): the model names `GET …/models` lists, one a line (without it,
//!   that listing is a 404, as on a server that has none).
//!
//! It binds 127.0.0.1 only. Every request served is logged ([`Served`]) so a test can count
//! what was asked.

// Each includer uses a different part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the server does with one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    Ok,
    TooMany {
        retry_after_s: u64,
    },
    ServerError,
    Slow {
        seconds: u64,
    },
    Drop,
    Redirect {
        location: String,
    },
    Usage {
        tokens: u64,
    },
    /// The answer, with `finish_reason: length` (cut at the token limit).
    Length,
    /// A 500 whose body holds the request's `Authorization` value.
    EchoKeyError,
    /// The answer, with the request's `Authorization` value in the reply: plain in an extra
    /// field, and JSON-escaped (`\u0073…`) inside the message content.
    EchoKeyOk,
}

impl Directive {
    fn parse(line: &str) -> Result<Directive, String> {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| -> Result<u64, String> {
            parts
                .get(i)
                .ok_or_else(|| format!("`{line}`: a number is missing"))?
                .parse::<u64>()
                .map_err(|e| format!("`{line}`: {e}"))
        };
        match parts.first().copied() {
            Some("ok") => Ok(Directive::Ok),
            Some("429") => Ok(Directive::TooMany {
                retry_after_s: num(1)?,
            }),
            Some("500") => Ok(Directive::ServerError),
            Some("slow") => Ok(Directive::Slow { seconds: num(1)? }),
            Some("drop") => Ok(Directive::Drop),
            Some("redirect") => Ok(Directive::Redirect {
                location: parts
                    .get(1)
                    .ok_or_else(|| format!("`{line}`: a URL is missing"))?
                    .to_string(),
            }),
            Some("usage") => Ok(Directive::Usage { tokens: num(1)? }),
            Some("length") => Ok(Directive::Length),
            Some("echo-key-error") => Ok(Directive::EchoKeyError),
            Some("echo-key-ok") => Ok(Directive::EchoKeyOk),
            _ => Err(format!(
                "`{line}`: expected ok, 429 <s>, 500, slow <s>, drop, redirect <url>, usage <n>, length, echo-key-error or echo-key-ok"
            )),
        }
    }
}

/// One request the server answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// 0-based arrival order.
    pub index: usize,
    pub model: String,
    /// Assistant messages already in the conversation.
    pub turn: usize,
    pub directive: Directive,
    /// The request's body as it arrived (headers, the API key's among them, are not kept).
    pub body: Vec<u8>,
}

struct State {
    answers: BTreeMap<usize, String>,
    faults: Vec<Directive>,
    models: Option<Vec<String>>,
    next: AtomicUsize,
    served: Mutex<Vec<Served>>,
}

/// A running server; stops when dropped.
pub struct CannedServer {
    addr: SocketAddr,
    state: Arc<State>,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

/// Reads the answers and faults of a canned folder.
fn load(dir: &Path) -> Result<State, String> {
    let mut answers = BTreeMap::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().to_string();
        if let Some(n) = name
            .strip_prefix("turn-")
            .and_then(|r| r.strip_suffix(".md"))
        {
            let n: usize = n
                .parse()
                .map_err(|_| format!("{}: `{name}` is not turn-<n>.md", dir.display()))?;
            let text = std::fs::read_to_string(entry.path())
                .map_err(|e| format!("{}: {e}", entry.path().display()))?;
            answers.insert(n, text);
        }
    }
    if answers.is_empty() {
        return Err(format!("{}: no turn-<n>.md answers", dir.display()));
    }
    let faults_path = dir.join("faults.txt");
    let faults = match std::fs::read_to_string(&faults_path) {
        Ok(text) => text
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").trim())
            .filter(|l| !l.is_empty())
            .map(Directive::parse)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{}: {e}", faults_path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(format!("{}: {e}", faults_path.display())),
    };
    let models_path = dir.join("models.txt");
    let models = match std::fs::read_to_string(&models_path) {
        Ok(text) => Some(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(String::from)
                .collect(),
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", models_path.display())),
    };
    Ok(State {
        answers,
        faults,
        models,
        next: AtomicUsize::new(0),
        served: Mutex::new(Vec::new()),
    })
}

impl std::fmt::Debug for CannedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CannedServer")
            .field("addr", &self.addr)
            .finish()
    }
}

impl CannedServer {
    /// Starts serving `dir` on 127.0.0.1:`port` (0: any free port).
    pub fn start(dir: &Path, port: u16) -> Result<CannedServer, String> {
        let state = Arc::new(load(dir)?);
        let listener = TcpListener::bind(("127.0.0.1", port))
            .map_err(|e| format!("binding 127.0.0.1:{port}: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (Arc::clone(&state), Arc::clone(&stop));
        let handle = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if sp.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = conn {
                    let st = Arc::clone(&st);
                    std::thread::spawn(move || {
                        let _ = handle_connection(&st, stream);
                    });
                }
            }
        });
        Ok(CannedServer {
            addr,
            state,
            stop,
            handle: Some(handle),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL clients are given (`http://127.0.0.1:<port>/v1`).
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request answered so far, in arrival order.
    pub fn served(&self) -> Vec<Served> {
        let mut v = self
            .state
            .served
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        v.sort_by_key(|s| s.index);
        v
    }

    /// Serves until the process is ended (the `canned-server` example).
    pub fn wait(mut self) {
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for CannedServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn handle_connection(state: &State, mut stream: TcpStream) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        if buf.len() > 1 << 20 {
            return respond(&mut stream, 431, &[], b"{}");
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_string();
    let authorization = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("authorization"))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    let mut lines = head.lines();
    let request_line = lines.next().unwrap_or("");
    let length: usize = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = buf[header_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let mut parts = request_line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if method == "GET" && path.ends_with("/models") {
        return match &state.models {
            Some(models) => {
                let data: Vec<serde_json::Value> = models
                    .iter()
                    .map(
                        |id| serde_json::json!({"id": id, "object": "model", "owned_by": "canned"}),
                    )
                    .collect();
                let body = serde_json::to_vec(&serde_json::json!({"object": "list", "data": data}))
                    .map_err(std::io::Error::other)?;
                respond(&mut stream, 200, &[], &body)
            }
            None => respond(
                &mut stream,
                404,
                &[],
                br#"{"error":{"message":"not found"}}"#,
            ),
        };
    }
    if method != "POST" || !path.ends_with("/chat/completions") {
        return respond(
            &mut stream,
            404,
            &[],
            br#"{"error":{"message":"not found"}}"#,
        );
    }
    let Ok(req) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return respond(
            &mut stream,
            400,
            &[],
            br#"{"error":{"message":"bad JSON"}}"#,
        );
    };
    let messages = req["messages"].as_array().cloned().unwrap_or_default();
    let turn = messages.iter().filter(|m| m["role"] == "assistant").count();
    let prompt_chars: usize = messages
        .iter()
        .map(|m| m["content"].as_str().map_or(0, str::len))
        .sum();
    let model = req["model"].as_str().unwrap_or("").to_string();
    let index = state.next.fetch_add(1, Ordering::SeqCst);
    let directive = state.faults.get(index).cloned().unwrap_or(Directive::Ok);
    state
        .served
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Served {
            index,
            model: model.clone(),
            turn,
            directive: directive.clone(),
            body: body.clone(),
        });
    let answer = state
        .answers
        .range(..=turn)
        .next_back()
        .or_else(|| state.answers.iter().next())
        .map(|(_, a)| a.as_str())
        .unwrap_or("");
    let completion = (answer.len() / 4) as u64;
    let prompt = (prompt_chars / 4) as u64;
    let ok_body = serde_json::to_vec(&serde_json::json!({
        "id": format!("chatcmpl-canned-{index}"),
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                  "completion_tokens_details": {"reasoning_tokens": 0}},
    }))
    .map_err(std::io::Error::other)?;
    match directive {
        Directive::Ok => respond(&mut stream, 200, &[], &ok_body),
        Directive::Length => {
            let mut v: serde_json::Value =
                serde_json::from_slice(&ok_body).map_err(std::io::Error::other)?;
            v["choices"][0]["finish_reason"] = "length".into();
            let body = serde_json::to_vec(&v).map_err(std::io::Error::other)?;
            respond(&mut stream, 200, &[], &body)
        }
        Directive::Redirect { location } => respond(
            &mut stream,
            302,
            &[("Location", location)],
            br#"{"error":{"message":"moved (canned)"}}"#,
        ),
        Directive::Usage { tokens } => {
            let body = serde_json::to_vec(&serde_json::json!({
                "id": format!("chatcmpl-canned-{index}"),
                "object": "chat.completion",
                "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": tokens, "completion_tokens": tokens},
            }))
            .map_err(std::io::Error::other)?;
            respond(&mut stream, 200, &[], &body)
        }
        Directive::EchoKeyError => {
            let body = serde_json::to_vec(&serde_json::json!({
                "error": {"message": format!("bad credentials: {authorization}")},
            }))
            .map_err(std::io::Error::other)?;
            respond(&mut stream, 500, &[], &body)
        }
        Directive::EchoKeyOk => {
            let escaped: String = authorization
                .chars()
                .map(|c| format!("\\u{:04x}", c as u32))
                .collect();
            let body = serde_json::to_string(&serde_json::json!({
                "id": format!("chatcmpl-canned-{index}"),
                "object": "chat.completion",
                "model": model,
                "echo": authorization,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": format!("{answer}\nYour key: ESCAPED_KEY")}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
            }))
            .map_err(std::io::Error::other)?
            .replace("ESCAPED_KEY", &escaped);
            respond(&mut stream, 200, &[], body.as_bytes())
        }
        Directive::TooMany { retry_after_s } => respond(
            &mut stream,
            429,
            &[("Retry-After", retry_after_s.to_string())],
            br#"{"error":{"message":"rate limited (canned)"}}"#,
        ),
        Directive::ServerError => respond(
            &mut stream,
            500,
            &[],
            br#"{"error":{"message":"internal error (canned)"}}"#,
        ),
        Directive::Slow { seconds } => {
            std::thread::sleep(Duration::from_secs(seconds));
            respond(&mut stream, 200, &[], &ok_body)
        }
        Directive::Drop => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                ok_body.len()
            );
            stream.write_all(head.as_bytes())?;
            stream.write_all(&ok_body[..ok_body.len() / 2])?;
            stream.flush()?;
            stream.shutdown(Shutdown::Both)
        }
    }
}

fn respond(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(&str, String)],
    body: &[u8],
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        302 => "Found",
        400 => "Bad Request",
        404 => "Not Found",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        _ => "Internal Server Error",
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}
