//! Pulling the kernel code and the launch plan out of a model's free-text response.
//!
//! The prompt asks for exactly one kernel block (```ptx or ```cuda) and one launch-plan block
//! (```yaml). Models vary that: other language tags, `~~~` fences, indented fences, untagged
//! blocks, several drafts, a response cut off mid-block. Each variation is either resolved with
//! a note or rejected with an [`ExtractionError`] that says what was missing.

use std::fmt;

/// The language the kernel code is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelLang {
    /// PTX assembly.
    Ptx,
    /// CUDA C++ device code, possibly with inline PTX; compiled to PTX with NVRTC.
    Cuda,
}

impl fmt::Display for KernelLang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KernelLang::Ptx => "ptx",
            KernelLang::Cuda => "cuda",
        })
    }
}

/// What was found in a response.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Extracted {
    pub lang: KernelLang,
    pub kernel: String,
    pub plan: String,
    /// How an ambiguity was resolved (several drafts, untagged block, ...).
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtractionError {
    #[error(
        "the response has no fenced code block (expected a ```ptx or ```cuda kernel block and a ```yaml launch-plan block)"
    )]
    NoBlocks,
    #[error(
        "the response has no kernel block: none of its {0} code block(s) is PTX (```ptx) or CUDA C++ (```cuda)"
    )]
    NoKernel(usize),
    #[error("the response has no launch-plan block (```yaml with a top-level `launches:` list)")]
    NoPlan,
    // No guess at why: `generate` knows the reply's finish reason and says when it was the
    // token limit.
    #[error("the response ends inside a code block opened on line {line}")]
    Unterminated { line: usize },
    #[error("the kernel block is empty")]
    EmptyKernel,
}

/// A fenced block in the response.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Block {
    tag: String,
    body: String,
    /// 1-based line of the opening fence.
    line: usize,
    closed: bool,
}

fn fenced_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, usize, String, usize)> = None; // (fence, indent, tag, line)
    let mut body = String::new();
    for (i, raw) in text.lines().enumerate() {
        let trimmed = raw.trim_start();
        // In characters: a model may indent with tabs or non-ASCII spaces (U+00A0, U+3000).
        let indent = raw.chars().take_while(|c| c.is_whitespace()).count();
        match &open {
            None => {
                if let Some(fence) = fence_of(trimmed) {
                    let tag = trimmed[fence.len()..]
                        .trim()
                        .split(|c: char| c.is_whitespace() || c == '{')
                        .next()
                        .unwrap_or("")
                        .to_ascii_lowercase();
                    open = Some((fence, indent, tag, i + 1));
                    body.clear();
                }
            }
            Some((fence, ind, tag, line)) => {
                let t = trimmed.trim_end();
                if t.starts_with(fence.as_str())
                    && t.chars().all(|c| c == fence.chars().next().unwrap_or('`'))
                {
                    blocks.push(Block {
                        tag: tag.clone(),
                        body: std::mem::take(&mut body),
                        line: *line,
                        closed: true,
                    });
                    open = None;
                } else {
                    // Strip up to the fence's own indentation, as CommonMark does.
                    body.push_str(dedent(raw, *ind));
                    body.push('\n');
                }
            }
        }
    }
    if let Some((_, _, tag, line)) = open {
        blocks.push(Block {
            tag,
            body,
            line,
            closed: false,
        });
    }
    blocks
}

/// `line` without up to `n` leading whitespace characters (of any width in bytes).
fn dedent(line: &str, n: usize) -> &str {
    let mut rest = line;
    for _ in 0..n {
        let mut chars = rest.chars();
        match chars.next() {
            Some(c) if c.is_whitespace() => rest = chars.as_str(),
            _ => break,
        }
    }
    rest
}

fn fence_of(line: &str) -> Option<String> {
    for ch in ['`', '~'] {
        let n = line.chars().take_while(|&c| c == ch).count();
        if n >= 3 {
            return Some(std::iter::repeat_n(ch, n).collect());
        }
    }
    None
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Kernel(KernelLang),
    Plan,
    Other,
}

fn classify(b: &Block) -> (Kind, bool) {
    let by_tag = match b.tag.as_str() {
        "ptx" | "asm" | "nvptx" => Some(Kind::Kernel(KernelLang::Ptx)),
        "cuda" | "cu" | "cpp" | "c++" | "cxx" | "cc" | "c" | "cuh" => {
            Some(Kind::Kernel(KernelLang::Cuda))
        }
        "yaml" | "yml" | "launch" | "plan" | "launch-plan" | "launch_plan" | "json" => {
            if looks_like_plan(&b.body) {
                Some(Kind::Plan)
            } else {
                Some(Kind::Other)
            }
        }
        "" | "text" | "txt" | "plaintext" => None,
        _ => Some(Kind::Other),
    };
    if let Some(k) = by_tag {
        return (k, false);
    }
    // Untagged: sniff the content.
    let kind = if b.body.contains(".entry") || b.body.contains(".version") {
        Kind::Kernel(KernelLang::Ptx)
    } else if b.body.contains("__global__") {
        Kind::Kernel(KernelLang::Cuda)
    } else if looks_like_plan(&b.body) {
        Kind::Plan
    } else {
        Kind::Other
    };
    (kind, kind != Kind::Other)
}

fn looks_like_plan(body: &str) -> bool {
    body.lines().any(|l| {
        let l = l.trim_start_matches(['{', ' ', '"']);
        l.starts_with("launches")
    })
}

/// Extracts the kernel and plan; the last complete block of each kind wins.
pub fn extract(response: &str) -> Result<Extracted, ExtractionError> {
    let blocks = fenced_blocks(response);
    if blocks.is_empty() {
        return Err(ExtractionError::NoBlocks);
    }
    let mut notes = Vec::new();
    let mut kernels = Vec::new();
    let mut plans = Vec::new();
    let mut unterminated = None;
    for b in &blocks {
        if !b.closed {
            unterminated = Some(b.line);
            continue;
        }
        let (kind, sniffed) = classify(b);
        match kind {
            Kind::Kernel(lang) => {
                if sniffed {
                    notes.push(format!(
                        "the untagged block on line {} was read as {lang}",
                        b.line
                    ));
                }
                kernels.push((lang, b));
            }
            Kind::Plan => {
                if sniffed {
                    notes.push(format!(
                        "the untagged block on line {} was read as the launch plan",
                        b.line
                    ));
                }
                plans.push(b);
            }
            Kind::Other => {}
        }
    }
    let Some((lang, kernel)) = kernels.last() else {
        return Err(match unterminated {
            Some(line) => ExtractionError::Unterminated { line },
            None => ExtractionError::NoKernel(blocks.len()),
        });
    };
    let Some(plan) = plans.last() else {
        return Err(match unterminated {
            Some(line) => ExtractionError::Unterminated { line },
            None => ExtractionError::NoPlan,
        });
    };
    if kernels.len() > 1 {
        notes.push(format!(
            "{} kernel blocks; the last one (line {}) was used",
            kernels.len(),
            kernel.line
        ));
    }
    if plans.len() > 1 {
        notes.push(format!(
            "{} launch-plan blocks; the last one (line {}) was used",
            plans.len(),
            plan.line
        ));
    }
    if let Some(line) = unterminated {
        notes.push(format!(
            "ignored an unterminated block opened on line {line}"
        ));
    }
    if kernel.body.trim().is_empty() {
        return Err(ExtractionError::EmptyKernel);
    }
    Ok(Extracted {
        lang: *lang,
        kernel: kernel.body.clone(),
        plan: plan.body.clone(),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "launches:\n  - entry: k\n";

    #[test]
    fn tagged_blocks() {
        let r = format!("Here:\n```ptx\n.version 8.0\n```\nand\n```yaml\n{PLAN}```\n");
        let e = extract(&r).expect("extracts");
        assert_eq!(e.lang, KernelLang::Ptx);
        assert_eq!(e.kernel, ".version 8.0\n");
        assert_eq!(e.plan, PLAN);
        assert!(e.notes.is_empty());
    }

    #[test]
    fn cuda_tags_tildes_and_indentation() {
        let r = format!(
            "  ~~~cpp title=\"k.cu\"\n  __global__ void k() {{}}\n  ~~~\n````yml\n{PLAN}````\n"
        );
        let e = extract(&r).expect("extracts");
        assert_eq!(e.lang, KernelLang::Cuda);
        assert_eq!(e.kernel, "__global__ void k() {}\n");
    }

    #[test]
    fn untagged_blocks_are_sniffed_and_noted() {
        let r = format!("```\n.visible .entry k() {{ ret; }}\n```\n```\n{PLAN}```\n");
        let e = extract(&r).expect("extracts");
        assert_eq!(e.lang, KernelLang::Ptx);
        assert_eq!(e.notes.len(), 2, "{:?}", e.notes);
    }

    #[test]
    fn last_draft_wins() {
        let r = format!("```ptx\nold\n```\n```ptx\nnew\n```\n```yaml\n{PLAN}```\n");
        let e = extract(&r).expect("extracts");
        assert_eq!(e.kernel, "new\n");
        assert!(e.notes[0].contains("2 kernel blocks"));
    }

    #[test]
    fn yaml_that_is_not_a_plan_is_ignored() {
        let r = "```ptx\nk\n```\n```yaml\nfoo: 1\n```\n";
        assert_eq!(extract(r), Err(ExtractionError::NoPlan));
    }

    /// Indentation in characters of different widths (U+00A0 is 2 bytes, U+3000 3) is
    /// stripped by the character, up to the fence's own; slicing it by bytes panicked.
    #[test]
    fn issue_41_multibyte_indentation_is_stripped_by_the_character() {
        let r = format!(" ```ptx\n\u{a0}.version 8.0\n  ret;\n```\n```yaml\n{PLAN}```\n");
        let e = extract(&r).expect("extracts");
        assert_eq!(e.kernel, ".version 8.0\n ret;\n");
        let r = format!(
            "\u{3000}\u{3000}```ptx\n\u{3000} .version 8.0\n   ret;\n```\n```yaml\n{PLAN}```\n"
        );
        let e = extract(&r).expect("extracts");
        assert_eq!(e.kernel, ".version 8.0\n ret;\n");
        let r = format!("\t```ptx\n\t\u{a0}k\n```\n```yaml\n{PLAN}```\n");
        assert_eq!(extract(&r).expect("extracts").kernel, "\u{a0}k\n");
    }

    #[test]
    fn failures_say_what_is_missing() {
        assert_eq!(extract("no code at all"), Err(ExtractionError::NoBlocks));
        assert_eq!(
            extract("```python\nprint(1)\n```"),
            Err(ExtractionError::NoKernel(1))
        );
        assert_eq!(
            extract("```ptx\n.version 8.0\n```\n```yaml\nlaunches:\n  - entry"),
            Err(ExtractionError::Unterminated { line: 4 })
        );
        assert_eq!(
            extract(&format!("```ptx\n\n```\n```yaml\n{PLAN}```")),
            Err(ExtractionError::EmptyKernel)
        );
    }
}
