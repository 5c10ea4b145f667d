//! Correctness trials: per workload, `trials` launch sequences on fresh inputs (seeded by the
//! base seed, the workload and the trial), then the counted copy's, each checked against the
//! fp32 reference ([`super::judge`]) under the one set of launch conditions
//! ([`super::conditions`]). A failed trial is a numerical verdict at stage `correctness`.

use std::collections::BTreeMap;

use super::conditions::Conditions;
use super::counting::{self, CountedModule};
use super::inputs::{allocate, fill_inputs, seed_for, snapshot_inputs};
use super::judge::{check_trial, describe_failure};
use super::launch::run_plan;
use super::reference::compute_reference;
use super::support::Support;
use super::verdict::Stop;
use super::{Outcome, Request, Trial, Verdict, WorkloadResult};
use crate::candidate::bind::ResolvedLaunch;
use crate::candidate::plan::LaunchPlan;
use crate::cuda::driver::{Gpu, Kernel};
use crate::expr::Bindings;
use crate::record::{DynamicCounts, Stage};
use crate::task::{Task, Workload};

/// Why a workload's trials stopped.
pub(super) enum Failed {
    /// A trial's outputs failed their check: the workload's trials so far belong in the record.
    Checked(Stop),
    /// The harness or a launch stopped before a check.
    Harness(Stop),
}

/// Counter readings before and after a counted trial's launches.
type Readings = (counting::Reading, counting::Reading);

/// What one correctness trial of a workload runs on.
pub(super) struct TrialOn<'a> {
    pub(super) gpu: &'a Gpu,
    pub(super) support: &'a Support,
    pub(super) scratch: &'a crate::cuda::driver::DeviceBuffer,
    pub(super) task: &'a Task,
    pub(super) plan: &'a LaunchPlan,
    pub(super) env: &'a Bindings,
    pub(super) workload: &'a Workload,
    pub(super) launches: &'a [ResolvedLaunch],
    pub(super) conditions: &'a Conditions,
}

impl TrialOn<'_> {
    /// The correctness trials of the workload: `trials` plain ones on fresh inputs, then the
    /// counted copy's (when there is one), each launch sequence checked. Returns the counted
    /// trial's counts (or why the copy could not run); `result` gets every trial. `lap` marks
    /// where the plain trials end.
    pub(super) fn workload(
        &self,
        kernels: &BTreeMap<String, Kernel>,
        counted: Option<&Result<CountedModule<'_>, String>>,
        module: &ptxbench_ptx::Module,
        req: &Request,
        result: &mut WorkloadResult,
        lap: &mut dyn FnMut(&str),
    ) -> Result<Option<DynamicCounts>, Failed> {
        let (gpu, task, w, launches) = (self.gpu, self.task, self.workload, self.launches);
        let trials = req.protocol.trials.max(1);
        let mut counts = None;
        // The trials of a workload allocate the same buffers: kept between them, so that no
        // trial waits on the driver's allocator (see `Gpu::reuse_buffers`); freed before
        // timing, which allocates its own.
        gpu.reuse_buffers(true);
        let ran = (|| {
            for trial in 0..=trials {
                // The last trial runs the counted copy (when there is one): its launches are
                // checked like every other trial's, after the workload's plain trials.
                let (kernels_now, counter) = match (trial == trials, &counted) {
                    (false, _) => (kernels, None),
                    (true, Some(Ok(cm))) => (&cm.kernels, Some(cm)),
                    (true, Some(Err(e))) => {
                        let mut d = counting::empty(&w.name);
                        d.error = Some(e.clone());
                        counts = Some(d);
                        break;
                    }
                    (true, None) => break,
                };
                if let Some(cm) = counter {
                    // The plain trials' time so far; the counted trial's is the evidence's.
                    lap(&format!("correctness {}", w.name));
                    cm.set_shapes(gpu, module, launches)
                        .map_err(Failed::Harness)?;
                }
                let seed = seed_for(req.seed, &w.name, trial);
                let (mut t, readings) = self
                    .run(kernels_now, counter, seed)
                    .map_err(Failed::Harness)?;
                t.counted = counter.is_some();
                let passed = t.passed;
                result.trials.push(t);
                if !passed {
                    let why = result
                        .trials
                        .last()
                        .map(describe_failure)
                        .unwrap_or_default();
                    let which = if counter.is_some() {
                        format!("trial {trial} (the counted copy)")
                    } else {
                        format!("trial {trial}")
                    };
                    return Err(Failed::Checked(Stop::new(Outcome::failed(
                        Verdict::Numerical,
                        Stage::Correctness,
                        format!("workload {} {which}: {why}", w.name),
                    ))));
                }
                if let (Some(cm), Some((before, after))) = (counter, readings) {
                    counts = Some(cm.weigh_workload(task, w, module, launches, &before, &after));
                }
            }
            Ok(())
        })();
        gpu.reuse_buffers(false);
        ran.map(|()| counts)
    }

    /// One trial: fresh inputs from `seed`, the fp32 reference, the launches of `kernels`
    /// (reading `counter` around them, when given), and every check.
    fn run(
        &self,
        kernels: &BTreeMap<String, Kernel>,
        counter: Option<&CountedModule<'_>>,
        seed: u64,
    ) -> Result<(Trial, Option<Readings>), Stop> {
        let TrialOn {
            gpu,
            support,
            scratch,
            task,
            plan,
            env,
            workload,
            launches,
            conditions: _,
        } = *self;
        let set = allocate(gpu, task, plan, env)?;
        fill_inputs(gpu, support, task, workload, &set, seed)?;
        let reference = compute_reference(gpu, support, task, env, &set)?;
        let snapshot = snapshot_inputs(gpu, task, &set)?;
        // The conditions a timed launch starts from: poisoned outputs, reset workspaces and a
        // flushed L2 (the salt from the trial's seed, so no two flushes write the same).
        self.conditions
            .before_launch(gpu, task, &set, seed as u32 ^ (seed >> 32) as u32)?;
        let before = counter.map(|c| c.read(gpu)).transpose()?;
        run_plan(gpu, kernels, launches, &set)?;
        gpu.sync()?;
        let after = counter.map(|c| c.read(gpu)).transpose()?;
        let t = check_trial(
            gpu, support, scratch, task, &set, &reference, &snapshot, seed,
        )?;
        Ok((t, before.zip(after)))
    }
}
