//! A line diff of two texts (Myers' O((N+M)·D) greedy algorithm, after the common prefix and
//! suffix are set aside), grouped into hunks with context lines: how a kernel's PTX changed from
//! one turn to the next.
//!
//! Bounded so that no input can stall a site build: at most [`MAX_EDITS`] inserted plus deleted
//! lines and [`MAX_LINES`] lines between the common prefix and suffix; beyond that the answer is
//! [`LineDiff::TooLarge`], never a partial diff. The same two texts always give the same diff.

use std::collections::HashMap;

/// Most inserted plus deleted lines a diff is computed for (its trace takes about
/// `MAX_EDITS²` integers).
pub const MAX_EDITS: usize = 2000;
/// Most lines of the two texts together, outside their common prefix and suffix.
pub const MAX_LINES: usize = 200_000;

/// What a line of a diff is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Equal,
    Delete,
    Insert,
}

/// A line of a diff, with its 1-based line numbers in the old and the new text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine<'a> {
    pub op: Op,
    pub old: Option<usize>,
    pub new: Option<usize>,
    pub text: &'a str,
}

/// Consecutive changes with up to `context` equal lines around them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk<'a> {
    /// 1-based first line and count in the old text (as `diff -u` writes them).
    pub old_start: usize,
    pub old_len: usize,
    pub new_start: usize,
    pub new_len: usize,
    pub lines: Vec<DiffLine<'a>>,
}

impl Hunk<'_> {
    /// The `@@ -a,b +c,d @@` header.
    pub fn header(&self) -> String {
        format!(
            "@@ -{},{} +{},{} @@",
            self.old_start, self.old_len, self.new_start, self.new_len
        )
    }
}

/// The diff of two texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineDiff<'a> {
    /// The texts have the same lines.
    Same,
    Changed {
        hunks: Vec<Hunk<'a>>,
        added: usize,
        removed: usize,
    },
    /// Too different (more than [`MAX_EDITS`] changed lines) or too long to diff here.
    TooLarge { old_lines: usize, new_lines: usize },
}

/// The line diff of `old` and `new`, changes shown with `context` lines around them.
pub fn diff_lines<'a>(old: &'a str, new: &'a str, context: usize) -> LineDiff<'a> {
    // The same text has the same lines (a launch plan mostly stays as it was).
    if old == new {
        return LineDiff::Same;
    }
    let a = split_lines(old);
    let b = split_lines(new);
    let ops = match edit_script(&a, &b, MAX_EDITS, MAX_LINES) {
        Some(ops) => ops,
        None => {
            return LineDiff::TooLarge {
                old_lines: a.len(),
                new_lines: b.len(),
            };
        }
    };
    let added = ops.iter().filter(|o| o.op == Op::Insert).count();
    let removed = ops.iter().filter(|o| o.op == Op::Delete).count();
    if added == 0 && removed == 0 {
        return LineDiff::Same;
    }
    let lines: Vec<DiffLine<'a>> = ops
        .iter()
        .map(|o| DiffLine {
            op: o.op,
            old: o.old.map(|i| i + 1),
            new: o.new.map(|j| j + 1),
            text: match (o.op, o.old, o.new) {
                (Op::Insert, _, Some(j)) => b[j],
                (_, Some(i), _) => a[i],
                _ => "",
            },
        })
        .collect();
    LineDiff::Changed {
        hunks: hunks(&lines, context),
        added,
        removed,
    }
}

/// The lines of `text` as `str::lines` gives them (a `\r` before a `\n` belongs to the line
/// end), found by `str::split`, which searches a word at a time.
fn split_lines(text: &str) -> Vec<&str> {
    let mut out = Vec::with_capacity(crate::site::pages::text::line_count(text));
    // The lines that end with a line end, and a last one that does not: it keeps a `\r` it
    // ends with, as `str::lines` does.
    let (ended, last) = match text.strip_suffix('\n') {
        Some(ended) => (Some(ended), None),
        None => match text.rsplit_once('\n') {
            Some((ended, last)) => (Some(ended), Some(last)),
            None => (None, Some(text).filter(|t| !t.is_empty())),
        },
    };
    if let Some(ended) = ended {
        out.extend(ended.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)));
    }
    out.extend(last);
    out
}

/// One step of an edit script: 0-based indices into the old and new lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Step {
    op: Op,
    old: Option<usize>,
    new: Option<usize>,
}

/// The shortest edit script turning `a` into `b`, or `None` when it needs more than
/// `max_edits` edits or the lines outside the common prefix and suffix exceed `max_lines`.
fn edit_script<'t>(
    a: &[&'t str],
    b: &[&'t str],
    max_edits: usize,
    max_lines: usize,
) -> Option<Vec<Step>> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    if ma.len() + mb.len() > max_lines {
        return None;
    }
    // Lines as small integers: comparing them is then one instruction. The ids only decide
    // equality, so the map's order never shows.
    // std's randomly keyed hasher: the lines are model output, and a fixed-key hash would let
    // them be chosen to collide.
    let mut ids: HashMap<&'t str, u32> = HashMap::with_capacity(ma.len() + mb.len());
    let mut id = |s: &'t str| {
        let next = u32::try_from(ids.len()).unwrap_or(u32::MAX);
        *ids.entry(s).or_insert(next)
    };
    let xa: Vec<u32> = ma.iter().map(|&s| id(s)).collect();
    let xb: Vec<u32> = mb.iter().map(|&s| id(s)).collect();
    let middle = myers(&xa, &xb, max_edits)?;
    let mut out = Vec::with_capacity(prefix + middle.len() + suffix);
    for i in 0..prefix {
        out.push(Step {
            op: Op::Equal,
            old: Some(i),
            new: Some(i),
        });
    }
    for s in middle {
        out.push(Step {
            op: s.op,
            old: s.old.map(|i| i + prefix),
            new: s.new.map(|j| j + prefix),
        });
    }
    for k in 0..suffix {
        out.push(Step {
            op: Op::Equal,
            old: Some(a.len() - suffix + k),
            new: Some(b.len() - suffix + k),
        });
    }
    Some(out)
}

/// Myers' greedy shortest edit script of `a` into `b`, at most `max_edits` edits.
fn myers(a: &[u32], b: &[u32], max_edits: usize) -> Option<Vec<Step>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max_d = (a.len() + b.len()).min(max_edits) as isize;
    // v[k + off]: the furthest x on diagonal k (k = x - y) reached with d edits.
    let off = max_d + 1;
    let mut v = vec![0isize; (2 * max_d + 3) as usize];
    // v over k in -d-1..=d+1 as it was before step d (what backtracking reads), for every d
    // in turn: step d's 2d+3 values start at d² + 2d.
    let mut trace: Vec<isize> = Vec::new();
    let mut found = None;
    'search: for d in 0..=max_d {
        trace.extend_from_slice(&v[(off - d - 1) as usize..=(off + d + 1) as usize]);
        let mut k = -d;
        while k <= d {
            let down = k == -d || (k != d && v[(off + k - 1) as usize] < v[(off + k + 1) as usize]);
            let mut x = if down {
                v[(off + k + 1) as usize]
            } else {
                v[(off + k - 1) as usize] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[(off + k) as usize] = x;
            if x >= n && y >= m {
                found = Some(d);
                break 'search;
            }
            k += 2;
        }
    }
    let d_end = found?;
    let mut steps = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (0..=d_end).rev() {
        let start = (d * d + 2 * d) as usize;
        let t = &trace[start..start + (2 * d + 3) as usize];
        // t holds k in -d-1..=d+1 at index k + d + 1.
        let at = |k: isize| t[(k + d + 1) as usize];
        let k = x - y;
        let down = k == -d || (k != d && at(k - 1) < at(k + 1));
        let prev_k = if down { k + 1 } else { k - 1 };
        let prev_x = at(prev_k);
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            x -= 1;
            y -= 1;
            steps.push(Step {
                op: Op::Equal,
                old: Some(x as usize),
                new: Some(y as usize),
            });
        }
        if d > 0 {
            if down {
                y -= 1;
                steps.push(Step {
                    op: Op::Insert,
                    old: None,
                    new: Some(y as usize),
                });
            } else {
                x -= 1;
                steps.push(Step {
                    op: Op::Delete,
                    old: Some(x as usize),
                    new: None,
                });
            }
        }
    }
    steps.reverse();
    Some(steps)
}

/// Groups `lines` into hunks: each change with up to `context` equal lines before and after,
/// hunks closer than `2 * context` equal lines merged.
fn hunks<'a>(lines: &[DiffLine<'a>], context: usize) -> Vec<Hunk<'a>> {
    let changed: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.op != Op::Equal)
        .map(|(i, _)| i)
        .collect();
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for &i in &changed {
        let lo = i.saturating_sub(context);
        let hi = (i + context + 1).min(lines.len());
        match ranges.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => ranges.push((lo, hi)),
        }
    }
    ranges
        .into_iter()
        .map(|(lo, hi)| {
            let part = &lines[lo..hi];
            // Where the hunk starts in each text: the first line it has there, or (for a hunk
            // with none) the line after the last one before it, as `diff -u` counts.
            let start = |f: fn(&DiffLine<'a>) -> Option<usize>| {
                part.iter()
                    .find_map(f)
                    .unwrap_or_else(|| lines[..lo].iter().rev().find_map(f).map_or(0, |n| n + 1))
            };
            let old_len = part.iter().filter(|l| l.old.is_some()).count();
            let new_len = part.iter().filter(|l| l.new.is_some()).count();
            Hunk {
                old_start: if old_len == 0 {
                    start(|l| l.old).saturating_sub(1)
                } else {
                    start(|l| l.old)
                },
                old_len,
                new_start: if new_len == 0 {
                    start(|l| l.new).saturating_sub(1)
                } else {
                    start(|l| l.new)
                },
                new_len,
                lines: part.to_vec(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies the diff's lines: the old text from its equal and deleted lines, the new one
    /// from its equal and inserted lines.
    fn sides(ops: &[Step], a: &[&str], b: &[&str]) -> (Vec<String>, Vec<String>) {
        let mut old = Vec::new();
        let mut new = Vec::new();
        for s in ops {
            if let Some(i) = s.old {
                old.push(a[i].to_string());
            }
            if let Some(j) = s.new {
                new.push(b[j].to_string());
            }
            if s.op == Op::Equal {
                assert_eq!(a[s.old.expect("old")], b[s.new.expect("new")]);
            }
        }
        (old, new)
    }

    fn edits(ops: &[Step]) -> usize {
        ops.iter().filter(|s| s.op != Op::Equal).count()
    }

    #[test]
    fn lines_are_split_as_str_lines_splits_them() {
        for t in [
            "",
            "\n",
            "a",
            "a\n",
            "a\nb",
            "a\r\nb\r\n",
            "a\r",
            "a\rb\n",
            "\r\n\r\n",
            "é\n\nü",
            "a\r\nb\r",
            "a\n\r",
            "\n\n",
            "x\n\ny\r\n",
        ] {
            assert_eq!(split_lines(t), t.lines().collect::<Vec<_>>(), "{t:?}");
        }
    }

    #[test]
    fn the_script_rebuilds_both_texts_with_the_fewest_edits() {
        // Myers' own example: ABCABBA -> CBABAC needs 5 edits.
        let a: Vec<&str> = "A B C A B B A".split(' ').collect();
        let b: Vec<&str> = "C B A B A C".split(' ').collect();
        let ops = edit_script(&a, &b, 100, 1000).expect("small");
        assert_eq!(edits(&ops), 5);
        let (old, new) = sides(&ops, &a, &b);
        assert_eq!(old, a);
        assert_eq!(new, b);
        // Empty sides.
        let ops = edit_script(&[], &b, 100, 1000).expect("small");
        assert_eq!(edits(&ops), b.len());
        let ops = edit_script(&a, &[], 100, 1000).expect("small");
        assert_eq!(edits(&ops), a.len());
        assert!(edit_script(&[], &[], 100, 1000).expect("empty").is_empty());
    }

    #[test]
    fn random_pairs_round_trip_and_match_the_lcs_length() {
        let mut rng = crate::engine::estimate::SplitMix::new(11);
        for _ in 0..300 {
            let n = rng.below(14);
            let m = rng.below(14);
            let words = ["a", "b", "c", "d"];
            let a: Vec<&str> = (0..n).map(|_| words[rng.below(4)]).collect();
            let b: Vec<&str> = (0..m).map(|_| words[rng.below(4)]).collect();
            let ops = edit_script(&a, &b, 100, 1000).expect("small");
            let (old, new) = sides(&ops, &a, &b);
            assert_eq!(old, a);
            assert_eq!(new, b);
            // The shortest script: n + m - 2 * LCS edits (LCS by dynamic programming).
            let mut t = vec![vec![0usize; m + 1]; n + 1];
            for i in (0..n).rev() {
                for j in (0..m).rev() {
                    t[i][j] = if a[i] == b[j] {
                        t[i + 1][j + 1] + 1
                    } else {
                        t[i + 1][j].max(t[i][j + 1])
                    };
                }
            }
            assert_eq!(edits(&ops), n + m - 2 * t[0][0], "{a:?} -> {b:?}");
        }
    }

    #[test]
    fn hunks_have_context_and_unified_headers() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n";
        let new = "1\n2\n3\nfour\n5\n6\n7\n8\n9\n10\n11\n12\n13\n";
        let LineDiff::Changed {
            hunks,
            added,
            removed,
        } = diff_lines(old, new, 2)
        else {
            panic!("changed")
        };
        assert_eq!((added, removed), (2, 1));
        assert_eq!(hunks.len(), 2);
        assert_eq!(hunks[0].header(), "@@ -2,5 +2,5 @@");
        assert_eq!(hunks[0].lines[2].text, "4");
        assert_eq!(hunks[0].lines[2].op, Op::Delete);
        assert_eq!(hunks[0].lines[3].text, "four");
        assert_eq!(hunks[1].header(), "@@ -11,2 +11,3 @@");
        assert_eq!(diff_lines(old, old, 3), LineDiff::Same);
        // A pure insertion into an empty text.
        let LineDiff::Changed { hunks, .. } = diff_lines("", "x\n", 3) else {
            panic!("changed")
        };
        assert_eq!(hunks[0].header(), "@@ -0,0 +1,1 @@");
    }

    #[test]
    fn too_different_texts_are_refused_not_cut() {
        let old: String = (0..3000).map(|i| format!("old {i}\n")).collect();
        let new: String = (0..3000).map(|i| format!("new {i}\n")).collect();
        assert_eq!(
            diff_lines(&old, &new, 3),
            LineDiff::TooLarge {
                old_lines: 3000,
                new_lines: 3000
            }
        );
        // Long texts with a small change are fine: the common parts cost nothing.
        let mut changed = old.clone();
        changed.push_str("one more\n");
        assert!(matches!(
            diff_lines(&old, &changed, 3),
            LineDiff::Changed {
                added: 1,
                removed: 0,
                ..
            }
        ));
    }
}
