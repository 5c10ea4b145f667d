//! Randomness nobody can know in advance: values drawn from the operating system's entropy
//! source at run time, for default seeds (`run`, `eval`, `generate`; always recorded) and for
//! the choice of which timed launches get checked (never announced).

/// The operating system gave no entropy.
#[derive(Debug, thiserror::Error)]
#[error("drawing from the operating system's entropy source: {0}")]
pub struct EntropyError(String);

/// A 64-bit value from the OS's entropy source.
pub fn draw_u64() -> Result<u64, EntropyError> {
    getrandom::u64().map_err(|e| EntropyError(e.to_string()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn draws_differ() {
        let draws: std::collections::BTreeSet<u64> = (0..16)
            .map(|_| super::draw_u64().expect("entropy"))
            .collect();
        assert_eq!(draws.len(), 16);
    }
}
