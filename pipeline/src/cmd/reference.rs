//! `ptxbench reference --task ID --workload W`: runs the harness's fp32 reference on the GPU
//! and writes its inputs and outputs as raw little-endian fp32 files plus a JSON index, so an
//! independent implementation (pipeline/scripts/crosscheck_references.py, PyTorch in float64)
//! can check it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::cuda::driver::Gpu;
use crate::engine::inputs::{GUARD, allocate, fill_inputs};
use crate::engine::reference::compute_reference;
use crate::engine::support::Support;

#[derive(Debug, Args)]
pub struct ReferenceArgs {
    #[arg(long)]
    pub task: String,
    #[arg(long)]
    pub workload: String,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output folder (created).
    #[arg(short, long)]
    pub out: PathBuf,
    #[arg(long, default_value_t = 0)]
    pub gpu: usize,
}

pub fn run(a: ReferenceArgs, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let suite = super::load_suite(dir)?;
    let task = suite
        .get(&a.task)
        .with_context(|| format!("no task `{}`", a.task))?;
    let w = task
        .workload(&a.workload)
        .with_context(|| format!("task {} has no workload `{}`", a.task, a.workload))?;
    let env = task.bindings(w);
    let gpu = Gpu::open(a.gpu)?;
    let support = Support::load(&gpu)?;
    let plan = crate::candidate::plan::LaunchPlan {
        launches: Vec::new(),
        workspaces: Vec::new(),
    };
    let fail = |s: crate::engine::verdict::Stop| anyhow::anyhow!("{}", s.0.message);
    let set = allocate(&gpu, task, &plan, &env).map_err(fail)?;
    fill_inputs(&gpu, &support, task, w, &set, a.seed).map_err(fail)?;
    let reference = compute_reference(&gpu, &support, task, &env, &set).map_err(fail)?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let mut index = serde_json::Map::new();
    for t in &task.inputs {
        let (buf, _, dtype, numel) = &set.tensors[&t.name];
        let f32buf = gpu.alloc(*numel as usize * 4)?;
        support.to_f32(&gpu, buf.ptr() + GUARD as u64, *dtype, f32buf.ptr(), *numel)?;
        let bytes = gpu.download(&f32buf, 0, *numel as usize * 4)?;
        let file = format!("input_{}.f32", t.name);
        crate::destination::write_atomic(&a.out.join(&file), &bytes)?;
        index.insert(
            t.name.clone(),
            serde_json::json!({"file": file, "shape": task.dims(t, &env)?, "role": "input"}),
        );
    }
    for t in &task.outputs {
        let buf = &reference.outputs[&t.name];
        let numel = task.numel(t, &env)?;
        let bytes = gpu.download(buf, 0, numel as usize * 4)?;
        let file = format!("reference_{}.f32", t.name);
        crate::destination::write_atomic(&a.out.join(&file), &bytes)?;
        index.insert(
            t.name.clone(),
            serde_json::json!({"file": file, "shape": task.dims(t, &env)?, "role": "output"}),
        );
    }
    let meta = serde_json::json!({
        "task": task.id.as_str(), "workload": w.name, "seed": a.seed, "op": task.op,
        "axes": env, "tensors": index, "device": gpu.info.name, "harness_compiler": support.compiler,
    });
    crate::destination::write_atomic(
        &a.out.join("index.json"),
        &serde_json::to_vec_pretty(&meta)?,
    )?;
    println!("wrote {}", a.out.display());
    Ok(ExitCode::SUCCESS)
}
