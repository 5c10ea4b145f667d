//! A submission (what a client sends), the job it becomes (what a worker runs) and the one
//! way a job is evaluated and recorded: `Evaluator::prepare` and ptxas ahead, the worker on a
//! GPU, the evidence, then `Measured { .. }.store`, exactly as `run` does it.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::arch::Arch;
use crate::candidate::{Candidate, KernelLang};
use crate::check::CheckReport;
use crate::digest::Digest;
use crate::engine::evaluator::{Evaluator, Job, Prepared, Ran, Work};
use crate::engine::key::{self, EvaluationKey};
use crate::engine::{Outcome, Protocol, Verdict};
use crate::record::measured::Measured;
use crate::record::task::SuiteObjects;
use crate::record::{Role, Stage};
use crate::store::Store;
use crate::task::Suite;

/// The leaderboard entry of a submission that names none.
pub const DEFAULT_ENTRY: &str = "service";

/// The candidate's bytes, as submitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Submitted {
    /// A model's raw response: the kernel and the plan are extracted from it.
    Response(String),
    /// A kernel (PTX or CUDA C++) and its launch plan.
    Kernel {
        cuda: bool,
        kernel: String,
        plan: String,
    },
}

/// One evaluation asked of the service, checked field by field.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    pub task: String,
    pub arch: Arch,
    pub candidate: Submitted,
    /// The base seed; drawn when the job is made if absent.
    pub seed: Option<u64>,
    pub workloads: Vec<String>,
    pub correctness_only: bool,
    /// Evaluate again even when an identical submission has a record.
    pub fresh: bool,
    pub entry: String,
    /// Seconds the job may wait in the queue (1 to [`MAX_DEADLINE_S`]); still queued after
    /// them, it ends `expired`. Not part of what identifies the evaluation.
    pub deadline_s: Option<u64>,
}

/// The longest deadline a submission may give, seconds (a day).
pub const MAX_DEADLINE_S: u64 = 86_400;

/// A request the service refuses, naming the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

fn bad(field: &str, message: impl Into<String>) -> FieldError {
    FieldError {
        field: field.to_string(),
        message: message.into(),
    }
}

/// The fields of a submission (the OpenAPI document's `Submission`).
pub const FIELDS: [&str; 12] = [
    "task",
    "arch",
    "response",
    "kernel",
    "plan",
    "lang",
    "seed",
    "workloads",
    "correctness_only",
    "fresh",
    "entry",
    "deadline_s",
];

impl Submission {
    /// Reads one submission from JSON; `at` prefixes field names (`items[3].`).
    pub fn from_json(v: &Value, at: &str) -> Result<Submission, FieldError> {
        let f = |name: &str| format!("{at}{name}");
        let obj = v
            .as_object()
            .ok_or_else(|| bad(at.trim_end_matches('.'), "must be a JSON object"))?;
        if let Some(k) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(bad(&f(k), "unknown field"));
        }
        let text = |name: &str| -> Result<Option<String>, FieldError> {
            match obj.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(bad(&f(name), "must be a string")),
            }
        };
        let flag = |name: &str| -> Result<bool, FieldError> {
            match obj.get(name) {
                None | Some(Value::Null) => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(_) => Err(bad(&f(name), "must be true or false")),
            }
        };
        let task = text("task")?.ok_or_else(|| bad(&f("task"), "is required"))?;
        let arch = match text("arch")? {
            None => Arch::Sm90a,
            Some(s) => s
                .parse::<Arch>()
                .map_err(|e| bad(&f("arch"), e.to_string()))?,
        };
        let candidate = match (text("response")?, text("kernel")?, text("plan")?) {
            (Some(r), None, None) => Submitted::Response(r),
            (None, Some(kernel), Some(plan)) => Submitted::Kernel {
                cuda: match text("lang")?.as_deref() {
                    None | Some("ptx") => false,
                    Some("cuda") => true,
                    Some(other) => {
                        return Err(bad(&f("lang"), format!("`{other}`: takes `ptx` or `cuda`")));
                    }
                },
                kernel,
                plan,
            },
            (Some(_), ..) => {
                return Err(bad(
                    &f("response"),
                    "give a response or a kernel and a plan, not both",
                ));
            }
            (None, Some(_), None) => return Err(bad(&f("plan"), "is required with `kernel`")),
            (None, None, Some(_)) => return Err(bad(&f("kernel"), "is required with `plan`")),
            (None, None, None) => {
                return Err(bad(&f("response"), "is required (or `kernel` and `plan`)"));
            }
        };
        if text("lang")?.is_some() && matches!(candidate, Submitted::Response(_)) {
            return Err(bad(&f("lang"), "goes with `kernel` only"));
        }
        let seed = match obj.get("seed") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .ok_or_else(|| bad(&f("seed"), "must be an integer from 0 to 2^64-1"))?,
            ),
        };
        let workloads = match obj.get("workloads") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    w.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| bad(&f(&format!("workloads[{i}]")), "must be a string"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(bad(&f("workloads"), "must be a list of workload names")),
        };
        let deadline_s = match obj.get("deadline_s") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .filter(|s| (1..=MAX_DEADLINE_S).contains(s))
                    .ok_or_else(|| {
                        bad(
                            &f("deadline_s"),
                            format!("must be an integer from 1 to {MAX_DEADLINE_S} (seconds)"),
                        )
                    })?,
            ),
        };
        let entry = text("entry")?.unwrap_or_else(|| DEFAULT_ENTRY.to_string());
        if entry.is_empty() || entry.len() > 200 {
            return Err(bad(&f("entry"), "must have 1 to 200 characters"));
        }
        // A name on pages and in files: letters, digits, spaces and `-_.:/+()@#,` only.
        if let Some(c) = entry
            .chars()
            .find(|c| !(c.is_alphanumeric() || *c == ' ' || "-_.:/+()@#,".contains(*c)))
        {
            return Err(bad(
                &f("entry"),
                format!("holds {c:?}; an entry takes letters, digits, spaces and `-_.:/+()@#,`"),
            ));
        }
        for name in ["task", "response", "kernel", "plan"] {
            if let Some(c) = text(name)?
                .as_deref()
                .and_then(super::strict_json::control_character)
            {
                return Err(bad(&f(name), format!("holds the control character {c:?}")));
            }
        }
        Ok(Submission {
            task,
            arch,
            candidate,
            seed,
            workloads,
            correctness_only: flag("correctness_only")?,
            fresh: flag("fresh")?,
            entry,
            deadline_s,
        })
    }

    /// The submission as JSON (what [`Submission::from_json`] reads back).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("task".into(), self.task.clone().into());
        m.insert("arch".into(), self.arch.to_string().into());
        match &self.candidate {
            Submitted::Response(r) => {
                m.insert("response".into(), r.clone().into());
            }
            Submitted::Kernel { cuda, kernel, plan } => {
                m.insert("kernel".into(), kernel.clone().into());
                m.insert("plan".into(), plan.clone().into());
                m.insert("lang".into(), if *cuda { "cuda" } else { "ptx" }.into());
            }
        }
        if let Some(s) = self.seed {
            m.insert("seed".into(), s.into());
        }
        if !self.workloads.is_empty() {
            m.insert("workloads".into(), self.workloads.clone().into());
        }
        m.insert("correctness_only".into(), self.correctness_only.into());
        m.insert("fresh".into(), self.fresh.into());
        m.insert("entry".into(), self.entry.clone().into());
        if let Some(d) = self.deadline_s {
            m.insert("deadline_s".into(), d.into());
        }
        Value::Object(m)
    }

    /// What identifies the evaluation: the engine's revision, the candidate's bytes, task,
    /// arch, protocol, seed policy (the seed given, or drawn), workloads (a list, never a joined
    /// string), timing switch and entry. Identical submissions share it and are answered from
    /// the store; a new engine revision answers none of the old ones. The deadline is the
    /// client's, not the evaluation's: it is not part of the key.
    pub fn key(&self, task: Digest, protocol: &Protocol) -> Digest {
        let candidate = match &self.candidate {
            Submitted::Response(text) => key::Submitted::response(text),
            Submitted::Kernel { cuda, kernel, plan } => key::Submitted::kernel(*cuda, kernel, plan),
        };
        let evaluation = EvaluationKey {
            candidate,
            task,
            arch: self.arch,
            seed: self.seed,
            protocol,
            workloads: &self.workloads,
            no_timing: self.correctness_only,
        }
        .digest();
        key::labelled(evaluation, &self.entry)
    }
}

/// A job: a submission with its seed settled, as a worker receives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    pub id: String,
    pub key: Digest,
    /// The suite the server evaluates against; a worker with another refuses the job.
    pub suite_hash: Digest,
    pub task: String,
    pub arch: Arch,
    pub candidate: Submitted,
    pub seed: u64,
    /// The client chose the seed (so it knew every input in advance): marked in the record.
    #[serde(default)]
    pub seed_from_client: bool,
    pub workloads: Vec<String>,
    pub no_timing: bool,
    pub entry: String,
    pub protocol: Protocol,
    pub timeout_s: u64,
}

/// The credential workers hold (not the clients' token): results are bound to their job by a
/// MAC under it, which the server checks, so whoever else can write to Redis makes no result.
#[derive(Clone)]
pub struct WorkerKey([u8; 32]);

impl std::fmt::Debug for WorkerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WorkerKey(<secret>)")
    }
}

/// The environment variable that holds the worker secret (server and workers).
pub const WORKER_SECRET_ENV: &str = "PTXBENCH_WORKER_SECRET";

/// The shortest worker secret accepted.
pub const MIN_WORKER_SECRET: usize = 32;

impl WorkerKey {
    /// The key of `secret` (at least [`MIN_WORKER_SECRET`] characters).
    pub fn new(secret: &str) -> Result<WorkerKey, String> {
        let secret = secret.trim();
        if secret.chars().count() < MIN_WORKER_SECRET {
            return Err(format!(
                "the worker secret has {} characters; it needs at least {MIN_WORKER_SECRET} \
                 (e.g. `head -c 32 /dev/urandom | base64`)",
                secret.chars().count()
            ));
        }
        crate::secrets::register(secret);
        Ok(WorkerKey(blake3::derive_key(
            "ptxbench 2026-12 worker result MAC",
            secret.as_bytes(),
        )))
    }

    /// The secret from `file`, else from [`WORKER_SECRET_ENV`]; `None` when neither is set.
    pub fn from_file_or_env(file: Option<&std::path::Path>) -> Result<Option<WorkerKey>, String> {
        let secret = match file {
            Some(f) => Some(
                std::fs::read_to_string(f)
                    .map_err(|e| format!("reading the worker secret {}: {e}", f.display()))?,
            ),
            None => std::env::var(WORKER_SECRET_ENV).ok(),
        };
        secret.map(|s| WorkerKey::new(&s)).transpose()
    }

    /// The MAC of `result` for `job`: binds the job's id, key, suite, task, candidate, seed,
    /// workloads, switches and protocol to the record, feedback and verdict (or the error).
    pub fn mac(&self, job: &JobSpec, result: &Result<Answer, String>) -> String {
        self.hash("result", job, Some(result)).to_hex().to_string()
    }

    /// Whether `mac` is [`WorkerKey::mac`] of `result` for `job` (compared in constant time).
    pub fn verify(&self, job: &JobSpec, result: &Result<Answer, String>, mac: &str) -> bool {
        blake3::Hash::from_hex(mac).is_ok_and(|m| m == self.hash("result", job, Some(result)))
    }

    /// The server's MAC of a job it queues: a worker runs only jobs that carry it.
    pub fn mac_job(&self, job: &JobSpec) -> String {
        self.hash("job", job, None).to_hex().to_string()
    }

    /// Whether `mac` is [`WorkerKey::mac_job`] of `job`.
    pub fn verify_job(&self, job: &JobSpec, mac: &str) -> bool {
        blake3::Hash::from_hex(mac).is_ok_and(|m| m == self.hash("job", job, None))
    }

    /// The keyed hash of what is bound (`blake3::Hash` compares in constant time).
    fn hash(
        &self,
        what: &'static str,
        job: &JobSpec,
        result: Option<&Result<Answer, String>>,
    ) -> blake3::Hash {
        #[derive(Serialize)]
        struct Bound<'a> {
            what: &'static str,
            job: &'a JobSpec,
            result: Option<&'a Result<Answer, String>>,
        }
        let bytes = serde_json::to_vec(&Bound { what, job, result }).expect("jobs serialise");
        blake3::keyed_hash(&self.0, &bytes)
    }
}

/// Why a record does not answer the job it came for.
pub fn record_mismatch(job: &JobSpec, record: &crate::record::Record) -> Option<String> {
    let expect = |what: &str, ok: bool| (!ok).then(|| format!("its {what} is not the job's"));
    expect("task", record.task == job.task)
        .or_else(|| expect("suite", record.suite_hash == job.suite_hash))
        .or_else(|| expect("arch", record.arch == job.arch))
        .or_else(|| expect("seed", record.seed == job.seed))
        .or_else(|| expect("protocol", record.protocol == job.protocol))
        .or_else(|| expect("workloads", record.workloads_selected == job.workloads))
        .or_else(|| expect("timing switch", record.correctness_only == job.no_timing))
        .or_else(|| expect("entry", record.entry == job.entry))
        .or_else(|| match &job.candidate {
            Submitted::Response(r) => expect(
                "response",
                record.response_digest == Some(Digest::of(r.as_bytes())),
            ),
            Submitted::Kernel { plan, .. } => {
                expect("plan", record.plan_digest == Digest::of(plan.as_bytes()))
            }
        })
}

/// A job for unit tests of the queues: `id`, a response without code, seed 1.
#[cfg(test)]
pub(crate) fn test_job(id: &str) -> JobSpec {
    JobSpec {
        id: id.into(),
        key: Digest::of(id.as_bytes()),
        suite_hash: Digest::of(b"suite"),
        task: "gemm_n4096_k4096".into(),
        arch: Arch::Sm90a,
        candidate: Submitted::Response("no code".into()),
        seed: 1,
        seed_from_client: false,
        workloads: Vec::new(),
        no_timing: false,
        entry: String::new(),
        protocol: Protocol::default(),
        timeout_s: 60,
    }
}

/// What a finished job left in the store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub record: Digest,
    /// The repair turn's feedback text, stored as a blob.
    pub feedback: Digest,
    pub verdict: Verdict,
    /// Seconds the GPU part took (0 when the static check decided).
    pub gpu_seconds: f64,
}

/// What a worker needs to evaluate jobs: the suite, its objects, a store and the evaluator.
#[derive(Debug)]
pub struct Bench {
    pub store: Store,
    pub suite: Suite,
    pub objects: SuiteObjects,
    pub evaluator: Evaluator,
}

/// A job after the static check, its PTX compiled ahead: what its GPU part needs.
#[derive(Debug)]
pub struct ReadyJob {
    job: JobSpec,
    task_hash: Digest,
    candidate: Result<Candidate, String>,
    report: CheckReport,
    work: Work,
}

/// A job's GPU part done: the raw outcome (evidence not yet assembled) and the seconds it took.
#[derive(Debug)]
pub struct RanJob {
    ready: ReadyJob,
    /// The GPU stage's outcome, and whether a worker evaluated it (then it gets its evidence).
    ran: Ran,
    gpu_seconds: f64,
}

impl RanJob {
    pub fn gpu_seconds(&self) -> f64 {
        self.gpu_seconds
    }
}

impl Bench {
    /// The three stages as a queue runs them (each on its own thread, see
    /// [`crate::engine::stages::staged`]): [`Bench::prepare`], then [`Bench::on_gpu`] (on
    /// `gpu`; `gave_up` replaces the GPU part by a harness verdict, the job having killed the
    /// workers that took it), then [`Bench::store`]. A stage after a failed one passes the
    /// failure on, and a panic in one ends its job with an error: the job is answered, never
    /// lost, and the worker goes on.
    pub fn prepare_job(&self, job: JobSpec) -> Result<ReadyJob, String> {
        let id = job.id.clone();
        let mut job = Some(job);
        guarded(&id, &mut || self.prepare(job.take().ok_or("job taken")?))
    }

    /// The GPU stage of [`Bench::prepare_job`].
    pub fn run_job(
        &self,
        id: &str,
        ready: Result<ReadyJob, String>,
        gpu: usize,
        gave_up: Option<&str>,
    ) -> Result<RanJob, String> {
        let mut ready = Some(ready);
        guarded(id, &mut || {
            let r = ready.take().ok_or("job taken")??;
            Ok(self.on_gpu(r, gpu, gave_up))
        })
    }

    /// The last stage of [`Bench::prepare_job`].
    pub fn store_job(&self, id: &str, ran: Result<RanJob, String>) -> Result<Answer, String> {
        let mut ran = Some(ran);
        guarded(id, &mut || self.store(ran.take().ok_or("job taken")??))
    }

    /// The CPU part before the GPU: the static check and ptxas (no GPU).
    pub fn prepare(&self, job: JobSpec) -> Result<ReadyJob, String> {
        if job.suite_hash != self.objects.suite_hash {
            return Err(format!(
                "job {}: the server's task suite is {}, this worker's {}",
                job.id, job.suite_hash, self.objects.suite_hash
            ));
        }
        let (task, object) = match (self.suite.get(&job.task), self.objects.object(&job.task)) {
            (Some(t), Some(o)) => (t, o),
            _ => return Err(format!("job {}: no task `{}`", job.id, job.task)),
        };
        let candidate = match &job.candidate {
            Submitted::Response(text) => Candidate::from_response(text).map_err(|e| e.to_string()),
            Submitted::Kernel { cuda, kernel, plan } => Ok(Candidate {
                lang: if *cuda {
                    KernelLang::Cuda
                } else {
                    KernelLang::Ptx
                },
                kernel: kernel.clone(),
                plan: plan.clone(),
                plan_source: "the submission's plan".into(),
                notes: Vec::new(),
            }),
        };
        let spec = Job {
            arch: job.arch,
            seed: job.seed,
            protocol: job.protocol.clone(),
            workloads: job.workloads.clone(),
            no_timing: job.no_timing,
        };
        let Prepared { report, mut work } = Evaluator::prepare(
            candidate.as_ref().map_err(Clone::clone),
            task,
            object,
            &spec,
        );
        if let Work::Evaluate(req) = &mut work {
            req.compile_ahead();
        }
        Ok(ReadyJob {
            task_hash: task.digest(),
            job,
            candidate,
            report,
            work,
        })
    }

    /// The GPU part on `gpu` (nothing when the static check decided).
    pub fn on_gpu(&self, ready: ReadyJob, gpu: usize, gave_up: Option<&str>) -> RanJob {
        let started = Instant::now();
        let instead =
            gave_up.map(|why| Outcome::failed(Verdict::Other, Stage::Worker, why.to_string()));
        let ran = self.evaluator.gpu_stage(
            &ready.work,
            gpu,
            Duration::from_secs(ready.job.timeout_s),
            instead,
        );
        let gpu_seconds = if ran.evaluated {
            started.elapsed().as_secs_f64()
        } else {
            0.0
        };
        RanJob {
            ready,
            ran,
            gpu_seconds,
        }
    }

    /// The CPU part after the GPU: the target evidence, the record and the feedback, stored.
    pub fn store(&self, ran: RanJob) -> Result<Answer, String> {
        let RanJob {
            ready,
            ran,
            gpu_seconds,
        } = ran;
        let ReadyJob {
            job,
            task_hash,
            candidate,
            report,
            work,
        } = ready;
        let outcome = Evaluator::evidence_stage(&work, ran);
        let feedback = crate::generate::feedback::build(&report, &outcome, None);
        let cand = candidate.as_ref().ok();
        let verdict = outcome.verdict;
        let record = Measured {
            entry: &job.entry,
            role: Role::Entry,
            model: None,
            evaluation: None,
            task: &job.task,
            task_hash,
            arch: job.arch,
            seed: job.seed,
            seed_given: job.seed_from_client,
            protocol: &job.protocol,
            workloads: &job.workloads,
            correctness_only: job.no_timing,
            expected: None,
            source: cand
                .filter(|c| c.lang == KernelLang::Cuda)
                .map(|c| c.kernel.as_str()),
            ptx: report.ptx.as_deref(),
            plan: cand.map_or("", |c| c.plan.as_str()),
            prompt: None,
            response: match &job.candidate {
                Submitted::Response(r) => Some(r.as_str()),
                Submitted::Kernel { .. } => None,
            },
            turn: None,
            previous: None,
        }
        .store(&self.store, &self.objects, outcome)
        .map_err(|e| format!("job {}: storing the record: {e}", job.id))?;
        let feedback = self
            .store
            .put(feedback.as_bytes())
            .map_err(|e| format!("job {}: storing the feedback: {e}", job.id))?;
        Ok(Answer {
            record,
            feedback,
            verdict,
            gpu_seconds,
        })
    }
}

/// `f`'s result, or a panic in it as the job's error: a panic ends its job (without a
/// record), not the worker.
fn guarded<T>(id: &str, f: &mut dyn FnMut() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(format!("job {id}: the worker panicked")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_malformed_submission_names_its_field() {
        let cases = [
            (json!({"task": 3}), "items[2].task"),
            (json!({"response": "x"}), "items[2].task"),
            (
                json!({"task": "t", "response": "x", "seed": -1}),
                "items[2].seed",
            ),
            (json!({"task": "t", "kernel": "k"}), "items[2].plan"),
            (
                json!({"task": "t", "response": "x", "colour": 1}),
                "items[2].colour",
            ),
            (
                json!({"task": "t", "response": "x", "arch": "sm_1"}),
                "items[2].arch",
            ),
            (
                json!({"task": "t", "response": "x", "workloads": [1]}),
                "items[2].workloads[0]",
            ),
            (
                json!({"task": "t", "response": "x", "deadline_s": 0}),
                "items[2].deadline_s",
            ),
            (
                json!({"task": "t", "response": "x", "deadline_s": 86_401}),
                "items[2].deadline_s",
            ),
            (
                json!({"task": "t", "response": "x", "deadline_s": 1.5}),
                "items[2].deadline_s",
            ),
        ];
        for (v, field) in cases {
            let e = Submission::from_json(&v, "items[2].").expect_err("refused");
            assert_eq!(e.field, field, "{v}");
        }
    }

    #[test]
    fn the_key_follows_the_seed_policy_and_round_trips() {
        let v = json!({"task": "t", "kernel": "k", "plan": "p", "seed": 7, "deadline_s": 60});
        let s = Submission::from_json(&v, "").expect("valid");
        let back = Submission::from_json(&s.to_json(), "").expect("valid");
        assert_eq!(s, back);
        let p = Protocol::default();
        let d = Digest::of(b"task");
        let drawn = Submission {
            seed: None,
            ..s.clone()
        };
        assert_ne!(s.key(d, &p), drawn.key(d, &p));
        assert_eq!(s.key(d, &p), back.key(d, &p));
        let fresh = Submission {
            fresh: true,
            ..s.clone()
        };
        assert_eq!(
            s.key(d, &p),
            fresh.key(d, &p),
            "fresh asks again, the same evaluation"
        );
        let no_deadline = Submission {
            deadline_s: None,
            ..s.clone()
        };
        assert_eq!(
            s.key(d, &p),
            no_deadline.key(d, &p),
            "the deadline is the client's, not the evaluation's"
        );
    }

    #[test]
    fn a_run_and_the_service_key_one_evaluation_alike() {
        let v = json!({"task": "t", "kernel": "k", "plan": "p", "seed": 7, "entry": "e"});
        let s = Submission::from_json(&v, "").expect("valid");
        let p = Protocol::default();
        let d = Digest::of(b"task");
        let settings = crate::runner::pairs::Settings {
            arch: s.arch,
            seed: 7,
            seed_given: true,
            protocol: p.clone(),
        };
        let run = crate::runner::pairs::key(
            key::Submitted::kernel(false, "k", "p"),
            d,
            &settings,
            &[],
            false,
        );
        // The same evaluation; the service keeps its answers per entry, as a run keeps its
        // records per evaluation name.
        assert_eq!(s.key(d, &p), key::labelled(run, "e"));
        let other_entry = Submission {
            entry: "f".into(),
            ..s.clone()
        };
        assert_ne!(other_entry.key(d, &p), key::labelled(run, "e"));
        assert_eq!(other_entry.key(d, &p), key::labelled(run, "f"));
    }
}
