//! The benchmark's metrics, computed with Polars (lazy) from samples: records measured here
//! and the paper's reported per-turn data, never mixed (provenance is part of every key), and
//! samples of different GPUs never pooled (the GPU is part of every key too).
//!
//! Per (provenance, entry, arch, GPU, task) and turn limit ([`TURN_LIMITS`]): correctness rate,
//! correct-with-arch rate (where the evidence was measured), best speedup, best min-over-
//! workloads speedup, fast_p for p in [`FAST_P`], the geometric-mean speedup over correct
//! trajectories, pass@k for k in [`PASS_K`] (unbiased estimator) and the best fraction of the
//! measured peak; and the same per (provenance, entry, arch, GPU) over all tasks, where the
//! pooled speedups leave out the tasks whose baseline is composed (no library has the op):
//! those speedups stay on their task's rows, never pooled with speedups over a library.
//!
//! `sample` (the unit counted), `estimator` (pass@k, geometric mean), `aggregate` (the Polars
//! queries), `fast_p` (the fast_p curve), `core_set` (the common task set of the default view), `reported` (samples from the paper's data), `export` (Parquet/CSV).

pub mod aggregate;
pub mod core_set;
pub mod estimator;
pub mod export;
pub mod fast_p;
pub mod reported;
pub mod sample;

pub use aggregate::{Metrics, OverallMetrics, SpeedupPoint, TaskMetrics, compute, task_frame};
pub use sample::{Provenance, Sample, Samples};

/// Turn limits reported, as the paper: a trajectory at limit L counts its turns 0..L.
pub const TURN_LIMITS: [u32; 3] = [1, 4, 8];
/// The p of fast_p: correct and faster than p times the library.
pub const FAST_P: [f64; 5] = [0.0, 0.5, 0.8, 1.0, 1.5];
/// The k of pass@k.
pub const PASS_K: [u32; 3] = [1, 5, 10];

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("aggregation failed: {0}")]
    Polars(#[from] polars::prelude::PolarsError),
    #[error("reported data, {file} line {row}: {message}")]
    Reported {
        file: String,
        row: usize,
        message: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Destination(#[from] crate::destination::DestinationError),
    #[error("internal: unexpected {0} in an aggregate")]
    Internal(String),
}
