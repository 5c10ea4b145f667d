//! The methodology page, generated from the task suite and the data: what each metric means,
//! what counts as evidence, the correctness and timing protocols, the peak proxy, and how to
//! audit a number.

use std::collections::BTreeMap;

use askama::Template;

use super::{Fact, Link, Page};
use crate::engine::Protocol;
use crate::metrics::{FAST_P, PASS_K, TURN_LIMITS};
use crate::site::context::Context;
use crate::site::format;
use crate::site::paths;

/// One reported data set: its import object and files, each linked to its stored bytes, and
/// the published rows its own per-turn data does not reproduce.
#[derive(Debug)]
pub struct ReportedSource {
    pub label: String,
    pub source: String,
    pub object: Link,
    pub files: Vec<Link>,
    pub disagreements: Vec<Disagreement>,
}

/// A published row whose correct-with-arch count the per-turn data does not give.
#[derive(Debug)]
pub struct Disagreement {
    pub model: String,
    pub run: String,
    pub turn_limit: String,
    pub published: String,
    pub per_turn: String,
    /// The published row's file and line, linked to the file's bytes.
    pub lines: Vec<Link>,
}

#[derive(Debug)]
pub struct MethodologyView {
    pub suite: Vec<Fact>,
    pub suite_description: String,
    pub turn_limits: String,
    pub fast_p: String,
    pub pass_k: String,
    pub tasks: Vec<TaskSummary>,
    /// What each task family's baseline is, one row per family.
    pub baselines: Vec<BaselineRow>,
    pub protocols: Vec<ProtocolRow>,
    pub default_protocol: String,
    pub peaks: Vec<PeakRow>,
    pub reported: Vec<ReportedSource>,
    /// How many measured records carry dynamic evidence.
    pub evidence_coverage: String,
    /// The suites the measured records were made against.
    pub suite_versions: Vec<SuiteRow>,
}

/// One suite the measured records were made against.
#[derive(Debug)]
pub struct SuiteRow {
    pub version: String,
    pub hash: String,
    pub records: String,
    /// Of those, records whose task has changed since.
    pub changed: String,
    pub current: bool,
}

#[derive(Debug)]
pub struct TaskSummary {
    pub task: Link,
    pub family: String,
    pub baseline: String,
    pub tolerances: String,
    pub inputs: String,
    pub workloads: String,
    pub targets: String,
    pub flops: String,
}

/// One task family's baseline: the library the definitions name and what the harness runs.
#[derive(Debug)]
pub struct BaselineRow {
    pub family: String,
    pub library: String,
    pub described: String,
    pub tasks: String,
}

#[derive(Debug)]
pub struct ProtocolRow {
    pub protocol: String,
    pub records: String,
}

#[derive(Debug)]
pub struct PeakRow {
    pub arch: String,
    pub gpu: String,
    pub precision: String,
    pub tflops: String,
    pub source: Link,
    pub workload: String,
}

#[derive(Debug, Template)]
#[template(path = "methodology.html")]
pub struct MethodologyPage<'a> {
    pub page: &'a Page,
    pub v: &'a MethodologyView,
}

pub fn view(ctx: &Context<'_>) -> Result<MethodologyView, crate::metrics::MetricsError> {
    let from = paths::METHODOLOGY;
    let suite = &ctx.input.suite;
    let tasks = suite
        .tasks
        .iter()
        .map(|t| {
            let count = |k| t.workloads_of(k).count();
            TaskSummary {
                task: Link {
                    text: t.id.to_string(),
                    href: paths::link(from, &paths::task(t.id.as_str())),
                },
                family: t.family.as_str().into(),
                baseline: t.baseline.library.clone(),
                tolerances: t
                    .outputs
                    .iter()
                    .map(|o| {
                        format!(
                            "{}: {}",
                            o.name,
                            o.tolerance
                                .as_ref()
                                .map(|x| x.to_string())
                                .unwrap_or_default()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
                inputs: t.distribution.to_string(),
                workloads: format!(
                    "{} correctness, {} performance",
                    count(crate::task::WorkloadKind::Correctness),
                    count(crate::task::WorkloadKind::Performance)
                ),
                targets: t
                    .targets
                    .iter()
                    .map(|x| {
                        format!(
                            "{}: {}",
                            x.arch,
                            x.required
                                .iter()
                                .map(|f| f.family.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
                flops: t.flops.to_string(),
            }
        })
        .collect();
    let mut baselines: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    for t in &suite.tasks {
        *baselines
            .entry((
                t.family.as_str().to_string(),
                t.baseline.library.clone(),
                crate::engine::baseline::described(&t.op),
            ))
            .or_default() += 1;
    }
    let baselines = baselines
        .into_iter()
        .map(|((family, library, described), n)| BaselineRow {
            family,
            library,
            described,
            tasks: n.to_string(),
        })
        .collect();
    let mut protocols: BTreeMap<String, usize> = BTreeMap::new();
    for r in &ctx.input.records {
        {
            let p = &r.record.protocol;
            *protocols.entry(p.describe()).or_default() += 1;
        }
    }
    let d = Protocol::default();
    let entries: Vec<_> = ctx
        .input
        .records
        .iter()
        .filter(|r| !r.record.is_harness_test())
        .collect();
    let with_dynamic = entries
        .iter()
        .filter(|r| {
            r.record
                .outcome
                .evidence
                .as_ref()
                .is_some_and(|e| e.families.iter().any(|f| f.dynamic_count.is_some()))
        })
        .count();
    Ok(MethodologyView {
        suite: vec![
            Fact {
                key: "version".into(),
                value: suite.version.clone(),
            },
            Fact {
                key: "suite hash".into(),
                value: ctx.suite_digest.to_string(),
            },
            Fact {
                key: "the manifest's suite".into(),
                value: if ctx.input.manifest.suite.hash == ctx.suite_digest {
                    format!("{} (this suite)", ctx.input.manifest.suite.version)
                } else {
                    format!(
                        "{} {}: not this suite; results are compared with this suite's tasks",
                        ctx.input.manifest.suite.version, ctx.input.manifest.suite.hash
                    )
                },
            },
            Fact {
                key: "tasks".into(),
                value: suite.tasks.len().to_string(),
            },
        ],
        suite_description: suite.description.clone(),
        turn_limits: TURN_LIMITS
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        fast_p: FAST_P
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        pass_k: PASS_K
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        tasks,
        baselines,
        protocols: protocols
            .into_iter()
            .map(|(p, n)| ProtocolRow {
                protocol: p,
                records: n.to_string(),
            })
            .collect(),
        default_protocol: d.describe(),
        peaks: ctx
            .peaks
            .iter()
            .map(|p| PeakRow {
                arch: p.arch.clone(),
                gpu: if p.gpu.is_empty() {
                    "not recorded".to_string()
                } else {
                    p.gpu.clone()
                },
                precision: p.precision.clone(),
                tflops: format::tflops(p.tflops),
                source: Link {
                    text: format!("{} ({})", p.task, p.record.short(12)),
                    href: paths::link(from, &paths::record(&p.record)),
                },
                workload: p.workload.clone(),
            })
            .collect(),
        suite_versions: suite_rows(ctx),
        evidence_coverage: format!(
            "{with_dynamic} of {} measured records carry dynamic evidence",
            entries.len()
        ),
        reported: ctx
            .input
            .reported
            .iter()
            .map(|r| reported_source(r, from))
            .collect::<Result<_, _>>()?,
    })
}

/// What the page says of one reported data set, linked from page `from`.
fn reported_source(
    r: &crate::site::input::LoadedReported,
    from: &str,
) -> Result<ReportedSource, crate::metrics::MetricsError> {
    let bytes = |d: &crate::digest::Digest| paths::link_parts(from, &[paths::OBJECTS, &d.hex()]);
    let file = |name: &str| {
        r.data
            .files
            .iter()
            .find(|f| f.name == name)
            .map(|f| bytes(&f.content_digest))
            .unwrap_or_default()
    };
    let disagreements = crate::metrics::reported::arch_disagreements(&r.data)?
        .into_iter()
        .map(|d| Disagreement {
            model: d.row.model.clone(),
            run: d.row.run.clone(),
            turn_limit: d.row.turn_limit.to_string(),
            published: d
                .row
                .correct_with_arch
                .map_or_else(|| format::NONE.to_string(), |c| c.to_string()),
            per_turn: d
                .per_turn
                .map_or_else(|| format::NONE.to_string(), |c| c.to_string()),
            lines: d
                .row
                .lines
                .iter()
                .filter(|l| l.file.starts_with("arch_instruction"))
                .map(|l| Link {
                    text: format!("{}:{}", l.file, l.line),
                    href: file(&l.file),
                })
                .collect(),
        })
        .collect();
    Ok(ReportedSource {
        label: r.label.clone(),
        source: r.data.source.clone(),
        object: Link {
            text: r.data.import_digest.to_string(),
            href: bytes(&r.data.import_digest),
        },
        files: r
            .data
            .files
            .iter()
            .map(|f| Link {
                text: format!("{} ({} bytes)", f.name, f.size),
                href: bytes(&f.content_digest),
            })
            .collect(),
        disagreements,
    })
}

/// The suites of the measured records, newest first by version text, then by hash.
fn suite_rows(ctx: &Context<'_>) -> Vec<SuiteRow> {
    let mut by_suite: BTreeMap<crate::digest::Digest, (usize, usize)> = BTreeMap::new();
    for r in &ctx.input.records {
        let e = by_suite.entry(r.record.suite_hash).or_default();
        e.0 += 1;
        e.1 += usize::from(ctx.task_changed(&r.record));
    }
    let mut rows: Vec<(String, crate::digest::Digest, (usize, usize))> = by_suite
        .into_iter()
        .map(|(h, n)| {
            (
                ctx.suite_versions.get(&h).cloned().unwrap_or_default(),
                h,
                n,
            )
        })
        .collect();
    rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    rows.into_iter()
        .map(|(version, h, (n, changed))| SuiteRow {
            version: if version.is_empty() {
                format::NONE.to_string()
            } else {
                version
            },
            hash: h.to_string(),
            records: n.to_string(),
            changed: changed.to_string(),
            current: h == ctx.suite_digest,
        })
        .collect()
}
