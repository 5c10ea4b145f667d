//! The include policy for model-written CUDA C++: a header may be included only by a plain
//! relative name (`<cuda_bf16.h>`, `"cuda/std/cstdint"`), which NVRTC resolves in the CUDA
//! include folders alone (the compiler runs with `--no-source-include` in an empty folder).
//!
//! The screen is deliberately coarse: it looks for an include-like directive after every `#`
//! (and its spellings `%:` and `??=`), wherever it stands, after line splices are joined and
//! across comments, so that no layout of the text hides one from it. An absolute path, a `..`,
//! a name made by a macro (`#include HEADER`), `#include_next`, `#import`, `#embed` and
//! `__has_include` of anything but a plain name are refused, each with its line and text. A
//! false alarm (such text inside a string literal) costs a refused kernel, never a read file.

use std::fmt;

/// One include the policy refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// 1-based line of the source where the directive starts.
    pub line: usize,
    /// The directive as written (joined lines, at most 120 characters).
    pub text: String,
    pub reason: &'static str,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}: `{}` is refused: {}; only CUDA headers, named relative to the CUDA include folders (e.g. `#include <cuda_bf16.h>`), may be included",
            self.line, self.text, self.reason
        )
    }
}

/// Every include of `source` the policy refuses (empty: the source may be compiled).
pub fn screen(source: &str) -> Vec<Refused> {
    let (text, lines) = splice(source);
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let hash_len = if b[i] == b'#' {
            1
        } else if b[i..].starts_with(b"%:") {
            2
        } else if b[i..].starts_with(b"??=") {
            3
        } else if b[i..].starts_with(b"__has_") {
            let start = i;
            let (word, end) = word_at(b, i);
            i = end.max(i + 1);
            if word.starts_with("__has_include") || word.starts_with("__has_embed") {
                let after = skip_space(b, end);
                let operand_at = if b.get(after) == Some(&b'(') {
                    skip_space(b, after + 1)
                } else {
                    after
                };
                let reason = if word.starts_with("__has_embed") {
                    Some("`__has_embed` is not allowed")
                } else if word != "__has_include" {
                    Some("only `__has_include` of a plain header name is allowed")
                } else {
                    operand_problem(b, operand_at)
                };
                if let Some(reason) = reason {
                    out.push(refused(&text, &lines, start, reason));
                }
            }
            continue;
        } else {
            i += 1;
            continue;
        };
        let start = i;
        let name_at = skip_space(b, i + hash_len);
        let (word, end) = word_at(b, name_at);
        i = (i + hash_len).max(end);
        let reason = match word.as_str() {
            "include" => operand_problem(b, skip_space(b, end)),
            "include_next" => Some("`#include_next` is not allowed"),
            "import" => Some("`#import` is not allowed"),
            "embed" => Some("`#embed` is not allowed"),
            w if w.contains('\\') => Some("a directive name written with escapes is not allowed"),
            _ => None,
        };
        if let Some(reason) = reason {
            out.push(refused(&text, &lines, start, reason));
        }
    }
    out
}

/// The text with line splices (backslash-newline) removed, and the original line of each byte.
fn splice(source: &str) -> (String, Vec<usize>) {
    let mut text = String::with_capacity(source.len());
    let mut lines = Vec::with_capacity(source.len());
    let mut line = 1;
    let mut chars = source.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c == '\\' {
            let rest = &source[at + 1..];
            let skip = if rest.starts_with('\n') {
                Some(1)
            } else if rest.starts_with("\r\n") {
                Some(2)
            } else {
                None
            };
            if let Some(n) = skip {
                for _ in 0..n {
                    chars.next();
                }
                line += 1;
                continue;
            }
        }
        text.push(c);
        lines.extend(std::iter::repeat_n(line, c.len_utf8()));
        if c == '\n' {
            line += 1;
        }
    }
    (text, lines)
}

/// Skips blanks (not newlines) and block comments.
fn skip_space(b: &[u8], mut i: usize) -> usize {
    loop {
        match b.get(i) {
            Some(b' ' | b'\t' | b'\x0b' | b'\x0c' | b'\r') => i += 1,
            Some(b'/') if b.get(i + 1) == Some(&b'*') => {
                i = match find(b, i + 2, b"*/") {
                    Some(e) => e + 2,
                    None => b.len(),
                };
            }
            _ => return i,
        }
    }
}

fn find(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    b.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// The identifier at `i` (letters, digits, `_`, and `\` for universal character names).
fn word_at(b: &[u8], i: usize) -> (String, usize) {
    let mut end = i;
    while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_' || b[end] == b'\\') {
        end += 1;
    }
    (String::from_utf8_lossy(&b[i..end]).into_owned(), end)
}

/// Why the header name at `i` is refused, if it is.
fn operand_problem(b: &[u8], i: usize) -> Option<&'static str> {
    let close = match b.get(i) {
        Some(b'"') => b'"',
        Some(b'<') => b'>',
        _ => return Some("the header is not named by a literal `<name>` or `\"name\"`"),
    };
    let rest = &b[i + 1..];
    let Some(len) = rest.iter().position(|&c| c == close || c == b'\n') else {
        return Some("the header name is not closed");
    };
    if rest[len] != close {
        return Some("the header name is not closed");
    }
    name_problem(&String::from_utf8_lossy(&rest[..len]))
}

fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("the header name is empty");
    }
    if name.starts_with('/') || name.starts_with('~') {
        return Some("an absolute path");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-' | '+'))
    {
        return Some("the header name has characters other than letters, digits and `_./-+`");
    }
    if name.split('/').any(|part| part.is_empty() || part == "..") {
        return Some("a path that leaves the include folders (`..` or an empty part)");
    }
    None
}

fn refused(text: &str, lines: &[usize], start: usize, reason: &'static str) -> Refused {
    let shown: String = text[start..]
        .lines()
        .next()
        .unwrap_or("")
        .trim_end()
        .chars()
        .take(120)
        .collect();
    Refused {
        line: lines.get(start).copied().unwrap_or(1),
        text: shown,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reasons(src: &str) -> Vec<&'static str> {
        screen(src).into_iter().map(|r| r.reason).collect()
    }

    #[test]
    fn cuda_headers_by_plain_name_pass() {
        let src = "#include <cuda_bf16.h>\n#include \"cuda/std/cstdint\"\n  #  include <cuda/barrier>\n#if __has_include(<cuda_fp8.h>)\n#endif\n#define X(a) #a\n#pragma unroll\n";
        assert_eq!(screen(src), Vec::new());
    }

    #[test]
    fn reads_of_the_host_are_refused_in_every_spelling() {
        let attacks = [
            "#include \"/proc/self/environ\"",
            "#include </etc/shadow>",
            "#include \"../../../../etc/passwd\"",
            "#include \"cuda/../../../etc/passwd\"",
            "#define F \"/etc/shadow\"\n#include F",
            "%:include \"/proc/self/environ\"",
            "??=include \"/proc/self/environ\"",
            "#/* hidden */include \"/etc/shadow\"",
            "#\\\ninclude \"/etc/shadow\"",
            "#inc\\\nlude \"/etc/shadow\"",
            "#include \"/etc/\\\nshadow\"",
            "int x; /* */ #include \"/etc/shadow\"",
            "#include_next <secret.h>",
            "#import \"/etc/shadow\"",
            "#embed \"/etc/shadow\"",
            "#incl\\u0075de \"/etc/shadow\"",
            "#if __has_include(\"/etc/shadow\")\n#endif",
            "#if __has_embed(\"/etc/shadow\")\n#endif",
            "#include \"~/.ssh/id_rsa\"",
            "#include \"a\\\\b\"",
            "#include \"unterminated",
        ];
        for a in attacks {
            assert_eq!(reasons(a).len(), 1, "not refused: {a:?}");
        }
    }

    #[test]
    fn the_refusal_names_the_line_and_the_include() {
        let r = screen("// kernel\n__global__ void k() {}\n#include \"/proc/self/environ\"\n");
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].line, 3);
        let msg = r[0].to_string();
        assert!(msg.contains("line 3"), "{msg}");
        assert!(msg.contains("/proc/self/environ"), "{msg}");
        assert!(msg.contains("absolute path"), "{msg}");
    }

    #[test]
    fn a_spliced_directive_reports_its_first_line() {
        let r = screen("int a;\n#in\\\nclude \"/etc/shadow\"\n");
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].line, 2);
        assert!(
            r[0].text.contains("#include \"/etc/shadow\""),
            "{}",
            r[0].text
        );
    }
}
