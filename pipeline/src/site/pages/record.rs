//! One record's page: everything an auditor needs to trust or re-run one number: verdict,
//! per-workload correctness and timings with their spread, target evidence, every hash, the
//! exact `ptxbench audit` command, and the prompt, response, kernel source, PTX and launch
//! plan as escaped, line-numbered text. Also the record rows other pages list.

use askama::Template;

use super::text::{self, MessageView, TextView};
use super::{Cell, Fact, Link, Page, verdict_class};
use crate::digest::Digest;
use crate::evidence::DynamicMethod;
use crate::record::Stats;
use crate::site::blob_kind::{BlobKind, text_blobs};
use crate::site::context::{Context, DigestLink, is_evaluated, precision, workload_rates};
use crate::site::format;
use crate::site::input::Blob;
use crate::site::paths;
use crate::task::WorkloadKind;

/// Most records one page lists; all of them are in [`crate::site::DATA_RECORDS_CSV`].
pub const MAX_LISTED: usize = 1000;

/// A list of records as a table (looped over by templates as `rt`).
#[derive(Debug, Clone)]
pub struct RecordsTable {
    pub id: String,
    pub rows: Vec<RecordRow>,
    /// How many records the list has (more than `rows` when it was cut).
    pub total: usize,
    /// The CSV of every record.
    pub csv: String,
}

impl RecordsTable {
    /// The records at `indices` (into the input's records), ordered by entry, task, turn and
    /// digest, at most [`MAX_LISTED`] of them; no table at all for none.
    pub fn of(ctx: &Context<'_>, indices: &[usize], from: &str, id: &str) -> Vec<RecordsTable> {
        if indices.is_empty() {
            return Vec::new();
        }
        // Records are unique, so their ranks are too: the first MAX_LISTED are picked, then
        // only those sorted.
        let rank = |i: &usize| ctx.list_rank[*i];
        let mut order: Vec<usize> = indices.to_vec();
        if order.len() > MAX_LISTED {
            order.select_nth_unstable_by_key(MAX_LISTED, rank);
            order.truncate(MAX_LISTED);
        }
        order.sort_unstable_by_key(rank);
        let rows = order
            .iter()
            .map(|i| RecordRow::new(ctx, *i, from))
            .collect();
        vec![RecordsTable {
            id: id.to_string(),
            rows,
            total: indices.len(),
            csv: paths::link(from, crate::site::DATA_RECORDS_CSV),
        }]
    }
}

/// A record in a list.
#[derive(Debug, Clone)]
pub struct RecordRow {
    pub record: Link,
    pub entry: Link,
    pub task: Link,
    pub arch: String,
    pub role: String,
    pub verdict: String,
    pub verdict_class: &'static str,
    pub expected: String,
    pub agrees: String,
    pub turn: String,
    /// The suite version it was measured against, and "task changed" if its task has changed
    /// since.
    pub suite: String,
    pub task_changed: bool,
    pub speedup: Cell,
    pub message: String,
    pub text: String,
}

/// The verdict a page shows: `not evaluated` for a candidate that was checked and never run
/// (its stored verdict is `other`, which would read as a harness failure).
pub fn shown_verdict(doc: &crate::record::Record) -> &'static str {
    if is_evaluated(doc) {
        doc.verdict.as_str()
    } else {
        NOT_EVALUATED
    }
}

/// Where a record's nvcc-made PTX comes from in the repository ([`crate::site::sources`]).
#[derive(Debug)]
pub struct NvccSourceView {
    /// The committed PTX file.
    pub ptx: String,
    /// The `.cu` and the headers it includes, each linked to its published text.
    pub files: Vec<Link>,
}

/// How pages name a record that was not evaluated.
pub const NOT_EVALUATED: &str = "not evaluated";

/// What a record's row and its page both show of it, linked from page `from`.
struct Head {
    entry: Link,
    task: Link,
    verdict_class: &'static str,
    expected: String,
    agrees: String,
}

impl Head {
    fn of(ctx: &Context<'_>, doc: &crate::record::Record, from: &str) -> Head {
        let entry = if doc.is_harness_test() {
            Link {
                text: doc.entry.clone(),
                href: paths::link(from, paths::HARNESS_TESTS),
            }
        } else {
            match ctx.entry(&doc.entry) {
                Some(e) => Link {
                    text: e.display_name.clone(),
                    href: paths::link(from, &paths::entry(&e.slug)),
                },
                None => Link {
                    text: doc.entry.clone(),
                    href: String::new(),
                },
            }
        };
        let verdict = shown_verdict(doc);
        let expected = doc.expected.map(|v| v.as_str()).unwrap_or_default();
        Head {
            entry,
            task: Link {
                text: doc.task.clone(),
                href: paths::link(from, &paths::task(&doc.task)),
            },
            verdict_class: verdict_class(verdict),
            agrees: if expected.is_empty() {
                String::new()
            } else if expected == verdict {
                "yes".into()
            } else {
                "NO".into()
            },
            expected: expected.to_string(),
        }
    }
}

impl RecordRow {
    pub fn new(ctx: &Context<'_>, index: usize, from: &str) -> RecordRow {
        let r = &ctx.input.records[index];
        let doc = &r.record;
        let head = Head::of(ctx, doc, from);
        let verdict = shown_verdict(doc);
        RecordRow {
            record: Link {
                text: r.digest.short(12),
                href: paths::link(from, &paths::record(&r.digest)),
            },
            text: format!("{} {} {verdict}", doc.entry, doc.task).to_lowercase(),
            entry: head.entry,
            task: head.task,
            arch: doc.arch.to_string(),
            role: doc.role.as_str().to_string(),
            verdict: verdict.to_string(),
            verdict_class: head.verdict_class,
            agrees: head.agrees,
            expected: head.expected,
            turn: doc.turn.map_or_else(|| "—".to_string(), |t| t.to_string()),
            suite: ctx.suite_of(doc),
            task_changed: ctx.task_changed(doc),
            speedup: Cell::speedup(doc.min_speedup()),
            message: format::shorten_line(&doc.outcome.message, 160),
        }
    }
}

#[derive(Debug)]
pub struct TimingRow {
    pub workload: String,
    pub candidate: String,
    pub candidate_spread: String,
    pub baseline: String,
    pub baseline_spread: String,
    pub speedup: String,
    pub candidate_tflops: String,
    pub baseline_tflops: String,
    pub peak: String,
    pub recheck: String,
}

#[derive(Debug)]
pub struct CheckRow {
    pub workload: String,
    pub kind: String,
    pub trial: String,
    pub output: String,
    pub tolerance: String,
    pub relative_l2: String,
    pub max_abs_error: String,
    pub violations: String,
    pub passed: &'static str,
    pub failure: String,
}

#[derive(Debug)]
pub struct KernelRow {
    pub entry: String,
    pub registers: String,
    pub static_shared: String,
    pub local: String,
    pub max_threads: String,
}

#[derive(Debug)]
pub struct HashRow {
    pub field: String,
    pub link: DigestLink,
    pub note: String,
}

#[derive(Debug)]
pub struct EvidenceRow {
    pub family: String,
    pub sass: String,
    pub status: String,
    pub static_check: String,
    pub dynamic: String,
}

/// A text blob of the record (source, PTX, plan), escaped and line-numbered, cut at
/// [`SHOWN_BYTES`](super::text::SHOWN_BYTES).
#[derive(Debug)]
pub struct CodeView<'a> {
    pub id: &'static str,
    pub label: &'static str,
    pub link: DigestLink,
    pub size: String,
    /// `None` for a blob that is not text (or not loaded).
    pub text: Option<TextView<'a>>,
    pub open: bool,
    /// Set when the blob is shown on a page of its own: the link and how many records share it.
    pub shared: Option<Link>,
}

/// The conversation of the turn: the prompt sent (as its messages when it is a chat
/// transcript) and the response.
#[derive(Debug, Default)]
pub struct ConversationView<'a> {
    pub prompt: Option<BlobText<'a>>,
    pub response: Option<BlobText<'a>>,
}

/// A prompt or a response: its digest and size, and how it is shown.
#[derive(Debug)]
pub struct BlobText<'a> {
    pub link: DigestLink,
    pub size: String,
    /// What it is in numbers ("3 messages", "12 lines").
    pub summary: String,
    /// Shown on a page of its own (shared by several records).
    pub shared: Option<Link>,
    /// The messages, when it is a chat transcript or a response.
    pub messages: Vec<MessageView<'a>>,
    /// The text, when it is neither (a prompt that is not a chat transcript).
    pub text: Option<TextView<'a>>,
}

/// Where a record stands in its trajectory, with the links to its neighbours.
#[derive(Debug)]
pub struct TrajectoryNav {
    pub page: Link,
    pub position: String,
    pub previous: Option<Link>,
    pub next: Option<Link>,
}

#[derive(Debug)]
pub struct RecordView<'a> {
    /// The repository's source of its nvcc-made PTX, where it names none itself.
    pub nvcc_source: Option<NvccSourceView>,
    pub digest: String,
    pub entry: Link,
    pub is_harness: bool,
    /// False for a candidate `generate --no-eval` checked and never ran.
    pub evaluated: bool,
    /// The bundles of the runs that list it (zips with its closure).
    pub bundles: Vec<Link>,
    pub task: Link,
    pub arch: String,
    pub verdict: String,
    pub verdict_class: &'static str,
    pub expected: String,
    pub agrees: String,
    pub stage: String,
    pub facts: Vec<Fact>,
    pub runs: Vec<Link>,
    pub warnings: Vec<String>,
    pub evidence: Vec<EvidenceRow>,
    /// How the evidence was gathered; empty when there is none.
    pub evidence_notes: Vec<String>,
    /// The whole target's status and whether the record counts as correct with arch.
    pub evidence_summary: String,
    /// Whether the task names target instructions for this architecture (or the record
    /// measured some).
    pub evidence_defined: bool,
    pub timings: Vec<TimingRow>,
    pub checks: Vec<CheckRow>,
    pub kernels: Vec<KernelRow>,
    pub hashes: Vec<HashRow>,
    pub audit: String,
    pub show: String,
    /// The record as stored (JSON), for download.
    pub json: DigestLink,
    pub message_text: TextView<'a>,
    pub jit_log: TextView<'a>,
    pub code: Vec<CodeView<'a>>,
    pub conversation: ConversationView<'a>,
    pub trajectory: Option<TrajectoryNav>,
}

#[derive(Debug, Template)]
#[template(path = "record.html")]
pub struct RecordPage<'a> {
    pub page: &'a Page,
    pub v: &'a RecordView<'a>,
}

fn spread(s: &Stats) -> String {
    format!(
        "IQR {}–{} · range {}–{} · n={}",
        format::millis(s.p25_ms),
        format::millis(s.p75_ms),
        format::millis(s.min_ms),
        format::millis(s.max_ms),
        s.n
    )
}

/// A dynamic method as records spell it.
fn method_name(m: DynamicMethod) -> &'static str {
    match m {
        DynamicMethod::Ncu => "ncu",
        DynamicMethod::SplicedCounters => "spliced_counters",
    }
}

fn blob_note(ctx: &Context<'_>, d: &Digest) -> String {
    match ctx.input.blobs.get(d) {
        Some(Blob::Text(t)) => format!("text, {}, re-hashed", format::bytes(t.len() as u64)),
        Some(Blob::Binary { bytes }) => format!("binary, {}, re-hashed", format::bytes(*bytes)),
        None => "not loaded".into(),
    }
}

pub fn view<'a>(ctx: &'a Context<'_>, index: usize) -> RecordView<'a> {
    let r = &ctx.input.records[index];
    let doc = &r.record;
    let from = paths::record(&r.digest);
    let head = Head::of(ctx, doc, &from);
    let task = ctx.input.suite.get(&doc.task);
    let mut warnings = Vec::new();
    let task_digest = task.and_then(|t| ctx.task_digests.get(t.id.as_str()).copied());
    match (task_digest, doc.task_hash) {
        (None, _) => warnings.push(format!(
            "Task {} is not in task suite {}: its definition cannot be shown or checked here.",
            doc.task, ctx.input.suite.version
        )),
        (Some(t), h) if t != h => warnings.push(format!(
            "Task changed: this record was measured against an earlier definition of {} (task hash {h}, task suite {}); task suite {} has task hash {t}. Its numbers are as measured then; `ptxbench audit` re-runs it against the definition it was measured against, from the store.",
            doc.task,
            ctx.suite_of(doc),
            ctx.input.suite.version,
        )),
        _ => {}
    }
    if doc.correctness_only {
        warnings.push(
            "Correctness and evidence only: no timing was asked for, so this record has no speedup; `ptxbench audit` re-runs it the same way.".to_string(),
        );
    }

    let mut facts = vec![
        Fact {
            key: "entry".into(),
            value: doc.entry.clone(),
        },
        Fact {
            key: "role".into(),
            value: doc.role.as_str().to_string(),
        },
    ];
    if let Some(m) = &doc.model {
        facts.push(Fact {
            key: "model".into(),
            value: m.clone(),
        });
    }
    let o = &doc.outcome;
    facts.extend([
        Fact {
            key: "provenance".into(),
            value: if is_evaluated(doc) {
                doc.provenance.clone()
            } else {
                format!("{} (generated here, never run)", doc.provenance)
            },
        },
        Fact {
            key: "min speedup over performance workloads".into(),
            value: format::opt_speedup(doc.min_speedup()),
        },
        Fact {
            key: "turn".into(),
            value: doc
                .turn
                .map_or_else(|| "— (single turn)".to_string(), |t| t.to_string()),
        },
        Fact {
            key: "seed".into(),
            value: if doc.seed_given {
                format!(
                    "{} (given, not drawn when it ran: its inputs could be known in advance, so it is kept out of rankings)",
                    doc.seed
                )
            } else {
                doc.seed.to_string()
            },
        },
        Fact {
            key: "task suite".into(),
            value: format!(
                "{} (suite hash {}){}",
                ctx.suite_of(doc),
                doc.suite_hash.short(12),
                if ctx.task_changed(doc) {
                    "; the task has changed since"
                } else {
                    ""
                }
            ),
        },
    ]);
    {
        let p = &doc.protocol;
        facts.push(Fact {
            key: "protocol".into(),
            value: p.describe(),
        });
    }
    facts.push(Fact {
        key: "workloads selected".into(),
        value: if doc.workloads_selected.is_empty() {
            "all of the task's".into()
        } else {
            doc.workloads_selected.join(", ")
        },
    });
    if let Some(d) = &o.device {
        facts.push(Fact {
            key: "device".into(),
            value: format!(
                "{} (sm_{}{}, {} SMs, {}, SM clock {} MHz, memory clock {} MHz), driver API {}",
                d.name,
                d.compute_capability.0,
                d.compute_capability.1,
                d.sm_count,
                format::bytes(d.memory_bytes),
                d.sm_clock_khz / 1000,
                d.memory_clock_khz / 1000,
                d.driver_api_version
            ),
        });
    }
    if let Some(b) = &o.baseline {
        facts.push(Fact {
            key: "baseline".into(),
            value: match &b.label {
                Some(label) => format!("{label}, {} {} ({})", b.provider, b.version, b.library),
                None => format!("{} {} ({})", b.provider, b.version, b.library),
            },
        });
        if let Some(engine) = &b.engine {
            facts.push(Fact {
                key: "baseline engine".into(),
                value: engine.clone(),
            });
        }
    }
    let checks: Vec<String> = o
        .workloads
        .iter()
        .filter_map(|w| w.timing.as_ref().map(|t| (w, t)))
        .filter(|(_, t)| !t.baseline_check.is_empty())
        .map(|(w, t)| {
            let outputs: Vec<String> = t
                .baseline_check
                .iter()
                .map(|c| {
                    format!(
                        "{} relnorm {}{}",
                        c.output,
                        Some(c.comparison.relative_l2)
                            .filter(|r| r.is_finite())
                            .map_or_else(|| format::NONE.to_string(), |r| format!("{r:.2e}")),
                        if c.passed {
                            ""
                        } else {
                            " (outside the task's tolerance)"
                        }
                    )
                })
                .collect();
            format!("{}: {}", w.workload, outputs.join(", "))
        })
        .collect();
    if !checks.is_empty() {
        facts.push(Fact {
            key: "baseline output vs fp32 reference".into(),
            value: checks.join("; "),
        });
    }
    if !o.harness_compiler.is_empty() {
        facts.push(Fact {
            key: "harness compiler".into(),
            value: o.harness_compiler.clone(),
        });
    }
    if !o.seconds.is_empty() {
        facts.push(Fact {
            key: "time by stage".into(),
            value: o
                .seconds
                .iter()
                .map(|(k, s)| format!("{k} {s:.2} s"))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }

    let arch = doc.arch.to_string();
    let gpu = doc.gpu_name().unwrap_or_default();
    let peak = task.and_then(|t| ctx.peak(&arch, gpu, &precision(t)));
    let rates = workload_rates(doc, &ctx.flops);
    let timings = o
        .workloads
        .iter()
        .filter_map(|w| w.timing.as_ref().map(|t| (w, t)))
        .map(|(w, t)| {
            let rate = rates.iter().find(|x| x.workload == w.workload);
            let cand_tf = rate.and_then(|x| x.candidate_tflops);
            TimingRow {
                workload: w.workload.clone(),
                candidate: format::millis(t.candidate.median_ms),
                candidate_spread: spread(&t.candidate),
                baseline: t
                    .baseline
                    .as_ref()
                    .map_or_else(|| format::NONE.to_string(), |s| format::millis(s.median_ms)),
                baseline_spread: t.baseline.as_ref().map(spread).unwrap_or_default(),
                speedup: match (t.speedup_ci95, t.stop_reason) {
                    (Some([lo, hi]), stop) => format!(
                        "{} (95% CI {}–{}, {} pairs{}{})",
                        format::opt_speedup(t.speedup),
                        format::opt_speedup(Some(lo)),
                        format::opt_speedup(Some(hi)),
                        t.candidate.n,
                        stop.map_or_else(String::new, |s| format!(", stopped: {s:?}")
                            .to_lowercase()),
                        between_runs(t)
                    ),
                    _ => format::opt_speedup(rate.and_then(|x| x.speedup)),
                },
                candidate_tflops: cand_tf.map_or_else(|| format::NONE.to_string(), format::tflops),
                baseline_tflops: rate
                    .and_then(|x| x.baseline_tflops)
                    .map_or_else(|| format::NONE.to_string(), format::tflops),
                peak: match (&t.floor, t.floor_fraction, cand_tf, peak) {
                    (Some(f), Some(x), ..) => format!(
                        "{} of the {} floor {}{}",
                        format::percent(x),
                        f.gpu_model,
                        format::millis(f.floor_ms),
                        if t.clocks.as_ref().is_some_and(|c| c.moved) {
                            "; clocks moved during timing"
                        } else {
                            ""
                        }
                    ),
                    (_, _, Some(c), Some(p)) => {
                        format!("{} of best library", format::percent(c / p.tflops))
                    }
                    _ => format::NONE.to_string(),
                },
                recheck: if t.recheck_passed {
                    "passed".into()
                } else {
                    "FAILED".into()
                },
            }
        })
        .collect();

    let mut checks = Vec::new();
    for w in &o.workloads {
        let kind = task
            .and_then(|t| t.workload(&w.workload))
            .map(|wl| wl.kind)
            .map_or(
                if w.performance {
                    "performance"
                } else {
                    "correctness"
                },
                WorkloadKind::as_str,
            );
        for (ti, trial) in w.trials.iter().enumerate() {
            for out in &trial.outputs {
                let c = &out.comparison;
                checks.push(CheckRow {
                    workload: w.workload.clone(),
                    kind: kind.to_string(),
                    trial: format!("{} (seed {})", ti + 1, trial.seed),
                    output: out.output.clone(),
                    tolerance: out.tolerance.clone(),
                    relative_l2: format::scientific(Some(c.relative_l2)),
                    max_abs_error: format::scientific(Some(c.max_abs_error)),
                    violations: format!("{}/{}", c.violations, c.elements),
                    passed: if out.passed { "passed" } else { "FAILED" },
                    failure: out.failure.clone().unwrap_or_default(),
                });
            }
            if trial.guard_bytes_changed > 0 || trial.input_bytes_changed > 0 {
                checks.push(CheckRow {
                    workload: w.workload.clone(),
                    kind: kind.to_string(),
                    trial: format!("{} (seed {})", ti + 1, trial.seed),
                    output: "(memory)".into(),
                    tolerance: "guards and inputs unchanged".into(),
                    relative_l2: String::new(),
                    max_abs_error: String::new(),
                    violations: format!(
                        "{} guard, {} input bytes changed",
                        trial.guard_bytes_changed, trial.input_bytes_changed
                    ),
                    passed: "FAILED",
                    failure: String::new(),
                });
            }
        }
    }

    let kernels = o
        .kernels
        .iter()
        .map(|k| KernelRow {
            entry: k.entry.clone(),
            registers: k.attributes.registers.to_string(),
            static_shared: format::bytes(
                u64::try_from(k.attributes.static_shared_bytes).unwrap_or(0),
            ),
            local: format::bytes(u64::try_from(k.attributes.local_bytes).unwrap_or(0)),
            max_threads: k.attributes.max_threads_per_block.to_string(),
        })
        .collect();

    let (evidence, evidence_notes, evidence_summary, evidence_defined) = match &o.evidence {
        Some(ev) => {
            let rows: Vec<EvidenceRow> = ev
                .families
                .iter()
                .map(|f| EvidenceRow {
                    family: f.family.clone(),
                    sass: f.sass_patterns.join(", "),
                    status: f.status.to_string(),
                    static_check: if f.static_opcodes.is_empty() {
                        f.static_count.to_string()
                    } else {
                        format!("{} ({})", f.static_count, f.static_opcodes.join(", "))
                    },
                    dynamic: match (f.dynamic_count, &f.method) {
                        (Some(n), Some(m)) => format!("{n} executions ({})", method_name(*m)),
                        (Some(n), None) => format!("{n} executions"),
                        (None, _) => format::NOT_MEASURED.to_string(),
                    },
                })
                .collect();
            let mut notes = ev.notes.clone();
            if !ev.disassembler.is_empty() {
                notes.push(format!("disassembler: {}", ev.disassembler));
            }
            let counts = match doc.correct_with_arch() {
                Some(true) => "counts as correct with arch (the paper's grade)",
                Some(false) => "does not count as correct with arch (the paper's grade)",
                None => "correct with arch: not measured (no dynamic count for a family)",
            };
            let share = |v: Option<f64>| {
                v.map_or_else(|| format::NOT_MEASURED.to_string(), |x| format!("{:.3}", x))
            };
            let on_target = match doc.correct_on_target() {
                Some(true) => "counts as correct on target",
                Some(false) => "does not count as correct on target",
                None => "correct on target: not measured",
            };
            if let Some(d) = &doc.outcome.dynamic {
                notes.extend(d.notes.iter().cloned());
            }
            let defined = !rows.is_empty();
            (
                rows,
                notes,
                format!(
                    "target status {}: {counts}; executed MMA FLOPs / task FLOPs {}, other arithmetic (SIMT FMA/add/mul, mma.sync) FLOPs / task FLOPs {}, TMA-loaded bytes / compulsory input bytes {}: {on_target} (needs MMA share >= {} and other share <= {}, or for a task that requires no MMA, TMA byte share >= {})",
                    ev.status,
                    share(doc.mma_flop_share()),
                    share(doc.other_flop_share()),
                    share(doc.tma_byte_share()),
                    crate::record::ON_TARGET_MMA_SHARE,
                    crate::record::ON_TARGET_OTHER_SHARE,
                    crate::record::ON_TARGET_BYTE_SHARE
                ),
                defined,
            )
        }
        // Nothing measured: one line names what the task requires, rather than a table
        // whose every cell would say "not measured" (a large site has 100,000 such pages).
        None => {
            let required: Vec<String> = task
                .and_then(|t| t.targets.iter().find(|x| x.arch == doc.arch))
                .map(|target| {
                    target
                        .required
                        .iter()
                        .map(|f| format!("{} (SASS {})", f.family, f.sass.join(", ")))
                        .collect()
                })
                .unwrap_or_default();
            let mut summary =
                "No target evidence in this record: correct with arch is not measured.".to_string();
            if !required.is_empty() {
                summary.push_str(&format!(
                    " The task requires on {}: {}.",
                    doc.arch,
                    required.join("; ")
                ));
            }
            let defined = !required.is_empty();
            (Vec::new(), Vec::new(), summary, defined)
        }
    };

    let link = |d: &Digest, ext: &str| ctx.digest_link(&from, d, ext);
    let mut hashes = vec![HashRow {
        field: "record".into(),
        link: link(&r.digest, "json"),
        note: "this record (ptxbench.record object)".into(),
    }];
    hashes.push(HashRow {
        field: "task_hash".into(),
        link: DigestLink {
            digest: doc.task_hash.to_string(),
            ..DigestLink::default()
        },
        note: "the task definition's canonical JSON (a hash, not a stored object)".into(),
    });
    hashes.push(HashRow {
        field: "task_digest".into(),
        link: match doc.task_digest {
            Some(d) => link(&d, "json"),
            None => DigestLink {
                digest: format::NONE.to_string(),
                ..DigestLink::default()
            },
        },
        note: match doc.task_digest {
            Some(_) => "the task definition it was measured against (ptxbench.task object)".into(),
            None => format!(
                "not named by a {} record: `ptxbench audit` finds the task object by its task hash",
                doc.schema
            ),
        },
    });
    hashes.push(HashRow {
        field: "suite_hash".into(),
        link: DigestLink {
            digest: doc.suite_hash.to_string(),
            ..DigestLink::default()
        },
        note: "the task suite (a hash, not a stored object)".into(),
    });
    if let Some(d) = doc.suite_digest {
        hashes.push(HashRow {
            field: "suite_digest".into(),
            link: link(&d, "json"),
            note: "the task suite (ptxbench.suite object)".into(),
        });
    }
    for (kind, d) in text_blobs(doc) {
        hashes.push(HashRow {
            field: kind.field().into(),
            link: link(&d, kind.extension()),
            note: blob_note(ctx, &d),
        });
    }
    if let Some(d) = doc.cubin_digest {
        hashes.push(HashRow {
            field: "cubin_digest".into(),
            link: link(&d, "cubin"),
            note: blob_note(ctx, &d),
        });
    }

    let shared_link = |d: &Digest| {
        ctx.shared_blobs.get(d).map(|b| Link {
            text: format!(
                "shown on its own page: it is shared by {} records",
                b.records.len()
            ),
            href: paths::link(&from, &paths::blob(d)),
        })
    };
    let text_of = |d: &Digest| match ctx.input.blobs.get(d) {
        Some(Blob::Text(t)) => Some(t.as_str()),
        _ => None,
    };
    let size_of = |d: &Digest| match ctx.input.blobs.get(d) {
        Some(Blob::Text(t)) => format::bytes(t.len() as u64),
        Some(Blob::Binary { bytes }) => format::bytes(*bytes),
        None => String::new(),
    };
    let mut code: Vec<CodeView<'a>> = text_blobs(doc)
        .filter(|(kind, _)| !matches!(kind, BlobKind::Prompt | BlobKind::Response))
        .map(|(kind, d)| {
            let shared = shared_link(&d);
            CodeView {
                id: kind.anchor(),
                label: kind.label(),
                link: link(&d, kind.extension()),
                size: size_of(&d),
                text: text_of(&d).map(TextView::new),
                open: matches!(kind, BlobKind::Ptx | BlobKind::Plan),
                shared,
            }
        })
        .collect();
    code.sort_by_key(|c| match c.id {
        "plan" => 0,
        "ptx" => 1,
        _ => 2,
    });

    let conversation = ConversationView {
        prompt: doc.prompt_digest.map(|d| {
            let shared = shared_link(&d);
            let t = text_of(&d);
            let messages = match (&shared, t) {
                (None, Some(t)) => text::chat(t),
                _ => None,
            };
            let shared_blob = ctx.shared_blobs.get(&d);
            let is_chat = messages.is_some()
                || match shared_blob {
                    Some(b) => b.is_chat,
                    None => t.is_some_and(|t| text::chat(t).is_some()),
                };
            let shown_text = match (&shared, &messages, t) {
                (None, None, Some(t)) => Some(TextView::new(t)),
                _ => None,
            };
            BlobText {
                link: link(&d, if is_chat { "json" } else { "txt" }),
                size: size_of(&d),
                summary: match (&messages, t) {
                    (Some(m), _) => format!("{} messages", m.len()),
                    (None, Some(t)) => match shared_blob {
                        Some(b) => b.lines.clone(),
                        None => TextView::new(t).lines_text(),
                    },
                    (None, None) => "not text".into(),
                },
                shared,
                messages: messages.unwrap_or_default(),
                text: shown_text,
            }
        }),
        response: doc.response_digest.map(|d| {
            let t = text_of(&d);
            let message = t.map(|t| {
                text::message(
                    "assistant",
                    match doc.turn {
                        Some(n) => format!("answer of turn {n}: this record's response"),
                        None => "this record's response".to_string(),
                    },
                    t,
                )
            });
            BlobText {
                link: link(&d, "txt"),
                size: size_of(&d),
                summary: message
                    .as_ref()
                    .map_or_else(|| "not text".into(), |m| m.text.lines_text()),
                shared: None,
                messages: message.into_iter().collect(),
                text: None,
            }
        }),
    };

    let trajectory = ctx.trajectories.of(index).map(|t| {
        let neighbour = |i: usize, what: &str| {
            let n = &ctx.input.records[i];
            Link {
                text: format!(
                    "{what}: turn {} ({})",
                    n.record
                        .turn
                        .map_or_else(|| "?".to_string(), |t| t.to_string()),
                    shown_verdict(&n.record)
                ),
                href: paths::link(&from, &paths::record(&n.digest)),
            }
        };
        let position = t.records.iter().position(|&i| i == index).unwrap_or(0);
        TrajectoryNav {
            page: Link {
                text: format!(
                    "its trajectory ({} records, first {})",
                    t.records.len(),
                    t.root.short(12)
                ),
                href: format!(
                    "{}#turn-{}",
                    paths::link(&from, &paths::trajectory(&t.root)),
                    position
                ),
            },
            position: format!(
                "Turn {} of a trajectory: record {} of {}",
                doc.turn.map_or_else(|| "?".to_string(), |t| t.to_string()),
                position + 1,
                t.records.len()
            ),
            previous: ctx
                .trajectories
                .previous(index)
                .map(|i| neighbour(i, "previous")),
            next: ctx.trajectories.next(index).map(|i| neighbour(i, "next")),
        }
    });

    let runs = r
        .runs
        .iter()
        .filter_map(|i| ctx.input.runs.get(*i))
        .map(|run| Link {
            text: format!("{} ({})", run.run.name, run.digest.short(12)),
            href: paths::link(&from, &paths::run(&run.digest)),
        })
        .collect();
    let bundles = r
        .runs
        .iter()
        .filter_map(|i| ctx.input.runs.get(*i))
        .filter_map(|run| super::bundle_link(run, &from))
        .collect();

    RecordView {
        nvcc_source: (doc.kernel_source_digest.is_none())
            .then(|| ctx.input.sources.of(doc.ptx_digest))
            .flatten()
            .map(|s| NvccSourceView {
                ptx: s.ptx.clone(),
                files: s
                    .files
                    .iter()
                    .map(|f| Link {
                        text: f.path.clone(),
                        href: paths::link(&from, &paths::source_file(&f.digest)),
                    })
                    .collect(),
            }),
        digest: r.digest.to_string(),
        entry: head.entry,
        is_harness: doc.is_harness_test(),
        evaluated: is_evaluated(doc),
        task: head.task,
        arch,
        verdict: shown_verdict(doc).to_string(),
        verdict_class: head.verdict_class,
        expected: head.expected,
        agrees: head.agrees,
        stage: o.stage.to_string(),
        message_text: TextView::new(o.message.as_str()),
        facts,
        runs,
        bundles,
        warnings,
        evidence,
        evidence_notes,
        evidence_summary,
        evidence_defined,
        timings,
        checks,
        kernels,
        hashes,
        audit: format!("ptxbench audit {}", r.digest),
        show: format!("ptxbench show {}", r.digest),
        json: link(&r.digest, "json"),
        jit_log: TextView::new(o.jit_log.as_str()),
        code,
        conversation,
        trajectory,
    }
}

/// How a record's interval covers a re-run: the within-process interval and the between-run
/// component it was widened by (nothing for records made before there was one).
fn between_runs(t: &crate::record::Timing) -> String {
    match (&t.between_runs, t.speedup_ci95_within) {
        (Some(b), Some([lo, hi])) => format!(
            "; holds a re-run: this process's pairs gave {}–{}, widened by the {} between-run component (log sd {}; {})",
            format::opt_speedup(Some(lo)),
            format::opt_speedup(Some(hi)),
            b.gpu_model,
            b.log_sd,
            b.source.split(" (").next().unwrap_or_default()
        ),
        _ => String::new(),
    }
}
