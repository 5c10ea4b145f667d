//! The GPU's own counters on timed launches, as records keep them (the measurement and its
//! comparison with the counted copy: `evidence::hardware`).

use serde::{Deserialize, Serialize};

/// What a metric measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    /// Tensor-pipe wgmma warp instructions.
    WgmmaInstructions,
    /// Bytes loaded by the TMA unit.
    TmaLoadBytes,
    /// Warp instructions of an arithmetic pipe, with the FLOPs one thread's instruction stands
    /// for at most.
    PipeInstructions { flops_per_thread: u32 },
}

/// The metrics chosen for a device, each with the quantity it measures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricPlan {
    pub metrics: Vec<(String, Quantity)>,
    /// Quantities no offered metric measures, in words.
    pub missing: Vec<String>,
}

/// What the counters read on one timed launch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HardwareCounts {
    /// Index of the timed launch (among the workload's timed pairs) that was measured.
    pub launch: u32,
    /// Each metric's value, by full name.
    pub values: Vec<(String, f64)>,
    pub wgmma_instructions: Option<f64>,
    pub tma_load_bytes: Option<f64>,
    /// FLOPs the arithmetic pipes' instructions stand for at most.
    pub other_flops_bound: Option<f64>,
}

/// One quantity compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    pub quantity: String,
    pub hardware: f64,
    pub counted: f64,
    /// The largest hardware value (and, for exact counts, the smallest) that agrees.
    pub lo: f64,
    pub hi: f64,
    pub agrees: bool,
}

/// The hardware measurement of one timed workload, as its record keeps it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HardwareCheck {
    /// "cupti-range-profiler".
    pub method: String,
    pub plan: MetricPlan,
    /// One entry per measured launch.
    pub launches: Vec<HardwareCounts>,
    /// Each measured launch's comparisons with the counted copy, in the same order.
    pub agreements: Vec<Vec<Agreement>>,
    /// The measured launches' own times (milliseconds; not in the speedup), beside the median
    /// of the unmeasured ones: the profiler's cost on a launch.
    pub measured_ms: Vec<f64>,
    /// Why the measurement could not be made (the spliced counts then stand alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
