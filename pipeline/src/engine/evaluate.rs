//! One evaluation, in the worker process, step by step: JIT, launches by the plan
//! ([`super::launch`]), the correctness protocol ([`super::inputs`], [`super::reference`],
//! [`super::judge`]; the trials themselves in [`super::trials`]), timing ([`super::timing`]) and the dynamic evidence: the counted copy
//! runs as a checked trial of every workload ([`super::counting`]). Every failure of the candidate becomes an [`Outcome`] with its verdict; nothing
//! here panics on a bad candidate.
//!
//! Correctness protocol, per workload and trial: fresh inputs from the task's distributions
//! (seeded by base seed, workload and trial), derived inputs from the fp32 reference, every
//! tensor surrounded by guard bytes, outputs and poison-initialised workspaces filled with NaN
//! bytes (0xFF) before the launches, inputs snapshotted; after the launches: every output
//! compared with the fp32 reference by the task's metric (non-finite values and all-zero
//! outputs rejected), guards and inputs checked unchanged.

use crate::record::Stage;
use std::collections::BTreeMap;
use std::time::Instant;

use super::conditions::Conditions;
use super::counting::{self, CountedModule};
use super::support::Support;
use super::timing;
use super::trials::{Failed, TrialOn};
use super::verdict::Stop;
use super::{KernelInfo, Outcome, Request, Verdict, WorkloadResult};
use super::{SETUP_DRIVER, SETUP_HARNESS, SETUP_WARM_UP};
use crate::candidate::bind;
use crate::candidate::plan::LaunchPlan;
use crate::cuda::driver::{Gpu, Kernel};
use crate::task::{Task, Workload, WorkloadKind};

/// A worker's GPU, opened with the harness loaded before its request came (or why not).
pub struct Opened {
    ready: Result<(Gpu, Support), (Option<Gpu>, String)>,
    /// The opening's laps in seconds: the driver and context, the harness, the warm-up.
    laps: Vec<(String, f64)>,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opened")
            .field("ready", &self.ready.as_ref().map(|_| ()).map_err(|e| &e.1))
            .field("laps", &self.laps)
            .finish()
    }
}

impl Opened {
    /// Opens GPU `ordinal` and loads the harness (its PTX shared through `harness`, when
    /// given: see [`Support::load_sharing`]).
    pub fn open(ordinal: usize, harness: Option<&std::path::Path>) -> Opened {
        let mut clock = Clock::new();
        let opened = Gpu::open(ordinal);
        clock.lap(SETUP_DRIVER);
        let ready = match opened {
            Err(e) => Err((None, format!("no GPU: {e}"))),
            Ok(gpu) => match Support::load_sharing(&gpu, harness) {
                Ok(s) => {
                    clock.lap(SETUP_HARNESS);
                    s.warm_up(&gpu);
                    clock.lap(SETUP_WARM_UP);
                    Ok((gpu, s))
                }
                Err(e) => Err((Some(gpu), e.to_string())),
            },
        };
        Opened {
            ready,
            laps: clock.laps,
        }
    }

    /// The opened GPU and harness, or why they could not be opened.
    pub fn ready(&self) -> Result<(&Gpu, &Support), String> {
        self.ready
            .as_ref()
            .map(|(g, s)| (g, s))
            .map_err(|(_, why)| why.clone())
    }

    /// Whether the same worker process may open a fresh context for another candidate after
    /// this `outcome`: only when the candidate was judged by our checks (correct, wrong,
    /// below the floor, refused by the JIT) and its context still answers without an error.
    /// A launch that failed or faulted, a harness failure, or a context in an error state
    /// ends the process (the lane starts another).
    pub fn reusable(&self, outcome: &Outcome) -> bool {
        let judged = matches!(
            outcome.verdict,
            Verdict::Correct | Verdict::Numerical | Verdict::BelowFloor | Verdict::Compilation
        );
        judged && matches!(&self.ready, Ok((gpu, _)) if gpu.context_healthy())
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        // The harness (its module, cuBLASLt plans and their buffers) goes before the context
        // it lives in.
        if let Ok((gpu, support)) = std::mem::replace(&mut self.ready, Err((None, String::new()))) {
            drop(support);
            drop(gpu);
        }
    }
}

/// Runs the evaluation on a GPU opened before the request came; `gate` is called once before
/// the first timed workload and returns when timing may start. The GPU stays open: a worker
/// reports the outcome first and closes the context (a long teardown) as it exits.
pub fn evaluate_opened(req: &Request, opened: &Opened, gate: &mut dyn FnMut()) -> Outcome {
    let mut clock = Clock::new();
    let task = match req.task.validate_exactly() {
        Ok(t) => t,
        Err(e) => return Outcome::failed(Verdict::Other, Stage::Static, e.to_string()),
    };
    let task = &task;
    let module = match ptxbench_ptx::parse(&req.ptx) {
        Ok(m) => m,
        Err(e) => {
            return Outcome::failed(
                Verdict::Compilation,
                Stage::Static,
                format!("PTX does not parse: {e}"),
            );
        }
    };
    let plan = match LaunchPlan::parse(&req.plan, task) {
        Ok(p) => p,
        Err(e) => return Outcome::failed(Verdict::Runtime, Stage::Launch, e.to_string()),
    };
    let problems = bind::check_module(&plan, &module, req.arch);
    if !problems.is_empty() {
        let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
        return Outcome::failed(Verdict::Runtime, Stage::Launch, text.join("\n"));
    }
    let (gpu, support) = match &opened.ready {
        Ok((gpu, support)) => (gpu, support),
        Err((gpu, why)) => {
            let mut outcome = Outcome::failed(Verdict::Other, Stage::Worker, why.clone());
            outcome.device = gpu.as_ref().map(|g| g.info.clone());
            return outcome;
        }
    };
    let mut outcome = Outcome::failed(Verdict::Correct, Stage::Done, "");
    outcome.device = Some(gpu.info.clone());
    outcome.harness_compiler = support.compiler.clone();
    // The GPU and the harness were opened before the request: their time is reported as it
    // was spent, and this evaluation's clock starts now.
    clock.laps.extend(opened.laps.iter().cloned());
    clock.lap("parse");
    match run(
        req,
        task,
        &plan,
        &module,
        gpu,
        support,
        &mut outcome,
        &mut clock,
        gate,
    ) {
        Ok(()) => {}
        Err(Stop(stop)) => {
            outcome.verdict = stop.verdict;
            outcome.stage = stop.stage;
            outcome.message = stop.message;
        }
    }
    outcome.seconds = clock.laps;
    outcome
}

struct Clock {
    start: Instant,
    laps: Vec<(String, f64)>,
}

impl Clock {
    fn new() -> Clock {
        Clock {
            start: Instant::now(),
            laps: Vec::new(),
        }
    }
    fn lap(&mut self, name: &str) {
        self.laps
            .push((name.to_string(), self.start.elapsed().as_secs_f64()));
        self.start = Instant::now();
    }
}

#[allow(clippy::too_many_arguments)]
fn run(
    req: &Request,
    task: &Task,
    plan: &LaunchPlan,
    module: &ptxbench_ptx::Module,
    gpu: &Gpu,
    support: &Support,
    outcome: &mut Outcome,
    clock: &mut Clock,
    gate: &mut dyn FnMut(),
) -> Result<(), Stop> {
    let compiled = match &req.cubin {
        Some(c) => gpu.compile_with(&req.ptx, Some(c)),
        None => gpu.compile(&req.ptx, Some(req.arch)),
    }
    .map_err(|e| {
        Stop::new(Outcome::failed(
            Verdict::Compilation,
            Stage::Jit,
            format!("the PTX did not compile: {}\n{}", e.error, e.log),
        ))
    })?;
    outcome.jit_log = format!("compiled by {}\n{}", compiled.compiler, compiled.log);
    let cu_module = compiled.module;
    outcome.cubin = compiled.cubin;
    let mut kernels: BTreeMap<String, Kernel> = BTreeMap::new();
    for l in &plan.launches {
        if kernels.contains_key(&l.entry) {
            continue;
        }
        let k = gpu.kernel(&cu_module, &l.entry).map_err(|e| {
            Stop::new(Outcome::failed(
                Verdict::Compilation,
                Stage::Load,
                e.to_string(),
            ))
        })?;
        let attributes = gpu.attributes(k)?;
        outcome.kernels.push(KernelInfo {
            entry: l.entry.clone(),
            attributes,
        });
        kernels.insert(l.entry.clone(), k);
    }
    clock.lap("jit");
    // The counted copy: compiled once, run as a checked trial of every workload.
    let counted = req
        .counted
        .as_ref()
        .map(|c| CountedModule::load(gpu, c, plan.launches.iter().map(|l| l.entry.as_str()), req));
    if counted.is_some() {
        clock.lap("jit counted copy");
    }
    let mut per_workload = Vec::new();
    let scratch = gpu.alloc(256)?;
    let conditions = Conditions::new(gpu)?;
    // A selection that names a workload the task lacks, or that selects none, runs nothing:
    // never `correct` (callers refuse such selections first; this holds whatever the caller).
    if let Some(why) = task.unknown_workload(&req.workloads) {
        return Err(Stop::new(Outcome::failed(
            Verdict::Other,
            Stage::Static,
            format!("workloads: {why}"),
        )));
    }
    let workloads: Vec<&Workload> = task
        .workloads
        .iter()
        .filter(|w| req.workloads.is_empty() || req.workloads.contains(&w.name))
        .collect();
    if workloads.is_empty() {
        return Err(Stop::new(Outcome::failed(
            Verdict::Other,
            Stage::Static,
            format!("no workload of {} was selected: nothing would run", task.id),
        )));
    }
    let mut baseline_info = None;
    let mut warmed = false;
    let mut gated = false;
    for w in workloads {
        let launches = bind::resolve(plan, module, task, w, req.arch).map_err(|p| {
            let text: Vec<String> = p.iter().map(ToString::to_string).collect();
            Stop::new(Outcome::failed(
                Verdict::Runtime,
                Stage::Launch,
                text.join("\n"),
            ))
        })?;
        let env = task.bindings(w);
        let mut result = WorkloadResult {
            workload: w.name.clone(),
            performance: w.kind == WorkloadKind::Performance,
            trials: Vec::new(),
            timing: None,
        };
        let on = TrialOn {
            gpu,
            support,
            scratch: &scratch,
            task,
            plan,
            env: &env,
            workload: w,
            launches: &launches,
            conditions: &conditions,
        };
        // The trials of a workload allocate the same buffers: kept between them, so that no
        // trial waits on the driver's allocator (see `Gpu::reuse_buffers`); freed before
        // timing, which allocates its own.
        let counts = match on.workload(
            &kernels,
            counted.as_ref(),
            module,
            req,
            &mut result,
            &mut |l| clock.lap(l),
        ) {
            Ok(counts) => counts,
            Err(Failed::Checked(stop)) => {
                outcome.workloads.push(result);
                return Err(stop);
            }
            Err(Failed::Harness(stop)) => return Err(stop),
        };
        if let Some(d) = counts {
            per_workload.push((result.performance, d));
        }
        let counted_trial = result.trials.last().is_some_and(|t| t.counted);
        clock.lap(&format!(
            "{} {}",
            if counted_trial {
                "evidence"
            } else {
                "correctness"
            },
            w.name
        ));
        if w.kind == WorkloadKind::Performance && !req.no_timing {
            if !gated {
                gate();
                gated = true;
                clock.lap("waiting to time");
            }
            let (timing, info) = timing::time_workload(
                gpu,
                support,
                &scratch,
                task,
                plan,
                w,
                &env,
                &kernels,
                &launches,
                req,
                &mut warmed,
            )?;
            if info.is_some() {
                baseline_info = info;
            }
            let mut timing = timing;
            // The GPU's counters on timed launches against this workload's counted copy.
            if let Some(check) = timing.hardware.as_mut()
                && let Some((_, counted)) = per_workload
                    .iter()
                    .rev()
                    .find(|(_, d)| d.workload == w.name)
            {
                check.compare_with(counted, task.flops_of(w).unwrap_or(0.0));
            }
            let recheck = timing.recheck_passed;
            let below_floor = timing
                .floor
                .as_ref()
                .filter(|f| f.is_beaten_by(timing.candidate.median_ms))
                .map(|f| {
                    format!(
                        "workload {}: timed at {:.4} ms, below the {} speed of light of {:.4} ms ({}); work was skipped or the measurement fooled, so it earns no speedup",
                        w.name,
                        timing.candidate.median_ms,
                        f.gpu_model,
                        f.floor_ms,
                        if f.compute_ms >= f.memory_ms { "FLOPs at the tensor-core peak" } else { "compulsory bytes at the DRAM bandwidth" }
                    )
                });
            result.timing = Some(timing);
            if let Some(why) = below_floor {
                outcome.workloads.push(result);
                return Err(Stop::new(Outcome::failed(
                    Verdict::BelowFloor,
                    Stage::Timing,
                    why,
                )));
            }
            clock.lap(&format!("timing {}", w.name));
            if !recheck {
                outcome.workloads.push(result);
                return Err(Stop::new(Outcome::failed(
                    Verdict::Numerical,
                    Stage::Timing,
                    format!(
                        "workload {}: the output of a timed launch does not match the reference (work skipped or cached across launches?)",
                        w.name
                    ),
                )));
            }
        }
        outcome.workloads.push(result);
    }
    outcome.baseline = baseline_info;
    outcome.dynamic = counting::graded(&per_workload);
    if per_workload.len() > 1 {
        outcome.dynamic_workloads = per_workload.into_iter().map(|(_, d)| d).collect();
    }
    outcome.min_speedup = outcome
        .workloads
        .iter()
        .filter_map(|w| w.timing.as_ref().and_then(|t| t.speedup))
        .min_by(f64::total_cmp);
    outcome.verdict = Verdict::Correct;
    outcome.stage = Stage::Done;
    Ok(())
}
