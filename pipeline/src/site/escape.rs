//! The site templates' HTML escaper (askama's `escaper` setting in `askama.toml`): the same
//! bytes as askama's own `Html` escaper (`"` `&` `'` `<` `>` as `&#34;` `&#38;` `&#39;` `&#60;`
//! `&#62;`, everything else as it is), found eight bytes at a time instead of one. A site
//! escapes every text it shows (PTX, prompts, responses, diffs, logs), and askama's byte loop
//! took a quarter of the time spent making a record page.
//!
//! Output that must not be escaped (the plots' SVG) is written with `|safe`: askama skips its
//! `HtmlSafe` marker for escapers other than its own.

use std::fmt::{self, Write};

/// The escaper: see the module documentation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Html;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether some byte of `w` is zero (exact for the question "any", not for which one).
#[inline(always)]
fn has_zero_byte(w: u64) -> bool {
    w.wrapping_sub(ONES) & !w & HIGHS != 0
}

/// Whether some byte of `w` is one of `"&'<>`. `&` and `'` (0x26, 0x27) differ only in bit 0,
/// `<` and `>` (0x3C, 0x3E) only in bit 1, so three tests cover the five bytes.
#[inline(always)]
fn has_special(w: u64) -> bool {
    has_zero_byte(w ^ (b'"' as u64 * ONES))
        || has_zero_byte((w ^ (b'&' as u64 * ONES)) & !ONES)
        || has_zero_byte((w ^ (b'<' as u64 * ONES)) & !(2 * ONES))
}

/// The entity that stands for `b`, if `b` must be escaped.
#[inline(always)]
fn entity(b: u8) -> Option<&'static str> {
    match b {
        b'"' => Some("&#34;"),
        b'&' => Some("&#38;"),
        b'\'' => Some("&#39;"),
        b'<' => Some("&#60;"),
        b'>' => Some("&#62;"),
        _ => None,
    }
}

/// Writes `src` escaped to `dest`: unescaped runs in one write each.
pub fn write_escaped<W: Write>(mut dest: W, src: &str) -> fmt::Result {
    let bytes = src.as_bytes();
    // `last..` is not written yet. Every index cut at is that of an ASCII byte, so a char
    // boundary.
    let mut last = 0;
    let scan = |dest: &mut W, from: usize, part: &[u8], last: &mut usize| -> fmt::Result {
        for (k, &b) in part.iter().enumerate() {
            if let Some(e) = entity(b) {
                let at = from + k;
                if *last < at {
                    dest.write_str(&src[*last..at])?;
                }
                dest.write_str(e)?;
                *last = at + 1;
            }
        }
        Ok(())
    };
    let (words, tail) = bytes.as_chunks::<8>();
    for (i, w) in words.iter().enumerate() {
        if has_special(u64::from_le_bytes(*w)) {
            scan(&mut dest, 8 * i, w, &mut last)?;
        }
    }
    scan(&mut dest, 8 * words.len(), tail, &mut last)?;
    if last < src.len() {
        dest.write_str(&src[last..])?;
    }
    Ok(())
}

impl askama::filters::Escaper for Html {
    #[inline]
    fn write_escaped_str<W: Write>(&self, dest: W, string: &str) -> fmt::Result {
        write_escaped(dest, string)
    }

    #[inline]
    fn write_escaped_char<W: Write>(&self, mut dest: W, c: char) -> fmt::Result {
        match u8::try_from(c).ok().and_then(entity) {
            Some(e) => dest.write_str(e),
            None => dest.write_char(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use askama::filters::Escaper as _;

    fn ours(s: &str) -> String {
        let mut out = String::new();
        write_escaped(&mut out, s).expect("write to a String");
        out
    }

    fn askamas(s: &str) -> String {
        let mut out = String::new();
        askama::filters::Html
            .write_escaped_str(&mut out, s)
            .expect("write to a String");
        out
    }

    #[test]
    fn escapes_the_five_bytes_and_nothing_else() {
        assert_eq!(
            ours(r#"<a href="x">&'</a>"#),
            "&#60;a href=&#34;x&#34;&#62;&#38;&#39;&#60;/a&#62;"
        );
        assert_eq!(ours(""), "");
        assert_eq!(
            ours("plain text, 8+ bytes long"),
            "plain text, 8+ bytes long"
        );
        // Neighbours of the special bytes in every lane of a word stay as they are.
        let near = "!#%()*;=?[]{}~\u{7f}\u{0}$-.:@ \t\n";
        assert_eq!(ours(near), near);
        for c in 0u8..=0x7f {
            let s = (c as char).to_string().repeat(9);
            assert_eq!(ours(&s), askamas(&s), "byte {c:#x}");
        }
    }

    #[test]
    fn matches_askama_on_random_text() {
        // Every lane position, runs of specials, multi-byte characters across word edges.
        let alphabet: Vec<char> = "ab<>&\"' é€😀%.\n{}0x;".chars().collect();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..200 {
            for _ in 0..20 {
                let s: String = (0..len)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        alphabet[(state % alphabet.len() as u64) as usize]
                    })
                    .collect();
                assert_eq!(ours(&s), askamas(&s), "{s:?}");
            }
        }
    }

    #[test]
    fn chars_match_askama() {
        for c in ['<', '>', '&', '"', '\'', 'a', 'é', '😀', '\0'] {
            let mut a = String::new();
            let mut b = String::new();
            Html.write_escaped_char(&mut a, c).expect("write");
            askama::filters::Html
                .write_escaped_char(&mut b, c)
                .expect("write");
            assert_eq!(a, b, "{c:?}");
        }
    }
}
