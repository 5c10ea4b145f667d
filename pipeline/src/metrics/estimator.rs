//! Estimators the metrics use that are not plain aggregations: the unbiased pass@k and the
//! geometric mean. Pure functions, no Polars.

/// The unbiased pass@k estimator of Chen et al. (2021): the probability that at least one of
/// `k` samples drawn without replacement from `n` attempts, `c` of them correct, is correct:
/// `1 - C(n-c, k) / C(n, k)`. `None` when `k` is 0 or larger than `n` (not estimable).
///
/// Computed as `1 - prod_{i=n-c+1}^{n} (1 - k/i)`, which never forms a large binomial.
pub fn pass_at_k(n: u32, c: u32, k: u32) -> Option<f64> {
    if k == 0 || k > n {
        return None;
    }
    let c = c.min(n);
    if n - c < k {
        return Some(1.0);
    }
    if k == 1 {
        // Exactly c/n (the product below would round).
        return Some(f64::from(c) / f64::from(n));
    }
    let mut miss = 1.0f64;
    for i in (n - c + 1)..=n {
        miss *= 1.0 - f64::from(k) / f64::from(i);
    }
    Some(1.0 - miss)
}

/// The 95% Wilson score interval of a rate of `k` successes in `n` trials (`None` for
/// `n == 0`): unlike the normal approximation it stays inside [0, 1] and is not empty at 0 or n
/// (12 trajectories, none correct: 0% to 24%).
pub fn wilson95(k: u32, n: u32) -> Option<[f64; 2]> {
    if n == 0 || k > n {
        return None;
    }
    const Z: f64 = 1.959_963_984_540_054;
    let (k, n) = (f64::from(k), f64::from(n));
    let p = k / n;
    let z2 = Z * Z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
    Some([(centre - half).max(0.0), (centre + half).min(1.0)])
}

/// `exp(mean(ln x))` from the sum of logarithms and their count; `None` for no values.
pub fn geometric_mean_from_logs(ln_sum: f64, count: u32) -> Option<f64> {
    (count > 0).then(|| (ln_sum / f64::from(count)).exp())
}

#[cfg(test)]
mod tests {
    /// Issue 59, item 5: the Wilson interval by hand (z = 1.96): 0 of 12 reaches 24%, 6 of 12
    /// is 25.4% to 74.6%, and nothing is claimed of no trials.
    #[test]
    fn wilson_interval_by_hand() {
        let close = |a: f64, b: f64| (a - b).abs() < 5e-4;
        let [lo, hi] = super::wilson95(0, 12).expect("an interval");
        assert!(close(lo, 0.0) && close(hi, 0.2425), "{lo} {hi}");
        let [lo, hi] = super::wilson95(6, 12).expect("an interval");
        assert!(close(lo, 0.2538) && close(hi, 0.7462), "{lo} {hi}");
        let [lo, hi] = super::wilson95(12, 12).expect("an interval");
        assert!(close(lo, 0.7575) && close(hi, 1.0), "{lo} {hi}");
        assert_eq!(super::wilson95(0, 0), None);
    }

    use super::*;

    /// The estimator from its definition, with exact binomials (small n only).
    fn by_definition(n: u32, c: u32, k: u32) -> f64 {
        fn choose(n: u32, k: u32) -> f64 {
            if k > n {
                return 0.0;
            }
            (0..k).fold(1.0, |acc, i| acc * f64::from(n - i) / f64::from(i + 1))
        }
        1.0 - choose(n - c, k) / choose(n, k)
    }

    #[test]
    fn pass_at_k_matches_the_definition() {
        for n in 1..=16 {
            for c in 0..=n {
                for k in 1..=n {
                    let got = pass_at_k(n, c, k).expect("k <= n");
                    let want = by_definition(n, c, k);
                    assert!(
                        (got - want).abs() < 1e-12,
                        "n={n} c={c} k={k}: {got} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn pass_at_k_edges() {
        assert_eq!(pass_at_k(12, 0, 1), Some(0.0));
        assert_eq!(pass_at_k(12, 12, 5), Some(1.0));
        assert_eq!(pass_at_k(12, 3, 1), Some(0.25));
        assert_eq!(pass_at_k(4, 1, 5), None);
        assert_eq!(pass_at_k(4, 1, 0), None);
    }

    #[test]
    fn geometric_mean() {
        let logs = [2.0f64.ln(), 8.0f64.ln()];
        let g = geometric_mean_from_logs(logs.iter().sum(), 2).expect("two values");
        assert!((g - 4.0).abs() < 1e-12);
        assert_eq!(geometric_mean_from_logs(0.0, 0), None);
    }
}
