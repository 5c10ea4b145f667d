//! Issue 46: a record page says how its interval holds a re-run: the interval of this process's
//! pairs and the between-run component (its GPU model, size and source) it was widened by.

use ptxbench::site::{SiteInput, build};
use ptxbench::task::Suite;

use crate::{committed_store, root};

#[test]
fn issue_46_record_pages_name_the_between_run_component_of_their_interval() {
    let path = root().join("manifests/leaderboard.yaml");
    let suite = Suite::load(&root().join("tasks")).expect("suite loads");
    let input = SiteInput::load(&path, &committed_store(), suite).expect("loads");
    // The published records that carry a component.
    let widened: Vec<_> = input
        .records
        .iter()
        .filter(|r| {
            r.record
                .outcome
                .workloads
                .iter()
                .any(|w| w.timing.as_ref().is_some_and(|t| t.between_runs.is_some()))
        })
        .map(|r| r.digest.to_string())
        .collect();
    assert!(widened.len() >= 50, "{}", widened.len());
    let pages = build(&input).expect("builds");
    let records: Vec<&str> = pages
        .files
        .keys()
        .filter(|p| p.starts_with("record/") && p.ends_with(".html"))
        .map(String::as_str)
        .collect();
    for digest in &widened {
        let page = records
            .iter()
            .find(|p| p.contains(&digest[..12]))
            .unwrap_or_else(|| panic!("no record page for {digest}"));
        let html = pages.text(page).expect("text");
        assert!(
            html.contains("holds a re-run: this process&#39;s pairs gave"),
            "{page}"
        );
        assert!(
            html.contains("H200 between-run component (log sd 0.00")
                && html.contains("; artifacts/evidence/numbers-h200/)"),
            "{page}"
        );
    }
}
