//! The HTTP JSON API (see `pipeline/openapi.yaml`) on hyper, for a server that may face a
//! network.
//!
//! What a client that can reach the port cannot do, and what stops it:
//! - **crash it or make it allocate**: a body's size is checked against `max_body` from its
//!   `Content-Length` before a byte is read, and read through a limit after; a body that is
//!   not read is never buffered (hyper closes the connection instead);
//! - **hold it**: request heads must arrive within [`Limits::header_timeout`], bodies within
//!   [`Limits::body_timeout`], a connection lives at most [`Limits::connection_lifetime`], and
//!   at most [`Limits::max_connections`] are served at once (the next wait in the kernel's
//!   accept queue); long-polls (`?wait=`) wait on a channel, not on a thread;
//! - **stall other requests on a slow queue**: work that blocks (a submission pushed to Redis,
//!   a record read from the store) runs on a bounded pool of blocking threads, and the job
//!   table is never locked across it, so `/healthz` answers while Redis is paused;
//! - **read another client's jobs**: every token is a client, job ids are 128 random bits, and
//!   a job is visible only to the client that submitted it (404 to anyone else).
//!
//! Pipelined requests on one connection are answered one by one, in order (HTTP/1.1).
//!
//! For training loops: a client cancels its queued jobs (`DELETE /v1/evaluations/{id}`), reads
//! many at once (`POST /v1/evaluations/status`), gives a job a deadline in the queue
//! (`deadline_s`, enforced by a task here about every second), retries a submission safely
//! with an `Idempotency-Key`, and reads the caps it must keep to (`GET /v1/limits`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_LENGTH, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{Value, json};

use super::job::{FieldError, MAX_DEADLINE_S, Submission};
use super::service::{CancelRefusal, Idempotency, MAX_IDEMPOTENCY_KEY, Refusal, Service};

/// The OpenAPI document, served at `/openapi.yaml`.
pub const OPENAPI: &str = include_str!("../../openapi.yaml");

/// The longest a client may wait for a result in one request, seconds.
pub const MAX_WAIT_S: f64 = 60.0;

/// Seconds a client is told to wait after a 429.
const RETRY_AFTER_S: u32 = 5;

/// The shortest bearer token accepted.
pub const MIN_TOKEN_LEN: usize = 16;

/// The HTTP layer's limits (besides the service's [`super::service::Caps`]).
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub connection_lifetime: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 1024,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            connection_lifetime: Duration::from_secs(15 * 60),
        }
    }
}

/// Who may call: clients by bearer token, or anyone on loopback when there is none.
#[derive(Debug, Clone, Default)]
pub struct Auth {
    /// (token, client name): the name is a digest of the token, never the token.
    clients: Vec<(String, String)>,
}

impl Auth {
    /// Clients for `tokens` (none: loopback only); a token under [`MIN_TOKEN_LEN`] characters,
    /// or with whitespace or control characters, is refused.
    pub fn new(tokens: &[String]) -> Result<Auth, String> {
        let mut clients = Vec::new();
        for (i, t) in tokens.iter().enumerate() {
            if t.chars().count() < MIN_TOKEN_LEN {
                return Err(format!(
                    "token {}: has {} characters; a bearer token needs at least {MIN_TOKEN_LEN}",
                    i + 1,
                    t.chars().count()
                ));
            }
            if t.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(format!(
                    "token {}: holds whitespace or a control character",
                    i + 1
                ));
            }
            let name = format!("client-{}", &blake3::hash(t.as_bytes()).to_hex()[..16]);
            clients.push((t.clone(), name));
        }
        Ok(Auth { clients })
    }

    /// Whether any token is required.
    pub fn required(&self) -> bool {
        !self.clients.is_empty()
    }

    /// The client an `Authorization` header names, if any (`local` when no token is set).
    fn client(&self, header: Option<&HeaderValue>) -> Option<String> {
        if self.clients.is_empty() {
            return Some("local".into());
        }
        let given = header
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        // Every token is compared, each in time independent of where the first difference is.
        let mut found = None;
        for (token, name) in &self.clients {
            let same = given.len() == token.len()
                && given
                    .bytes()
                    .zip(token.bytes())
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0;
            if same {
                found = Some(name.clone());
            }
        }
        found
    }
}

/// Serves `service` on `listener` until the process ends: the accept loop and the handlers on
/// a small async runtime, blocking work on at most `blocking_threads` threads.
pub fn serve(
    listener: std::net::TcpListener,
    service: Arc<Service>,
    auth: Auth,
    limits: Limits,
    blocking_threads: usize,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(blocking_threads.max(2))
        .enable_all()
        .build()?;
    rt.block_on(accept(listener, service, Arc::new(auth), limits))
}

async fn accept(
    listener: std::net::TcpListener,
    service: Arc<Service>,
    auth: Arc<Auth>,
    limits: Limits,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    tokio::spawn(expire(service.clone()));
    loop {
        // A slot first: past the limit, connections wait in the kernel's queue.
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return Ok(());
        };
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                // Out of file descriptors, or a connection reset before it was taken: the
                // server goes on.
                eprintln!("warning: accepting a connection: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (service, auth, limits) = (service.clone(), auth.clone(), limits.clone());
        tokio::spawn(async move {
            let ctx = Arc::new(Ctx {
                service,
                auth,
                limits: limits.clone(),
            });
            let handler = service_fn(move |req| {
                let ctx = ctx.clone();
                async move { Ok::<_, Infallible>(route(&ctx, req).await.into_response()) }
            });
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .max_buf_size(64 * 1024)
                .serve_connection(TokioIo::new(stream), handler);
            let _ = tokio::time::timeout(limits.connection_lifetime, conn).await;
            drop(slot);
        });
    }
}

/// Ends queued jobs whose deadline passed, about every second (on the blocking pool: taking a
/// job out of Redis blocks).
async fn expire(service: Arc<Service>) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let s = service.clone();
        let _ = tokio::task::spawn_blocking(move || s.expire_due()).await;
    }
}

/// The caps a client must keep to (`GET /v1/limits`).
fn limits(c: &super::service::Caps, l: &Limits) -> Value {
    json!({
        "max_body": c.max_body,
        "max_batch": c.max_batch,
        "max_queue": c.max_queue,
        "timeout_s": c.timeout_s,
        "max_wait_s": MAX_WAIT_S,
        "max_connections": l.max_connections,
        "header_timeout_s": l.header_timeout.as_secs_f64(),
        "body_timeout_s": l.body_timeout.as_secs_f64(),
        "connection_lifetime_s": l.connection_lifetime.as_secs_f64(),
        "min_token_len": MIN_TOKEN_LEN,
        "max_deadline_s": MAX_DEADLINE_S,
        "max_idempotency_key_len": MAX_IDEMPOTENCY_KEY,
        "retry_after_s": RETRY_AFTER_S,
    })
}

struct Ctx {
    service: Arc<Service>,
    auth: Arc<Auth>,
    limits: Limits,
}

struct Reply {
    status: u16,
    body: Vec<u8>,
    content_type: &'static str,
    headers: Vec<(&'static str, String)>,
}

impl Reply {
    fn into_response(self) -> Response<Full<Bytes>> {
        let mut r = Response::new(Full::new(Bytes::from(self.body)));
        *r.status_mut() = hyper::StatusCode::from_u16(self.status)
            .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
        let h = r.headers_mut();
        h.insert("content-type", HeaderValue::from_static(self.content_type));
        for (k, v) in self.headers {
            if let Ok(v) = HeaderValue::from_str(&v) {
                h.insert(k, v);
            }
        }
        r
    }
}

fn json_reply(status: u16, v: &Value) -> Reply {
    Reply {
        status,
        body: serde_json::to_vec(v).unwrap_or_default(),
        content_type: "application/json",
        headers: Vec::new(),
    }
}

fn error(status: u16, message: impl Into<String>, field: Option<&str>) -> Reply {
    let mut v = json!({ "error": message.into() });
    if let Some(f) = field {
        v["field"] = f.into();
    }
    json_reply(status, &v)
}

fn field_error(e: &FieldError) -> Reply {
    error(400, e.to_string(), Some(&e.field))
}

/// What a request asks for.
#[derive(Debug, Clone, PartialEq)]
enum Endpoint {
    Health,
    Metrics,
    OpenApi,
    Tasks,
    Limits,
    Submit,
    Batch,
    StatusMany,
    View(String),
    Cancel(String),
}

/// The endpoint of `method` on `path`, or the status that refuses it (404: no such path, 405:
/// not that method).
fn endpoint(method: &Method, path: &str) -> Result<Endpoint, u16> {
    const ONE: &str = "/v1/evaluations/";
    let ep = match path {
        "/healthz" => [(Method::GET, Endpoint::Health)].to_vec(),
        "/metrics" => [(Method::GET, Endpoint::Metrics)].to_vec(),
        "/openapi.yaml" => [(Method::GET, Endpoint::OpenApi)].to_vec(),
        "/v1/tasks" => [(Method::GET, Endpoint::Tasks)].to_vec(),
        "/v1/limits" => [(Method::GET, Endpoint::Limits)].to_vec(),
        "/v1/evaluations" => [(Method::POST, Endpoint::Submit)].to_vec(),
        "/v1/batches" => [(Method::POST, Endpoint::Batch)].to_vec(),
        "/v1/evaluations/status" => [(Method::POST, Endpoint::StatusMany)].to_vec(),
        p if p.starts_with(ONE) => {
            let id = p[ONE.len()..].to_string();
            [
                (Method::GET, Endpoint::View(id.clone())),
                (Method::DELETE, Endpoint::Cancel(id)),
            ]
            .to_vec()
        }
        _ => return Err(404),
    };
    ep.into_iter()
        .find(|(m, _)| m == method)
        .map(|(_, e)| e)
        .ok_or(405)
}

async fn route(ctx: &Ctx, req: Request<Incoming>) -> Reply {
    let service = &ctx.service;
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let ep = endpoint(req.method(), &path);
    if ep == Ok(Endpoint::Health) {
        return json_reply(200, &service.health());
    }
    let Some(client) = ctx.auth.client(req.headers().get("authorization")) else {
        service.refused("unauthorised");
        let mut r = error(
            401,
            "a bearer token is required (Authorization: Bearer …)",
            None,
        );
        r.headers.push(("WWW-Authenticate", "Bearer".into()));
        return r;
    };
    let ep = match ep {
        Ok(ep) => ep,
        Err(405) => return error(405, "method not allowed", None),
        Err(_) => return error(404, format!("no endpoint {path}"), None),
    };
    match ep {
        Endpoint::Health => json_reply(200, &service.health()),
        Endpoint::Metrics => Reply {
            status: 200,
            body: service.metrics().into_bytes(),
            content_type: "text/plain; version=0.0.4",
            headers: Vec::new(),
        },
        Endpoint::OpenApi => Reply {
            status: 200,
            body: OPENAPI.as_bytes().to_vec(),
            content_type: "application/yaml",
            headers: Vec::new(),
        },
        Endpoint::Tasks => json_reply(
            200,
            &json!({
                "suite_hash": service.objects.suite_hash.hex(),
                "tasks": service.tasks.iter().map(|(id, d)| json!({"id": id, "digest": d.hex()})).collect::<Vec<_>>(),
            }),
        ),
        Endpoint::Limits => json_reply(200, &limits(&service.caps, &ctx.limits)),
        Endpoint::Submit => submit(ctx, req, &client, false).await,
        Endpoint::Batch => submit(ctx, req, &client, true).await,
        Endpoint::StatusMany => status_many(ctx, req, client).await,
        Endpoint::Cancel(id) => cancel(ctx, id, client).await,
        Endpoint::View(id) => {
            let wait = match query_param(&query, "wait") {
                None => 0.0,
                Some(w) => match w.parse::<f64>() {
                    Ok(s) if (0.0..=MAX_WAIT_S).contains(&s) => s,
                    _ => {
                        return error(
                            400,
                            format!("wait: `{w}`: takes seconds from 0 to {MAX_WAIT_S}"),
                            Some("wait"),
                        );
                    }
                },
            };
            view(ctx, id, client, Duration::from_secs_f64(wait)).await
        }
    }
}

/// Job `id`'s view for `client`, waiting up to `wait` (on the service's change channel, not a
/// thread) while it is queued.
async fn view(ctx: &Ctx, id: String, client: String, wait: Duration) -> Reply {
    let service = &ctx.service;
    let deadline = Instant::now() + wait;
    let mut changes = service.subscribe();
    loop {
        changes.borrow_and_update();
        match service.queued(&id, &client) {
            None => return error(404, format!("no evaluation `{id}`"), None),
            Some(true) => {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                // A change to any job wakes every waiter, which looks again.
                let _ = tokio::time::timeout(deadline - now, changes.changed()).await;
            }
            Some(false) => break,
        }
    }
    let s = service.clone();
    let v = tokio::task::spawn_blocking(move || s.view(&id, &client)).await;
    match v {
        Ok(Some(v)) => json_reply(if v["state"] == "queued" { 202 } else { 200 }, &v),
        Ok(None) => error(404, "no such evaluation", None),
        Err(e) => error(500, format!("reading the evaluation: {e}"), None),
    }
}

/// Cancels job `id` of `client` (see [`Service::cancel`]): its view, or 404 / 409.
async fn cancel(ctx: &Ctx, id: String, client: String) -> Reply {
    let s = ctx.service.clone();
    let done = tokio::task::spawn_blocking(move || {
        s.cancel(&id, &client).map(|()| {
            s.view(&id, &client)
                .unwrap_or_else(|| json!({"id": id, "state": "cancelled"}))
        })
    })
    .await;
    match done {
        Ok(Ok(v)) => json_reply(200, &v),
        Ok(Err(CancelRefusal::NotFound)) => error(404, "no such evaluation", None),
        Ok(Err(CancelRefusal::Conflict(m))) => error(409, m, None),
        Err(e) => error(500, format!("cancelling: {e}"), None),
    }
}

/// The views of many jobs (`{"ids": [...]}`, at most `max_batch`), in order, none waited for;
/// an id the client has no job of gets an error in its place.
async fn status_many(ctx: &Ctx, req: Request<Incoming>, client: String) -> Reply {
    let service = &ctx.service;
    let v = match read_json(ctx, req).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let Some(Value::Array(items)) = v
        .as_object()
        .filter(|o| o.len() == 1)
        .and_then(|o| o.get("ids"))
    else {
        service.refused("malformed");
        return error(
            400,
            "a status request is an object with `ids` only, a list of evaluation ids",
            Some("ids"),
        );
    };
    if items.len() > service.caps.max_batch {
        return too_large(
            service,
            format!(
                "ids: {} ids, at most {} a request",
                items.len(),
                service.caps.max_batch
            ),
        );
    }
    let mut ids = Vec::with_capacity(items.len());
    for (i, id) in items.iter().enumerate() {
        match id.as_str() {
            Some(id) => ids.push(id.to_string()),
            None => {
                service.refused("malformed");
                return error(400, "must be a string", Some(&format!("ids[{i}]")));
            }
        }
    }
    let s = service.clone();
    let views = tokio::task::spawn_blocking(move || {
        ids.iter()
            .map(|id| {
                s.view(id, &client)
                    .unwrap_or_else(|| json!({"id": id, "error": format!("no evaluation `{id}`")}))
            })
            .collect::<Vec<_>>()
    })
    .await;
    match views {
        Ok(results) => json_reply(200, &json!({ "results": results })),
        Err(e) => error(500, format!("reading the evaluations: {e}"), None),
    }
}

fn query_param<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

fn too_large(service: &Service, what: String) -> Reply {
    service.refused("too_large");
    error(413, what, None)
}

/// The body of `req` ([`read_body`]) as JSON read strictly (no key twice).
async fn read_json(ctx: &Ctx, req: Request<Incoming>) -> Result<Value, Reply> {
    let body = read_body(ctx, req).await?;
    super::strict_json::parse(&body).map_err(|e| {
        ctx.service.refused("malformed");
        error(
            400,
            format!("the body is not JSON as this API takes it: {e}"),
            None,
        )
    })
}

/// The body of `req`, refused before it is read when its declared length is over `cap`, and
/// read through a limit and a deadline.
async fn read_body(ctx: &Ctx, req: Request<Incoming>) -> Result<Bytes, Reply> {
    let service = &ctx.service;
    let cap = service.caps.max_body;
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > cap as u64) {
        return Err(too_large(service, format!("the body is over {cap} bytes")));
    }
    let limited = Limited::new(req.into_body(), cap).collect();
    match tokio::time::timeout(ctx.limits.body_timeout, limited).await {
        Err(_) => {
            service.refused("slow_body");
            Err(error(
                408,
                format!(
                    "the body did not arrive within {} s",
                    ctx.limits.body_timeout.as_secs()
                ),
                None,
            ))
        }
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            Err(too_large(service, format!("the body is over {cap} bytes")))
        }
        Ok(Err(e)) => Err(error(400, format!("reading the body: {e}"), None)),
        Ok(Ok(c)) => Ok(c.to_bytes()),
    }
}

async fn submit(ctx: &Ctx, req: Request<Incoming>, client: &str, batch: bool) -> Reply {
    let service = &ctx.service;
    let idem = match req.headers().get("idempotency-key") {
        None => None,
        Some(k) => match Idempotency::new(k.as_bytes(), batch) {
            Ok(k) => Some(k),
            Err(m) => {
                service.refused("malformed");
                return error(
                    400,
                    format!("Idempotency-Key: {m}"),
                    Some("Idempotency-Key"),
                );
            }
        },
    };
    let v = match read_json(ctx, req).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let subs = if batch {
        let items = match v.as_object().map(|o| (o.get("items"), o.len())) {
            Some((Some(Value::Array(items)), 1)) => items,
            Some((Some(_), 1)) => {
                service.refused("malformed");
                return field_error(&FieldError {
                    field: "items".into(),
                    message: "must be a list of submissions".into(),
                });
            }
            _ => {
                service.refused("malformed");
                return field_error(&FieldError {
                    field: "items".into(),
                    message: "a batch is an object with `items` only".into(),
                });
            }
        };
        if items.len() > service.caps.max_batch {
            return too_large(
                service,
                format!(
                    "items: {} submissions, at most {} a batch",
                    items.len(),
                    service.caps.max_batch
                ),
            );
        }
        items
            .iter()
            .enumerate()
            .map(|(i, s)| Submission::from_json(s, &format!("items[{i}].")))
            .collect::<Result<Vec<_>, _>>()
    } else {
        Submission::from_json(&v, "").map(|s| vec![s])
    };
    let subs = match subs {
        Ok(s) => s,
        Err(e) => {
            service.refused("malformed");
            return field_error(&e);
        }
    };
    // Pushing to Redis blocks: on the blocking pool, never on the threads that answer.
    let (s, owner) = (service.clone(), client.to_string());
    let submitted =
        tokio::task::spawn_blocking(move || s.submit(subs, &owner, idem.as_ref())).await;
    let submitted = match submitted {
        Ok(r) => r,
        Err(e) => return error(500, format!("submitting: {e}"), None),
    };
    match submitted {
        Ok(ids) if batch => json_reply(202, &json!({ "ids": ids })),
        Ok(ids) => json_reply(202, &json!({ "id": ids[0] })),
        Err(Refusal::Field(e)) => {
            service.refused("malformed");
            field_error(&e)
        }
        Err(Refusal::Full { depth }) => {
            let mut r = error(
                429,
                format!(
                    "the queue holds {depth} jobs (at most {}); retry later",
                    service.caps.max_queue
                ),
                None,
            );
            r.headers.push(("Retry-After", RETRY_AFTER_S.to_string()));
            r
        }
        Err(Refusal::Queue(m)) => error(503, m, None),
        Err(Refusal::KeyReused(k)) => {
            service.refused("idempotency_key_reused");
            error(
                422,
                format!(
                    "Idempotency-Key `{k}` was used with another request; a key stands for one \
                     request (send a new key with a new request)"
                ),
                Some("Idempotency-Key"),
            )
        }
        Err(Refusal::KeyInFlight(k)) => {
            let mut r = error(
                409,
                format!(
                    "a request with Idempotency-Key `{k}` is being queued now; retry to get its ids"
                ),
                Some("Idempotency-Key"),
            );
            r.headers.push(("Retry-After", "1".into()));
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The document names the endpoints `route` serves, with their methods, the fields a
    /// submission takes, the states a job's view names and the caps `/v1/limits` gives.
    #[test]
    fn the_openapi_document_matches_the_code() {
        let doc: Value = serde_saphyr::from_str(OPENAPI).expect("the document is YAML");
        let mut paths: Vec<&str> = doc["paths"]
            .as_object()
            .expect("paths")
            .keys()
            .map(String::as_str)
            .collect();
        paths.sort_unstable();
        assert_eq!(
            paths,
            [
                "/healthz",
                "/metrics",
                "/openapi.yaml",
                "/v1/batches",
                "/v1/evaluations",
                "/v1/evaluations/status",
                "/v1/evaluations/{id}",
                "/v1/limits",
                "/v1/tasks"
            ]
        );
        // Every documented method is served, and every other one is a 405.
        let id = "0123456789abcdef0123456789abcdef";
        for (path, methods) in doc["paths"].as_object().expect("paths") {
            let concrete = path.replace("{id}", id);
            for m in [Method::GET, Method::POST, Method::DELETE, Method::PUT] {
                let documented = methods.get(m.as_str().to_lowercase()).is_some();
                let served = endpoint(&m, &concrete);
                if documented {
                    assert!(served.is_ok(), "{m} {path}: documented, not served");
                } else {
                    assert_eq!(served, Err(405), "{m} {path}: served, not documented");
                }
            }
        }
        assert_eq!(endpoint(&Method::GET, "/v1/nothing"), Err(404));
        let mut fields: Vec<&str> = doc["components"]["schemas"]["Submission"]["properties"]
            .as_object()
            .expect("properties")
            .keys()
            .map(String::as_str)
            .collect();
        fields.sort_unstable();
        let mut code = super::super::job::FIELDS.to_vec();
        code.sort_unstable();
        assert_eq!(fields, code);
        let states: Vec<&str> =
            doc["components"]["schemas"]["Result"]["properties"]["state"]["enum"]
                .as_array()
                .expect("states")
                .iter()
                .filter_map(Value::as_str)
                .collect();
        assert_eq!(states, super::super::service::STATES);
        // The caps `/v1/limits` gives are the schema's, all required.
        let schema = &doc["components"]["schemas"]["Limits"];
        let mut documented: Vec<&str> = schema["properties"]
            .as_object()
            .expect("properties")
            .keys()
            .map(String::as_str)
            .collect();
        documented.sort_unstable();
        let mut required: Vec<&str> = schema["required"]
            .as_array()
            .expect("required")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        required.sort_unstable();
        assert_eq!(documented, required);
        let caps = super::super::service::Caps {
            max_body: 1,
            max_batch: 2,
            max_queue: 3,
            timeout_s: 4,
        };
        let given = limits(&caps, &Limits::default());
        let mut served: Vec<&str> = given
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        served.sort_unstable();
        assert_eq!(documented, served);
    }
}
