//! One task's page: its definition from the suite (tensors, tolerances, workloads, targets,
//! baseline, FLOP formula), every entry's metrics on it, and its records.

use askama::Template;

use super::Cell;
use super::ceilings::{CeilingTable, reported_best, reported_gpu};
use super::leaderboard::{TaskTableOn, TaskTableView};
use super::record::RecordsTable;
use super::{Fact, Page};
use crate::metrics::TURN_LIMITS;
use crate::site::context::Context;
use crate::site::paths;
use crate::task::Task;

#[derive(Debug)]
pub struct TaskView {
    pub id: String,
    pub title: String,
    pub description: Vec<DescriptionBlock>,
    pub in_suite: bool,
    pub suite_version: String,
    pub facts: Vec<Fact>,
    pub tensors: Vec<TensorRow>,
    pub workloads: Vec<WorkloadRow>,
    pub targets: Vec<TargetRow>,
    pub task_tables: Vec<TaskTableView>,
    pub record_tables: Vec<RecordsTable>,
    /// One per (arch, GPU) with measured timings.
    pub ceilings: Vec<CeilingTable>,
    /// The paper's best model per arch.
    pub reported_ceilings: Vec<ReportedCeiling>,
}

#[derive(Debug)]
pub struct ReportedCeiling {
    pub arch: String,
    pub gpu: String,
    pub limit: u32,
    /// The speedup, linked to the entry's rows; its note names the model.
    pub cell: Cell,
}

#[derive(Debug)]
pub struct TensorRow {
    pub name: String,
    pub role: &'static str,
    pub dtype: String,
    pub shape: String,
    pub values: String,
    pub description: String,
}

#[derive(Debug)]
pub struct WorkloadRow {
    pub name: String,
    pub kind: String,
    pub axes: String,
    pub gflop: String,
    pub uuid: String,
}

#[derive(Debug)]
pub struct TargetRow {
    pub arch: String,
    pub family: String,
    pub sass: String,
}

#[derive(Debug, Template)]
#[template(path = "task.html")]
pub struct TaskPage<'a> {
    pub page: &'a Page,
    pub v: &'a TaskView,
}

fn definition(task: &Task) -> (Vec<Fact>, Vec<TensorRow>, Vec<WorkloadRow>, Vec<TargetRow>) {
    let facts = vec![
        Fact {
            key: "family".into(),
            value: task.family.as_str().into(),
        },
        Fact {
            key: "axes".into(),
            value: task
                .axes
                .iter()
                .map(|a| match a.value {
                    Some(v) => format!("{} = {v}", a.name),
                    None => format!("{} (varies)", a.name),
                })
                .collect::<Vec<_>>()
                .join(", "),
        },
        Fact {
            key: "reference".into(),
            value: task.reference.trim().to_string(),
        },
        Fact {
            key: "baseline".into(),
            value: format!("{} ({})", task.baseline.library, task.baseline.operation),
        },
        Fact {
            key: "baseline as the harness runs it".into(),
            value: crate::engine::baseline::described(&task.op),
        },
        Fact {
            key: "FLOPs per run".into(),
            value: task.flops.to_string(),
        },
        Fact {
            key: "compulsory bytes per run".into(),
            value: task.bytes.to_string(),
        },
        Fact {
            key: "task hash".into(),
            value: task.digest().to_string(),
        },
    ];
    let mut tensors: Vec<TensorRow> = task
        .inputs
        .iter()
        .map(|t| TensorRow {
            name: t.name.clone(),
            role: "input",
            dtype: t.dtype.as_str().into(),
            shape: format!("[{}]", t.shape.join(", ")),
            values: if task.op.derived_inputs().contains(&t.name.as_str()) {
                task.op.derived_how().into()
            } else {
                task.input_distribution(&t.name)
                    .map(|d| d.to_string())
                    .unwrap_or_default()
            },
            description: t.description.clone(),
        })
        .collect();
    tensors.extend(task.outputs.iter().map(|t| {
        TensorRow {
            name: t.name.clone(),
            role: "output",
            dtype: t.dtype.as_str().into(),
            shape: format!("[{}]", t.shape.join(", ")),
            values: t
                .tolerance
                .as_ref()
                .map(|x| x.to_string())
                .unwrap_or_default(),
            description: t.description.clone(),
        }
    }));
    let workloads = task
        .workloads
        .iter()
        .map(|w| WorkloadRow {
            name: w.name.clone(),
            kind: w.kind.as_str().into(),
            axes: w.axes_text(),
            gflop: task
                .flops_of(w)
                .map_or_else(|_| "?".into(), |f| format!("{:.3}", f / 1e9)),
            uuid: w.uuid.clone().unwrap_or_default(),
        })
        .collect();
    let targets = task
        .targets
        .iter()
        .flat_map(|t| {
            t.required.iter().map(move |f| TargetRow {
                arch: t.arch.as_str().into(),
                family: f.family.clone(),
                sass: f.sass.join(", "),
            })
        })
        .collect();
    (facts, tensors, workloads, targets)
}

/// A paragraph of a task's description, or a run of indented lines (formulas) kept as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescriptionBlock {
    pub formula: bool,
    pub text: String,
}

/// A task description as paragraphs (blank-line separated, hard wraps joined) and formula
/// blocks (lines indented by two or more spaces, kept line by line).
pub fn description_blocks(text: &str) -> Vec<DescriptionBlock> {
    let mut out: Vec<DescriptionBlock> = Vec::new();
    let push = |formula: bool, line: &str, out: &mut Vec<DescriptionBlock>| match out.last_mut() {
        Some(b) if b.formula == formula && !line.is_empty() => {
            b.text.push(if formula { '\n' } else { ' ' });
            b.text.push_str(line);
        }
        _ if line.is_empty() => {}
        _ => out.push(DescriptionBlock {
            formula,
            text: line.to_string(),
        }),
    };
    let mut gap = true;
    for raw in text.trim().lines() {
        if raw.trim().is_empty() {
            gap = true;
            continue;
        }
        let formula = raw.starts_with("  ");
        let line = if formula { &raw[2..] } else { raw.trim() };
        if gap && !formula {
            // A blank line starts a new paragraph even after another paragraph.
            out.push(DescriptionBlock {
                formula: false,
                text: line.to_string(),
            });
        } else {
            push(formula, line, &mut out);
        }
        gap = false;
    }
    out
}

pub fn view(ctx: &Context<'_>, id: &str) -> TaskView {
    let from = paths::task(id);
    let task = ctx.input.suite.get(id);
    let (facts, tensors, workloads, targets) = task.map(definition).unwrap_or_default();
    TaskView {
        id: id.to_string(),
        title: task.map(|t| t.title.clone()).unwrap_or_default(),
        description: task
            .map(|t| description_blocks(&t.description))
            .unwrap_or_default(),
        in_suite: task.is_some(),
        suite_version: ctx.input.suite.version.clone(),
        facts,
        tensors,
        workloads,
        targets,
        task_tables: vec![TaskTableView::new(
            ctx,
            ctx.metrics
                .tasks
                .iter()
                .filter(|t| t.task == id && ctx.listed(&t.entry, t.turn_limit)),
            &from,
            "task-results",
            TaskTableOn::TaskPage,
        )],
        ceilings: ctx
            .archs
            .iter()
            .flat_map(|a| ctx.ceilings.of(a, id))
            .map(|c| CeilingTable::new(ctx, c, &from))
            .collect(),
        reported_ceilings: ctx
            .archs
            .iter()
            .filter_map(|a| {
                let cell = reported_best(ctx, a, id, &from)?;
                Some(ReportedCeiling {
                    arch: a.clone(),
                    gpu: reported_gpu(a),
                    limit: TURN_LIMITS[TURN_LIMITS.len() - 1],
                    cell,
                })
            })
            .collect(),
        record_tables: RecordsTable::of(
            ctx,
            ctx.task_records
                .get(id)
                .map(Vec::as_slice)
                .unwrap_or_default(),
            &from,
            "record-list",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::description_blocks;

    #[test]
    fn descriptions_keep_paragraphs_and_formula_lines() {
        let b =
            description_blocks("One line\nwrapped.\n  a = b + c\n  d = e\nAfter.\n\nSecond <p>.\n");
        let shown: Vec<(bool, &str)> = b.iter().map(|b| (b.formula, b.text.as_str())).collect();
        assert_eq!(
            shown,
            [
                (false, "One line wrapped."),
                (true, "a = b + c\nd = e"),
                (false, "After."),
                (false, "Second <p>."),
            ]
        );
    }
}
