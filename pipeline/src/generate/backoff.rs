//! Backoff between attempts: exponential, capped, with jitter derived from a seed.
//!
//! The jitter is a hash of (seed, what is retried, attempt), not a clock or an unseeded RNG, so
//! the same run waits the same times; a `Retry-After` from the server is honoured up to the cap.

use std::time::Duration;

use super::manifest::RetryPolicy;

/// How long to wait before attempt `attempt + 1` (attempt 0 is the first, already made).
pub fn delay(
    policy: &RetryPolicy,
    seed: u64,
    key: &str,
    attempt: u32,
    server: Option<Duration>,
) -> Duration {
    let cap = policy.max_delay_ms;
    let exp = policy
        .base_delay_ms
        .saturating_mul(1u64 << attempt.min(32))
        .min(cap);
    let mut h = blake3::Hasher::new();
    h.update(&seed.to_le_bytes());
    h.update(key.as_bytes());
    h.update(&attempt.to_le_bytes());
    let bytes = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&bytes.as_bytes()[..8]);
    let frac = (u64::from_le_bytes(first) >> 11) as f64 / (1u64 << 53) as f64;
    // "Equal jitter": half fixed, half random, so waits never collapse to zero.
    let jittered = (exp as f64 * (0.5 + 0.5 * frac)) as u64;
    let server_ms = server.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    Duration::from_millis(jittered.max(server_ms.min(cap)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_are_capped_seeded_and_honour_retry_after() {
        let p = RetryPolicy {
            max_attempts: 8,
            base_delay_ms: 100,
            max_delay_ms: 1000,
        };
        let d: Vec<Duration> = (0..6).map(|a| delay(&p, 7, "k", a, None)).collect();
        assert_eq!(
            d,
            (0..6)
                .map(|a| delay(&p, 7, "k", a, None))
                .collect::<Vec<_>>()
        );
        for (a, x) in d.iter().enumerate() {
            let exp = (100u64 << a).min(1000);
            assert!(
                x.as_millis() as u64 >= exp / 2 && x.as_millis() as u64 <= exp,
                "{a}: {x:?}"
            );
        }
        assert_ne!(delay(&p, 7, "k", 3, None), delay(&p, 8, "k", 3, None));
        assert_eq!(
            delay(&p, 7, "k", 0, Some(Duration::from_millis(900))).as_millis(),
            900
        );
        assert_eq!(
            delay(&p, 7, "k", 0, Some(Duration::from_secs(60))).as_millis(),
            1000
        );
    }
}
