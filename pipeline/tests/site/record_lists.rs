//! Pages that list records cut the list at `MAX_LISTED` and order it by entry, task, turn and
//! digest: the rows shown are the first of that order over all the records, not of some
//! part of them.

use ptxbench::site::pages::record::MAX_LISTED;
use ptxbench::site::{SiteInput, build, paths};
use ptxbench::store::Store;

use crate::{fixture_suite, synthetic};

/// The record digests (hex) a page's `record-list` table links, in row order.
fn listed(page: &str) -> Vec<String> {
    let start = page
        .find(r#"id="record-list""#)
        .expect("the page has a record list");
    let body = &page[start..page[start..].find("</table>").expect("closed") + start];
    body.split(r#"<td data-v=""#)
        .filter_map(|cell| {
            let href = cell.split(r#"<a href=""#).nth(1)?;
            let target = href.split('"').next()?;
            let hex = target.strip_prefix("../record/")?.strip_suffix(".html")?;
            Some(hex.to_string())
        })
        .collect()
}

#[test]
fn a_long_record_list_shows_the_first_records_in_entry_task_turn_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("artifacts")).without_sync();
    let manifest = dir.path().join("manifest.yaml");
    let opts = synthetic::Options {
        records: MAX_LISTED + 300,
        entries: 1,
        harness_tests: 0,
        references: 0,
        tasks: 2,
        seed: 11,
    };
    synthetic::generate(&store, &fixture_suite(), &opts, &manifest, None).expect("synthetic");
    let input = SiteInput::load(&manifest, &store, fixture_suite()).expect("loads");
    let site = build(&input).expect("builds");

    let mut all: Vec<_> = input.records.iter().collect();
    all.sort_by(|x, y| {
        (&x.record.entry, &x.record.task, x.record.turn, x.digest).cmp(&(
            &y.record.entry,
            &y.record.task,
            y.record.turn,
            y.digest,
        ))
    });
    let expected: Vec<String> = all
        .iter()
        .take(MAX_LISTED)
        .map(|r| r.digest.hex())
        .collect();
    assert!(all.len() > MAX_LISTED, "{} records", all.len());

    let run = paths::run(&input.runs[0].digest);
    let page = site.text(&run).expect("the run page");
    assert_eq!(listed(page), expected, "{run}");
    assert!(page.contains(&format!("Showing {MAX_LISTED} of {} records", all.len())));

    // A task's page lists only its records, in the same order.
    let task = &all[0].record.task;
    let of_task: Vec<String> = all
        .iter()
        .filter(|r| &r.record.task == task)
        .take(MAX_LISTED)
        .map(|r| r.digest.hex())
        .collect();
    let page = site.text(&paths::task(task)).expect("the task page");
    assert_eq!(listed(page), of_task, "task {task}");
}
