//! Randomness nobody can know in advance: seeds drawn from the operating system's entropy
//! source at run time (recorded wherever they decide an input), for default evaluation seeds
//! and for the choice of which timed launches get checked.

/// A 64-bit value from the OS's entropy source.
pub fn draw_u64() -> u64 {
    let mut bytes = [0u8; 8];
    // The OS source only fails on a broken system; then the process must not pretend to be
    // random.
    getrandom::fill(&mut bytes).expect("the operating system's entropy source is unavailable");
    u64::from_le_bytes(bytes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn draws_differ() {
        let draws: std::collections::BTreeSet<u64> = (0..16).map(|_| super::draw_u64()).collect();
        assert_eq!(draws.len(), 16);
    }
}
