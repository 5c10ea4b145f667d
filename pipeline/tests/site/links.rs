//! Every relative link of the output resolves; no external URL and no absolute path anywhere.

use ptxbench::manifest::Manifest;
use ptxbench::site::{SiteInput, build, linkcheck};
use ptxbench::task::Suite;

use crate::{committed_store, fixture_input, root};

#[test]
fn the_fixture_site_has_no_broken_or_external_links() {
    let (_dir, input) = fixture_input();
    let pages = build(&input).expect("builds");
    let problems = linkcheck::check(&pages);
    assert!(
        problems.is_empty(),
        "{}",
        problems
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
    let html = pages.files.keys().filter(|p| p.ends_with(".html")).count();
    assert!(html > 40, "{html} pages");
}

/// The published leaderboard itself: the default manifest, the committed store and suite.
#[test]
fn the_default_leaderboard_builds_and_its_links_resolve() {
    let path = root().join("manifests/leaderboard.yaml");
    let manifest = Manifest::load(&path).expect("manifest loads");
    let suite = Suite::load(&root().join("tasks")).expect("suite loads");
    let input =
        SiteInput::load(&path, &committed_store(), suite).expect("everything it names is stored");
    let pages = build(&input).expect("builds");
    // The outside links the manifest names on purpose, and no other.
    let allowed: Vec<String> = [
        &manifest.site.repository,
        &manifest.site.paper,
        &manifest.site.code_release,
    ]
    .into_iter()
    .flatten()
    .cloned()
    .collect();
    assert!(!linkcheck::check(&pages).is_empty() || allowed.is_empty());
    let problems = linkcheck::check_allowing(&pages, &allowed);
    assert!(
        problems.is_empty(),
        "{}",
        problems
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Every record and run of the manifest has its page.
    for r in &input.records {
        assert!(pages.get(&format!("record/{}.html", r.digest)).is_some());
    }
    for d in &manifest.runs {
        assert!(pages.get(&format!("run/{d}.html")).is_some());
    }
    let index = pages.text("index.html").expect("index");
    assert!(index.contains("badge reported"), "reported rows are badged");
}

#[test]
fn the_checker_finds_planted_problems() {
    let (_dir, input) = fixture_input();
    let mut pages = build(&input).expect("builds");
    pages.files.insert(
        "extra.html".into(),
        br#"<a href="index.html">ok</a><a href="nowhere.html">x</a><script src="https://cdn.example/x.js"></script><a href="/abs.html">a</a>"#.to_vec(),
    );
    let mut kinds: Vec<&str> = linkcheck::check(&pages).iter().map(|p| p.kind).collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [
            "absolute path",
            "broken link",
            "external URL",
            "external URL"
        ]
    );
}
