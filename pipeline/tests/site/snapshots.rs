//! Snapshots of a few pages and plots of the fixture site, as plain expected files under
//! fixtures/expected/. `PTXBENCH_BLESS=1 cargo test --test site` rewrites them.

use ptxbench::site::build;

use crate::{bless, fixture_input, fixtures};

/// (snapshot file, site path); `None` as the path picks the first correct record's page.
const SNAPSHOTS: &[(&str, Option<&str>)] = &[
    ("index.html", Some("index.html")),
    ("methodology.html", Some("methodology.html")),
    ("harness-tests.html", Some("harness-tests.html")),
    (
        "task-gemm_n7168_k5120.html",
        Some("task/gemm_n7168_k5120.html"),
    ),
    (
        "entry-synthetic-model-00.html",
        Some("entry/synthetic-model-00.html"),
    ),
    ("record-correct.html", None),
    (
        "sm_90a-best-speedup-measured-nvidia-h200.svg",
        Some("plots/sm_90a-best-speedup-measured-nvidia-h200.svg"),
    ),
    (
        "sm_90a-fast-p-measured-nvidia-h200.svg",
        Some("plots/sm_90a-fast-p-measured-nvidia-h200.svg"),
    ),
    (
        "sm_90a-rates-by-turn-limit-measured-nvidia-h200.svg",
        Some("plots/sm_90a-rates-by-turn-limit-measured-nvidia-h200.svg"),
    ),
    (
        "sm_90a-speedup-distribution-measured-nvidia-h200.svg",
        Some("plots/sm_90a-speedup-distribution-measured-nvidia-h200.svg"),
    ),
    ("results.csv", Some("data/results.csv")),
];

#[test]
fn pages_and_plots_match_their_snapshots() {
    let (_dir, input) = fixture_input();
    let pages = build(&input).expect("builds");
    let correct = input
        .records
        .iter()
        .find(|r| r.record.is_correct() && !r.record.is_harness_test())
        .map(|r| format!("record/{}.html", r.digest))
        .expect("a correct record");
    let mut stale = Vec::new();
    for (name, path) in SNAPSHOTS {
        let path = path.map_or(correct.clone(), str::to_string);
        let got = pages
            .get(&path)
            .unwrap_or_else(|| panic!("the site has no {path}"));
        let file = fixtures().join("expected").join(name);
        if bless() {
            std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
            std::fs::write(&file, got).expect("write snapshot");
        } else if std::fs::read(&file).ok().as_deref() != Some(got) {
            stale.push(file.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "output differs from snapshots (PTXBENCH_BLESS=1 to accept): {stale:?}"
    );
}

/// Model output is untrusted: it reaches pages escaped.
#[test]
fn untrusted_text_is_escaped() {
    let (_dir, input) = fixture_input();
    let pages = build(&input).expect("builds");
    let failing = input
        .records
        .iter()
        .find(|r| r.record.outcome.message.contains("<b>"))
        .expect("a synthetic failure message with markup");
    let page = pages
        .text(&format!("record/{}.html", failing.digest))
        .expect("record page");
    assert!(
        page.contains("&#60;b&#62;not html&#60;/b&#62;")
            || page.contains("&lt;b&gt;not html&lt;/b&gt;"),
        "escaped"
    );
    assert!(!page.contains("<b>not html</b>"));
    // Prompts contain `<exactly>` and `&`; they are shared by several records, so they are
    // shown on blob pages.
    let blob = pages
        .files
        .iter()
        .find(|(p, b)| p.starts_with("blob/") && String::from_utf8_lossy(b).contains("exactly"))
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .expect("a prompt's blob page");
    assert!(
        blob.contains("&#60;exactly&#62; &#38; carefully")
            || blob.contains("&lt;exactly&gt; &amp; carefully"),
        "escaped"
    );
    assert!(!blob.contains("<exactly>"));
}

/// Issue 14: full legends (never "… and N more") and a hover text on the points of every plot.
#[test]
fn plots_have_full_legends_and_point_titles() {
    let (_dir, input) = fixture_input();
    let pages = build(&input).expect("builds");
    let plots: Vec<(&String, &Vec<u8>)> = pages
        .files
        .iter()
        .filter(|(p, _)| p.starts_with("plots/"))
        .collect();
    assert!(plots.iter().any(|(p, _)| p.contains("-fast-p-")));
    for (path, bytes) in plots {
        let svg = std::str::from_utf8(bytes).expect("utf-8");
        assert!(!svg.contains("more</text>"), "{path} cuts its legend");
        assert!(
            svg.contains("<g class=\"tips\""),
            "{path} has no point titles"
        );
    }
}

/// Issue 14: the data page offers every table as CSV, JSON and Parquet, with its schema.
#[test]
fn data_page_offers_every_table_in_three_formats() {
    let (_dir, input) = fixture_input();
    let pages = build(&input).expect("builds");
    let page = pages.text("data.html").expect("data page");
    assert!(
        pages
            .text("index.html")
            .expect("index")
            .contains("href=\"data.html\"")
    );
    for stem in ["results", "records", "workloads"] {
        for ext in ["csv", "json", "parquet"] {
            let path = format!("data/{stem}.{ext}");
            assert!(pages.get(&path).is_some_and(|b| !b.is_empty()), "{path}");
            assert!(
                page.contains(&format!("href=\"{path}\"")),
                "{path} not linked"
            );
        }
    }
    let records = pages.text("data/records.csv").expect("records.csv");
    let header = records.lines().next().expect("header");
    for c in [
        "record",
        "gpu",
        "task_digest",
        "suite_digest",
        "previous_digest",
    ] {
        assert!(header.split(',').any(|h| h == c), "records.csv lacks {c}");
    }
    let workloads = pages.text("data/workloads.csv").expect("workloads.csv");
    assert!(workloads.starts_with("record,"));
    assert!(
        workloads
            .lines()
            .next()
            .expect("header")
            .contains("speedup_ci95_lo")
    );
    assert!(page.contains("ptxbench bundle manifests/"));
}
