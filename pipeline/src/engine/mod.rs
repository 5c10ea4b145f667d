//! The evaluation engine: one candidate on one task on one GPU.
//!
//! [`worker`] runs each evaluation in its own process with a wall-clock limit, so a hang, an
//! illegal address or a trap ends that process only and becomes a verdict; [`evaluate`] is
//! what runs inside it: JIT, launch by the plan, the correctness protocol against fp32
//! references ([`support`]), and timing against the library baseline ([`timing`]).

pub mod baseline;
pub mod between_runs;
pub mod composed;
pub mod conditions;
pub mod counting;
pub mod estimate;
pub mod evaluate;
pub mod evaluator;
pub mod floor;
pub mod harness_work;
#[cfg(test)]
mod host_reference;
pub mod inputs;
pub mod judge;
pub mod key;
pub mod launch;
pub mod reference;
pub mod site_cost;
pub mod stages;
pub mod support;
pub mod target_evidence;
pub mod timing;
mod trials;
pub mod verdict;
pub mod worker;

use serde::{Deserialize, Serialize};

use crate::arch::Arch;
use crate::record::TaskObject;
pub use crate::record::outcome::{
    BaselineInfo, ClockSamples, Comparison, CountedSite, Direction, DynamicCounts, Floor,
    KernelInfo, Outcome, OutputCheck, PeakClass, Protocol, SiteCount, Stats, StopReason, Timing,
    Trial, Verdict, WorkloadResult,
};

/// The revision of how the engine turns a candidate into a record: changed with any fix to the
/// protocol, so that a cache of answers (the service's, a run's index) never answers with a
/// record made before the fix.
pub const ENGINE_REVISION: &str = "2026-12-05.composed-gdn";

/// Laps of an outcome's clock (`Outcome::seconds`) taken outside the worker: ptxas on a CPU
/// thread before the evaluation reached the GPU; the GPU's thread waiting for this evaluation
/// to be prepared (the GPU idle); and the GPU's thread in the lane beyond the worker's own laps
/// (sending the request, reading the result, starting the next spares).
pub const COMPILE_AHEAD: &str = "compile ahead";
/// The start of the worker's laps for opening the GPU (a spare's, before its request): the
/// driver and context, the harness loaded, the warm-up (cuBLASLt's first GEMM).
pub const SETUP: &str = "setup";
pub const SETUP_DRIVER: &str = "setup driver";
pub const SETUP_HARNESS: &str = "setup harness";
pub const SETUP_WARM_UP: &str = "setup warm-up";
pub const GPU_IDLE: &str = "GPU idle";
pub const HAND_OVER: &str = "hand-over";

/// What a worker is asked to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    /// The task's definition, with the task hash the parent validated it to; the worker
    /// validates it again and refuses a definition that validates to another task.
    pub task: TaskObject,
    pub arch: Arch,
    /// The PTX to run (already extracted, compiled from CUDA C++ if needed, and statically
    /// checked) and the launch plan text.
    pub ptx: String,
    pub plan: String,
    /// Base seed; every trial's seed derives from it, the workload and the trial number.
    pub seed: u64,
    pub protocol: Protocol,
    /// Evaluate only these workloads (all when empty).
    #[serde(default)]
    pub workloads: Vec<String>,
    /// Skip timing (correctness only).
    #[serde(default)]
    pub no_timing: bool,
    pub gpu: usize,
    /// A copy of the PTX with counters spliced in before each target instruction, run once
    /// (untimed) to prove which target families executed.
    #[serde(default)]
    pub counted: Option<CountedPtx>,
    /// Why there is no counted copy, when the task asks for one and it could not be made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_counted_copy: Option<String>,
    /// The cubin of `ptx`, made by ptxas on the CPU before the worker started (see
    /// [`Request::compile_ahead`]); without it the worker compiles the PTX itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cubin: Option<crate::cuda::driver::Cubin>,
    /// Seconds [`Request::compile_ahead`] took (the parent's own figure: never sent to a
    /// worker). [`crate::engine::evaluator::Evaluator::on_gpu`] reports it as the outcome's
    /// first lap.
    #[serde(skip)]
    pub compile_seconds: Option<f64>,
}

impl Request {
    /// Compiles the PTX and the counted copy with ptxas (two threads, no GPU), so that the
    /// worker only loads them and the GPU never waits for a compiler. A rejection is left for
    /// the worker to meet and report as before (its verdict and message do not change).
    pub fn compile_ahead(&mut self) {
        if self.cubin.is_some() {
            return;
        }
        let start = std::time::Instant::now();
        let arch = self.arch;
        let (plain, counted) = std::thread::scope(|s| {
            let counted = self
                .counted
                .as_ref()
                .filter(|c| c.cubin.is_none())
                .map(|c| s.spawn(move || crate::cuda::driver::whole_program(&c.ptx, arch)));
            let plain = crate::cuda::driver::whole_program(&self.ptx, arch);
            (plain, counted.map(|h| h.join()))
        });
        self.cubin = plain.ok();
        if let (Some(c), Some(Ok(Ok(cubin)))) = (self.counted.as_mut(), counted) {
            c.cubin = Some(cubin);
        }
        self.compile_seconds = Some(start.elapsed().as_secs_f64());
    }
}

/// The instrumented copy of a candidate's PTX: `symbol` is a `.global .u64` array with one
/// counter per entry of `sites`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CountedPtx {
    pub ptx: String,
    pub symbol: String,
    pub families: Vec<String>,
    pub sites: Vec<CountedSite>,
    /// The other-arithmetic counters (tasks that require an MMA family): the FLOPs done
    /// outside the target families, per function.
    #[serde(default)]
    pub work: Option<crate::evidence::work::WorkCounters>,
    /// The in-bounds bytes of its tile-mode TMA loads, where it has any.
    #[serde(default)]
    pub tma_bytes: Option<crate::evidence::in_bounds::TmaBytes>,
    /// Its cubin, made ahead like [`Request::cubin`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cubin: Option<crate::cuda::driver::Cubin>,
}
