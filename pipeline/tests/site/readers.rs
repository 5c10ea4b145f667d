//! Issue 44: the leaderboard as its readers meet it. Each test names the item of the issue it
//! checks; every one of them failed on the site before the change.

use ptxbench::metrics::Provenance;
use ptxbench::site::context::EntryKind;
use ptxbench::site::plots::{MAX_SERIES, panels};
use ptxbench::site::{Context, build};

use crate::{fixture_input, page, published};

/// The rows (`<tr ...>` to `</tr>`) of the table with id `id` on `html`.
fn rows<'a>(html: &'a str, id: &str) -> Vec<&'a str> {
    let Some(start) = html.find(&format!("id=\"{id}\"")) else {
        return Vec::new();
    };
    let table = &html[start..start + html[start..].find("</table>").expect("table ends")];
    let body = &table[table.find("<tbody>").expect("a body")..];
    body.split("<tr").skip(1).collect()
}

/// Item 1: records of `generate --no-eval` (checked, never run) count in no table, give
/// their entry no measured row (issue 59 lists it as not yet evaluated), and their pages say
/// "not evaluated", never "measured" or verdict `other`.
#[test]
fn issue_44_unevaluated_records_never_look_measured() {
    let (_dir, mut input) = fixture_input();
    let total = input.records.len();
    let entry = "synthetic-model-01";
    let mut unevaluated = Vec::new();
    for r in &mut input.records {
        if r.record.entry == entry {
            crate::mark_unevaluated(&mut r.record);
            unevaluated.push(r.digest);
        }
    }
    assert!(!unevaluated.is_empty());
    let ctx = Context::new(&input).expect("context");
    let e = ctx.entry(entry).expect("an entry with pending work");
    assert!(
        !e.provenances.contains(&Provenance::Measured),
        "an entry of unevaluated records is measured"
    );
    assert_eq!(
        e.pending.values().map(|p| p.unevaluated).sum::<usize>(),
        unevaluated.len()
    );
    assert!(ctx.metrics.overall.iter().all(|o| o.entry != entry));
    let harness = ctx.harness.len();
    let pages = build(&input).expect("builds");
    let index = page(&pages, "index.html");
    let measured = total - harness - unevaluated.len();
    assert!(
        index.contains(&format!("come from {measured} records evaluated")),
        "the index counts unevaluated records as evaluated"
    );
    assert!(index.contains(&format!("{} records were not evaluated", unevaluated.len())));
    let entry_page = page(&pages, &format!("entry/{}.html", e.slug));
    let h1 = &entry_page[entry_page.find("<h1>").expect("h1")..];
    let h1 = &h1[..h1.find("</h1>").expect("ends")];
    assert!(
        h1.contains("badge unevaluated") && !h1.contains("badge measured"),
        "{h1}"
    );
    for d in &unevaluated {
        let rec = page(&pages, &format!("record/{d}.html"));
        let lede = &rec[rec.find("class=\"lede\"").expect("lede")..];
        let lede = &lede[..lede.find("</p>").expect("ends")];
        assert!(lede.contains("badge unevaluated"), "{d}: {lede}");
        assert!(!lede.contains("badge measured"), "{d}: {lede}");
        assert!(rec.contains("ptxbench generate --no-eval"));
        assert!(
            !rec.contains("verdict other"),
            "{d}: shown as verdict other"
        );
    }
    let trajectories: Vec<&String> = pages
        .files
        .keys()
        .filter(|p| p.starts_with("trajectory/"))
        .filter(|p| {
            unevaluated
                .iter()
                .any(|d| page(&pages, p).contains(&d.to_string()))
        })
        .collect();
    assert!(!trajectories.is_empty());
    for t in trajectories {
        let html = page(&pages, t);
        assert!(html.contains("badge unevaluated"), "{t}");
        assert!(!html.contains("<dd>other"), "{t}: last verdict other");
    }
}

/// Item 2: "peak" had two meanings; the leaderboards' column is named for what it divides
/// by (the best library here), the record page's for the datasheet speed of light.
#[test]
fn issue_44_peak_has_one_meaning_per_column() {
    let (_input, pages) = published();
    let arch = page(pages, "arch/sm_90a.html");
    assert!(arch.contains(">Of best library</th>"));
    assert!(!arch.contains(">Peak</th>"));
    let record = pages
        .files
        .keys()
        .find(|p| {
            // A record that was timed: every record page has the section, an untimed one
            // says so in it.
            p.starts_with("record/") && {
                let html = page(pages, p);
                html.contains("id=\"timing\"") && !html.contains("Not timed (")
            }
        })
        .expect("a timed record's page");
    let record = page(pages, record);
    assert!(record.contains("Of datasheet speed of light</th>"));
    assert!(!record.contains("Fraction of peak"));
}

/// Item 3: an MMA share over 100% is explained where the column is, not only in the
/// methodology.
#[test]
fn issue_44_mma_share_over_100_is_explained_beside_the_table() {
    let (_input, pages) = published();
    for p in ["index.html", "arch/sm_90a.html"] {
        let html = page(pages, p);
        assert!(html.contains("MMA share<sup>†</sup>"), "{p}");
        assert!(html.contains("Honest kernels often exceed 100%"), "{p}");
    }
}

/// Item 4: reported (H100, the paper's grade) and measured (H200, correct on target) rows are
/// in tables of their own whose primary column names its grade; results.csv has a GPU column.
#[test]
fn issue_44_unlike_quantities_do_not_share_a_column() {
    let (_input, pages) = published();
    let arch = page(pages, "arch/sm_90a.html");
    let paper = rows(arch, "lb-paper-sm_90a");
    assert!(!paper.is_empty());
    assert!(paper.iter().all(|r| r.contains("data-prov=\"reported\"")));
    let caption = &arch[arch.find("id=\"lb-paper-sm_90a\"").expect("table")..];
    assert!(caption.contains("as the paper reports them (H100)"));
    assert!(caption.contains(">Correct with arch (paper&#39;s grade)</th>"));
    for id in ["lb-sm_90a", "ref-sm_90a"] {
        assert!(
            rows(arch, id)
                .iter()
                .all(|r| r.contains("data-prov=\"measured\"")),
            "{id}"
        );
    }
    let csv = page(pages, "data/results.csv");
    let header = csv.lines().next().expect("a header");
    assert!(
        header.starts_with("provenance,entry,kind,arch,gpu,"),
        "{header}"
    );
    assert!(
        csv.lines()
            .any(|l| l.starts_with("reported,Claude Opus 4.8,model,sm_90a,H100,"))
    );
    assert!(
        csv.lines()
            .any(|l| l.starts_with("measured,") && l.contains(",NVIDIA H200,"))
    );
}

/// Item 4, the full suite: the models' table over every task is split by source like the core
/// tables, so no column holds the paper's grade (once marked ‡) beside the grade measured
/// here; each caption names its source and GPU.
#[test]
fn issue_44_full_suite_tables_are_one_source_each() {
    let (_dir, input) = fixture_input();
    let pages = build(&input).expect("builds");
    let arch = page(&pages, "arch/sm_90a.html");
    let full = &arch[arch.find("<h2 id=\"full-suite\">").expect("the full suite")..];
    let caption = |id: &str| -> &str {
        let at = full.find(&format!("id=\"{id}\"")).expect(id);
        let c = &full[at..];
        &c[c.find("<caption>").expect("caption")..c.find("</caption>").expect("caption ends")]
    };
    for (id, prov, words, header) in [
        (
            "lb-full-sm_90a",
            "measured",
            "measured here (NVIDIA H200)",
            "Correct on target",
        ),
        (
            "lb-full-paper-sm_90a",
            "reported",
            "as the paper reports them (H100)",
            "Correct with arch (paper&#39;s grade)",
        ),
    ] {
        let rows = rows(full, id);
        assert!(!rows.is_empty(), "{id}: no rows");
        for r in &rows {
            assert!(r.contains(&format!("data-prov=\"{prov}\"")), "{id}: {r}");
            assert!(!r.contains('‡'), "{id}: a fallback mark in {r}");
        }
        let c = caption(id);
        assert!(c.contains(words), "{id}: {c}");
        assert!(c.contains("full suite"), "{id}: {c}");
        let table = &full[full.find(&format!("id=\"{id}\"")).expect(id)..];
        let head = &table[..table.find("</thead>").expect("a head")];
        assert!(head.contains(header), "{id}: {head}");
    }
    assert_eq!(
        full.matches("id=\"lb-full").count(),
        2,
        "two tables, no third"
    );
}

/// Items 4, 5 and 9: plots are small multiples, one source (and GPU) each, at most
/// [`MAX_SERIES`] series, naming the source and GPU; no ablation and no engine kernel in any.
#[test]
fn issue_44_plots_are_small_multiples_of_one_source() {
    let (input, pages) = published();
    let ctx = Context::new(input).expect("context");
    for arch in &ctx.archs {
        let panels = panels(&ctx, arch);
        assert!(!panels.is_empty());
        for p in &panels {
            assert!(p.entries.len() <= MAX_SERIES, "{arch} {}", p.source);
            assert!(!p.gpu.is_empty(), "{arch} {}: no GPU", p.source);
            for e in &p.entries {
                let kind = ctx.entry(e).expect("known").kind;
                assert!(
                    matches!(kind, EntryKind::Model | EntryKind::Reference),
                    "{e} ({kind:?}) drawn"
                );
                assert!(kind == EntryKind::Model || p.source == Provenance::Measured);
            }
        }
    }
    // Each plot file is one panel's: named after its source and GPU, and saying both.
    let mut drawn = std::collections::BTreeSet::new();
    let mut measured_gpus = std::collections::BTreeSet::new();
    for arch in &ctx.archs {
        for panel in panels(&ctx, arch) {
            let (words, gpu) = match panel.source {
                Provenance::Reported => {
                    let gpu = if arch == "sm_100a" { "B200" } else { "H100" };
                    assert_eq!(panel.gpu, gpu, "{arch}: the paper's GPU");
                    ("reported by the paper", gpu)
                }
                Provenance::Measured => {
                    measured_gpus.insert((arch.clone(), panel.gpu.clone()));
                    ("measured here", panel.gpu.as_str())
                }
            };
            let source = format!("{words}, {gpu}");
            for plot in PLOTS {
                let path = format!("plots/{}.svg", panel.name(plot));
                let Some(svg) = pages.text(&path) else {
                    continue;
                };
                assert!(svg.contains(&source), "{path}: does not name {source}");
                assert!(!svg.contains("Qwen3.6-27B-s"), "{path}: an ablation drawn");
                assert!(!svg.contains("simt-"), "{path}: an engine kernel drawn");
                drawn.insert(path);
            }
        }
    }
    let plots: std::collections::BTreeSet<String> = pages
        .files
        .keys()
        .filter(|p| p.starts_with("plots/"))
        .cloned()
        .collect();
    assert!(!plots.is_empty());
    assert_eq!(plots, drawn, "plots that are no panel's");
    // The default manifest's runs on the H200 and on an H100: a measured panel for each.
    for gpu in ["NVIDIA H100 80GB HBM3", "NVIDIA H200"] {
        assert!(
            measured_gpus.contains(&("sm_90a".to_string(), gpu.to_string())),
            "{gpu}: {measured_gpus:?}"
        );
    }
}

/// The plots a panel draws (the middle of [`Panel::name`]'s stems).
const PLOTS: [&str; 5] = [
    "best-speedup",
    "fast-p",
    "rates-by-turn-limit",
    "speedup-by-release-date",
    "speedup-distribution",
];

/// Item 5 (plots): intervals where they exist. Every measured point of a best-speedup plot
/// carries its 95% interval, none of the paper's does (it reports none), and the captions say
/// which, and how many intervals are too narrow to show as a bar.
#[test]
fn issue_44_plots_give_measured_intervals() {
    let (input, pages) = published();
    let ctx = Context::new(input).expect("context");
    let mut measured = 0;
    let mut seen = 0;
    for panel in ctx.archs.iter().flat_map(|a| panels(&ctx, a)) {
        let path = format!("plots/{}.svg", panel.name("best-speedup"));
        let Some(svg) = pages.text(&path) else {
            continue;
        };
        seen += 1;
        let tips = svg.matches("</title></circle>").count();
        let with_ci = svg.matches(" (95% interval ").count();
        assert!(tips > 0, "{path}: no points");
        if panel.source == Provenance::Measured {
            assert_eq!(
                with_ci, tips,
                "{path}: a measured point without its interval"
            );
            measured += 1;
        } else {
            assert_eq!(with_ci, 0, "{path}: an interval on reported data");
        }
    }
    assert!(measured > 0, "no measured best-speedup plot");
    assert_eq!(
        seen,
        pages
            .files
            .keys()
            .filter(|p| p.starts_with("plots/") && p.contains("best-speedup"))
            .count(),
        "a best-speedup plot of no panel"
    );
    let arch = page(pages, "arch/sm_90a.html");
    assert!(arch.contains("The paper reports no intervals, so none are drawn."));
    assert!(arch.contains("Vertical bars are the 95% intervals of the measured speedups"));
    assert!(arch.contains("intervals are narrower than their markers"));
}

/// Item 6: every page links the install and reproduce steps; those say where the store comes
/// from; record and run pages link their run's bundle, which the site holds.
#[test]
fn issue_44_reproduction_has_no_dead_end() {
    let (_input, pages) = published();
    for (path, _) in pages.files.iter().filter(|(p, _)| p.ends_with(".html")) {
        let html = page(pages, path);
        assert!(
            html.contains("class=\"reproduce-link\""),
            "{path}: no reproduce link"
        );
    }
    let data = page(pages, "data.html");
    let steps = &data[data.find("id=\"reproduce\"").expect("the section")..];
    assert!(steps.contains("ptxbench import FILE.zip"));
    assert!(steps.contains("<code>artifacts/</code>"));
    assert!(page(pages, "index.html").contains("https://github.com/zhang677/PTXBench"));
    let bundle_of = |html: &str| -> String {
        let at = html
            .find("class=\"bundle-link\" href=\"")
            .expect("a bundle link")
            + "class=\"bundle-link\" href=\"".len();
        html[at..at + html[at..].find('"').expect("ends")].to_string()
    };
    let mut checked = 0;
    for (path, _) in pages
        .files
        .iter()
        .filter(|(p, _)| p.starts_with("record/") || p.starts_with("run/"))
    {
        let html = page(pages, path);
        if path.starts_with("record/") {
            assert!(html.contains("class=\"audit-store\""), "{path}");
        }
        let href = bundle_of(html);
        let target = href.trim_start_matches("../");
        assert!(
            pages.get(target).is_some(),
            "{path}: {href} is not in the site"
        );
        checked += 1;
    }
    assert!(checked > 100, "{checked} pages");
}

/// Item 7: the harness-tests page shows the grade and the shares that make a cheat kernel
/// fail on target, and lists the tests of one GPU before the multi-GPU ones.
#[test]
fn issue_44_harness_page_shows_grades_and_orders_rows() {
    let (_input, pages) = published();
    let html = page(pages, "harness-tests.html");
    for h in [
        ">Correct on target</th>",
        ">MMA share</th>",
        ">Other share</th>",
    ] {
        assert!(html.contains(h), "{h}");
    }
    let tests = rows(html, "harness-tests");
    // A cheat kernel: correct, yet not correct on target.
    assert!(
        tests
            .iter()
            .any(|r| r.contains("<code>zoo-token-wgmma-tma</code>")
                && r.contains("verdict correct")
                && r.contains("class=\"grade-no\""))
    );
    let several: Vec<usize> = tests
        .iter()
        .enumerate()
        .filter(|(_, r)| r.contains("<td data-v=\"several\">"))
        .map(|(i, _)| i)
        .collect();
    assert!(!several.is_empty(), "no multi-GPU rows");
    assert!(several.iter().all(|i| *i >= tests.len() - several.len()));
    let checks = rows(html, "engine-checks");
    assert!(!checks.is_empty());
    assert!(checks.iter().all(|r| r.contains("<code>simt-")));
}

/// Item 9: the engine's `simt-*` kernels are not reference rows; a reference kernel has one
/// row per GPU it was measured on (one attempt), not one per turn limit; the paper's ablations
/// are not ranked as models; Gemini 3.1 Pro's release date says where it comes from.
#[test]
fn issue_44_rows_are_what_their_table_says() {
    let (_input, pages) = published();
    let arch = page(pages, "arch/sm_90a.html");
    let refs = rows(arch, "ref-sm_90a");
    assert!(!refs.is_empty());
    // (nvcc's own SIMT build, `nvcc-13-0-simt-…`, is a reference kernel.)
    assert!(refs.iter().all(|r| !r.contains(">simt-")));
    assert!(refs.iter().all(|r| !r.contains("data-turn=")));
    // (name, GPU) of each row: the GPU is under the source badge.
    let cell = |r: &'static str, open: &str, close: &str| -> &'static str {
        let at = r.find(open).unwrap_or_else(|| panic!("no {open} in {r}"));
        &r[at + open.len()..at + r[at..].find(close).expect("ends")]
    };
    let names: std::collections::BTreeSet<(&str, &str)> = refs
        .iter()
        .map(|r| {
            (
                cell(r, "class=\"name\"", "</td>"),
                cell(r, "<br><small>", "</small>"),
            )
        })
        .collect();
    assert_eq!(
        names.len(),
        refs.len(),
        "a reference kernel has several rows on one GPU"
    );
    let gpus: std::collections::BTreeSet<&str> = names.iter().map(|(_, g)| *g).collect();
    assert_eq!(
        gpus.into_iter().collect::<Vec<_>>(),
        ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]
    );
    let models = rows(arch, "lb-paper-sm_90a");
    assert!(models.iter().all(|r| !r.contains("Qwen3.6-27B-s")));
    let ablations = rows(arch, "ablation-sm_90a");
    assert!(ablations.iter().any(|r| r.contains("Qwen3.6-27B-s0")));
    let gemini = page(pages, "entry/gemini-3-1-pro.html");
    assert!(gemini.contains("2025-01-31"));
    assert!(gemini.contains("model_release_dates.csv"));
    assert!(gemini.contains("shown as the source gives it, not corrected"));
    assert!(!page(pages, "entry/claude-opus-4-8.html").contains("not corrected"));
}

#[test]
fn a_correctness_only_record_says_why_it_has_no_speedup() {
    let (_dir, mut input) = fixture_input();
    let digest = input.records[0].digest;
    input.records[0].record.correctness_only = true;
    let pages = build(&input).expect("builds");
    let rec = page(&pages, &format!("record/{digest}.html"));
    assert!(
        rec.contains("Correctness and evidence only: no timing was asked for"),
        "{digest}"
    );
    let other = input.records[1].digest;
    assert!(!page(&pages, &format!("record/{other}.html")).contains("no timing was asked for"));
}

/// Issue 56, finding 5: a record whose seed was given (by a service client, a run list, a
/// generation manifest) fixed every input in advance; it has its page, marked so, and no rank.
#[test]
fn issue_56_records_of_a_given_seed_are_never_ranked() {
    let (_dir, mut input) = fixture_input();
    let entry = "synthetic-model-01";
    let mut given = Vec::new();
    for r in &mut input.records {
        if r.record.entry == entry {
            r.record.seed_given = true;
            given.push(r.digest);
        }
    }
    assert!(!given.is_empty());
    let ctx = Context::new(&input).expect("context");
    assert!(ctx.entry(entry).is_none(), "ranked");
    assert!(ctx.metrics.overall.iter().all(|o| o.entry != entry));
    let pages = build(&input).expect("builds");
    let rec = page(&pages, &format!("record/{}.html", given[0]));
    assert!(rec.contains("kept out of rankings"), "the page says why");
}
