//! Inputs: mutations of real files (lines cut, repeated, swapped, re-indented; hostile tokens,
//! random bytes and characters put in) and plain random bytes, all at most
//! [`crate::MAX_INPUT`] bytes.

use proptest::prelude::*;

/// YAML that parsers find hard: anchors and aliases, merge keys, tags, flow and block
/// punctuation, directives, out-of-range and odd numbers, YAML 1.1 booleans, control and
/// multi-byte characters.
pub const YAML_TOKENS: &[&str] = &[
    "&a ",
    "*a",
    "<<: *a",
    "!!binary ",
    "!!str ",
    "!!int ",
    "!!map ",
    "!custom ",
    "{",
    "}",
    "[",
    "]",
    "{}",
    "[]",
    "- ",
    ": ",
    "? ",
    ", ",
    "|",
    ">-",
    "'",
    "\"",
    "\\",
    "# ",
    "---\n",
    "...\n",
    "%YAML 1.1\n",
    "%TAG ! tag:x,2000:\n",
    "\t",
    "\r",
    "\r\n",
    "\n",
    "  ",
    "~",
    "null",
    "true",
    "yes",
    "N",
    "off",
    ".nan",
    ".inf",
    "-.inf",
    "1e999",
    "-1",
    "0",
    "-0",
    "0.5",
    "99999999999999999999",
    "-9223372036854775808",
    "9223372036854775807",
    "18446744073709551616",
    "0x7fffffffffffffff",
    "0o777",
    "1_000",
    "2026-13-45",
    "\u{feff}",
    "\u{0}",
    "\u{7}",
    "\u{85}",
    "\u{2028}",
    "\u{3000}",
    "é",
    "\u{10ffff}",
    "🦀",
];

/// One edit of a text.
#[derive(Debug, Clone)]
pub enum Edit {
    Truncate(usize),
    DeleteLine(usize),
    /// Repeat line `.0` `.1` times.
    RepeatLine(usize, u8),
    SwapLines(usize, usize),
    /// Repeat line `.0` up to `.1` times, up to [`crate::MAX_FLOOD`] bytes, its first word
    /// numbered (`k` becomes `k0`, `k1`, ...) when `.2`: long lists and maps with many keys.
    Flood(usize, u16, bool),
    /// Add (or, with a negative count, remove) leading spaces of a line.
    Indent(usize, i8),
    InsertToken(usize, &'static str),
    /// Replace the word (run of letters, digits, `_`, `.`, `-`) at a position with a token.
    ReplaceWord(usize, &'static str),
    InsertBytes(usize, Vec<u8>),
    ReplaceChar(usize, char),
}

/// An edit; `tokens` are what [`Edit::InsertToken`] and [`Edit::ReplaceWord`] put in.
pub fn edit(tokens: &'static [&'static str]) -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<usize>().prop_map(Edit::Truncate),
        any::<usize>().prop_map(Edit::DeleteLine),
        (any::<usize>(), 1u8..64).prop_map(|(i, n)| Edit::RepeatLine(i, n)),
        (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Edit::SwapLines(i, j)),
        (any::<usize>(), any::<u16>(), any::<bool>()).prop_map(|(i, n, k)| Edit::Flood(i, n, k)),
        (any::<usize>(), -8i8..8).prop_map(|(i, d)| Edit::Indent(i, d)),
        (any::<usize>(), prop::sample::select(tokens)).prop_map(|(i, t)| Edit::InsertToken(i, t)),
        (any::<usize>(), prop::sample::select(tokens)).prop_map(|(i, t)| Edit::ReplaceWord(i, t)),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(i, b)| Edit::InsertBytes(i, b)),
        (any::<usize>(), any::<char>()).prop_map(|(i, c)| Edit::ReplaceChar(i, c)),
    ]
}

/// Up to `n` edits.
pub fn edits(tokens: &'static [&'static str], n: usize) -> impl Strategy<Value = Vec<Edit>> {
    prop::collection::vec(edit(tokens), 1..=n)
}

fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '-')
}

/// `src` with one edit applied; never longer than [`crate::MAX_INPUT`] (an edit that would
/// make it longer is skipped).
pub fn apply(src: &str, e: &Edit) -> String {
    let lines: Vec<&str> = src.split('\n').collect();
    let n = lines.len();
    let at = |i: &usize| floor_boundary(src, i % (src.len() + 1));
    let out = match e {
        Edit::Truncate(i) => src.get(..at(i)).unwrap_or("").to_string(),
        Edit::DeleteLine(i) => {
            let i = i % n;
            let kept: Vec<&str> = lines
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, l)| *l)
                .collect();
            kept.join("\n")
        }
        Edit::RepeatLine(i, times) => {
            let i = i % n;
            let mut out: Vec<&str> = Vec::with_capacity(n + usize::from(*times));
            for (j, l) in lines.iter().enumerate() {
                out.push(l);
                if j == i {
                    out.extend(std::iter::repeat_n(*l, usize::from(*times)));
                }
            }
            out.join("\n")
        }
        Edit::SwapLines(i, j) => {
            let mut out = lines.clone();
            out.swap(i % n, j % n);
            out.join("\n")
        }
        Edit::Flood(i, times, numbered) => {
            let i = i % n;
            let line = lines.get(i).copied().unwrap_or("");
            // Where the first word ends: the copies are numbered there.
            let word_end = line.find(|c: char| c.is_alphanumeric()).and_then(|s| {
                line.get(s..)
                    .map(|w| s + w.find(|c: char| !is_word(c)).unwrap_or(w.len()))
            });
            let budget = crate::MAX_FLOOD.saturating_sub(src.len());
            let mut extra = String::new();
            for k in 0..usize::from(*times) {
                let copy = match word_end.filter(|_| *numbered) {
                    Some(e) => format!(
                        "{}{k}{}",
                        line.get(..e).unwrap_or(""),
                        line.get(e..).unwrap_or("")
                    ),
                    None => line.to_string(),
                };
                if extra.len() + copy.len() + 1 > budget {
                    break;
                }
                extra.push('\n');
                extra.push_str(&copy);
            }
            let mut out = lines.clone();
            out.insert(i + 1, extra.trim_start_matches('\n'));
            if extra.is_empty() {
                out.remove(i + 1);
            }
            out.join("\n")
        }
        Edit::Indent(i, d) => {
            let i = i % n;
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            if let Some(l) = out.get_mut(i) {
                if *d >= 0 {
                    l.insert_str(0, &" ".repeat(d.unsigned_abs().into()));
                } else {
                    let strip = l
                        .chars()
                        .take(d.unsigned_abs().into())
                        .take_while(|c| *c == ' ')
                        .count();
                    l.replace_range(..strip, "");
                }
            }
            out.join("\n")
        }
        Edit::InsertToken(i, t) => {
            let mut s = src.to_string();
            s.insert_str(at(i), t);
            s
        }
        Edit::ReplaceWord(i, t) => {
            let i = at(i);
            let start = src
                .get(..i)
                .and_then(|h| h.rfind(|c: char| !is_word(c)).map(|p| p + 1))
                .map(|p| floor_boundary(src, p))
                .unwrap_or(0);
            let end = src
                .get(i..)
                .and_then(|t| t.find(|c: char| !is_word(c)))
                .map_or(src.len(), |p| i + p);
            let mut s = src.to_string();
            if start <= end {
                s.replace_range(start..end, t);
            }
            s
        }
        Edit::InsertBytes(i, bytes) => {
            let mut b = src.as_bytes().to_vec();
            let i = at(i);
            b.splice(i..i, bytes.iter().copied());
            String::from_utf8_lossy(&b).into_owned()
        }
        Edit::ReplaceChar(i, c) => {
            let i = at(i);
            let mut s = src.to_string();
            if let Some(old) = s.get(i..).and_then(|r| r.chars().next()) {
                s.replace_range(i..i + old.len_utf8(), &c.to_string());
            }
            s
        }
    };
    if out.len() > crate::MAX_INPUT {
        src.to_string()
    } else {
        out
    }
}

/// `src` with every edit applied in turn.
pub fn apply_all(src: &str, edits: &[Edit]) -> String {
    edits.iter().fold(src.to_string(), |s, e| apply(&s, e))
}

/// Random bytes (at most 4 KiB), read as text the way a file of them is (`from_utf8_lossy`).
pub fn random_text() -> impl Strategy<Value = String> {
    prop::collection::vec(any::<u8>(), 0..4096).prop_map(|b| String::from_utf8_lossy(&b).into())
}

/// Text made of `tokens`, joined by spaces, newlines, indentation or nothing.
pub fn token_soup(tokens: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            prop::sample::select(tokens),
            prop::sample::select(&["", " ", "\n", "\n  ", "\n    ", ": ", "\n- "][..]),
        ),
        0..200,
    )
    .prop_map(|v| v.iter().flat_map(|(t, s)| [*t, *s]).collect())
}

/// YAML that nests flow sequences, flow maps or block maps thousands deep, or whose aliases
/// expand `fan`-fold at each of `levels` levels (a "billion laughs" at full size).
pub fn nesting_and_aliases() -> impl Strategy<Value = String> {
    prop_oneof![
        (1usize..20_000).prop_map(|d| format!("{}{}", "[".repeat(d), "]".repeat(d))),
        (1usize..20_000).prop_map(|d| "{a: ".repeat(d) + &"}".repeat(d)),
        (1usize..1_000).prop_map(|d| {
            (0..d)
                .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
                .collect::<String>()
        }),
        (2usize..16, 2usize..12).prop_map(|(levels, fan)| {
            let mut s = String::from("a0: &a0 [\"lol\"]\n");
            for l in 1..levels {
                let refs = vec![format!("*a{}", l - 1); fan].join(", ");
                s.push_str(&format!("a{l}: &a{l} [{refs}]\n"));
            }
            s.push_str(&format!("launches: *a{}\n", levels - 1));
            s
        }),
    ]
}
