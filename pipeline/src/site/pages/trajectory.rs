//! One generation trajectory's page: a model's turns on one task, in order, each with its
//! verdict and speedup, the feedback the model was sent after it (the last user message of
//! the next turn's prompt, checked against this turn's response) and how the kernel changed
//! from the turn before (line diffs of the PTX, of the CUDA source where there is one, and of
//! the launch plan).

use std::borrow::Cow;

use askama::Template;

use super::text::{SHOWN_BYTES, TextView};
use super::{Cell, Fact, Link, Page, verdict_class};
use crate::digest::Digest;
use crate::generate::chat::Message;
use crate::site::context::{Context, DigestLink};
use crate::site::diff::{LineDiff, Op, diff_lines};
use crate::site::format;
use crate::site::input::{Blob, LoadedRecord};
use crate::site::paths;
use crate::site::trajectory::Trajectory;

/// Context lines around each change of a diff.
const DIFF_CONTEXT: usize = 3;
/// Most lines of one diff shown, and most bytes of their text.
const DIFF_ROWS: usize = 3000;
const DIFF_BYTES: usize = SHOWN_BYTES;

#[derive(Debug)]
pub struct TrajectoryView<'c> {
    pub title: String,
    pub entry: Link,
    pub task: Link,
    pub arch: String,
    pub root: DigestLink,
    pub facts: Vec<Fact>,
    pub notes: Vec<String>,
    /// False when no turn was evaluated (`generate --no-eval`).
    pub evaluated: bool,
    pub turns: Vec<TurnView<'c>>,
}

/// One turn: its record, what came of it, what the model was told, what changed.
#[derive(Debug)]
pub struct TurnView<'c> {
    /// The anchor (`turn-<position>`).
    pub id: String,
    pub turn: String,
    pub record: Link,
    pub verdict: String,
    pub verdict_class: &'static str,
    pub stage: String,
    pub speedup: Cell,
    pub message: String,
    pub feedback: FeedbackView,
    pub diffs: Vec<DiffView<'c>>,
    /// One line for the table of turns: the changes from the turn before.
    pub change: String,
}

/// The feedback sent after a turn.
#[derive(Debug)]
pub struct FeedbackView {
    pub text: Option<TextView<'static>>,
    /// Where it comes from, or why there is none.
    pub note: String,
    /// A problem with the transcript (the next prompt does not repeat this answer).
    pub warning: String,
    /// The prompt it was taken from.
    pub source: Option<DigestLink>,
}

/// The diff of one text between two turns.
#[derive(Debug)]
pub struct DiffView<'c> {
    pub label: &'static str,
    pub summary: String,
    pub rows: Vec<DiffRow<'c>>,
    /// Empty when every row is shown.
    pub cut: String,
}

#[derive(Debug)]
pub struct DiffRow<'c> {
    /// `hunk`, `ctx`, `del` or `ins`.
    pub class: &'static str,
    /// 1-based line numbers in the old and the new text (none on a hunk header).
    pub old: Option<usize>,
    pub new: Option<usize>,
    /// The line (borrowed from the blob: a trajectory page can show thousands of them) or
    /// the hunk header.
    pub text: Cow<'c, str>,
}

impl DiffRow<'_> {
    /// The element a row is written as: `del` and `ins` for removed and added lines (what
    /// they mean, for screen readers too), `span` for context and a hunk header (`hunk`).
    /// One short tag a line, as a page can hold thousands of them.
    pub fn tag(&self) -> &'static str {
        match self.class {
            "del" => "del",
            "ins" => "ins",
            _ => "span",
        }
    }

    /// What the line is written after: `-` or `+` for a removed or added line, a space for
    /// context, nothing on a hunk header.
    pub fn sign(&self) -> &'static str {
        match self.class {
            "del" => "-",
            "ins" => "+",
            "hunk" => "",
            _ => " ",
        }
    }
}

#[derive(Debug, Template)]
#[template(path = "trajectory.html")]
pub struct TrajectoryPage<'a> {
    pub page: &'a Page,
    pub v: &'a TrajectoryView<'a>,
}

fn text_blob<'c>(ctx: &'c Context<'_>, d: Option<Digest>) -> Option<&'c str> {
    match ctx.input.blobs.get(&d?) {
        Some(Blob::Text(t)) => Some(t.as_str()),
        _ => None,
    }
}

fn turn_text(r: &LoadedRecord) -> String {
    r.record
        .turn
        .map_or_else(|| "—".to_string(), |t| t.to_string())
}

/// The feedback sent after record `this`: the last message of `next`'s prompt.
fn feedback(
    ctx: &Context<'_>,
    from: &str,
    this: &LoadedRecord,
    next: Option<&LoadedRecord>,
) -> FeedbackView {
    let none = |note: String| FeedbackView {
        text: None,
        note,
        warning: String::new(),
        source: None,
    };
    let Some(next) = next else {
        return none(
            "None: no later turn of this trajectory is in this site, so the conversation ended here (solved, the turn limit reached, or a harness failure; see the verdict)."
                .into(),
        );
    };
    let Some(pd) = next.record.prompt_digest else {
        return none(format!(
            "Not known: the record of turn {} names no prompt.",
            turn_text(next)
        ));
    };
    let source = Some(ctx.digest_link(from, &pd, "json"));
    let Some(prompt) = text_blob(ctx, Some(pd)) else {
        return FeedbackView {
            source,
            ..none("Not known: the next turn's prompt is not text.".into())
        };
    };
    let messages: Option<Vec<Message>> = serde_json::from_str(prompt).ok();
    let Some(mut messages) = messages.filter(|m| m.len() >= 2) else {
        return FeedbackView {
            source,
            ..none(
                "Not known: the next turn's prompt is not a chat transcript with an answer and a reply."
                    .into(),
            )
        };
    };
    let Some(last) = messages.pop().filter(|m| m.role == "user") else {
        return FeedbackView {
            source,
            ..none("Not known: the next turn's prompt does not end with a user message.".into())
        };
    };
    let answer = messages.pop();
    let response = text_blob(ctx, this.record.response_digest);
    let warning = match (answer, response) {
        (Some(a), Some(r)) if a.role == "assistant" && a.content == r => String::new(),
        (Some(a), _) if a.role != "assistant" => format!(
            "The message before it in the next prompt is a {} message, not this turn's answer.",
            a.role
        ),
        (Some(_), Some(_)) => {
            "The next prompt's previous answer differs from this turn's stored response.".into()
        }
        _ => "This turn's response is not stored as text, so the transcript cannot be checked against it.".into(),
    };
    FeedbackView {
        text: Some(TextView::new(last.content)),
        note: format!(
            "The user message that closes the prompt of turn {} (its record: {}).",
            turn_text(next),
            next.digest.short(12)
        ),
        warning,
        source,
    }
}

/// The rows of a diff, at most [`DIFF_ROWS`] of them and [`DIFF_BYTES`] of text.
fn diff_view<'c>(label: &'static str, old: Option<&'c str>, new: Option<&'c str>) -> DiffView<'c> {
    let (old, new) = match (old, new) {
        (Some(o), Some(n)) => (o, n),
        (None, Some(_)) => {
            return DiffView {
                label,
                summary: "new in this turn (the turn before has none)".into(),
                rows: Vec::new(),
                cut: String::new(),
            };
        }
        (Some(_), None) => {
            return DiffView {
                label,
                summary: "none in this turn (the turn before had one)".into(),
                rows: Vec::new(),
                cut: String::new(),
            };
        }
        (None, None) => {
            return DiffView {
                label,
                summary: "none in either turn".into(),
                rows: Vec::new(),
                cut: String::new(),
            };
        }
    };
    match diff_lines(old, new, DIFF_CONTEXT) {
        LineDiff::Same => DiffView {
            label,
            summary: "unchanged".into(),
            rows: Vec::new(),
            cut: String::new(),
        },
        LineDiff::TooLarge {
            old_lines,
            new_lines,
        } => DiffView {
            label,
            summary: format!(
                "rewritten: {} lines before, {} now, too different for a line diff here (compare the two records' blobs)",
                format::count(old_lines as u64),
                format::count(new_lines as u64)
            ),
            rows: Vec::new(),
            cut: String::new(),
        },
        LineDiff::Changed {
            hunks,
            added,
            removed,
        } => {
            let total: usize = hunks.iter().map(|h| h.lines.len() + 1).sum();
            let mut rows = Vec::new();
            let mut bytes = 0usize;
            'hunks: for h in &hunks {
                rows.push(DiffRow {
                    class: "hunk",
                    old: None,
                    new: None,
                    text: Cow::Owned(h.header()),
                });
                for l in &h.lines {
                    if rows.len() >= DIFF_ROWS || bytes >= DIFF_BYTES {
                        break 'hunks;
                    }
                    // At most 1000 characters of a line, cut at a character boundary (a line
                    // of at most 1000 bytes has at most 1000 characters).
                    let shown = if l.text.len() <= 1000 {
                        l.text
                    } else {
                        &l.text[..l
                            .text
                            .char_indices()
                            .nth(1000)
                            .map_or(l.text.len(), |(i, _)| i)]
                    };
                    bytes += shown.len();
                    let class = match l.op {
                        Op::Equal => "ctx",
                        Op::Delete => "del",
                        Op::Insert => "ins",
                    };
                    rows.push(DiffRow {
                        class,
                        old: l.old,
                        new: l.new,
                        text: Cow::Borrowed(shown),
                    });
                }
            }
            let cut = if rows.len() < total {
                format!(
                    "Shown: the first {} of {} lines of the diff.",
                    format::count(rows.len() as u64),
                    format::count(total as u64)
                )
            } else {
                String::new()
            };
            DiffView {
                label,
                summary: format!(
                    "+{} −{} lines in {} {}",
                    format::count(added as u64),
                    format::count(removed as u64),
                    hunks.len(),
                    if hunks.len() == 1 { "hunk" } else { "hunks" }
                ),
                rows,
                cut,
            }
        }
    }
}

pub fn view<'c>(ctx: &'c Context<'_>, t: &Trajectory) -> TrajectoryView<'c> {
    let records = &ctx.input.records;
    let from = paths::trajectory(&t.root);
    let first = &records[t.records[0]];
    let doc = &first.record;
    let entry = match ctx.entry(&doc.entry) {
        Some(e) if !doc.is_harness_test() => Link {
            text: e.display_name.clone(),
            href: paths::link(&from, &paths::entry(&e.slug)),
        },
        _ => Link {
            text: doc.entry.clone(),
            href: String::new(),
        },
    };
    let mut notes = Vec::new();
    let arch = doc.arch.to_string();
    if let Some(p) = ctx
        .entry(&doc.entry)
        .and_then(|e| e.pending.get(&arch))
        .filter(|p| p.unevaluated > 0)
    {
        notes.push(format!(
            "Not evaluated yet: {} of this model's answers on {arch} were checked and kept without running (generate --no-eval); until they run, none of its trajectories on {arch}, this one included, is in a rate or a ranking.",
            p.unevaluated
        ));
    }
    if let Some(p) = doc.previous_digest {
        notes.push(format!(
            "The first record here is turn {} and names a previous record, {}, that this site does not hold: the turns before it are not shown.",
            turn_text(first),
            p.short(12)
        ));
    }
    let mut turns = Vec::with_capacity(t.records.len());
    for (pos, &i) in t.records.iter().enumerate() {
        let r = &records[i];
        let rec = &r.record;
        let record_page = paths::link(&from, &paths::record(&r.digest));
        let prev = ctx.trajectories.previous(i).map(|p| &records[p]);
        let next = ctx.trajectories.next(i).map(|n| &records[n]);
        if prev.is_none() && pos > 0 {
            notes.push(format!(
                "Turn {} ({}) does not follow another record of this page: its previous record is not in this site.",
                turn_text(r),
                r.digest.short(12)
            ));
        }
        let diffs = match prev {
            Some(p) => {
                let mut d = vec![diff_view(
                    "PTX",
                    text_blob(ctx, p.record.ptx_digest),
                    text_blob(ctx, rec.ptx_digest),
                )];
                if p.record.kernel_source_digest.is_some() || rec.kernel_source_digest.is_some() {
                    d.push(diff_view(
                        "Kernel source (CUDA C++)",
                        text_blob(ctx, p.record.kernel_source_digest),
                        text_blob(ctx, rec.kernel_source_digest),
                    ));
                }
                d.push(diff_view(
                    "Launch plan",
                    text_blob(ctx, Some(p.record.plan_digest)),
                    text_blob(ctx, Some(rec.plan_digest)),
                ));
                d
            }
            None => Vec::new(),
        };
        let change = diffs
            .iter()
            .map(|d| format!("{}: {}", d.label, d.summary))
            .collect::<Vec<_>>()
            .join("; ");
        turns.push(TurnView {
            id: format!("turn-{pos}"),
            turn: turn_text(r),
            record: Link {
                text: r.digest.short(12),
                href: record_page.clone(),
            },
            verdict: super::record::shown_verdict(rec).to_string(),
            verdict_class: verdict_class(super::record::shown_verdict(rec)),
            stage: rec.outcome.stage.to_string(),
            speedup: Cell::speedup(rec.min_speedup()).linked(format!("{record_page}#timing")),
            message: format::shorten_line(&rec.outcome.message, 300),
            feedback: feedback(ctx, &from, r, next),
            diffs,
            change: if change.is_empty() {
                "—".into()
            } else {
                change
            },
        });
    }
    let last = &records[t.records[t.records.len() - 1]];
    let first_correct = t
        .records
        .iter()
        .map(|&i| &records[i])
        .find(|r| r.record.is_correct());
    let best = t
        .records
        .iter()
        .filter_map(|&i| records[i].record.min_speedup())
        .filter(|s| s.is_finite())
        .max_by(f64::total_cmp);
    let mut facts = Vec::new();
    if let Some(m) = &doc.model {
        facts.push(Fact {
            key: "model".into(),
            value: m.clone(),
        });
    }
    facts.extend([
        Fact {
            key: "turns here".into(),
            value: format!(
                "{} (turns {}–{})",
                t.records.len(),
                turn_text(first),
                turn_text(last)
            ),
        },
        Fact {
            key: "last verdict".into(),
            value: format!(
                "{} (turn {})",
                super::record::shown_verdict(&last.record),
                turn_text(last)
            ),
        },
        Fact {
            key: "first correct turn".into(),
            value: first_correct.map_or_else(|| "none".to_string(), turn_text),
        },
        Fact {
            key: "best min speedup".into(),
            value: format::opt_speedup(best),
        },
        Fact {
            key: "seed".into(),
            value: doc.seed.to_string(),
        },
    ]);
    TrajectoryView {
        title: format!("{} on {}", entry.text, doc.task),
        task: Link {
            text: doc.task.clone(),
            href: paths::link(&from, &paths::task(&doc.task)),
        },
        entry,
        arch: doc.arch.to_string(),
        root: ctx.digest_link(&from, &t.root, "json"),
        facts,
        notes,
        evaluated: t
            .records
            .iter()
            .any(|&i| crate::site::context::is_evaluated(&ctx.input.records[i].record)),
        turns,
    }
}
