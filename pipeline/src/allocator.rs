//! How the `ptxbench` binary's allocator (mimalloc) treats memory it has freed, whether the
//! process gets transparent huge pages ([`no_huge_pages`]), and how much memory it has held at
//! most ([`peak_resident_bytes`]).
//!
//! By default mimalloc gives freed memory back to the system after a second unused
//! (`madvise(MADV_DONTNEED)`), so that a long-lived process shrinks. `ptxbench site` is a
//! batch job that ends soon after its peak, and giving memory back only to take it again costs
//! a page fault and a zeroed page per 4 KiB; on a virtual machine that hands freed guest pages
//! back to its host ("free page reporting"), the host must fault them in again too. Building the
//! 100k-record site of `cargo bench -p ptxbench --bench site` on tmpfs with 2 cores, five
//! alternating pairs: 12.44 s mean with purging, 10.46 s without (system CPU 10.8 → 7.1 s), for
//! about 120 MiB more peak memory (1,179 → 1,303 MiB).

use std::os::raw::{c_int, c_long};

/// `mi_option_purge_delay` of mimalloc v3's `mi_option_t` (`include/mimalloc.h`): how long, in
/// milliseconds, freed memory waits before it is given back; -1 never. The Rust bindings name
/// no constant for it.
const MI_OPTION_PURGE_DELAY: c_int = 15;

/// Never gives freed memory back to the system while the process lives (it is all returned
/// when the process exits). `ptxbench site` calls it first; other commands keep mimalloc's
/// default. Harmless where mimalloc is not the global allocator (tests): it only sets an
/// option of an allocator nothing uses.
pub fn hold_freed_memory() {
    // SAFETY: sets one integer in mimalloc's option table; any value is valid for this option,
    // and mimalloc reads it with atomic loads.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) }
}

/// Asks the kernel for no transparent huge pages in this process
/// (`prctl(PR_SET_THP_DISABLE)`, what mimalloc's own `allow_thp = 0` does, an option it reads
/// only when the process starts); returns whether the kernel took it (never, off Linux).
/// mimalloc marks its memory for huge pages, and the kernel then zeroes 2 MiB at the first
/// touch of any byte of it: `ptxbench site`, which takes about a GiB of heap in small pieces
/// over a few seconds, touches less memory with 4 KiB pages, and fresh memory is what a large
/// build pays for most (see `site::output::DRAIN_BYTES`). Building the 100k-record site of
/// `cargo bench -p ptxbench --bench site` on 2 cores, with the drain, alternated on the disk:
/// 10.23–10.66 s without huge pages against 10.82–14.08 s with them (three runs each); loading
/// takes about 1 s less and the peak memory is some 50 MiB lower, for about 0.8 s more user CPU
/// (4 KiB pages miss the TLB more). On tmpfs it gained 1 s in one hour's pairs and nothing in
/// another's (`artifacts/evidence/site-bench/`). `ptxbench site` calls it first; other commands
/// keep the kernel's default.
pub fn no_huge_pages() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a prctl that takes integers only and sets a flag of this process.
        unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// The purge delay in force, in milliseconds (-1: never).
pub fn purge_delay_ms() -> c_long {
    // SAFETY: reads one entry of mimalloc's option table.
    unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) }
}

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

/// [`peak_resident_bytes`] in words, for a command's summary: `1,071 MiB`, or why it is not
/// known.
pub fn peak_resident_text() -> String {
    match peak_resident_bytes() {
        Some(b) => format!(
            "{} MiB",
            crate::site::format::count(b.div_ceil(1024 * 1024))
        ),
        None => "unknown (no /proc/self/status)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The peak covers memory the process touched: after 64 MiB are written it is at least
    /// that, and it stays there when the memory is freed. Linux reads the resident size from
    /// per-CPU counters, which may lag by a few dozen pages (here once 56 KiB lower on the
    /// second read), so the check allows 1 MiB of that, far under the 64 MiB freed.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_peak_counts_touched_memory() {
        const N: usize = 64 << 20;
        let v = std::hint::black_box(vec![1u8; N]);
        let during = peak_resident_bytes().expect("Linux says");
        assert!(during >= N as u64, "peak {during} under {N} bytes");
        drop(v);
        let after = peak_resident_bytes().expect("Linux says");
        assert!(
            after + (1 << 20) >= during && after >= N as u64,
            "peak fell from {during} to {after}"
        );
        assert!(peak_resident_text().ends_with(" MiB"));
    }

    /// After the call the kernel reports huge pages off for the process.
    #[cfg(target_os = "linux")]
    #[test]
    fn huge_pages_go_off() {
        assert!(no_huge_pages());
        // SAFETY: a prctl that reads a flag of this process.
        assert_eq!(
            unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) },
            1
        );
    }

    /// The option index names the purge delay: before it is set, it holds mimalloc v3's
    /// documented default (1000 ms; no other option defaults to that), unless the environment
    /// set it; afterwards, -1.
    #[test]
    fn the_purge_delay_is_the_option_set() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(purge_delay_ms(), 1000);
        }
        hold_freed_memory();
        assert_eq!(purge_delay_ms(), -1);
    }
}
