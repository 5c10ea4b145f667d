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

#[derive(Debug)]
pub struct MethodologyView {
    pub suite: Vec<Fact>,
    pub suite_description: String,
    pub turn_limits: String,
    pub fast_p: String,
    pub pass_k: String,
    pub tasks: Vec<TaskSummary>,
    pub protocols: Vec<ProtocolRow>,
    pub default_protocol: String,
    pub peaks: Vec<PeakRow>,
    pub reported: Vec<String>,
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

#[derive(Debug)]
pub struct ProtocolRow {
    pub protocol: String,
    pub records: String,
}

#[derive(Debug)]
pub struct PeakRow {
    pub arch: String,
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

pub fn view(ctx: &Context<'_>) -> MethodologyView {
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
    MethodologyView {
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
            .map(|r| {
                format!(
                    "{}: import object {} ({}, {} files, provenance reported)",
                    r.label,
                    r.data.import_digest,
                    r.data.source,
                    r.data.files.len()
                )
            })
            .collect(),
    }
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
