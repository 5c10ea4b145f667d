//! Per-task ceilings: the library's time, the best reference kernel and the best model per
//! workload, recomputed here from the records by hand, and every one linked to its record.

use ptxbench::record::Verdict;
use ptxbench::site::context::EntryKind;
use ptxbench::site::{Context, build};

use crate::fixture_input;

#[test]
fn ceilings_are_the_median_library_time_and_the_best_records() {
    let (_dir, input) = fixture_input();
    let ctx = Context::new(&input).expect("context");
    assert!(
        !ctx.ceilings.tasks.is_empty(),
        "the fixture has timed records"
    );
    let mut seen_reference = false;
    let mut seen_model = false;
    for c in &ctx.ceilings.tasks {
        for w in &c.workloads {
            // By hand: every entry record of this arch, GPU and task that timed the workload.
            let mut times = Vec::new();
            let mut best: [Option<(f64, String)>; 2] = [None, None];
            for r in &input.records {
                let rec = &r.record;
                let gpu = rec.gpu_name().unwrap_or_default().to_string();
                if rec.is_harness_test()
                    || rec.task != c.task
                    || rec.arch.as_str() != c.arch
                    || gpu != c.gpu
                {
                    continue;
                }
                let Some(t) = rec
                    .outcome
                    .workloads
                    .iter()
                    .find(|x| x.workload == w.workload)
                    .and_then(|x| x.timing.as_ref())
                else {
                    continue;
                };
                if let Some(b) = &t.baseline {
                    times.push((b.median_ms, r.digest));
                }
                if rec.verdict == Verdict::Correct
                    && let Some(s) = t.speedup
                {
                    let kind = ctx.entry(&rec.entry).map(|e| e.kind).expect("known entry");
                    let slot = &mut best[usize::from(kind == EntryKind::Model)];
                    if slot.as_ref().is_none_or(|(b, _)| s > *b) {
                        *slot = Some((s, r.digest.to_string()));
                    }
                }
            }
            times.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let lib = w.library.as_ref().expect("a library time");
            assert_eq!(lib.records, times.len());
            assert_eq!(lib.ms, times[(times.len() - 1) / 2].0);
            assert_eq!(
                input.records[lib.record].digest,
                times[(times.len() - 1) / 2].1
            );
            for (got, want) in [(&w.reference, &best[0]), (&w.model, &best[1])] {
                match (got, want) {
                    (Some(g), Some((s, d))) => {
                        assert_eq!(g.speedup, *s, "{} {}", c.task, w.workload);
                        assert_eq!(&input.records[g.record].digest.to_string(), d);
                        assert!(input.records[g.record].record.is_correct());
                    }
                    (None, None) => {}
                    other => panic!("{} {}: {other:?}", c.task, w.workload),
                }
            }
            seen_reference |= w.reference.is_some();
            seen_model |= w.model.is_some();
        }
        // The smallest-over-workloads best of each kind is a correct record of that kind.
        for (b, kind) in [
            (&c.reference, EntryKind::Reference),
            (&c.model, EntryKind::Model),
        ] {
            if let Some(b) = b {
                let r = &input.records[b.record];
                assert!(r.record.is_correct());
                assert_eq!(ctx.entry(&r.record.entry).map(|e| e.kind), Some(kind));
                assert_eq!(r.record.task, c.task);
            }
        }
    }
    assert!(seen_reference && seen_model, "the fixture has both kinds");
}

#[test]
fn task_and_arch_pages_show_ceilings_linked_to_records() {
    let (_dir, input) = fixture_input();
    let ctx = Context::new(&input).expect("context");
    let pages = build(&input).expect("builds");
    let task = &ctx.ceilings.tasks[0];
    let page = pages
        .text(&format!("task/{}.html", task.task))
        .expect("the task page");
    let section = page
        .split("<h2 id=\"ceilings\">")
        .nth(1)
        .and_then(|s| s.split("<h2 id=\"results\">").next())
        .expect("a ceilings section before the results");
    for w in &task.workloads {
        assert!(section.contains(&format!("<code>{}</code>", w.workload)));
        let lib = w.library.as_ref().expect("library time");
        assert!(section.contains(&format!(
            "href=\"../record/{}.html\"",
            input.records[lib.record].digest
        )));
        for b in [&w.reference, &w.model].into_iter().flatten() {
            assert!(section.contains(&format!(
                "href=\"../record/{}.html\"",
                input.records[b.record].digest
            )));
        }
    }
    let arch = pages.text("arch/sm_90a.html").expect("arch page");
    let compact = arch
        .split("<h2 id=\"ceilings\">")
        .nth(1)
        .expect("a compact ceilings table");
    assert!(compact.contains(&format!("href=\"../task/{}.html#ceilings\"", task.task)));
    if let Some(b) = &task.reference {
        assert!(compact.contains(&format!(
            "href=\"../record/{}.html\"",
            input.records[b.record].digest
        )));
    }
    // The paper's best model on a task it reports is there too, as reported.
    assert!(compact.contains("Best model, reported"));
}

#[test]
fn tasks_with_reported_results_only_say_no_gpu_measured_them() {
    use ptxbench::site::pages::ceilings::CeilingSummary;
    let (_dir, input) = fixture_input();
    let ctx = Context::new(&input).expect("context");
    let mut reported_only = 0;
    for arch in &ctx.archs {
        let summary = CeilingSummary::new(&ctx, arch, &ptxbench::site::paths::arch(arch));
        for row in &summary.rows {
            assert!(
                !row.gpu.is_empty(),
                "{arch} {}: an empty GPU cell",
                row.task.text
            );
            let measured = ctx.ceilings.of(arch, &row.task.text).next().is_some();
            if !measured {
                reported_only += 1;
                assert_eq!(row.gpu, "—", "{arch} {}", row.task.text);
                assert_eq!(row.library.text, "not measured");
            }
        }
    }
    assert!(
        reported_only > 0,
        "the fixture's reported data has tasks no record measured"
    );
}
