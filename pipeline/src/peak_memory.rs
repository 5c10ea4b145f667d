//! How much memory the process has held resident at most, for a command's summary and for
//! tests that bound it.

/// The most memory the process has held resident so far (Linux's `VmHWM` in
/// `/proc/self/status`), in bytes; `None` where the system does not say (not Linux).
pub fn peak_resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kib * 1024)
}

/// [`peak_resident_bytes`] in MiB, in words: `1071 MiB`, or why it is not known.
pub fn peak_resident_text() -> String {
    match peak_resident_bytes() {
        Some(b) => format!("{} MiB", b.div_ceil(1024 * 1024)),
        None => "unknown (no /proc/self/status)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The peak covers memory the process touched: after 64 MiB are written it is at least
    /// that, and it stays there when the memory is freed (less a little: Linux reads the
    /// resident size from per-CPU counters, which may lag by a few dozen pages).
    #[cfg(target_os = "linux")]
    #[test]
    fn the_peak_counts_touched_memory() {
        const N: usize = 64 << 20;
        let v = std::hint::black_box(vec![1u8; N]);
        let during = peak_resident_bytes().expect("Linux says");
        assert!(during >= N as u64, "peak {during} under {N} bytes");
        drop(v);
        let after = peak_resident_bytes().expect("Linux says");
        assert!(after + (1 << 20) >= during && after >= N as u64);
        assert!(peak_resident_text().ends_with(" MiB"));
    }
}
