//! Model responses (`ptxbench::candidate::extract`): responses built from the real candidates
//! of `tasks/candidates/` and then mutated, fence soup (backticks and tildes, tags, indentation
//! with tabs and Unicode spaces, CRLF, unterminated blocks) and random bytes give a kernel and
//! a plan or an extraction error; what is extracted goes on to the PTX front end and the plan
//! parser as `ptxbench check` sends it.

use std::sync::Arc;

use proptest::prelude::*;

use ptxbench::candidate::plan::LaunchPlan;
use ptxbench::candidate::{Candidate, KernelLang};

use crate::mutate::{self, YAML_TOKENS};
use crate::plan::fixtures;
use crate::{bounded, config};

/// Pieces of Markdown a response is made of.
const PIECES: &[&str] = &[
    "```",
    "````",
    "~~~",
    "~~~~~",
    "``",
    "```ptx",
    "```cuda",
    "```yaml",
    "```yml {title=plan}",
    "```json",
    "```text",
    "```python",
    "```PTX",
    "\t```ptx",
    "   ```yaml",
    "\u{3000}```ptx",
    "\u{a0}\u{a0}```yaml",
    " \u{2003}```",
    "\u{3000}",
    "\u{a0}",
    "\t",
    ".version 8.0",
    ".target sm_90a",
    ".visible .entry k() { ret; }",
    "__global__ void k() {}",
    "launches:",
    "  - entry: k",
    "{\"launches\": []}",
    "Here is the kernel:",
    "",
    "\r",
    "é",
    "🦀",
];

/// A response made of [`PIECES`], one to a line, each indented by a chosen prefix.
fn fence_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            prop::sample::select(
                &[
                    "",
                    " ",
                    "  ",
                    "    ",
                    "\t",
                    "\u{3000}",
                    "\u{a0}",
                    " \u{3000}",
                ][..],
            ),
            prop::sample::select(PIECES),
            prop::sample::select(&["\n", "\r\n", "\n\n"][..]),
        ),
        0..80,
    )
    .prop_map(|v| v.iter().flat_map(|(i, p, e)| [*i, *p, *e]).collect())
}

/// A response as a model writes one: prose, the kernel block, the plan block, for a real
/// candidate (with its plan's fixture index).
fn real_response(which: usize) -> (usize, String) {
    let fx = &fixtures()[which % fixtures().len()];
    let text = format!(
        "Here is a kernel.\n\n```ptx\n{}```\n\nAnd its launch plan:\n\n```yaml\n{}```\n",
        fx.ptx, fx.plan
    );
    (which % fixtures().len(), text)
}

/// Extracts `text`; sends the kernel to the PTX parser and the plan to the plan parser with
/// fixture `which`'s task.
fn exercise(which: usize, text: String) {
    let fx = Arc::clone(&fixtures()[which % fixtures().len()]);
    bounded("model response", move || {
        match Candidate::from_response(&text) {
            Ok(c) => {
                assert!(!c.kernel.trim().is_empty(), "an empty kernel is refused");
                assert!(c.kernel.len() <= text.len() && c.plan.len() <= text.len());
                if c.lang == KernelLang::Ptx {
                    let _ = ptxbench_ptx::parse(&c.kernel);
                }
                if let Err(e) = LaunchPlan::parse_from(&c.plan, &fx.task, &c.plan_source) {
                    assert!(!e.problems.is_empty());
                }
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    });
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn fence_soup_extracts_or_fails_cleanly(which in any::<usize>(), text in fence_soup()) {
        exercise(which, text);
    }

    #[test]
    fn mutated_real_responses_extract_or_fail_cleanly(
        which in any::<usize>(),
        edits in mutate::edits(PIECES, 6),
        more in mutate::edits(YAML_TOKENS, 3),
    ) {
        let (which, text) = real_response(which);
        let text = mutate::apply_all(&mutate::apply_all(&text, &edits), &more);
        exercise(which, text);
    }

    #[test]
    fn random_bytes_extract_or_fail_cleanly(which in any::<usize>(), text in mutate::random_text()) {
        exercise(which, text);
    }
}
