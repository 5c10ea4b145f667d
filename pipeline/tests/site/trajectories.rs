//! Issue 14, item 4: a page per generation trajectory (turns, verdicts, the feedback sent, the
//! PTX diff between turns) and previous/next links on the records of a trajectory.

use ptxbench::site::{SiteInput, build, linkcheck};
use ptxbench::store::Store;
use ptxbench::task::Suite;

use crate::synthetic::{ChatTurn, conversation};
use crate::{committed_store, fixture_suite, root};

fn no_link_problems(pages: &ptxbench::site::Pages) {
    let problems = linkcheck::check(pages);
    assert!(
        problems.is_empty(),
        "{}",
        problems
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The loopback run of the committed store: four trajectories of four turns each, made by
/// `generate` against canned answers.
#[test]
fn the_loopback_trajectories_show_turns_feedback_and_diffs() {
    let path = root().join("manifests/loopback.yaml");
    let suite = Suite::load(&root().join("tasks")).expect("suite loads");
    let input = SiteInput::load(&path, &committed_store(), suite).expect("loads");
    let pages = build(&input).expect("builds");
    no_link_problems(&pages);
    let trajectories: Vec<&String> = pages
        .files
        .keys()
        .filter(|p| p.starts_with("trajectory/"))
        .collect();
    assert_eq!(trajectories.len(), 4, "{trajectories:?}");
    for t in trajectories {
        let page = pages.text(t).expect("utf-8");
        for turn in 0..4 {
            assert!(
                page.contains(&format!("id=\"turn-{turn}\"")),
                "{t}: turn {turn}"
            );
        }
        // Turns 0 to 2 were answered with feedback (what generate's feedback module writes);
        // the last one ended the conversation.
        assert_eq!(
            page.matches("Your answer was evaluated on task gemm_n4096_k4096")
                .count(),
            3,
            "{t}"
        );
        assert!(page.contains("no later turn of this trajectory"), "{t}");
        // The transcripts repeat each turn's stored response.
        assert!(!page.contains("differs from this turn"), "{t}");
        // The canned answers change the launch plan (the kernel's mode) between turns.
        assert!(
            page.contains("Launch plan: changes from the turn before"),
            "{t}"
        );
        assert!(
            page.contains("<ins><i></i><i>"),
            "{t}: no inserted line shown"
        );
    }
    // Every record of the run links to its trajectory and, except at the ends, both ways.
    for (i, r) in input.records.iter().enumerate() {
        let page = pages
            .text(&format!("record/{}.html", r.digest))
            .expect("record page");
        assert!(page.contains("href=\"../trajectory/"), "{}", r.digest);
        let turn = r.record.turn.expect("loopback records have turns");
        assert_eq!(page.contains("rel=\"prev\""), turn > 0, "record {i}");
        assert_eq!(page.contains("rel=\"next\""), turn < 3, "record {i}");
        if let Some(p) = r.record.previous_digest {
            assert!(
                page.contains(&format!("rel=\"prev\" href=\"../record/{p}.html\"")),
                "{}",
                r.digest
            );
        }
    }
}

/// Records without turns (run lists) form no trajectory: the default leaderboard has none.
#[test]
fn records_of_run_lists_have_no_trajectory() {
    let path = root().join("manifests/leaderboard.yaml");
    let suite = Suite::load(&root().join("tasks")).expect("suite loads");
    let input = SiteInput::load(&path, &committed_store(), suite).expect("loads");
    assert!(input.records.iter().all(|r| r.record.turn.is_none()));
    let pages = build(&input).expect("builds");
    assert!(!pages.files.keys().any(|p| p.starts_with("trajectory/")));
    assert!(!pages.files.iter().any(|(p, b)| p.starts_with("record/")
        && String::from_utf8_lossy(b).contains("aria-label=\"trajectory\"")));
}

fn hostile_turns() -> Vec<ChatTurn> {
    let ptx = |body: &str| {
        format!(".version 8.5\n.target sm_90a\n.visible .entry k()\n{{\n{body}\tret;\n}}\n")
    };
    vec![
        ChatTurn {
            response: "First try <script>alert(1)</script>".into(),
            ptx: None,
            verdict: ptxbench::record::Verdict::Extraction,
            feedback: Some("Result: extraction. </pre><script>alert(2)</script>".into()),
        },
        ChatTurn {
            response: "Second try".into(),
            ptx: Some(ptx("\tmov.u32 %r1, 1;\n\tst.global.u32 [%rd1], %r1;\n")),
            verdict: ptxbench::record::Verdict::Numerical,
            feedback: Some("Result: numerical & wrong".into()),
        },
        ChatTurn {
            response: "Third try".into(),
            ptx: Some(ptx("\tmov.u32 %r1, 2;\n\tst.global.u32 [%rd1], %r1;\n")),
            verdict: ptxbench::record::Verdict::Correct,
            feedback: None,
        },
    ]
}

fn conversation_site(
    tamper: bool,
) -> (tempfile::TempDir, SiteInput, Vec<ptxbench::digest::Digest>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("artifacts")).without_sync();
    let manifest = dir.path().join("manifest.yaml");
    let digests = conversation(
        &store,
        &fixture_suite(),
        &hostile_turns(),
        tamper,
        &manifest,
    )
    .expect("synthetic conversation");
    let input = SiteInput::load(&manifest, &store, fixture_suite()).expect("loads");
    (dir, input, digests)
}

#[test]
fn a_trajectory_page_escapes_model_output_and_diffs_the_ptx() {
    let (_dir, input, digests) = conversation_site(false);
    let pages = build(&input).expect("builds");
    no_link_problems(&pages);
    let page = pages
        .text(&format!("trajectory/{}.html", digests[0]))
        .expect("a page named by the first record");
    assert!(!page.contains("<script>alert"), "unescaped model output");
    assert!(page.contains("alert(2)"), "the feedback is shown");
    assert!(page.contains("numerical &#38; wrong") || page.contains("numerical &amp; wrong"));
    // Turn 1 brings the first PTX; turn 2 changes one line of it.
    assert!(page.contains("PTX: new in this turn"));
    assert!(page.contains("+1 −1 lines in 1 hunk"), "{page}");
    assert!(page.contains("<del><i>5</i><i></i>-\tmov.u32 %r1, 1;</del>"));
    assert!(page.contains("<ins><i></i><i>5</i>+\tmov.u32 %r1, 2;</ins>"));
    // The hunk header and a context line around the change.
    assert!(
        page.contains("<span class=\"hunk\"><i></i><i></i>@@ -"),
        "{page}"
    );
    assert!(page.contains("</del><ins>"), "{page}");
    assert!(page.contains("<span><i>4</i><i>4</i> "), "{page}");
    assert!(!page.contains("differs from this turn"));
    // The record pages show the conversation as messages, escaped.
    let last = pages
        .text(&format!("record/{}.html", digests[2]))
        .expect("record page");
    assert!(last.contains("<section class=\"message system\">"));
    assert!(last.contains("<section class=\"message assistant\">"));
    assert_eq!(last.matches("<section class=\"message user\">").count(), 3);
    assert!(!last.contains("<script>alert"));
    assert!(last.contains("feedback on turn 1"));
}

/// A transcript that does not repeat the model's stored answer is flagged, not trusted.
#[test]
fn a_transcript_that_rewrites_an_answer_is_flagged() {
    let (_dir, input, digests) = conversation_site(true);
    let pages = build(&input).expect("builds");
    let page = pages
        .text(&format!("trajectory/{}.html", digests[0]))
        .expect("trajectory page");
    assert_eq!(
        page.matches("previous answer differs from this turn")
            .count(),
        1,
        "only turn 0's answer was edited"
    );
}
