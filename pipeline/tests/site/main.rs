//! Integration tests of the leaderboard site and its metrics, one module per feature.
//!
//! The fixture site is built from a fixed two-task suite (fixtures/suite), synthetic records
//! generated from a seed, and the paper's reported data copied from the committed store, so it
//! is the same on every machine. Snapshots live in fixtures/expected/;
//! `PTXBENCH_BLESS=1 cargo test --test site` rewrites them.

mod auditor;
mod bundles;
mod ceilings;
mod cli;
mod core_set;
mod determinism;
mod gpus;
mod intervals;
mod links;
mod loading;
mod metrics;
mod newcomer;
mod readers;
mod record_lists;
mod snapshots;
mod suites;
#[path = "../support/synthetic.rs"]
pub mod synthetic;
mod trajectories;

use std::path::{Path, PathBuf};

use ptxbench::digest::Digest;
use ptxbench::site::{Pages, SiteInput, build};
use ptxbench::store::Store;
use ptxbench::store::closure::{Root, closure};
use ptxbench::task::Suite;
use synthetic::Options;

/// The paper's reported data in the committed store (manifests/leaderboard.yaml names it).
pub const PAPER_IMPORT: &str = "edae624ef713a0423f520e8e5049df2ef1fab1a6c6edeb8c23ef9ae7d373fac4";

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("pipeline/ has a parent")
        .to_path_buf()
}

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/site/fixtures")
}

pub fn fixture_suite() -> Suite {
    Suite::load(&fixtures().join("suite")).expect("the fixture suite loads")
}

pub fn committed_store() -> Store {
    Store::open(root().join("artifacts"))
}

pub fn paper_import() -> Digest {
    PAPER_IMPORT.parse().expect("a digest")
}

/// Copies `digest` and everything it references from `from` into `to`.
pub fn copy_closure(from: &Store, to: &Store, digest: Digest) {
    let c = closure(
        from,
        &[Root {
            digest,
            label: "test".into(),
            expect: None,
        }],
    );
    assert!(c.is_complete(), "{:?}", c.problems);
    for d in &c.objects {
        to.put(&from.get(d).expect("readable")).expect("stored");
    }
}

/// The options of the fixture site's synthetic records.
pub fn fixture_options() -> Options {
    Options {
        records: 48,
        entries: 2,
        harness_tests: 4,
        references: 1,
        tasks: 2,
        seed: 7,
    }
}

/// A fixture store and manifest in `dir`: synthetic records on the fixture suite plus the
/// paper's reported data. Returns the manifest path.
pub fn make_fixture(dir: &Path, with_reported: bool) -> PathBuf {
    let store = Store::open(dir.join("artifacts")).without_sync();
    let reported = with_reported.then(|| {
        copy_closure(&committed_store(), &store, paper_import());
        paper_import()
    });
    let manifest = dir.join("manifest.yaml");
    synthetic::generate(
        &store,
        &fixture_suite(),
        &fixture_options(),
        &manifest,
        reported,
    )
    .expect("synthetic data");
    manifest
}

/// Loads the fixture site input from a fresh temp folder.
pub fn fixture_input() -> (tempfile::TempDir, SiteInput) {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = make_fixture(dir.path(), true);
    let input = SiteInput::load(
        &manifest,
        &Store::open(dir.path().join("artifacts")),
        fixture_suite(),
    )
    .expect("fixture input loads");
    (dir, input)
}

/// The GPU names of the two-GPU tests: as the records' devices give them.
pub const H100: &str = "NVIDIA H100 80GB HBM3";
pub const H200: &str = "NVIDIA H200";

/// The fixture input with its records replaced by two of one model's entry and task, a copy of
/// one correct timed record measured on each of `gpus` with every workload's speedup as given
/// (and a narrow interval around it), stored in the fixture store; no runs.
pub fn on_two_gpus(gpus: [(&str, f64); 2]) -> (tempfile::TempDir, SiteInput, String, String) {
    let (dir, mut input) = fixture_input();
    let store = Store::open(dir.path().join("artifacts"));
    let base = input
        .records
        .iter()
        .find(|r| {
            r.record.is_correct()
                && !r.record.is_harness_test()
                && r.record.model.is_some()
                && r.record.min_speedup().is_some()
        })
        .expect("a correct timed record of a model")
        .record
        .clone();
    let copy = |gpu: &str, speedup: f64| {
        let mut r = base.clone();
        r.previous_digest = None;
        r.turn = None;
        r.outcome.device.as_mut().expect("a device").name = gpu.to_string();
        for t in r
            .outcome
            .workloads
            .iter_mut()
            .filter_map(|w| w.timing.as_mut())
        {
            t.speedup = Some(speedup);
            t.speedup_ci95 = Some([speedup * 0.99, speedup * 1.01]);
        }
        let digest = ptxbench::record::put_record(&store, &r).expect("stored");
        let bytes = store.get(&digest).expect("readable").len() as u64;
        ptxbench::site::input::LoadedRecord {
            digest,
            record: r,
            runs: Vec::new(),
            bytes,
        }
    };
    input.records = gpus.iter().map(|(g, s)| copy(g, *s)).collect();
    input.runs.clear();
    (dir, input, base.entry, base.task)
}

pub fn bless() -> bool {
    std::env::var_os("PTXBENCH_BLESS").is_some_and(|v| v == "1")
}

/// The published leaderboard (the default manifest, the committed store and suite), built
/// once for the tests that read it.
pub fn published() -> &'static (SiteInput, Pages) {
    static SITE: std::sync::OnceLock<(SiteInput, Pages)> = std::sync::OnceLock::new();
    SITE.get_or_init(|| {
        let path = root().join("manifests/leaderboard.yaml");
        let suite = Suite::load(&root().join("tasks")).expect("suite loads");
        let input = SiteInput::load(&path, &committed_store(), suite).expect("loads");
        let pages = build(&input).expect("builds");
        (input, pages)
    })
}

pub fn page<'a>(pages: &'a Pages, path: &str) -> &'a str {
    pages.text(path).unwrap_or_else(|| panic!("no page {path}"))
}

/// Makes `r` what `generate --no-eval` stores: checked, never run (stage `not-evaluated`,
/// stored verdict `other`, no workloads, no evidence).
pub fn mark_unevaluated(r: &mut ptxbench::record::Record) {
    r.verdict = ptxbench::record::Verdict::Other;
    r.outcome.verdict = ptxbench::record::Verdict::Other;
    r.outcome.stage = ptxbench::record::Stage::NotEvaluated;
    r.outcome.workloads.clear();
    r.outcome.dynamic = None;
}

/// The text of the first element that opens with `open` (up to its closing `close`).
pub fn element<'a>(html: &'a str, open: &str, close: &str) -> &'a str {
    let at = html
        .find(open)
        .unwrap_or_else(|| panic!("no `{open}` on the page"));
    let rest = &html[at..];
    &rest[..rest.find(close).expect("the element ends")]
}
