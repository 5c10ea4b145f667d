//! The common task set the leaderboard's default view ranks models over: the paper's five core
//! definitions. Every model of the paper's reported runs was evaluated on these five on both
//! architectures (its Blackwell runs are exactly these), at the headline shapes the paper
//! reports: the bf16 GEMM `gemm_n7168_k5120`, and attention with head dimension 128, forward
//! with log-sum-exp and backward, causal and not. Rows over the same tasks compare; rows over
//! whatever subset of the 26-task suite an entry attempted do not.

use super::{OverallMetrics, TaskMetrics};

/// The paper's five core definitions, in suite order (GEMM, forward, backward).
pub const CORE_TASKS: [&str; 5] = [
    "gemm_n7168_k5120",
    "mha_with_lse_d128",
    "mha_with_lse_d128_causal",
    "mha_bwd_d128",
    "mha_bwd_d128_causal",
];

/// Whether `task` is one of [`CORE_TASKS`].
pub fn is_core(task: &str) -> bool {
    CORE_TASKS.contains(&task)
}

/// The per-entry metrics over the core tasks only (the same aggregation as over all tasks).
pub fn core_overall(tasks: &[TaskMetrics]) -> Result<Vec<OverallMetrics>, super::MetricsError> {
    let core: Vec<TaskMetrics> = tasks.iter().filter(|t| is_core(&t.task)).cloned().collect();
    if core.is_empty() {
        return Ok(Vec::new());
    }
    super::aggregate::overall(&core)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_is_five_distinct_tasks() {
        let mut t = CORE_TASKS.to_vec();
        t.sort();
        t.dedup();
        assert_eq!(t.len(), 5);
        assert!(is_core("mha_bwd_d128_causal"));
        assert!(!is_core("mha_bwd_d64"));
        assert!(!is_core("gemm_n4096_k4096"));
    }
}
