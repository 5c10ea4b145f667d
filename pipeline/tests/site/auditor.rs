//! Issue 14, item 5: the auditor's kit. Every object the pages name is downloadable as its
//! exact bytes, every digest shown links, and long texts are cut so that no page is large.

use ptxbench::digest::Digest;
use ptxbench::site::{SiteInput, build};
use ptxbench::store::Store;

use crate::fixture_input;
use crate::fixture_suite;
use crate::synthetic::{ChatTurn, conversation};

#[test]
fn every_object_is_copied_byte_for_byte() {
    let (_dir, input) = fixture_input();
    let pages = build(&input).expect("builds");
    let objects: Vec<(&String, &Vec<u8>)> = pages
        .files
        .iter()
        .filter(|(p, _)| p.starts_with("objects/"))
        .collect();
    for (path, bytes) in &objects {
        let name: Digest = path["objects/".len()..].parse().expect("named by a digest");
        assert_eq!(Digest::of(bytes), name, "{path}");
    }
    for r in &input.records {
        let page = pages
            .text(&format!("record/{}.html", r.digest))
            .expect("record page");
        let json = format!("objects/{}", r.digest);
        assert!(pages.get(&json).is_some(), "{json}");
        assert!(
            page.contains(&format!(
                "href=\"../{json}\" download=\"{}.json\"",
                r.digest
            )),
            "the record's JSON is offered"
        );
        for d in [
            r.record.ptx_digest,
            r.record.response_digest,
            r.record.task_digest,
        ]
        .into_iter()
        .flatten()
        {
            assert!(pages.get(&format!("objects/{d}")).is_some(), "{d}");
        }
    }
    let run = &input.runs[0];
    assert!(pages.get(&format!("objects/{}", run.digest)).is_some());
    assert!(
        pages
            .get(&format!("objects/{}", run.run.list_digest))
            .is_some()
    );
}

/// Every digest a record, blob, run or trajectory page shows is a link, except hashes that
/// name no stored object (`task_hash`, `suite_hash`) and a page's own heading.
#[test]
fn every_digest_shown_links_to_its_object() {
    let (_dir, input) = fixture_input();
    let pages = build(&input).expect("builds");
    let unlinked_ok: Vec<String> = input
        .records
        .iter()
        .flat_map(|r| {
            [
                r.record.task_hash.to_string(),
                r.record.suite_hash.to_string(),
            ]
        })
        .chain(input.runs.iter().map(|r| r.run.suite_hash.to_string()))
        .collect();
    let mut checked = 0;
    for (path, bytes) in &pages.files {
        if !["record/", "blob/", "run/", "trajectory/"]
            .iter()
            .any(|p| path.starts_with(p))
        {
            continue;
        }
        let page = std::str::from_utf8(bytes).expect("utf-8");
        let body = &page[page.find("</h1>").expect("a heading")..];
        const OPEN: &str = "<code class=\"hash\">";
        let mut rest = body;
        while let Some(i) = rest.find(OPEN) {
            let before = &rest[..i];
            let after = &rest[i + OPEN.len()..];
            let hex = &after[..after.find('<').expect("closed")];
            rest = after;
            if hex.len() != 64 || unlinked_ok.iter().any(|u| u == hex) {
                continue;
            }
            checked += 1;
            assert!(
                before.ends_with("\">")
                    && before[before.rfind('<').expect("tag")..].starts_with("<a href="),
                "{path}: digest {hex} is not a link"
            );
        }
    }
    assert!(checked > 100, "{checked} digests checked");
}

/// Issue 14: a 50 MB model response made a 52 MB record page. It is cut on the page, whole in
/// `objects/`, and no page of the site is more than a few hundred KiB.
#[test]
fn a_50_mb_response_keeps_every_page_small() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("artifacts")).without_sync();
    let manifest = dir.path().join("manifest.yaml");
    let line = "<b>hostile</b> & a long answer line that goes on and on ......................\n";
    let response = line.repeat(50 * 1024 * 1024 / line.len());
    assert!(response.len() > 50_000_000);
    let ptx = format!(".version 8.5\n{}", "\tmov.u32 %r1, 1;\n".repeat(3_000_000));
    let turns = vec![
        ChatTurn {
            response: response.clone(),
            ptx: Some(ptx.clone()),
            verdict: ptxbench::record::Verdict::Numerical,
            feedback: Some("x".repeat(20 * 1024 * 1024)),
        },
        ChatTurn {
            response: "short".into(),
            ptx: Some(ptx),
            verdict: ptxbench::record::Verdict::Correct,
            feedback: None,
        },
    ];
    let digests = conversation(&store, &fixture_suite(), &turns, false, &manifest).expect("stored");
    let input = SiteInput::load(&manifest, &store, fixture_suite()).expect("loads");
    let pages = build(&input).expect("builds");
    let largest = pages
        .files
        .iter()
        .filter(|(p, _)| p.ends_with(".html"))
        .map(|(p, b)| (b.len(), p))
        .max()
        .expect("pages");
    eprintln!("largest page: {} bytes ({})", largest.0, largest.1);
    assert!(
        largest.0 < 1024 * 1024,
        "{} is {} bytes",
        largest.1,
        largest.0
    );
    let record = pages
        .text(&format!("record/{}.html", digests[0]))
        .expect("record page");
    assert!(
        record.contains("Shown: the first 64.0 KiB"),
        "the cut is stated"
    );
    let response_digest = Digest::of(response.as_bytes());
    assert!(record.contains(&format!("href=\"../objects/{response_digest}\" download")));
    assert!(!record.contains("<b>hostile</b>"));
    assert_eq!(
        pages.get(&format!("objects/{response_digest}")),
        Some(response.as_bytes()),
        "the whole response, byte for byte"
    );
    // The second turn's prompt repeats the response and carries the 20 MB feedback: both cut.
    let second = pages
        .text(&format!("record/{}.html", digests[1]))
        .expect("record page");
    assert!(second.matches("Shown: the first").count() >= 2);
}
