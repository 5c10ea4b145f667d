//! Target evidence: proof that a kernel's architecture-specific instructions were compiled into
//! its cubin and executed.
//!
//! - [`sass`]: the static SASS inventory of a cubin (nvdisasm), per function and per opcode.
//! - [`ncu`]: Nsight Compute's per-SASS-instruction executed counts (the paper's dynamic method).
//! - [`splice`]: counters spliced into a copy of the PTX (a dynamic method with no profiler).
//! - [`in_bounds`]: the bytes each TMA load read inside its tensor, counted in the same copy.
//! - [`work`]: the arithmetic done outside the target families, counted in the same copy.
//! - [`status`]: the paper's status per required family, and the "correct with arch" rule.

pub mod cta_clock;
pub mod hardware;
pub mod in_bounds;
pub mod ncu;
pub mod sass;
pub mod sites;
pub mod splice;
pub mod status;
pub mod work;

pub use sass::{SassError, SassFunction, SassInventory, SassSummary};
pub use splice::{COUNTER_SYMBOL, SpliceError, Spliced, splice, splice_counting_work};
pub use status::{
    DynamicMethod, EvidenceStatus, ExecutedCounts, FamilyEvidence, StaticSass, TargetEvidence,
    assess, correct_with_arch,
};
