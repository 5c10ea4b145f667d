//! The evaluation engine: one candidate on one task on one GPU.
//!
//! [`worker`] runs each evaluation in its own process with a wall-clock limit, so a hang, an
//! illegal address or a trap ends that process only and becomes a verdict; [`evaluate`] is
//! what runs inside it: JIT, launch by the plan, the correctness protocol against fp32
//! references ([`support`]), and timing against the library baseline ([`timing`]).

pub mod baseline;
pub mod counting;
pub mod evaluate;
pub mod inputs;
pub mod judge;
pub mod launch;
pub mod reference;
pub mod stats;
pub mod support;
pub mod timing;
pub mod verdict;
pub mod worker;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::arch::Arch;
use crate::cuda::driver::{DeviceInfo, KernelAttributes};
pub use stats::Stats;
pub use support::Comparison;

/// The paper's verdict classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No kernel or plan could be taken from the response.
    Extraction,
    /// The code did not compile (NVRTC, PTX parse, JIT) or was refused as unsafe.
    Compilation,
    /// The plan could not be launched, or a launch faulted (illegal address, trap, ...).
    Runtime,
    /// The evaluation did not finish within its wall-clock limit (a hang).
    Timeout,
    /// It ran, but an output was wrong, unwritten, non-finite, or it wrote where it must not.
    Numerical,
    Correct,
    /// The harness itself failed (reported, never blamed on the candidate).
    Other,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Extraction => "extraction",
            Verdict::Compilation => "compilation",
            Verdict::Runtime => "runtime",
            Verdict::Timeout => "timeout",
            Verdict::Numerical => "numerical",
            Verdict::Correct => "correct",
            Verdict::Other => "other",
        }
    }
}

/// How many trials and timed launches an evaluation makes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Protocol {
    /// Correctness trials per workload, each with fresh inputs.
    pub trials: u32,
    /// Untimed launches before timing.
    pub warmup: u32,
    /// Timed launches of the candidate (and as many of the baseline, interleaved).
    pub iterations: u32,
    /// Input/output sets rotated through while timing.
    pub rotations: u32,
    /// Stop timing a workload early once this much GPU time was spent on it.
    pub max_timing_seconds: f64,
}

impl Default for Protocol {
    fn default() -> Self {
        Protocol {
            trials: 2,
            warmup: 5,
            iterations: 40,
            rotations: 2,
            max_timing_seconds: 4.0,
        }
    }
}

/// What a worker is asked to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    /// The task-suite folder and the task id.
    pub suite_dir: PathBuf,
    pub task: String,
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
}

/// The instrumented copy of a candidate's PTX: `symbol` is a `.global .u64` array with one
/// counter per entry of `families`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CountedPtx {
    pub ptx: String,
    pub symbol: String,
    pub families: Vec<String>,
}

/// Executed counts of the target families, from one launch sequence of the counted PTX.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DynamicCounts {
    /// "ptx-splice": counters spliced into a copy of the PTX.
    pub method: String,
    pub workload: String,
    /// Family name -> times a thread issued one of its instructions.
    pub counts: Vec<(String, u64)>,
    /// Set when the counted copy could not run (the candidate itself is unaffected).
    pub error: Option<String>,
}

/// One output of one trial against its reference.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OutputCheck {
    pub output: String,
    pub tolerance: String,
    pub comparison: Comparison,
    pub passed: bool,
    /// Why it failed, in words.
    pub failure: Option<String>,
}

/// One correctness trial.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Trial {
    pub seed: u64,
    pub outputs: Vec<OutputCheck>,
    /// Bytes changed in the guard regions around every tensor (must be 0).
    pub guard_bytes_changed: u64,
    /// Bytes of the inputs that differ after the launches (must be 0).
    pub input_bytes_changed: u64,
    pub passed: bool,
}

/// Timing of one performance workload.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Timing {
    pub candidate: Stats,
    pub baseline: Option<Stats>,
    /// The baseline's own outputs against the fp32 reference (once per workload, on fresh
    /// poisoned buffers): a wrong baseline shows here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub baseline_check: Vec<OutputCheck>,
    /// Baseline median over candidate median.
    pub speedup: Option<f64>,
    pub candidate_tflops: f64,
    pub baseline_tflops: Option<f64>,
    /// Whether the outputs of the last timed launches matched the reference.
    pub recheck_passed: bool,
    /// Device state (NVML) before and after the timed launches, where NVML is available.
    #[serde(default)]
    pub state_before: Option<crate::cuda::nvml::GpuState>,
    #[serde(default)]
    pub state_after: Option<crate::cuda::nvml::GpuState>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorkloadResult {
    pub workload: String,
    pub performance: bool,
    pub trials: Vec<Trial>,
    pub timing: Option<Timing>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KernelInfo {
    pub entry: String,
    pub attributes: KernelAttributes,
}

/// The library a candidate was timed against.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BaselineInfo {
    pub provider: String,
    pub version: String,
    pub library: String,
    /// What the baseline is, in words, for records and the site (e.g. "cuDNN 9.14 SDPA
    /// forward with LSE (native graph API)").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The engine the library chose (cuDNN: global engine index, heuristic mode, plan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
}

/// Everything one evaluation found.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Outcome {
    pub verdict: Verdict,
    /// Where it stopped: static, jit, load, launch, correctness, timing, worker, done.
    pub stage: String,
    pub message: String,
    pub jit_log: String,
    pub kernels: Vec<KernelInfo>,
    pub workloads: Vec<WorkloadResult>,
    pub device: Option<DeviceInfo>,
    pub baseline: Option<BaselineInfo>,
    pub harness_compiler: String,
    /// The smallest speedup over the performance workloads (the paper's headline metric).
    pub min_speedup: Option<f64>,
    /// Seconds the worker spent, by stage.
    pub seconds: Vec<(String, f64)>,
    /// Target families executed, from the counted PTX (absent when none was asked for).
    #[serde(default)]
    pub dynamic: Option<DynamicCounts>,
    /// Static SASS plus dynamic counts per required family (filled by the parent process).
    #[serde(default)]
    pub evidence: Option<crate::evidence::TargetEvidence>,
    #[serde(skip)]
    pub cubin: Option<Vec<u8>>,
}

impl Outcome {
    pub fn failed(verdict: Verdict, stage: &str, message: impl Into<String>) -> Outcome {
        Outcome {
            verdict,
            stage: stage.into(),
            message: message.into(),
            jit_log: String::new(),
            kernels: Vec::new(),
            workloads: Vec::new(),
            device: None,
            baseline: None,
            harness_compiler: String::new(),
            min_speedup: None,
            seconds: Vec::new(),
            dynamic: None,
            evidence: None,
            cubin: None,
        }
    }
}
