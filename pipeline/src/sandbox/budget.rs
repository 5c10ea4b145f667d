//! One memory budget for all compile work of a process.
//!
//! Every sandboxed compiler runs under an address-space limit; a lease on this budget is taken
//! for that limit before the compiler starts and given back when it ends, so the limits of the
//! compilers running at once never add up past the budget, whatever concurrency a manifest asks
//! for. A compiler whose own limit is larger than the whole budget runs alone, with its limit
//! lowered to the budget.
//!
//! The budget is `PTXBENCH_COMPILE_BUDGET_MIB` where set, else half of the machine's physical
//! memory (`MemTotal` in `/proc/meminfo`), else 8 GiB.

use std::sync::{Condvar, Mutex, OnceLock};

/// The variable that sets the budget, MiB.
pub const BUDGET_VAR: &str = "PTXBENCH_COMPILE_BUDGET_MIB";

/// The budget where the machine's memory cannot be read.
const FALLBACK: u64 = 8 << 30;

/// The smallest budget: below it no compiler of ours starts.
const MIN: u64 = 256 << 20;

/// A memory budget that leases shares of itself.
#[derive(Debug)]
pub struct Budget {
    total: u64,
    used: Mutex<u64>,
    freed: Condvar,
}

/// A share of a [`Budget`], given back when dropped.
#[derive(Debug)]
pub struct Lease<'a> {
    budget: &'a Budget,
    bytes: u64,
}

impl Lease<'_> {
    /// The bytes leased: what the compiler may use.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let mut used = self.budget.used.lock().unwrap_or_else(|e| e.into_inner());
        *used = used.saturating_sub(self.bytes);
        self.budget.freed.notify_all();
    }
}

impl Budget {
    /// A budget of `total` bytes (at least 256 MiB).
    pub fn new(total: u64) -> Budget {
        Budget {
            total: total.max(MIN),
            used: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// Waits until `want` bytes (at most the whole budget) are free, and leases them.
    pub fn lease(&self, want: u64) -> Lease<'_> {
        let bytes = want.min(self.total);
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        while *used + bytes > self.total {
            used = self.freed.wait(used).unwrap_or_else(|e| e.into_inner());
        }
        *used += bytes;
        Lease {
            budget: self,
            bytes,
        }
    }
}

/// This process's budget.
pub fn global() -> &'static Budget {
    static BUDGET: OnceLock<Budget> = OnceLock::new();
    BUDGET.get_or_init(|| Budget::new(configured()))
}

/// The budget the environment and the machine give, bytes.
pub fn configured() -> u64 {
    if let Some(mib) = std::env::var(BUDGET_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        return mib.saturating_mul(1 << 20);
    }
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| mem_total(&m))
        .map_or(FALLBACK, |t| t / 2)
}

/// `MemTotal` of a `/proc/meminfo` text, bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    #[test]
    fn reads_the_machines_memory() {
        let m = "MemTotal:       24576000 kB\nMemFree:        1000 kB\n";
        assert_eq!(mem_total(m), Some(24_576_000 * 1024));
        assert_eq!(mem_total("nothing"), None);
    }

    #[test]
    fn a_lease_larger_than_the_budget_is_the_whole_budget() {
        let b = Budget::new(1 << 30);
        assert_eq!(b.lease(8 << 30).bytes(), 1 << 30);
        assert_eq!(b.lease(1 << 20).bytes(), 1 << 20);
    }

    /// Four compiles of 6 units under a budget of 12 never hold more than 12 at once, and two
    /// of them do run at once.
    #[test]
    fn issue_55_leases_at_once_never_exceed_the_budget() {
        let unit = 256 << 20;
        let b = Arc::new(Budget::new(12 * unit));
        let held = Arc::new(AtomicU64::new(0));
        let peak = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (b, held, peak) = (b.clone(), held.clone(), peak.clone());
                std::thread::spawn(move || {
                    let lease = b.lease(6 * unit);
                    let now = held.fetch_add(lease.bytes(), Ordering::SeqCst) + lease.bytes();
                    peak.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(100));
                    held.fetch_sub(lease.bytes(), Ordering::SeqCst);
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        assert_eq!(peak.load(Ordering::SeqCst), 12 * unit);
    }
}
