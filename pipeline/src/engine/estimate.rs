//! The speedup from paired samples: candidate and baseline launches alternate, so each pair
//! shares the GPU's state (clock, temperature); the estimate is the median of the per-pair
//! ratios baseline / candidate, with a 95% percentile-bootstrap confidence interval. Pure and
//! deterministic: the bootstrap's generator is seeded by the caller.

use crate::record::stats::quantile;
use serde::{Deserialize, Serialize};

pub use super::StopReason;

/// Resamples drawn for the interval.
pub const BOOTSTRAP_RESAMPLES: usize = 1000;

/// A speedup with its 95% interval. Invariant: `lo <= estimate <= hi`, all finite and > 0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairedSpeedup {
    pub estimate: f64,
    pub lo: f64,
    pub hi: f64,
    pub pairs: usize,
}

impl PairedSpeedup {
    /// Half the interval's width relative to the estimate.
    pub fn relative_half_width(&self) -> f64 {
        (self.hi - self.lo) / 2.0 / self.estimate
    }
}

/// A small deterministic generator (splitmix64) for resampling (and the tests' synthetic data).
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    pub fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (0 when n is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn median_in_place(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    quantile(v, 0.5)
}

/// The median of `baseline[i] / candidate[i]` with a 95% bootstrap interval over the pairs;
/// `None` with fewer than 2 finite, positive pairs.
pub fn paired_speedup(candidate: &[f64], baseline: &[f64], seed: u64) -> Option<PairedSpeedup> {
    let ratios: Vec<f64> = candidate
        .iter()
        .zip(baseline)
        .filter(|(c, b)| c.is_finite() && b.is_finite() && **c > 0.0 && **b > 0.0)
        .map(|(c, b)| b / c)
        .collect();
    if ratios.len() < 2 {
        return None;
    }
    let estimate = median_in_place(&mut ratios.clone());
    let mut rng = SplitMix::new(seed);
    let mut medians = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    let mut sample = vec![0.0; ratios.len()];
    for _ in 0..BOOTSTRAP_RESAMPLES {
        for s in sample.iter_mut() {
            *s = ratios[rng.below(ratios.len())];
        }
        medians.push(median_in_place(&mut sample));
    }
    medians.sort_by(f64::total_cmp);
    let at = |q: f64| quantile(&medians, q);
    Some(PairedSpeedup {
        estimate,
        lo: at(0.025).min(estimate),
        hi: at(0.975).max(estimate),
        pairs: ratios.len(),
    })
}

/// When the paired loop may stop, checked every few pairs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StopRule {
    pub min_pairs: usize,
    pub max_pairs: usize,
    /// Target half-width of the interval relative to the estimate (0.01 = 1%).
    pub target: f64,
    /// GPU milliseconds (candidate + baseline) the workload may spend.
    pub budget_ms: f64,
    /// The budget ends timing only after this many pairs (a slow kernel still gets a few).
    pub min_pairs_on_budget: usize,
}

impl StopRule {
    /// Whether to stop after `pairs` pairs that took `spent_ms`, with the current estimate:
    /// at the pair limit; once the minimum is reached and the interval is tight; or once the
    /// budget is spent and at least `min_pairs_on_budget` pairs were timed.
    pub fn decide(
        &self,
        pairs: usize,
        spent_ms: f64,
        estimate: Option<&PairedSpeedup>,
    ) -> Option<StopReason> {
        if pairs >= self.max_pairs {
            return Some(StopReason::MaxIterations);
        }
        if pairs >= self.min_pairs
            && estimate.is_some_and(|e| e.relative_half_width() <= self.target)
        {
            return Some(StopReason::Converged);
        }
        (spent_ms >= self.budget_ms && pairs >= self.min_pairs_on_budget)
            .then_some(StopReason::Budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_pairs_give_an_exact_interval() {
        let c = vec![2.0; 10];
        let b = vec![1.0; 10];
        let s = paired_speedup(&c, &b, 1).expect("estimate");
        assert_eq!((s.estimate, s.lo, s.hi, s.pairs), (0.5, 0.5, 0.5, 10));
        assert_eq!(s.relative_half_width(), 0.0);
    }

    #[test]
    fn common_mode_drift_cancels_in_pairs() {
        // The clock drifts: both times grow together, the ratio stays 0.8.
        let c: Vec<f64> = (0..50).map(|i| 1.0 + 0.01 * f64::from(i)).collect();
        let b: Vec<f64> = c.iter().map(|x| 0.8 * x).collect();
        let s = paired_speedup(&c, &b, 7).expect("estimate");
        assert!((s.estimate - 0.8).abs() < 1e-12 && s.relative_half_width() < 1e-9);
    }

    #[test]
    fn noise_widens_the_interval_and_it_contains_the_estimate() {
        let mut rng = SplitMix::new(3);
        let c: Vec<f64> = (0..40)
            .map(|_| 1.0 + (rng.below(1000) as f64) / 2000.0)
            .collect();
        let b = vec![1.0; 40];
        let s = paired_speedup(&c, &b, 9).expect("estimate");
        assert!(s.lo < s.estimate && s.estimate < s.hi, "{s:?}");
        assert!(s.relative_half_width() > 0.01);
        // Same seed, same interval.
        assert_eq!(paired_speedup(&c, &b, 9), Some(s));
    }

    #[test]
    fn too_few_or_broken_pairs_give_none() {
        assert_eq!(paired_speedup(&[1.0], &[1.0], 1), None);
        assert_eq!(paired_speedup(&[1.0, f64::NAN], &[1.0, 1.0], 1), None);
        assert_eq!(paired_speedup(&[0.0, 1.0], &[1.0, 1.0], 1), None);
    }

    #[test]
    fn the_stop_rule_needs_the_minimum_then_the_target_or_the_budget() {
        let rule = StopRule {
            min_pairs: 10,
            max_pairs: 100,
            target: 0.01,
            budget_ms: 1000.0,
            min_pairs_on_budget: 3,
        };
        let tight = PairedSpeedup {
            estimate: 1.0,
            lo: 0.995,
            hi: 1.005,
            pairs: 10,
        };
        let wide = PairedSpeedup {
            lo: 0.9,
            hi: 1.1,
            ..tight
        };
        assert_eq!(rule.decide(5, 1.0, Some(&tight)), None);
        assert_eq!(
            rule.decide(5, 5000.0, Some(&tight)),
            Some(StopReason::Budget)
        );
        assert_eq!(
            rule.decide(10, 1.0, Some(&tight)),
            Some(StopReason::Converged)
        );
        assert_eq!(rule.decide(10, 1.0, Some(&wide)), None);
        assert_eq!(
            rule.decide(10, 1000.0, Some(&wide)),
            Some(StopReason::Budget)
        );
        assert_eq!(
            rule.decide(100, 1.0, Some(&wide)),
            Some(StopReason::MaxIterations)
        );
    }
}
