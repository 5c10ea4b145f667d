//! The part of a speedup's uncertainty that one process cannot see.
//!
//! The bootstrap interval over a process's timed pairs ([`super::estimate`]) describes the noise
//! inside that process. A re-run in a fresh process draws a new GPU state (clocks, power,
//! placement of its buffers, the library's own state), and on the H200 the speedup moves between
//! processes by several times the within-process interval. So the interval a record carries is
//! the within-process interval widened by a between-run component, measured per GPU model in
//! separate processes and named with its provenance:
//!
//! ```text
//! ln(hi / s) = sqrt(ln(hi_within / s)^2 + (z sigma)^2)     (and likewise for lo)
//! ```
//!
//! with `z = 1.96`. The interval is meant to hold a re-run: the difference between two
//! processes' estimates has variance `2 (b^2 + w^2)` on the log scale, for a between-process
//! standard deviation `b` and a within-process one `w` of the estimate, so `sigma^2 = 2 b^2 + w^2`
//! (the record's own `w` is already in its bootstrap interval). `b` and `w` are measured per GPU
//! model and task family by `pipeline/scripts/device-repeatability.sh` (10 fresh processes per
//! kernel; `repeatability_table.py` prints both) and rounded up. A GPU model or family without
//! a measurement gets no component, and its records say so (the interval then covers the
//! process's own noise only).

use crate::record::BetweenRuns;
use crate::task::Op;

/// The normal quantile of a two-sided 95% interval.
const Z95: f64 = 1.959_964;

/// Where the H200's figures come from.
const H200_SOURCE: &str = "artifacts/evidence/numbers-h200/ (2026-12-04: 10 processes each of the hand-written GEMM and Triton's pointer GEMM on gemm_n7168_k5120 M8192, and 20 in two rounds of the hand-written attention forward on mha_with_lse_d128 B4_H48_S4096)";

/// Between-run components: substrings the device name must all contain, the task family, sigma
/// (see the module docs), and where it was measured. H200, GEMM: b = 0.00120, w = 0.00076 (the
/// pointer GEMM, the larger of the two kernels) give 0.00183, rounded up to 0.0020; attention:
/// the first round's b = 0.00245, w = 0.00187 gave 0.0040, which a second round of 10 fresh
/// processes showed too small (its b was 0.00455, and a re-run fell inside the record's interval
/// in 77% of pairs): both rounds together, b = 0.00531, w = 0.00229 give 0.00785, rounded up to
/// 0.0080 (measured on the forward; the backward and decode share it until they are measured).
const MEASURED: &[(&[&str], Family, f64, &str)] = &[
    (&["H200"], Family::Gemm, 0.0020, H200_SOURCE),
    (&["H200"], Family::Attention, 0.0080, H200_SOURCE),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Gemm,
    Attention,
}

fn family(op: &Op) -> Family {
    match op {
        Op::Gemm { .. } | Op::GemmFp8 { .. } => Family::Gemm,
        _ => Family::Attention,
    }
}

/// The between-run component measured for this device and the task's family, if any.
pub fn for_task(device_name: &str, op: &Op) -> Option<BetweenRuns> {
    let f = family(op);
    MEASURED
        .iter()
        .find(|(names, fam, ..)| *fam == f && names.iter().all(|n| device_name.contains(n)))
        .map(|(names, fam, sigma, source)| BetweenRuns {
            gpu_model: names.join(" "),
            log_sd: *sigma,
            source: format!(
                "{} ({})",
                source,
                if *fam == Family::Gemm {
                    "GEMM"
                } else {
                    "attention"
                }
            ),
        })
}

/// The interval `[lo, hi]` around `estimate` widened by `between` (unchanged without one).
pub fn widen(estimate: f64, lo: f64, hi: f64, between: Option<&BetweenRuns>) -> [f64; 2] {
    let Some(b) = between else {
        return [lo, hi];
    };
    let extra = Z95 * b.log_sd;
    let down = (estimate / lo).ln().hypot(extra);
    let up = (hi / estimate).ln().hypot(extra);
    [estimate * (-down).exp(), estimate * up.exp()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widening_adds_in_quadrature_on_the_log_scale() {
        let b = BetweenRuns {
            gpu_model: "X".into(),
            log_sd: 0.005,
            source: "test".into(),
        };
        // No within-process width: the interval is s * exp(+-1.96 sigma).
        let [lo, hi] = widen(2.0, 2.0, 2.0, Some(&b));
        assert!((hi / 2.0 - (Z95 * 0.005f64).exp()).abs() < 1e-12);
        assert!((2.0 / lo - (Z95 * 0.005f64).exp()).abs() < 1e-12);
        // Equal parts: sqrt(2) times either.
        let w = (Z95 * 0.005f64).exp();
        let [lo, hi] = widen(1.0, 1.0 / w, w, Some(&b));
        assert!((hi.ln() - 2f64.sqrt() * w.ln()).abs() < 1e-12);
        assert!((lo.ln() + 2f64.sqrt() * w.ln()).abs() < 1e-12);
        // Asymmetric within-process bounds stay asymmetric, and always contain the estimate.
        let [lo, hi] = widen(1.0, 0.9, 1.01, Some(&b));
        assert!(lo < 0.9 && hi > 1.01 && hi - 1.0 < 1.0 - lo);
        assert_eq!(widen(1.0, 0.9, 1.1, None), [0.9, 1.1]);
    }

    #[test]
    fn components_by_device_and_family() {
        let gemm = Op::Gemm { transpose_b: true };
        assert!(for_task("Some GPU nobody measured", &gemm).is_none());
        let g = for_task("NVIDIA H200", &gemm).expect("measured");
        let a = for_task("NVIDIA H200", &Op::AttentionFwd { causal: false }).expect("measured");
        assert!(g.log_sd < a.log_sd, "{g:?} {a:?}");
        assert!(g.source.contains("GEMM") && a.source.contains("attention"));
    }
}
