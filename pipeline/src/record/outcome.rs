//! What one evaluation found, as the engine emits it and a record stores it: the verdict, the
//! protocol it ran under, per-workload trials and timings, kernels, device and baseline.

use serde::{Deserialize, Serialize};

use super::device::{DeviceInfo, GpuState, KernelAttributes};
pub use crate::record::stats::Stats;

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
    /// Correct, but timed faster than the hardware allows (see `Floor`): work was skipped or
    /// the measurement fooled; it earns no speedup.
    BelowFloor,
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
            Verdict::BelowFloor => "below_floor",
            Verdict::Other => "other",
        }
    }
}

/// How many trials and timed launches an evaluation makes, and when timing stops.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Protocol {
    /// Correctness trials per workload, each with fresh inputs.
    pub trials: u32,
    /// Untimed candidate + baseline pairs before timing (at least; see `warmup_ms`).
    pub warmup: u32,
    /// Before an evaluation's first timed workload, warm-up goes on for at least this many
    /// milliseconds of wall time with the GPU busy, so clocks are steady.
    #[serde(default = "default_warmup_ms")]
    pub warmup_ms: f64,
    /// At most this many timed pairs (candidate, then baseline, on the same fresh inputs).
    pub iterations: u32,
    /// At least this many timed pairs before the interval may end timing.
    #[serde(default = "default_min_iterations")]
    pub min_iterations: u32,
    /// Timing stops once the speedup's 95% interval has this half-width relative to the
    /// estimate (0.01 = 1%).
    #[serde(default = "default_target_half_width")]
    pub target_half_width: f64,
    /// Or once this much GPU time was spent on the workload (after at least 3 pairs).
    pub max_timing_seconds: f64,
    /// Timed launches whose outputs are checked against their own inputs' reference, chosen
    /// at random and never announced.
    #[serde(default = "default_checked_launches")]
    pub checked_launches: u32,
    /// Only in records of the first protocol (`ptxbench.record/1`): the fixed input sets it
    /// rotated through, unchanged between timed launches, with the last launch of each
    /// rechecked. Never set by the current engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotations: Option<u32>,
}

fn default_warmup_ms() -> f64 {
    200.0
}
fn default_min_iterations() -> u32 {
    20
}
fn default_target_half_width() -> f64 {
    0.01
}
fn default_checked_launches() -> u32 {
    3
}

impl Default for Protocol {
    fn default() -> Self {
        Protocol {
            trials: 2,
            warmup: 2,
            warmup_ms: default_warmup_ms(),
            iterations: 400,
            min_iterations: default_min_iterations(),
            target_half_width: default_target_half_width(),
            max_timing_seconds: 2.0,
            checked_launches: default_checked_launches(),
            rotations: None,
        }
    }
}

impl Protocol {
    /// The protocol in words, for pages and logs.
    pub fn describe(&self) -> String {
        if let Some(rotations) = self.rotations {
            return format!(
                "first protocol: {} correctness trials per workload (fresh seeded inputs each); {} warm-up launches, then up to {} timed launches of the candidate interleaved with as many of the library, L2 flushed before each, {rotations} fixed input/output sets rotated (inputs unchanged between timed launches; the last launch of each set rechecked), at most {} s of timing per workload",
                self.trials, self.warmup, self.iterations, self.max_timing_seconds
            );
        }
        format!(
            "{} correctness trials per workload (fresh seeded inputs each); a warm-up of at least {} candidate/library pairs and {} ms before the first timed workload; then timed pairs, the candidate and the library on the same inputs, redrawn from a fresh seed before every pair, outputs poisoned and L2 flushed before each launch; {} timed launches, chosen at random, checked against the reference for their own inputs; timing stops when the speedup's 95% interval is within {}% of the estimate (after at least {} pairs), after {} s of GPU time, or after {} pairs",
            self.trials,
            self.warmup,
            self.warmup_ms,
            self.checked_launches,
            self.target_half_width * 100.0,
            self.min_iterations,
            self.max_timing_seconds,
            self.iterations
        )
    }
}

/// Why timing a workload stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The interval's half-width reached the protocol's target.
    Converged,
    /// The workload's time budget was spent first.
    Budget,
    /// The most pairs the protocol allows were timed.
    MaxIterations,
}

/// Which tensor-core peak a task's floor uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeakClass {
    /// bf16 / f16 inputs, fp32 accumulation.
    Half,
    /// fp8 (e4m3 / e5m2) inputs.
    Fp8,
}

/// A workload's speed of light on one GPU (see `engine::floor`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Floor {
    pub gpu_model: String,
    pub peak_class: PeakClass,
    /// The compute peak used (datasheet, scaled up to the device's maximum clock if higher).
    pub peak_tflops: f64,
    pub dram_tb_per_s: f64,
    /// FLOPs / peak.
    pub compute_ms: f64,
    /// Compulsory bytes / bandwidth.
    pub memory_ms: f64,
    /// The larger of the two.
    pub floor_ms: f64,
}

/// SM clocks and clock-event reasons sampled (NVML) during the timed launches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockSamples {
    pub samples: u32,
    pub sm_mhz_min: u32,
    pub sm_mhz_max: u32,
    /// Every NVML clock-event reason bit seen in any sample.
    pub reasons_seen: u64,
    /// The SM clock varied by more than 1%, or a throttling reason (power, thermal,
    /// slowdown) was seen.
    pub moved: bool,
}

/// Which way a bulk tensor copy moves data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Global to shared memory.
    Load,
    /// Shared to global memory (plain or reducing).
    Store,
}

/// A counted instruction site of the PTX (see `evidence::sites`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountedSite {
    pub family: String,
    pub opcode: String,
    /// The function (kernel or device function) the site is in.
    pub function: String,
    /// PTX line of the site in the original.
    pub line: u32,
    /// Threads that take part in one execution (wgmma: a warpgroup of 128; others 1): the
    /// counters count threads.
    pub threads_per_execution: u64,
    /// FLOPs of one execution (wgmma: 2 * M * N * K of its shape).
    pub flops_per_execution: Option<f64>,
    pub direction: Option<Direction>,
    /// The kernel parameter holding the site's tensor map, when it can be traced.
    pub tensor_map_param: Option<String>,
}

/// One site's executed count and the work it stands for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SiteCount {
    #[serde(flatten)]
    pub site: CountedSite,
    /// Threads that reached it with a true guard.
    pub count: u64,
    /// Bytes one execution moves (a TMA copy: its tensor map's box), where known.
    pub bytes_per_execution: Option<u64>,
    /// A TMA load's bytes inside its tensor, summed over its executions at the coordinates
    /// they used (what the TMA byte share counts), where counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_bounds_bytes: Option<u64>,
}

/// Executed counts of the target instructions, per site, from one launch sequence of the
/// counted PTX, and the work they did as shares of the task's.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DynamicCounts {
    /// "ptx-splice": counters spliced into a copy of the PTX.
    pub method: String,
    pub workload: String,
    /// Family name -> times a thread issued one of its instructions (sum over its sites).
    pub counts: Vec<(String, u64)>,
    #[serde(default)]
    pub sites: Vec<SiteCount>,
    /// FLOPs the target MMA sites executed (wgmma: executions x shape).
    #[serde(default)]
    pub mma_flops: Option<f64>,
    /// `mma_flops` over the task's FLOPs for the counted workload.
    #[serde(default)]
    pub mma_flop_share: Option<f64>,
    /// Bytes TMA loads moved from global memory (executions x box bytes).
    #[serde(default)]
    pub tma_load_bytes: Option<f64>,
    /// `tma_load_bytes` over the task's input bytes for the counted workload.
    #[serde(default)]
    pub tma_byte_share: Option<f64>,
    /// FLOPs of the arithmetic outside the target families (floating-point FMA/add/mul,
    /// `mma.sync`, ...; see `evidence::work`), counted where the task requires an MMA family.
    /// Absent in records made before it was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_flops: Option<f64>,
    /// `other_flops` over the task's FLOPs for the counted workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_flop_share: Option<f64>,
    /// What could not be weighed, in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Set when the counted copy could not run (the candidate itself is unaffected).
    pub error: Option<String>,
}

/// Where an evaluation stopped (`done` when it ran to the end).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Not recorded (`ptxbench.record/1` outcomes read through the adapter).
    #[default]
    #[serde(rename = "")]
    Unrecorded,
    /// The static check on the CPU (extraction, compilation, screening, the plan).
    Static,
    /// The harness's own preparation (sizes, allocations): never the candidate's fault.
    Setup,
    /// Compiling the PTX for the GPU.
    Jit,
    /// Loading the compiled module and its kernels.
    Load,
    /// Binding and launching the plan.
    Launch,
    /// The correctness trials (the counted copy's among them).
    Correctness,
    /// Reading the counted copy's counters.
    Counting,
    /// The timed pairs and the re-check of timed launches.
    Timing,
    /// The worker process (no GPU, killed, died).
    Worker,
    /// Ran to the end.
    Done,
    /// `generate --no-eval`: checked, not run.
    NotEvaluated,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Unrecorded => "",
            Stage::Static => "static",
            Stage::Setup => "setup",
            Stage::Jit => "jit",
            Stage::Load => "load",
            Stage::Launch => "launch",
            Stage::Correctness => "correctness",
            Stage::Counting => "counting",
            Stage::Timing => "timing",
            Stage::Worker => "worker",
            Stage::Done => "done",
            Stage::NotEvaluated => "not-evaluated",
        }
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
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
    /// This trial ran the counted copy of the PTX (its launches are the ones whose target
    /// work is counted); absent in records made before counted launches were checked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub counted: bool,
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
    /// The median over pairs of baseline time / candidate time.
    pub speedup: Option<f64>,
    /// The 95% interval of `speedup`: the bootstrap interval over this process's pairs
    /// (`speedup_ci95_within`) widened by the between-run component of this GPU model
    /// (`between_runs`), so that it also covers a re-run in a fresh process.
    #[serde(default)]
    pub speedup_ci95: Option<[f64; 2]>,
    /// The 95% bootstrap interval over this process's pairs alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup_ci95_within: Option<[f64; 2]>,
    /// The between-run component in `speedup_ci95`, where this GPU model has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between_runs: Option<BetweenRuns>,
    /// Why timing stopped.
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    pub candidate_tflops: f64,
    pub baseline_tflops: Option<f64>,
    /// The timed launches (0-based) whose outputs were checked against the reference of their
    /// own inputs.
    #[serde(default)]
    pub checked_launches: Vec<u32>,
    /// Whether every checked timed launch matched its reference.
    pub recheck_passed: bool,
    /// The workload's speed of light on this GPU, where the GPU is in the table.
    #[serde(default)]
    pub floor: Option<Floor>,
    /// Floor over the candidate's median time (1.0 is the speed of light).
    #[serde(default)]
    pub floor_fraction: Option<f64>,
    /// Clocks sampled during the timed launches.
    #[serde(default)]
    pub clocks: Option<ClockSamples>,
    /// Device state (NVML) before and after the timed launches, where NVML is available.
    #[serde(default)]
    pub state_before: Option<GpuState>,
    #[serde(default)]
    pub state_after: Option<GpuState>,
    /// The GPU's own counters on timed launches chosen at random, against the counted copy
    /// (with `PTXBENCH_HARDWARE_COUNTERS=cupti`; see `evidence::hardware`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<super::hardware::HardwareCheck>,
}

/// How much a speedup moves between processes on one GPU model (see
/// `engine::between_runs`): the standard deviation of ln(speedup) between fresh processes, net
/// of the within-process noise, and where it was measured.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BetweenRuns {
    pub gpu_model: String,
    pub log_sd: f64,
    pub source: String,
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
    /// Where it stopped.
    pub stage: Stage,
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
    /// Target work executed, from the counted PTX (absent when none was asked for): the
    /// worst over the workloads (see `engine::counting::worst_of`), which the grade reads.
    #[serde(default)]
    pub dynamic: Option<DynamicCounts>,
    /// The counted copy's evidence on each workload, when more than one was counted (absent
    /// in records made when one workload was counted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dynamic_workloads: Vec<DynamicCounts>,
    /// Static SASS plus dynamic counts per required family (filled by the parent process).
    #[serde(default)]
    pub evidence: Option<super::evidence::TargetEvidence>,
    #[serde(skip)]
    pub cubin: Option<Vec<u8>>,
}

impl Outcome {
    pub fn failed(verdict: Verdict, stage: Stage, message: impl Into<String>) -> Outcome {
        Outcome {
            verdict,
            stage,
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
            dynamic_workloads: Vec::new(),
            evidence: None,
            cubin: None,
        }
    }
}

/// Comparison of one output with its reference.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub elements: u64,
    pub violations: u64,
    pub non_finite: u64,
    pub non_zero: u64,
    pub reference_non_zero: u64,
    /// Index of the first element outside tolerance, if any.
    pub first_violation: Option<u64>,
    #[serde(with = "nonfinite")]
    pub max_abs_error: f64,
    /// ||out - ref|| / ||ref|| (L2); infinite when the reference is all zeros and the output not.
    #[serde(with = "nonfinite")]
    pub relative_l2: f64,
}

/// JSON has no infinity or NaN: a non-finite figure is written as null and read back as +inf
/// (serde_json would write null and then refuse to read it as a number).
mod nonfinite {
    pub fn serialize<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(<Option<f64> as serde::Deserialize>::deserialize(d)?.unwrap_or(f64::INFINITY))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_infinite_relative_error_survives_json() {
        // A zero reference with a non-zero output: the worker must be able to report it.
        let c = Comparison {
            elements: 4,
            relative_l2: f64::INFINITY,
            max_abs_error: 1e-7,
            ..Comparison::default()
        };
        let text = serde_json::to_string(&c).expect("serialises");
        assert!(text.contains("\"relative_l2\":null"), "{text}");
        let back: Comparison = serde_json::from_str(&text).expect("reads back");
        assert_eq!(back.relative_l2, f64::INFINITY);
        assert_eq!(back.max_abs_error, 1e-7);
    }
}
