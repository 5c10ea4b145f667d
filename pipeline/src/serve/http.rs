//! The HTTP JSON API (see `pipeline/openapi.yaml`) on `tiny_http`: a fixed pool of threads,
//! each taking the next request. A synchronous server because every handler either answers at
//! once or blocks (on a condition variable, the store, Redis), which threads do plainly;
//! `tiny_http` is small (four dependencies, no async runtime) and leaves the JSON, the caps and
//! the token to this file, where they can be read in one place.

use std::io::Read as _;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tiny_http::{Header, Method, Request, Response, Server};

use super::job::{FieldError, Submission};
use super::service::{Refusal, Service};

/// The OpenAPI document, served at `/openapi.yaml`.
pub const OPENAPI: &str = include_str!("../../openapi.yaml");

/// The longest a client may wait for a result in one request, seconds.
pub const MAX_WAIT_S: f64 = 60.0;

/// Seconds a client is told to wait after a 429.
const RETRY_AFTER_S: u32 = 5;

/// Serves `service` on `server` with `threads` handler threads; returns when they all end
/// (never, unless the server is unblocked).
pub fn serve(server: Arc<Server>, service: Arc<Service>, token: Option<String>, threads: usize) {
    let token = Arc::new(token);
    let handles: Vec<_> = (0..threads.max(1))
        .map(|_| {
            let (server, service, token) = (server.clone(), service.clone(), token.clone());
            std::thread::spawn(move || {
                while let Ok(req) = server.recv() {
                    handle(&service, token.as_deref(), req);
                }
            })
        })
        .collect();
    for h in handles {
        let _ = h.join();
    }
}

struct Reply {
    status: u16,
    body: Vec<u8>,
    content_type: &'static str,
    headers: Vec<(&'static str, String)>,
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

fn handle(service: &Service, token: Option<&str>, mut req: Request) {
    let reply = route(service, token, &mut req);
    let mut resp = Response::from_data(reply.body).with_status_code(reply.status);
    let mut headers = reply.headers;
    headers.push(("Content-Type", reply.content_type.to_string()));
    for (k, v) in headers {
        if let Ok(h) = Header::from_bytes(k.as_bytes(), v.as_bytes()) {
            resp.add_header(h);
        }
    }
    // A client that went away is no error of ours.
    let _ = req.respond(resp);
}

fn authorised(token: Option<&str>, req: &Request) -> bool {
    let Some(token) = token else { return true };
    let given = req
        .headers()
        .iter()
        .find(|h| h.field.equiv("Authorization"))
        .map(|h| h.value.as_str())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    // Compared in time independent of where the first difference is.
    given.len() == token.len()
        && given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

fn route(service: &Service, token: Option<&str>, req: &mut Request) -> Reply {
    let url = req.url().to_string();
    let (path, query) = url.split_once('?').unwrap_or((&url, ""));
    let method = req.method().clone();
    if path == "/healthz" && method == Method::Get {
        return json_reply(200, &service.health());
    }
    if !authorised(token, req) {
        service.refused("unauthorised");
        let mut r = error(
            401,
            "a bearer token is required (Authorization: Bearer …)",
            None,
        );
        r.headers.push(("WWW-Authenticate", "Bearer".into()));
        return r;
    }
    match (method, path) {
        (Method::Get, "/metrics") => Reply {
            status: 200,
            body: service.metrics().into_bytes(),
            content_type: "text/plain; version=0.0.4",
            headers: Vec::new(),
        },
        (Method::Get, "/openapi.yaml") => Reply {
            status: 200,
            body: OPENAPI.as_bytes().to_vec(),
            content_type: "application/yaml",
            headers: Vec::new(),
        },
        (Method::Get, "/v1/tasks") => json_reply(
            200,
            &json!({
                "suite_hash": service.objects.suite_hash.hex(),
                "tasks": service.tasks.iter().map(|(id, d)| json!({"id": id, "digest": d.hex()})).collect::<Vec<_>>(),
            }),
        ),
        (Method::Post, "/v1/evaluations") => submit(service, req, false),
        (Method::Post, "/v1/batches") => submit(service, req, true),
        (Method::Get, p) if p.starts_with("/v1/evaluations/") => {
            let id = &p["/v1/evaluations/".len()..];
            let wait = match query_param(query, "wait") {
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
            match service.view(id, Duration::from_secs_f64(wait)) {
                Some(v) => json_reply(if v["state"] == "queued" { 202 } else { 200 }, &v),
                None => error(404, format!("no evaluation `{id}`"), None),
            }
        }
        (_, "/v1/evaluations" | "/v1/batches" | "/v1/tasks" | "/metrics" | "/openapi.yaml") => {
            error(405, "method not allowed", None)
        }
        _ => error(404, format!("no endpoint {path}"), None),
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

fn submit(service: &Service, req: &mut Request, batch: bool) -> Reply {
    let cap = service.caps.max_body;
    if req.body_length().is_some_and(|n| n > cap) {
        return too_large(service, format!("the body is over {cap} bytes"));
    }
    let mut body = Vec::new();
    if let Err(e) = req.as_reader().take(cap as u64 + 1).read_to_end(&mut body) {
        return error(400, format!("reading the body: {e}"), None);
    }
    if body.len() > cap {
        return too_large(service, format!("the body is over {cap} bytes"));
    }
    let v: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            service.refused("malformed");
            return error(400, format!("the body is not JSON: {e}"), None);
        }
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
        let parsed: Result<Vec<_>, _> = items
            .iter()
            .enumerate()
            .map(|(i, s)| Submission::from_json(s, &format!("items[{i}].")))
            .collect();
        parsed
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
    match service.submit(subs) {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The document names the endpoints `route` serves and the fields a submission takes.
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
                "/v1/evaluations/{id}",
                "/v1/tasks"
            ]
        );
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
    }
}
