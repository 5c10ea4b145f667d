//! The harness's own GPU work, run in a worker process like a candidate's evaluation:
//! `ptxbench baseline` (the library baseline timed alone, its outputs checked against the fp32
//! reference), `ptxbench reference` (the fp32 reference's inputs and outputs written out) and
//! `ptxbench site-cost` (what the counted copy's increments cost a CTA).
//! No command opens the GPU in its own process: a library or driver fault ends the worker, the
//! command reports it, and the work runs under the same wall-clock limit, context and harness
//! loading as an evaluation.
//!
//! The parent sends a [`Work`] (the line a worker reads; an evaluation is
//! [`Work::Evaluate`]); for harness work the worker writes [`HARNESS_FILE`] (a
//! [`HarnessAnswer`] as JSON) and, for a reference, the tensors under [`REFERENCE_DIR`] in its
//! exchange folder, says `done` and exits. [`super::worker::run_harness`] is the parent's side.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::baseline::{BaselineRun, time_baseline};
use super::inputs::{GUARD, allocate, fill_inputs};
use super::reference::compute_reference;
use super::support::Support;
use super::{Protocol, Request};
use crate::cuda::driver::Gpu;
use crate::record::TaskObject;
use crate::task::{DType, Task, WorkloadKind};

/// What the harness's answer is written to in the exchange folder.
pub const HARNESS_FILE: &str = "harness.json";
/// The folder (in the exchange folder) a reference's files are written to.
pub const REFERENCE_DIR: &str = "reference";

/// What a worker is asked to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "work", rename_all = "snake_case")]
pub enum Work {
    /// Evaluate a candidate.
    Evaluate(Box<Request>),
    /// Time the library baseline alone on `workloads` (every performance workload when empty).
    Baseline {
        task: TaskObject,
        workloads: Vec<String>,
        seed: u64,
        protocol: Protocol,
    },
    /// Run the fp32 reference on one workload and write its inputs and outputs.
    Reference {
        task: TaskObject,
        workload: String,
        seed: u64,
    },
    /// Measure what the counted copy's increments cost a CTA ([`super::site_cost`]) for a
    /// kernel of the harness's own (a reference kernel: never a graded candidate's).
    SiteCost {
        task: TaskObject,
        arch: crate::arch::Arch,
        ptx: String,
        plan: String,
        workload: String,
        seed: u64,
        launches: u32,
    },
}

/// The same line as [`Work::Evaluate`], from a borrowed request.
#[derive(Serialize)]
#[serde(tag = "work", rename_all = "snake_case")]
pub(super) enum WorkRef<'a> {
    Evaluate(&'a Request),
}

/// A harness work's answer: the device it ran on and what it produced, or why it stopped.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HarnessAnswer {
    pub device: Option<String>,
    pub result: Result<Produced, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Produced {
    /// Each workload's baseline run, or why it stopped.
    Baseline(Vec<(String, Result<BaselineRun, String>)>),
    /// The reference's files, under [`REFERENCE_DIR`] (their names, the index last).
    Reference(Vec<String>),
    /// Each variant's cycles per CTA.
    SiteCost(Vec<super::site_cost::VariantCost>),
}

/// The worker's side: runs `work` (not an evaluation) on the opened GPU, writing files into
/// `dir`.
pub(super) fn run(
    work: &Work,
    ready: Result<(&Gpu, &Support), String>,
    dir: &Path,
) -> HarnessAnswer {
    let device = ready.as_ref().ok().map(|(g, _)| g.info.name.clone());
    let result = ready.and_then(|(gpu, support)| match work {
        Work::Evaluate(_) => Err("an evaluation is not harness work".into()),
        Work::Baseline {
            task,
            workloads,
            seed,
            protocol,
        } => baseline(gpu, support, task, workloads, *seed, protocol),
        Work::Reference {
            task,
            workload,
            seed,
        } => reference(
            gpu,
            support,
            task,
            workload,
            *seed,
            &dir.join(REFERENCE_DIR),
        ),
        Work::SiteCost {
            task,
            arch,
            ptx,
            plan,
            workload,
            seed,
            launches,
        } => {
            let task = validated(task)?;
            super::site_cost::measure(
                gpu, support, &task, *arch, ptx, plan, workload, *seed, *launches,
            )
            .map(Produced::SiteCost)
        }
    });
    HarnessAnswer { device, result }
}

fn validated(task: &TaskObject) -> Result<Task, String> {
    task.validate_exactly().map_err(|e| e.to_string())
}

fn baseline(
    gpu: &Gpu,
    support: &Support,
    task: &TaskObject,
    names: &[String],
    seed: u64,
    protocol: &Protocol,
) -> Result<Produced, String> {
    let task = validated(task)?;
    let workloads: Vec<_> = if names.is_empty() {
        task.workloads
            .iter()
            .filter(|w| w.kind == WorkloadKind::Performance)
            .collect()
    } else {
        names
            .iter()
            .map(|n| task.require_workload(n))
            .collect::<Result<_, _>>()?
    };
    Ok(Produced::Baseline(
        workloads
            .into_iter()
            .map(|w| {
                let run =
                    time_baseline(gpu, support, &task, w, seed, protocol).map_err(|s| s.0.message);
                (w.name.clone(), run)
            })
            .collect(),
    ))
}

fn reference(
    gpu: &Gpu,
    support: &Support,
    task: &TaskObject,
    workload: &str,
    seed: u64,
    out: &Path,
) -> Result<Produced, String> {
    let task = validated(task)?;
    let w = task.require_workload(workload)?;
    let env = task.bindings(w);
    let plan = crate::candidate::plan::LaunchPlan {
        launches: Vec::new(),
        workspaces: Vec::new(),
    };
    let fail = |s: super::verdict::Stop| s.0.message;
    let shown = |e: &dyn std::fmt::Display| e.to_string();
    let set = allocate(gpu, &task, &plan, &env).map_err(fail)?;
    fill_inputs(gpu, support, &task, w, &set, seed).map_err(fail)?;
    let reference = compute_reference(gpu, support, &task, &env, &set).map_err(fail)?;
    std::fs::create_dir_all(out).map_err(|e| format!("creating {}: {e}", out.display()))?;
    let mut files = Vec::new();
    let mut index = serde_json::Map::new();
    let mut write = |file: String, bytes: &[u8]| -> Result<String, String> {
        crate::destination::write_atomic(&out.join(&file), bytes).map_err(|e| shown(&e))?;
        files.push(file.clone());
        Ok(file)
    };
    for t in &task.inputs {
        let (buf, _, dtype, numel) = &set.tensors[&t.name];
        let bytes = usize::try_from(*numel).map_err(|e| shown(&e))? * 4;
        let f32buf = gpu.alloc(bytes).map_err(|e| shown(&e))?;
        support
            .to_f32(gpu, buf.ptr() + GUARD as u64, *dtype, f32buf.ptr(), *numel)
            .map_err(|e| shown(&e))?;
        let data = gpu.download(&f32buf, 0, bytes).map_err(|e| shown(&e))?;
        // Integer inputs (page tables, indptrs) are copied as they are: int32, not fp32.
        let kind = if *dtype == DType::I32 { "i32" } else { "f32" };
        let file = write(format!("input_{}.{kind}", t.name), &data)?;
        let shape = task.dims(t, &env).map_err(|e| shown(&e))?;
        index.insert(
            t.name.clone(),
            serde_json::json!({"file": file, "shape": shape, "role": "input", "dtype": kind}),
        );
    }
    for t in &task.outputs {
        let numel = task.numel(t, &env).map_err(|e| shown(&e))?;
        let bytes = usize::try_from(numel).map_err(|e| shown(&e))? * 4;
        let data = gpu
            .download(&reference.outputs[&t.name], 0, bytes)
            .map_err(|e| shown(&e))?;
        let file = write(format!("reference_{}.f32", t.name), &data)?;
        let shape = task.dims(t, &env).map_err(|e| shown(&e))?;
        index.insert(
            t.name.clone(),
            serde_json::json!({"file": file, "shape": shape, "role": "output", "dtype": "f32"}),
        );
    }
    let meta = serde_json::json!({
        "task": task.id.as_str(), "workload": w.name, "seed": seed, "op": task.op,
        "axes": env, "tensors": index, "device": gpu.info.name,
        "harness_compiler": support.compiler,
    });
    let meta = serde_json::to_vec_pretty(&meta).map_err(|e| shown(&e))?;
    write("index.json".into(), &meta)?;
    Ok(Produced::Reference(files))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line a worker reads: an evaluation sent from a borrowed request reads back as
    /// [`Work::Evaluate`], and harness work as itself (a worker never mistakes one for the other).
    #[test]
    fn work_lines_read_back_as_what_was_sent() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks");
        let suite = crate::task::Suite::load(&dir).expect("suite");
        let task = suite.get("gemm_n4096_k4096").expect("task");
        let object = TaskObject::from_suite(&suite, task).expect("object");
        let work = Work::Reference {
            task: object.clone(),
            workload: "M8192".into(),
            seed: 7,
        };
        let line = serde_json::to_string(&work).expect("serialises");
        assert!(line.contains(r#""work":"reference""#), "{line}");
        match serde_json::from_str::<Work>(&line).expect("reads back") {
            Work::Reference { workload, seed, .. } => {
                assert_eq!((workload.as_str(), seed), ("M8192", 7))
            }
            other => panic!("read back as {other:?}"),
        }
        let request = Request {
            task: object,
            arch: crate::arch::Arch::Sm90a,
            ptx: ".version 8.0".into(),
            plan: String::new(),
            seed: 1,
            protocol: Protocol::default(),
            workloads: Vec::new(),
            no_timing: true,
            gpu: 0,
            counted: None,
            no_counted_copy: None,
            cubin: None,
            compile_seconds: None,
        };
        let line = serde_json::to_string(&WorkRef::Evaluate(&request)).expect("serialises");
        match serde_json::from_str::<Work>(&line).expect("reads back") {
            Work::Evaluate(r) => assert_eq!(
                (r.seed, r.no_timing, r.ptx.as_str()),
                (1, true, ".version 8.0")
            ),
            other => panic!("read back as {other:?}"),
        }
        // A bare request (the line before harness work existed) is refused, not guessed at.
        let bare = serde_json::to_string(&request).expect("serialises");
        assert!(serde_json::from_str::<Work>(&bare).is_err());
    }
}
