//! Prompts: three variants per (task, arch), rendered deterministically from templates.
//!
//! Variant 1 states the task, the ABI and the response format; variant 2 adds notes on the
//! architecture's target instructions; variant 3 adds a worked pipeline pattern (as the paper's
//! three prompt variants). The view model holds only preformatted strings, so the templates
//! (pipeline/templates/prompt/) just interpolate; the same task and arch always give the same
//! bytes.

use std::fmt::Write as _;

use askama::Template;

use crate::arch::Arch;
use crate::task::{Distribution, Task, TensorSpec, Tolerance};

/// Which of the three prompt variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Variant(u8);

impl Variant {
    pub const ALL: [Variant; 3] = [Variant(1), Variant(2), Variant(3)];

    pub fn new(n: u8) -> Result<Variant, String> {
        if (1..=3).contains(&n) {
            Ok(Variant(n))
        } else {
            Err(format!(
                "prompt variant {n} does not exist: 1 (task), 2 (+ instruction notes), 3 (+ pipeline pattern)"
            ))
        }
    }

    pub fn number(self) -> u8 {
        self.0
    }
}

/// Renders the prompt for `task` on `arch`; fails if the task has no target for `arch`.
pub fn render(task: &Task, arch: Arch, variant: Variant) -> Result<String, String> {
    let view = View::new(task, arch, variant)?;
    PromptTemplate { v: &view }
        .render()
        .map_err(|e| format!("rendering the prompt for {} failed: {e}", task.id))
}

#[derive(Template)]
#[template(path = "prompt/prompt.md")]
struct PromptTemplate<'a> {
    v: &'a View,
}

struct AxisView {
    name: String,
    value: String,
    description: String,
}

struct TensorView {
    name: String,
    dtype: String,
    shape: String,
    description: String,
    distribution: String,
    tolerance: String,
}

struct WorkloadView {
    name: String,
    kind: &'static str,
    axes: String,
}

struct RequiredView {
    family: String,
    sass: String,
}

struct View {
    task_id: String,
    title: String,
    description: String,
    reference: String,
    arch: &'static str,
    arch_number: String,
    gpus: &'static str,
    baseline: String,
    distribution: String,
    axes: Vec<AxisView>,
    axis_names: String,
    inputs: Vec<TensorView>,
    outputs: Vec<TensorView>,
    workloads: Vec<WorkloadView>,
    required: Vec<RequiredView>,
    max_threads: u64,
    max_smem: u64,
    max_cluster: u64,
    example_plan: String,
    variant: u8,
}

impl View {
    fn new(task: &Task, arch: Arch, variant: Variant) -> Result<View, String> {
        let target = task
            .target(arch)
            .ok_or_else(|| format!("task {} has no target for {arch}", task.id))?;
        let limits = arch.limits();
        let tensor = |t: &TensorSpec| TensorView {
            name: t.name.clone(),
            dtype: t.dtype.ptx_name().to_string(),
            shape: format!("[{}]", t.shape.join(", ")),
            description: t.description.trim().to_string(),
            distribution: t
                .distribution
                .as_ref()
                .map(describe_distribution)
                .unwrap_or_default(),
            tolerance: t
                .tolerance
                .as_ref()
                .map(describe_tolerance)
                .unwrap_or_default(),
        };
        Ok(View {
            task_id: task.id.to_string(),
            title: task.title.clone(),
            description: task.description.trim().to_string(),
            reference: task.reference.trim().to_string(),
            arch: arch.as_str(),
            arch_number: arch.as_str()[3..].to_string(),
            gpus: arch.gpus(),
            baseline: format!("{} ({})", task.baseline.library, task.baseline.operation),
            distribution: describe_distribution(&task.distribution),
            axes: task
                .axes
                .iter()
                .map(|a| AxisView {
                    name: a.name.clone(),
                    value: a
                        .value
                        .map_or("variable (set per workload)".to_string(), |v| v.to_string()),
                    description: a.description.trim().to_string(),
                })
                .collect(),
            axis_names: task
                .axes
                .iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            inputs: task.inputs.iter().map(tensor).collect(),
            outputs: task.outputs.iter().map(tensor).collect(),
            workloads: task
                .workloads
                .iter()
                .map(|w| WorkloadView {
                    name: w.name.clone(),
                    kind: w.kind.as_str(),
                    axes: w.axes_text(),
                })
                .collect(),
            required: target
                .required
                .iter()
                .map(|r| RequiredView {
                    family: r.family.clone(),
                    sass: r.sass.join(", "),
                })
                .collect(),
            max_threads: limits.max_threads_per_block,
            max_smem: limits.max_shared_per_block,
            max_cluster: limits.max_cluster_portable,
            example_plan: example_plan(task),
            variant: variant.number(),
        })
    }
}

fn describe_distribution(d: &Distribution) -> String {
    match d {
        Distribution::Randn { std } => format!("N(0, {std}^2)"),
        Distribution::Spiky {
            std,
            spike_std,
            spike_prob,
        } => format!(
            "N(0, {std}^2) plus, with probability {spike_prob} per element, a spike from N(0, {spike_std}^2)"
        ),
        Distribution::Uniform { lo, hi } => format!("U({lo}, {hi})"),
    }
}

fn describe_tolerance(t: &Tolerance) -> String {
    match t {
        Tolerance::Allclose { rtol, atol } => {
            format!("|out - ref| <= {atol} + {rtol} * |ref| elementwise")
        }
        Tolerance::Relnorm { max } => {
            format!("relative L2 error ||out - ref|| / ||ref|| <= {max}")
        }
        Tolerance::AllcloseFraction {
            rtol,
            atol,
            min_match,
        } => format!(
            "|out - ref| <= {atol} + {rtol} * |ref| for at least {}% of the elements, and no element NaN or infinite",
            min_match * 100.0
        ),
        Tolerance::AllcloseRelnorm { rtol, atol, max } => format!(
            "|out - ref| <= {atol} + {rtol} * |ref| elementwise, and relative L2 error ||out - ref|| / ||ref|| <= {max}"
        ),
    }
}

/// A plan that binds every tensor by pointer and every variable axis as a u32: valid for the
/// task's shape, not a performance suggestion.
fn example_plan(task: &Task) -> String {
    let mut s = String::from("launches:\n  - entry: my_kernel\n");
    let first_var = task
        .axes
        .iter()
        .find(|a| a.value.is_none())
        .map_or("1".to_string(), |a| a.name.clone());
    let _ = writeln!(s, "    grid: [\"ceil_div({first_var}, 128)\", 1, 1]");
    s.push_str("    block: [128, 1, 1]\n    shared_mem: 0\n    params:\n");
    for t in task.inputs.iter().chain(&task.outputs) {
        let _ = writeln!(
            s,
            "      - {{name: {}_ptr, tensor: {}}}",
            t.name.to_lowercase(),
            t.name
        );
    }
    for a in task.axes.iter().filter(|a| a.value.is_none()) {
        let _ = writeln!(
            s,
            "      - {{name: {}, scalar: {}, type: u32}}",
            a.name.to_lowercase(),
            a.name
        );
    }
    if let Some(t) = task.inputs.iter().find(|t| t.shape.len() >= 2) {
        // A 2D view of the first matrix input: rows = product of the outer axes.
        let inner = &t.shape[t.shape.len() - 1];
        let outer = t.shape[..t.shape.len() - 1].join("*");
        let _ = writeln!(
            s,
            "      # a TMA descriptor of {name} seen as a 2D [{outer}, {inner}] matrix, 128-byte-wide boxes:\n      - {{name: tmap_{lname}, tensor_map: {{tensor: {name}, dims: [\"{inner}\", \"{outer}\"], strides: [\"{inner}*{size}\"], box: [{inner_box}, 64], swizzle: 128B}}}}",
            name = t.name,
            lname = t.name.to_lowercase(),
            size = t.dtype.size_bytes(),
            inner_box = 128 / t.dtype.size_bytes().max(1),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_are_one_to_three() {
        assert!(Variant::new(0).is_err());
        assert!(Variant::new(4).is_err());
        assert_eq!(Variant::new(2).map(Variant::number), Ok(2));
    }
}
