//! Property tests of the parsers that take untrusted text (issue 41): plan expressions, launch
//! plans, task files, manifests, generation manifests, bundles and model responses (the PTX
//! front end has its own in `pipeline/ptx/tests/never_panics.rs`). Generated inputs mix
//! mutations of the repository's own files (`tasks/`, `manifests/`, `tasks/candidates/`) with
//! random bytes; whatever comes in, a parser returns a value or an error that names what it
//! read, and never panics, hangs or fills the memory.
//!
//! Every case runs through [`bounded`]: on a thread of its own, with its answer awaited for at
//! most [`CASE_LIMIT`] (a hang fails the test instead of stalling it), inputs of at most
//! [`MAX_INPUT`] bytes, and the process's peak resident memory checked against
//! [`MEMORY_LIMIT`] afterwards.
//!
//! Time budget: the case counts of [`config`] are chosen so that all properties of this binary
//! together take under 60 s in a debug build on a 2-core machine (measured: see the commit
//! that sets them). `PROPTEST_CASES=N` runs N cases of every property instead, to search
//! longer.

mod bundle;
mod expr;
mod extract;
mod manifest;
mod mutate;
mod plan;
mod task;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use proptest::test_runner::Config as ProptestConfig;

/// How long one case may take before it counts as a hang. The slowest cases (a task file
/// flooded to [`MAX_FLOOD`] bytes, a mutated bundle) take well under a second in a debug build
/// on an idle 2-core machine; the margin is for a machine busy with other work.
pub const CASE_LIMIT: Duration = Duration::from_secs(10);

/// The largest generated input, in bytes.
pub const MAX_INPUT: usize = 1 << 20;

/// The largest input a flood of repeated lines grows to: large enough that work quadratic in
/// the number of lines shows, small enough to parse in a fraction of [`CASE_LIMIT`].
pub const MAX_FLOOD: usize = 256 << 10;

/// The most memory the test process may have held at any time: far above what parsing a
/// megabyte takes, far below what an unbounded expansion (an alias bomb) would.
pub const MEMORY_LIMIT: u64 = 1 << 30;

/// The configuration of a property: `cases` cases, unless `PROPTEST_CASES` says otherwise;
/// no failure files written into the source tree (a failure is fixed with a regression test
/// named after the issue instead).
pub fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        failure_persistence: None,
        max_shrink_iters: 512,
        ..ProptestConfig::default()
    }
}

/// Runs `f` on a thread of its own and returns its value; fails (naming `what`) when it
/// panics, gives no answer within [`CASE_LIMIT`], or when the process has held more than
/// [`MEMORY_LIMIT`].
pub fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    bounded_for(CASE_LIMIT, what, f)
}

/// [`bounded`] with another time limit (for a regression test with a large input).
pub fn bounded_for<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::Builder::new()
        .name(format!("case: {what}"))
        .spawn(move || {
            let _ = tx.send(f());
        })
        .expect("a thread can be spawned");
    let value = match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: no answer within {limit:?} (a hang)")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Err(payload) => std::panic::resume_unwind(payload),
            Ok(()) => panic!("{what}: the case ended without an answer"),
        },
    };
    if let Some(peak) = ptxbench::peak_memory::peak_resident_bytes() {
        assert!(
            peak <= MEMORY_LIMIT,
            "{what}: the process has held {peak} bytes, over {MEMORY_LIMIT}"
        );
    }
    value
}

/// The repository root (`pipeline/..`).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("pipeline/ has a parent")
        .to_path_buf()
}

/// A file of the repository as text (a fixture of these tests).
pub fn read(rel: &str) -> String {
    let path = repo().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `.yaml` files directly in `dir` (relative to the repository), sorted, as
/// (relative path, text).
pub fn yaml_files(dir: &str) -> Vec<(String, String)> {
    let path = repo().join(dir);
    let mut out: Vec<(String, String)> = std::fs::read_dir(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .filter_map(|p| {
            let rel = p.strip_prefix(repo()).ok()?.to_str()?.to_string();
            let text = std::fs::read_to_string(&p).ok()?;
            Some((rel, text))
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "{dir} has .yaml files");
    out
}
