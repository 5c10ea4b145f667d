//! The models' default table is over the paper's five core definitions; the full suite is a
//! second table on the arch page, linked from it and from the overview (no script needed).

use ptxbench::metrics::Provenance;
use ptxbench::metrics::core_set::{CORE_TASKS, is_core};
use ptxbench::site::{Context, build};

use crate::fixture_input;

#[test]
fn core_rows_aggregate_only_the_core_tasks() {
    let (_dir, input) = fixture_input();
    let ctx = Context::new(&input).expect("context");
    assert!(!ctx.core_overall.is_empty());
    for o in &ctx.core_overall {
        let tasks: Vec<_> = ctx
            .metrics
            .tasks
            .iter()
            .filter(|t| {
                t.provenance == o.provenance
                    && t.entry == o.entry
                    && t.arch == o.arch
                    && t.turn_limit == o.turn_limit
                    && is_core(&t.task)
            })
            .collect();
        assert_eq!(o.tasks as usize, tasks.len(), "{} {}", o.entry, o.arch);
        assert!(o.tasks as usize <= CORE_TASKS.len());
        let correct: u32 = tasks.iter().map(|t| t.correct).sum();
        assert_eq!(o.correct, correct);
    }
    // The paper ran models on more than the core: somewhere the full suite differs.
    let differs = ctx.metrics.overall.iter().any(|f| {
        f.provenance == Provenance::Reported
            && ctx.core_overall.iter().all(|c| {
                !(c.entry == f.entry && c.arch == f.arch && c.turn_limit == f.turn_limit)
                    || c.tasks != f.tasks
            })
    });
    assert!(differs, "the fixture's reported data has non-core tasks");
}

#[test]
fn the_default_table_is_core_and_the_full_suite_is_one_link_away() {
    let (_dir, input) = fixture_input();
    let core = Context::new(&input).expect("context").core_tasks.len();
    assert_eq!(core, 5, "the paper's data has all five");
    let pages = build(&input).expect("builds");
    let arch = pages.text("arch/sm_90a.html").expect("arch page");
    let core_at = arch.find("id=\"lb-sm_90a\"").expect("the default table");
    let full_at = arch
        .find("id=\"lb-full-sm_90a\"")
        .expect("the full-suite table");
    assert!(core_at < full_at, "the core table comes first");
    assert!(
        arch.contains(&format!("over the {core} core tasks")),
        "its caption names the scope"
    );
    assert!(arch.contains("href=\"#full-suite\""));
    assert!(arch.contains("<h2 id=\"full-suite\">"));
    for t in ["gemm_n7168_k5120", "mha_with_lse_d128"] {
        assert!(arch.contains(t));
    }
    let index = pages.text("index.html").expect("index");
    assert!(index.contains("href=\"arch/sm_90a.html#full-suite\""));
    assert!(index.contains("core definitions"));
}
