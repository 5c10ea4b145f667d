//! Long texts as pages show them: at most [`SHOWN_BYTES`] of each, so that a 50 MB model
//! response does not make a 50 MB page (the page says what it left out; the whole object is a
//! link away), and a prompt that is a chat transcript (the JSON array of messages `generate`
//! sends) as its messages, one block per message. Everything here is shown escaped.

use std::borrow::Cow;

use crate::generate::chat::Message;
use crate::site::format;

/// At most this many bytes of one text are shown on a page.
pub const SHOWN_BYTES: usize = 64 * 1024;

/// A text, or its first [`SHOWN_BYTES`].
#[derive(Debug, Clone)]
pub struct TextView<'a> {
    /// What is shown: the whole text, or its first lines up to [`SHOWN_BYTES`].
    pub shown: Cow<'a, str>,
    /// Lines of the whole text.
    pub lines: usize,
    /// Size of the whole text.
    pub size: String,
    /// Empty when the whole text is shown; else what was left out.
    pub cut: String,
}

/// How many lines `text` has, as `text.lines().count()` counts them (a last line needs no
/// line end), without a search per line.
pub fn line_count(text: &str) -> usize {
    let ends = text.bytes().filter(|&b| b == b'\n').count();
    ends + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// The longest prefix of `text` of at most `limit` bytes that ends at a line end (or, for a
/// first line longer than that, at a character boundary).
fn prefix(text: &str, limit: usize) -> &str {
    if text.len() <= limit {
        return text;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    match text[..end].rfind('\n') {
        Some(nl) if nl > 0 => &text[..=nl],
        _ => &text[..end],
    }
}

impl<'a> TextView<'a> {
    /// `text` as shown, cut at `limit` bytes.
    pub fn with_limit(text: Cow<'a, str>, limit: usize) -> TextView<'a> {
        let lines = line_count(&text);
        let size = format::bytes(text.len() as u64);
        let keep = prefix(&text, limit).len();
        if keep == text.len() {
            return TextView {
                shown: text,
                lines,
                size,
                cut: String::new(),
            };
        }
        let shown: Cow<'a, str> = match text {
            Cow::Borrowed(t) => Cow::Borrowed(&t[..keep]),
            Cow::Owned(mut t) => {
                t.truncate(keep);
                Cow::Owned(t)
            }
        };
        let shown_lines = line_count(&shown);
        let cut = format!(
            "Shown: the first {} ({} of {} lines) of {size}; the rest is left out of this page.",
            format::bytes(keep as u64),
            format::count(shown_lines as u64),
            format::count(lines as u64),
        );
        TextView {
            shown,
            lines,
            size,
            cut,
        }
    }

    /// `text` as shown, cut at [`SHOWN_BYTES`].
    pub fn new(text: impl Into<Cow<'a, str>>) -> TextView<'a> {
        TextView::with_limit(text.into(), SHOWN_BYTES)
    }

    /// "N lines".
    pub fn lines_text(&self) -> String {
        match self.lines {
            1 => "1 line".into(),
            n => format!("{} lines", format::count(n as u64)),
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone)]
pub struct MessageView<'a> {
    pub role: String,
    /// A CSS class: `system`, `user`, `assistant`, or `other` for any other role.
    pub class: &'static str,
    /// What the message is in this conversation (e.g. "the task", "feedback on turn 0").
    pub note: String,
    pub text: TextView<'a>,
}

fn role_class(role: &str) -> &'static str {
    match role {
        "system" => "system",
        "user" => "user",
        "assistant" => "assistant",
        _ => "other",
    }
}

/// The messages of `prompt` when it is a chat transcript (a JSON array of `role` and
/// `content`), else `None`. Each message is cut at [`SHOWN_BYTES`]; user messages after the
/// first assistant message are the feedback on the turn that answer was.
pub fn chat(prompt: &str) -> Option<Vec<MessageView<'static>>> {
    let trimmed = prompt.trim_start();
    if !trimmed.starts_with('[') {
        return None;
    }
    let messages: Vec<Message> = serde_json::from_str(trimmed).ok()?;
    if messages.is_empty() {
        return None;
    }
    let mut answers = 0usize;
    Some(
        messages
            .into_iter()
            .map(|m| {
                let note = match m.role.as_str() {
                    "system" => "system prompt".to_string(),
                    "user" if answers == 0 => "the task".to_string(),
                    "user" => format!("feedback on turn {}", answers - 1),
                    "assistant" => {
                        answers += 1;
                        format!("answer of turn {}", answers - 1)
                    }
                    _ => String::new(),
                };
                MessageView {
                    class: role_class(&m.role),
                    note,
                    text: TextView::new(Cow::Owned(m.content)),
                    role: m.role,
                }
            })
            .collect(),
    )
}

/// A message of a conversation that is not in the prompt (the response of this turn).
pub fn message<'a>(role: &str, note: impl Into<String>, text: &'a str) -> MessageView<'a> {
    MessageView {
        role: role.to_string(),
        class: role_class(role),
        note: note.into(),
        text: TextView::new(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_count_counts_as_lines_does() {
        for t in [
            "",
            "\n",
            "\n\n",
            "a",
            "a\n",
            "a\nb",
            "a\r\nb\r\n",
            "a\r",
            "\r\n",
            "é\nü",
            "x\n\ny",
        ] {
            assert_eq!(line_count(t), t.lines().count(), "{t:?}");
        }
    }

    #[test]
    fn long_texts_are_cut_at_a_line_end_and_say_so() {
        let text = "abc\n".repeat(100);
        let v = TextView::with_limit(Cow::Borrowed(&text), 10);
        assert_eq!(v.shown, "abc\nabc\n");
        assert_eq!(v.lines, 100);
        assert!(v.cut.contains("2 of 100 lines"), "{}", v.cut);
        let whole = TextView::with_limit(Cow::Borrowed(&text), 1000);
        assert!(whole.cut.is_empty());
        assert_eq!(whole.shown.len(), text.len());
        // One long line: cut at a character boundary, never inside a character.
        let wide = "é".repeat(20);
        let v = TextView::with_limit(Cow::Owned(wide), 7);
        assert_eq!(v.shown, "ééé");
        assert!(!v.cut.is_empty());
    }

    #[test]
    fn chat_transcripts_become_messages_and_other_text_does_not() {
        let p = r#"[{"role":"system","content":"be brief"},{"role":"user","content":"write <b>"},{"role":"assistant","content":"ok"},{"role":"user","content":"Result: numerical"}]"#;
        let m = chat(p).expect("a chat");
        assert_eq!(m.len(), 4);
        assert_eq!(m[1].note, "the task");
        assert_eq!(m[2].note, "answer of turn 0");
        assert_eq!(m[3].note, "feedback on turn 0");
        assert_eq!(m[3].class, "user");
        assert!(chat("# a markdown prompt\n[not json").is_none());
        assert!(chat("[1, 2]").is_none());
        assert!(chat("[]").is_none());
        let long = "x\n".repeat(SHOWN_BYTES);
        let big = message("assistant", "response", &long);
        assert_eq!(big.text.lines, SHOWN_BYTES);
        assert!(big.text.shown.len() <= SHOWN_BYTES);
        assert!(!big.text.cut.is_empty());
    }
}
