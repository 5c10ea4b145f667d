//! Summary statistics of timed launches. Invariant: built from at least one finite sample.

use serde::{Deserialize, Serialize};

/// Median and spread of launch times, in milliseconds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Stats {
    pub n: usize,
    pub median_ms: f64,
    pub p25_ms: f64,
    pub p75_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
}

/// The `q` quantile of `sorted` (ascending, non-empty) by linear interpolation between the
/// closest ranks: the one quantile of the pipeline (timing summaries, the bootstrap interval,
/// the site's box plots).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

impl Stats {
    /// `None` when there is no finite sample.
    pub fn from_samples(samples: &[f64]) -> Option<Stats> {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let q = |p: f64| quantile(&v, p);
        Some(Stats {
            n: v.len(),
            median_ms: q(0.5),
            p25_ms: q(0.25),
            p75_ms: q(0.75),
            min_ms: v[0],
            max_ms: v[v.len() - 1],
        })
    }

    /// Interquartile range relative to the median.
    pub fn relative_iqr(&self) -> f64 {
        (self.p75_ms - self.p25_ms) / self.median_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quartiles_interpolate() {
        let s = Stats::from_samples(&[4.0, 1.0, 3.0, 2.0, f64::NAN]).expect("finite samples");
        assert_eq!(s.n, 4);
        assert_eq!(s.median_ms, 2.5);
        assert_eq!(s.p25_ms, 1.75);
        assert_eq!(s.p75_ms, 3.25);
        assert_eq!((s.min_ms, s.max_ms), (1.0, 4.0));
        assert!(Stats::from_samples(&[f64::INFINITY]).is_none());
    }
}
