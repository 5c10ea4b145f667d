//! Suite versions on the pages: a record measured against an earlier definition of its task
//! shows its suite and is flagged, and a manifest held against another suite than the one the
//! site is built with says what that means.

use ptxbench::site::{SiteInput, build};
use ptxbench::store::Store;

use crate::synthetic::EARLIER_SUITE;
use crate::{fixture_input, fixture_suite, make_fixture};

#[test]
fn a_record_of_an_earlier_task_definition_is_flagged() {
    let (_dir, input) = fixture_input();
    let pages = build(&input).expect("builds");
    let (earlier, current): (Vec<_>, Vec<_>) = input.records.iter().partition(|r| {
        input
            .suites
            .get(&r.record.suite_hash)
            .is_some_and(|s| s.version == EARLIER_SUITE)
    });
    assert_eq!(earlier.len(), 1);
    let page = |r: &ptxbench::site::input::LoadedRecord| {
        pages
            .text(&format!("record/{}.html", r.digest))
            .expect("a record page")
            .to_string()
    };
    let flagged = page(earlier[0]);
    assert!(
        flagged.contains("Task changed: this record was measured against an earlier definition")
    );
    assert!(flagged.contains(&format!("<dd>{EARLIER_SUITE} (suite hash")));
    assert!(!page(current[0]).contains("Task changed"));
    let harness = pages.text("harness-tests.html").expect("page");
    assert_eq!(harness.matches("task changed</span>").count(), 1);
    let footer = pages.text("index.html").expect("page");
    assert!(
        footer.contains("1 measured record was made against an earlier definition of its task")
    );
    let methodology = pages.text("methodology.html").expect("page");
    assert!(
        methodology.contains(&format!("<tr><td>{EARLIER_SUITE}</td>")),
        "{methodology}"
    );
}

#[test]
fn a_manifest_of_another_suite_says_so_in_the_footer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = make_fixture(dir.path(), false);
    let text = std::fs::read_to_string(&manifest).expect("manifest");
    let other = text.replace("version: \"1.0.0\"", "version: \"0.1.0\"");
    let hash = fixture_suite().digest().to_string();
    let other = other.replace(
        &hash,
        &ptxbench::digest::Digest::of(b"another suite").to_string(),
    );
    assert_ne!(other, text);
    std::fs::write(&manifest, other).expect("write");
    let input = SiteInput::load(
        &manifest,
        &Store::open(dir.path().join("artifacts")),
        fixture_suite(),
    )
    .expect("loads");
    let pages = build(&input).expect("builds");
    let index = pages.text("index.html").expect("page");
    assert!(
        index.contains("not the suite its manifest names (0.1.0 ")
            && index.contains("results are compared with the tasks of 1.0.0"),
        "{index}"
    );
}
