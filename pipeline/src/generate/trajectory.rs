//! One trajectory: prompt, ask, extract, check, evaluate, feed back, up to the turn limit.
//!
//! Every turn stores, before its journal entry is written: the request and reply bodies of
//! every attempt, an exchange object (`ptxbench.exchange/1`: usage, reasoning tokens, latency,
//! attempts), the conversation sent (a JSON array of messages), the response text, the
//! candidate's source, PTX, plan and cubin, and a `ptxbench.record/1` linked to the previous
//! turn's record. A trajectory that ends writes a `ptxbench.trajectory/1` object listing its
//! records and exchanges in order. A trajectory stops when the kernel is correct and at least as
//! fast as the library (or correct with timing off), at the turn limit, or, with `--no-eval`,
//! after its first turn. A harness failure (verdict `other`: never blamed on the model, never
//! fed back), a spend cap or a request that keeps failing leaves it unfinished: the next run
//! continues from the journal without asking for a finished turn again, and grades the answer
//! of a turn the harness failed on (or, without `--no-eval`, one that was not evaluated) anew
//! from the store, without a request; the earlier record stays in the store.

use crate::record::Stage;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Serialize;

use super::TrajectorySpec;
use super::backoff;
use super::chat::{ChatClient, Message, Usage, parse_completion};
use super::feedback;
use super::journal::{Journal, JournalError, Spend, TurnEntry, turn_key};
use super::manifest::{GenManifest, SpendLimits};
use crate::candidate::{Candidate, KernelLang};
use crate::digest::Digest;
use crate::engine::evaluator::{Evaluator, Job, Prepared, Work};
use crate::engine::{Outcome, Protocol, Request, Verdict};
use crate::record::measured::Measured;
use crate::record::task::store_suite;
use crate::record::{Role, TaskObject};
use crate::store::{Store, StoreError};
use crate::task::Suite;

pub const EXCHANGE_SCHEMA: &str = "ptxbench.exchange/1";
pub const TRAJECTORY_SCHEMA: &str = "ptxbench.trajectory/1";

/// Why the conversation of a trajectory ended.
pub const STOP_SOLVED: &str = "solved";
pub const STOP_TURN_LIMIT: &str = "turn limit";
pub const STOP_HARNESS: &str = "harness failure";
pub const STOP_NOT_EVALUATED: &str = "not evaluated (--no-eval)";

/// One failed or accepted HTTP attempt.
#[derive(Debug, Clone, Serialize)]
pub struct AttemptNote {
    /// `ok`, `http 429`, `timeout`, `connection`, `malformed`, ...
    pub outcome: String,
    pub detail: String,
    /// The reply body, if one came.
    pub body_digest: Option<Digest>,
    /// How long the client waited before the next attempt.
    pub waited_ms: u64,
}

/// One request to the model and its accepted reply: an observation, stored as is.
#[derive(Debug, Clone, Serialize)]
pub struct ExchangeObject {
    pub schema: String,
    pub model: String,
    /// The exact request body sent (the API key is a header, never in it).
    pub request_body_digest: Digest,
    /// The exact body of the accepted reply.
    pub response_body_digest: Digest,
    pub status: u16,
    pub latency_ms: u64,
    pub usage: Usage,
    pub finish_reason: Option<String>,
    /// Every attempt, the accepted one last.
    pub attempts: Vec<AttemptNote>,
}

/// A finished trajectory.
#[derive(Debug, Clone, Serialize)]
pub struct TrajectoryObject {
    pub schema: String,
    pub key: String,
    pub entry: String,
    pub model: String,
    pub task: String,
    pub task_hash: Digest,
    pub arch: crate::arch::Arch,
    pub variant: u8,
    pub replica: u32,
    pub seed: u64,
    pub turn_limits: Vec<u32>,
    pub stop: String,
    /// Records of turns 0, 1, ... in order.
    pub record_digests: Vec<Digest>,
    /// The exchange of each turn, in the same order.
    pub exchange_digests: Vec<Digest>,
}

/// How a trajectory ended in this invocation.
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    /// Ended (now or before); its trajectory object.
    Finished { trajectory: Digest, stop: String },
    /// A spend cap was reached; resumable.
    Capped(String),
    /// A request kept failing or the store failed; resumable.
    Failed(String),
    /// The harness failed on a turn (no GPU, a worker that died, ...): not the model's
    /// verdict; the next run grades the kept answer again.
    Harness(String),
}

/// Everything the trajectories of one run share.
pub struct Context<'a> {
    pub store: &'a Store,
    pub suite: &'a Suite,
    /// Absolute, as the worker needs it.
    pub suite_dir: PathBuf,
    pub manifest: &'a GenManifest,
    /// The generation's base seed (retry jitter; the specs carry the evaluation seeds).
    pub seed: u64,
    /// The manifest gave the seed (the evaluation seeds derive from it), not drawn at run time.
    pub seed_given: bool,
    pub out: PathBuf,
    /// Runs the evaluations in workers of the `ptxbench` executable on every GPU, through the
    /// scheduler `run` and `serve` use ([`crate::engine::evaluator::Queue`]).
    pub queue: crate::engine::evaluator::Queue,
    pub no_eval: bool,
    pub limits: SpendLimits,
    pub journal: Mutex<Journal>,
    /// Set once a cap is reached, so that every thread stops asking.
    pub capped: AtomicBool,
}

#[derive(Debug, thiserror::Error)]
enum TurnError {
    #[error("{0}")]
    Capped(String),
    #[error("{0}")]
    Failed(String),
    #[error("{0}")]
    Harness(String),
}

impl From<StoreError> for TurnError {
    fn from(e: StoreError) -> TurnError {
        TurnError::Failed(format!("store: {e}"))
    }
}

impl From<JournalError> for TurnError {
    fn from(e: JournalError) -> TurnError {
        TurnError::Failed(format!("journal: {e}"))
    }
}

impl std::fmt::Debug for Context<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("manifest", &self.manifest.name)
            .field("out", &self.out)
            .field("no_eval", &self.no_eval)
            .finish()
    }
}

impl Context<'_> {
    fn lock_journal(&self) -> std::sync::MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Charges one request against the caps before it is sent: counts it, reserves `budget`
    /// tokens for its reply, and saves the journal (so a kill cannot lose the charge); or says
    /// which cap is spent.
    fn reserve_request(&self, budget: u64) -> Result<(), TurnError> {
        let mut j = self.lock_journal();
        let Spend {
            requests,
            tokens,
            reserved_tokens,
        } = j.spent;
        let committed = tokens.saturating_add(reserved_tokens);
        let over = match (self.limits.max_requests, self.limits.max_tokens) {
            (Some(m), _) if requests >= m => Some(format!(
                "request cap reached: `limits.max_requests` (or --max-requests) is {m}, and {requests} requests were sent"
            )),
            // A request reserves its reply's `max_tokens` before it is sent; its prompt's
            // tokens are known only from the reply, so the total can pass the cap by the
            // prompts of the requests in flight.
            (_, Some(m)) if committed >= m => Some(format!(
                "token cap reached: `limits.max_tokens` (or --max-tokens) is {m}, and {committed} tokens were used or reserved (each request reserves its reply's max_tokens; its prompt's tokens count when it is answered, so the total can pass the cap by the prompts of the requests in flight)"
            )),
            _ => None,
        };
        if let Some(why) = over {
            self.capped.store(true, Ordering::SeqCst);
            return Err(TurnError::Capped(why));
        }
        j.spent.requests = requests.saturating_add(1);
        j.spent.reserved_tokens = reserved_tokens.saturating_add(budget);
        j.save(&self.out)?;
        Ok(())
    }

    /// Replaces a request's reservation by the tokens its reply reported.
    fn settle(&self, budget: u64, used: u64) {
        let mut j = self.lock_journal();
        j.spent.reserved_tokens = j.spent.reserved_tokens.saturating_sub(budget);
        j.spent.tokens = j.spent.tokens.saturating_add(used);
    }

    fn save_journal(&self) -> Result<(), TurnError> {
        let j = self.lock_journal();
        j.save(&self.out)?;
        Ok(())
    }
}

/// Runs (or resumes) one trajectory.
pub fn run(ctx: &Context, client: &ChatClient, spec: &TrajectorySpec) -> End {
    match run_inner(ctx, client, spec) {
        Ok((trajectory, stop)) => End::Finished { trajectory, stop },
        Err(TurnError::Capped(why)) => {
            let _ = ctx.save_journal();
            End::Capped(why)
        }
        Err(TurnError::Failed(why)) => {
            let _ = ctx.save_journal();
            End::Failed(why)
        }
        Err(TurnError::Harness(why)) => {
            let _ = ctx.save_journal();
            End::Harness(why)
        }
    }
}

/// Whether a journalled turn is graded again rather than taken as final: the harness failed
/// on it, or (now that evaluation is on) it was not evaluated.
fn regrade(t: &TurnEntry, no_eval: bool) -> bool {
    let stop = t.stop.as_deref().unwrap_or("");
    stop.starts_with(STOP_HARNESS) || (stop == STOP_NOT_EVALUATED && !no_eval)
}

fn run_inner(
    ctx: &Context,
    client: &ChatClient,
    spec: &TrajectorySpec,
) -> Result<(Digest, String), TurnError> {
    let m = ctx.manifest;
    let model = &m.models[spec.model];
    let task = ctx
        .suite
        .get(&spec.task)
        .ok_or_else(|| TurnError::Failed(format!("no task `{}` in the suite", spec.task)))?;
    let max_turns = if ctx.no_eval { 1 } else { m.max_turns() };

    // Resume from the journal.
    let (done, mut records, mut exchanges, mut next) = {
        let mut j = ctx.lock_journal();
        let mut turns: Vec<TurnEntry> = j.turns_of(&spec.key).into_iter().cloned().collect();
        let again = match turns.last() {
            Some(t) if regrade(t, ctx.no_eval) => turns.pop(),
            _ => None,
        };
        match (j.trajectories.get(&spec.key), &again) {
            (Some(d), None) => {
                let stop = turns
                    .last()
                    .and_then(|t| t.stop.clone())
                    .unwrap_or_default();
                return Ok((*d, stop));
            }
            // Reopened: it ends again with a new trajectory object.
            (Some(_), Some(_)) => {
                j.trajectories.remove(&spec.key);
            }
            (None, _) => {}
        }
        let records: Vec<Digest> = turns.iter().map(|t| t.record_digest).collect();
        let exchanges: Vec<Digest> = turns.iter().map(|t| t.exchange_digest).collect();
        let next = match (again, turns.last()) {
            (Some(t), _) => Next::Regrade(Box::new(t)),
            (None, None) => Next::Start,
            (None, Some(t)) => match (&t.stop, t.next_prompt_digest) {
                (Some(stop), _) => Next::Stopped(stop.clone()),
                (None, Some(p)) => Next::Continue(p),
                (None, None) => Next::Stopped(STOP_TURN_LIMIT.into()),
            },
        };
        (turns.len() as u32, records, exchanges, next)
    };
    let mut turn = done;
    let stop = loop {
        let (messages, answer) = match &next {
            Next::Stopped(stop) => break stop.clone(),
            Next::Regrade(kept) => kept_answer(ctx, kept)?,
            Next::Start => {
                let prompt = crate::prompt::render(task, spec.arch, spec.variant)
                    .map_err(TurnError::Failed)?;
                let mut v = Vec::new();
                if let Some(s) = &m.system {
                    v.push(Message::new("system", s.clone()));
                }
                v.push(Message::new("user", prompt));
                let answer = ask(ctx, client, spec, turn, &v)?;
                (v, answer)
            }
            Next::Continue(d) => {
                let bytes = ctx.store.get(d)?;
                let v: Vec<Message> = serde_json::from_slice(&bytes).map_err(|e| {
                    TurnError::Failed(format!("the conversation {d} does not parse: {e}"))
                })?;
                let answer = ask(ctx, client, spec, turn, &v)?;
                (v, answer)
            }
        };
        let entry = grade(
            ctx,
            spec,
            task,
            &messages,
            turn,
            records.last().copied(),
            max_turns,
            answer,
        )?;
        next = journal_turn(ctx, spec, turn, entry, &mut records, &mut exchanges)?;
        turn += 1;
    };
    let object = TrajectoryObject {
        schema: TRAJECTORY_SCHEMA.into(),
        key: spec.key.clone(),
        entry: model.entry().to_string(),
        model: model.name.clone(),
        task: spec.task.clone(),
        task_hash: task.digest(),
        arch: spec.arch,
        variant: spec.variant.number(),
        replica: spec.replica,
        seed: spec.seed,
        turn_limits: m.turn_limits.clone(),
        stop: stop.clone(),
        record_digests: records,
        exchange_digests: exchanges,
    };
    let digest = ctx.store.put_object(&object)?;
    let mut j = ctx.lock_journal();
    j.trajectories.insert(spec.key.clone(), digest);
    j.save(&ctx.out)?;
    Ok((digest, stop))
}

enum Next {
    Start,
    Continue(Digest),
    /// Grade this journalled turn's answer again (it replaces the turn's entry).
    Regrade(Box<TurnEntry>),
    Stopped(String),
}

/// An accepted reply to one request.
struct Answer {
    exchange_digest: Digest,
    content: String,
    finish_reason: Option<String>,
}

/// Journals a graded turn and says what comes next; a harness failure stops the trajectory
/// unfinished (after the turn is journalled, so the next run grades the answer again).
fn journal_turn(
    ctx: &Context,
    spec: &TrajectorySpec,
    turn: u32,
    entry: TurnEntry,
    records: &mut Vec<Digest>,
    exchanges: &mut Vec<Digest>,
) -> Result<Next, TurnError> {
    records.push(entry.record_digest);
    exchanges.push(entry.exchange_digest);
    let next = match (&entry.stop, entry.next_prompt_digest) {
        (Some(s), _) => Next::Stopped(s.clone()),
        (None, Some(p)) => Next::Continue(p),
        (None, None) => Next::Stopped(STOP_TURN_LIMIT.into()),
    };
    let harness = entry
        .stop
        .as_deref()
        .and_then(|s| s.strip_prefix(STOP_HARNESS))
        .map(|why| why.trim_start_matches(':').trim().to_string());
    let mut j = ctx.lock_journal();
    j.turns.insert(turn_key(&spec.key, turn), entry);
    j.save(&ctx.out)?;
    match harness {
        Some(why) => Err(TurnError::Harness(format!(
            "{} turn {turn}: {why}",
            spec.key
        ))),
        None => Ok(next),
    }
}

/// The conversation, answer and finish reason of a journalled turn, from the store.
fn kept_answer(ctx: &Context, t: &TurnEntry) -> Result<(Vec<Message>, Answer), TurnError> {
    let record: crate::record::Record = ctx.store.get_json(&t.record_digest)?;
    let missing = |what: &str| {
        TurnError::Failed(format!(
            "the record {} of a turn to grade again names no {what}",
            t.record_digest
        ))
    };
    let prompt = record.prompt_digest.ok_or_else(|| missing("prompt"))?;
    let response = record.response_digest.ok_or_else(|| missing("response"))?;
    let messages: Vec<Message> = serde_json::from_slice(&ctx.store.get(&prompt)?)
        .map_err(|e| TurnError::Failed(format!("the conversation {prompt} does not parse: {e}")))?;
    let content = String::from_utf8(ctx.store.get(&response)?.to_vec())
        .map_err(|e| TurnError::Failed(format!("the response {response} is not UTF-8: {e}")))?;
    let exchange: serde_json::Value = ctx.store.get_json(&t.exchange_digest)?;
    Ok((
        messages,
        Answer {
            exchange_digest: t.exchange_digest,
            content,
            finish_reason: exchange["finish_reason"].as_str().map(String::from),
        },
    ))
}

/// The request body: model, messages, sampling settings, pass-through extras.
fn request_body(
    ctx: &Context,
    spec: &TrajectorySpec,
    messages: &[Message],
) -> Result<Vec<u8>, TurnError> {
    let model = &ctx.manifest.models[spec.model];
    let mut body = serde_json::Map::new();
    body.insert("model".into(), model.name.clone().into());
    body.insert(
        "messages".into(),
        serde_json::to_value(messages).map_err(|e| TurnError::Failed(e.to_string()))?,
    );
    let s = &model.sampling;
    if let Some(t) = s.temperature {
        body.insert("temperature".into(), t.into());
    }
    if let Some(p) = s.top_p {
        body.insert("top_p".into(), p.into());
    }
    if let Some(n) = s.max_tokens {
        body.insert("max_tokens".into(), n.into());
    }
    for (k, v) in &s.extra {
        body.insert(k.clone(), v.clone());
    }
    serde_json::to_vec(&serde_json::Value::Object(body))
        .map_err(|e| TurnError::Failed(e.to_string()))
}

/// Sends the conversation with retries (unless a spend cap was reached); stores every body
/// and the exchange object.
fn ask(
    ctx: &Context,
    client: &ChatClient,
    spec: &TrajectorySpec,
    turn: u32,
    messages: &[Message],
) -> Result<Answer, TurnError> {
    if ctx.capped.load(Ordering::SeqCst) {
        return Err(TurnError::Capped("a spend cap was reached".into()));
    }
    let body = &request_body(ctx, spec, messages)?;
    let policy = &ctx.manifest.retry;
    let request_body_digest = ctx.store.put(body)?;
    let mut attempts = Vec::new();
    let budget = ctx.manifest.models[spec.model]
        .sampling
        .max_tokens
        .unwrap_or(0);
    for attempt in 0..policy.max_attempts {
        ctx.reserve_request(budget)?;
        let reply = client.attempt(body).map(|r| (parse_completion(&r.body), r));
        let used = match &reply {
            Ok((Ok(c), _)) => c.usage.total_tokens,
            _ => 0,
        };
        ctx.settle(budget, used);
        let (err, body_digest) = match reply {
            Ok((parsed, reply)) => match parsed {
                Ok(completion) => {
                    let response_body_digest = ctx.store.put(&reply.body)?;
                    attempts.push(AttemptNote {
                        outcome: "ok".into(),
                        detail: String::new(),
                        body_digest: Some(response_body_digest),
                        waited_ms: 0,
                    });
                    let object = ExchangeObject {
                        schema: EXCHANGE_SCHEMA.into(),
                        model: ctx.manifest.models[spec.model].name.clone(),
                        request_body_digest,
                        response_body_digest,
                        status: reply.status,
                        latency_ms: reply.latency_ms,
                        usage: completion.usage,
                        finish_reason: completion.finish_reason.clone(),
                        attempts,
                    };
                    return Ok(Answer {
                        exchange_digest: ctx.store.put_object(&object)?,
                        content: completion.content,
                        finish_reason: completion.finish_reason,
                    });
                }
                Err(e) => (e, Some(ctx.store.put(&reply.body)?)),
            },
            Err(e) => {
                let d = e.body().map(|b| ctx.store.put(b)).transpose()?;
                (e, d)
            }
        };
        let last = attempt + 1 == policy.max_attempts;
        let wait = if err.retryable() && !last {
            backoff::delay(
                policy,
                ctx.seed,
                &turn_key(&spec.key, turn),
                attempt,
                err.retry_after(),
            )
        } else {
            Duration::ZERO
        };
        attempts.push(AttemptNote {
            outcome: err.summary(),
            detail: err.to_string(),
            body_digest,
            waited_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
        });
        if !err.retryable() || last {
            return Err(TurnError::Failed(format!(
                "{} turn {turn}: {} attempt(s) failed, the last: {err}",
                spec.key,
                attempts.len()
            )));
        }
        std::thread::sleep(wait);
    }
    Err(TurnError::Failed(format!(
        "{} turn {turn}: no attempt allowed",
        spec.key
    )))
}

/// Grades one answer: the static check, the evaluation (unless `--no-eval`), the record, and
/// the feedback for the next turn.
/// What a record says of an answer that could not be extracted: where the reply was cut at
/// the token limit (`finish_reason: length`, as the endpoint reported and the exchange keeps),
/// the reason itself rather than a guess.
fn extraction_message(
    e: &crate::candidate::extract::ExtractionError,
    finish_reason: Option<&str>,
) -> String {
    match finish_reason {
        Some("length") => format!(
            "{e}: the reply was cut at its token limit (finish_reason: length; raise the model's `sampling.max_tokens` or ask for a shorter answer)"
        ),
        _ => e.to_string(),
    }
}

#[allow(clippy::too_many_arguments)]
fn grade(
    ctx: &Context,
    spec: &TrajectorySpec,
    task: &crate::task::Task,
    messages: &[Message],
    turn: u32,
    previous: Option<Digest>,
    max_turns: u32,
    answer: Answer,
) -> Result<TurnEntry, TurnError> {
    let m = ctx.manifest;
    let model = &m.models[spec.model];
    let Answer {
        exchange_digest,
        content,
        finish_reason,
    } = answer;

    // The evaluator: its static check on the CPU, then (unless --no-eval) a free GPU.
    let extracted = Candidate::from_response(&content);
    let candidate = extracted.as_ref().ok();
    let job = Job {
        arch: spec.arch,
        seed: spec.seed,
        protocol: Protocol::default(),
        workloads: m.eval.workloads.clone(),
        no_timing: m.eval.no_timing,
    };
    let object =
        TaskObject::from_suite(ctx.suite, task).map_err(|e| TurnError::Failed(e.to_string()))?;
    let Prepared { report, work } = Evaluator::prepare(
        extracted
            .as_ref()
            .map_err(|e| extraction_message(e, finish_reason.as_deref())),
        task,
        &object,
        &job,
    );
    let outcome = match &work {
        Work::Decided(o) => (**o).clone(),
        Work::Evaluate(_) if ctx.no_eval => Outcome::failed(
            Verdict::Other,
            Stage::NotEvaluated,
            "not evaluated (--no-eval): evaluate it later with `ptxbench run`",
        ),
        Work::Evaluate(req) => evaluate(ctx, req),
    };

    let prompt_bytes =
        serde_json::to_vec(messages).map_err(|e| TurnError::Failed(e.to_string()))?;
    let stored = store_suite(ctx.store, ctx.suite).map_err(|e| TurnError::Failed(e.to_string()))?;
    let record_digest = Measured {
        entry: model.entry(),
        role: Role::Entry,
        model: Some(&model.name),
        evaluation: None,
        task: &spec.task,
        task_hash: task.digest(),
        arch: spec.arch,
        seed: spec.seed,
        seed_given: ctx.seed_given,
        protocol: &job.protocol,
        workloads: &job.workloads,
        correctness_only: job.no_timing,
        expected: None,
        source: candidate
            .filter(|c| c.lang == KernelLang::Cuda)
            .map(|c| c.kernel.as_str()),
        ptx: report.ptx.as_deref(),
        plan: candidate.map_or("", |c| c.plan.as_str()),
        prompt: Some(&prompt_bytes),
        response: Some(&content),
        turn: Some(turn),
        previous,
    }
    .store(ctx.store, &stored, outcome.clone())
    .map_err(|e| TurnError::Failed(format!("storing the record: {e}")))?;

    let stop = if outcome.verdict == Verdict::Other && outcome.stage == Stage::NotEvaluated {
        Some(STOP_NOT_EVALUATED.to_string())
    } else if outcome.verdict == Verdict::Other {
        Some(format!("{STOP_HARNESS}: {}", first_line(&outcome.message)))
    } else if outcome.verdict == Verdict::Correct && outcome.min_speedup.is_none_or(|s| s >= 1.0) {
        Some(STOP_SOLVED.to_string())
    } else if ctx.no_eval {
        Some(STOP_NOT_EVALUATED.to_string())
    } else if turn + 1 >= max_turns {
        Some(STOP_TURN_LIMIT.to_string())
    } else {
        None
    };
    let next_prompt_digest = match stop {
        Some(_) => None,
        None => {
            let mut next = messages.to_vec();
            next.push(Message::new("assistant", content));
            next.push(Message::new(
                "user",
                feedback::build(&report, &outcome, finish_reason.as_deref()),
            ));
            let bytes = serde_json::to_vec(&next).map_err(|e| TurnError::Failed(e.to_string()))?;
            Some(ctx.store.put(&bytes)?)
        }
    };
    Ok(TurnEntry {
        record_digest,
        exchange_digest,
        verdict: outcome.verdict,
        stage: outcome.stage,
        min_speedup: outcome.min_speedup,
        next_prompt_digest,
        stop,
    })
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// Runs the evaluator's request in a free slot of a GPU (see [`Context::gpus`]), or on the
/// service of `eval.endpoint`.
fn evaluate(ctx: &Context, req: &Request) -> Outcome {
    let timeout = Duration::from_secs(ctx.manifest.eval.timeout_s);
    if let Some(url) = &ctx.manifest.eval.endpoint {
        return crate::serve::client::evaluate_request(url, req, timeout * 4);
    }
    ctx.queue.evaluate(req)
}
