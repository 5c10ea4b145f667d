//! Lexer: turns PTX source text into tokens with 1-based line/column and
//! byte offsets. Comments (`//`, `/* */`) and old-style `@@DWARF` lines are
//! dropped. Never panics on any `&str`; the only errors are an unterminated
//! block comment or string literal. The token list always ends with one
//! [`TokenKind::Eof`] token.

use crate::error::{ParseError, ParseErrorKind};

/// Token categories. Words keep dots and `::` inside them, so a whole
/// opcode (`cp.async.bulk.tensor.2d.shared::cluster.global`), a directive
/// (`.reg`, `.shared::cta`), a register (`%r12`, `%tid.x`) or a label
/// (`$L__BB0_2`) is one token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// Identifier, directive, opcode, register: starts with a letter, `_`,
    /// `$`, `%`, or `.` followed by an identifier character.
    Word,
    /// Starts with a digit: integers (`0x1F`, `42U`), floats (`9.0`,
    /// `0f3F800000`).
    Number,
    /// A double-quoted string literal, quotes included in the text.
    Str,
    /// Any other single character.
    Punct(char),
    /// End of input.
    Eof,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Token<'a> {
    pub kind: TokenKind,
    pub text: &'a str,
    pub line: u32,
    pub col: u32,
    /// Byte offset of the first character.
    pub start: usize,
    /// Byte offset one past the last character.
    pub end: usize,
}

impl Token<'_> {
    pub(crate) fn is_punct(&self, c: char) -> bool {
        self.kind == TokenKind::Punct(c)
    }

    /// A word starting with `.` (a directive or a type/space keyword).
    pub(crate) fn is_dot_word(&self) -> bool {
        self.kind == TokenKind::Word && self.text.starts_with('.')
    }

    pub(crate) fn is_word(&self, w: &str) -> bool {
        self.kind == TokenKind::Word && self.text == w
    }

    /// Short description for error messages.
    pub(crate) fn describe(&self) -> String {
        match self.kind {
            TokenKind::Eof => "end of input".to_string(),
            _ => format!("`{}`", self.text),
        }
    }
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

fn is_word_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$' || c == '%'
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    line: u32,
    col: u32,
}

impl<'a> Lexer<'a> {
    fn rest(&self) -> &'a str {
        self.src.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn peek2(&self) -> Option<char> {
        self.rest().chars().nth(1)
    }

    fn peek3(&self) -> Option<char> {
        self.rest().chars().nth(2)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line = self.line.saturating_add(1);
            self.col = 1;
        } else {
            self.col = self.col.saturating_add(1);
        }
        Some(c)
    }

    fn skip_to_eol(&mut self) {
        while let Some(c) = self.peek() {
            if c == '\n' {
                break;
            }
            self.bump();
        }
    }

    /// Skips whitespace and comments.
    fn skip_trivia(&mut self) -> Result<(), ParseError> {
        loop {
            match (self.peek(), self.peek2()) {
                (Some(c), _) if c.is_whitespace() => {
                    self.bump();
                }
                (Some('/'), Some('/')) => self.skip_to_eol(),
                (Some('@'), Some('@')) => self.skip_to_eol(),
                (Some('/'), Some('*')) => {
                    let (line, col) = (self.line, self.col);
                    self.bump();
                    self.bump();
                    loop {
                        match self.peek() {
                            None => {
                                return Err(ParseError::new(
                                    ParseErrorKind::UnterminatedComment,
                                    line,
                                    col,
                                    "unterminated block comment",
                                ));
                            }
                            Some('*') if self.peek2() == Some('/') => {
                                self.bump();
                                self.bump();
                                break;
                            }
                            Some(_) => {
                                self.bump();
                            }
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn word_continues(&self) -> bool {
        match (self.peek(), self.peek2(), self.peek3()) {
            (Some(c), _, _) if is_ident_char(c) => true,
            (Some('.'), Some(c), _) if is_ident_char(c) => true,
            (Some(':'), Some(':'), Some(c)) if is_ident_char(c) => true,
            _ => false,
        }
    }

    fn next_token(&mut self) -> Result<Token<'a>, ParseError> {
        self.skip_trivia()?;
        let (start, line, col) = (self.pos, self.line, self.col);
        let kind = match (self.peek(), self.peek2()) {
            (None, _) => TokenKind::Eof,
            (Some(c), _) if c.is_ascii_digit() => {
                while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || c == '_' || c == '.')
                {
                    self.bump();
                }
                TokenKind::Number
            }
            (Some(c), next)
                if is_word_start(c) || (c == '.' && next.is_some_and(is_ident_char)) =>
            {
                self.bump();
                while self.word_continues() {
                    // `::` counts as two characters of the word.
                    if self.peek() == Some(':') {
                        self.bump();
                    }
                    self.bump();
                }
                TokenKind::Word
            }
            (Some('"'), _) => {
                self.bump();
                loop {
                    match self.peek() {
                        None | Some('\n') => {
                            return Err(ParseError::new(
                                ParseErrorKind::UnterminatedString,
                                line,
                                col,
                                "unterminated string literal",
                            ));
                        }
                        Some('\\') => {
                            self.bump();
                            if self.peek().is_some_and(|c| c != '\n') {
                                self.bump();
                            }
                        }
                        Some('"') => {
                            self.bump();
                            break;
                        }
                        Some(_) => {
                            self.bump();
                        }
                    }
                }
                TokenKind::Str
            }
            (Some(c), _) => {
                self.bump();
                TokenKind::Punct(c)
            }
        };
        let end = self.pos;
        Ok(Token {
            kind,
            text: self.src.get(start..end).unwrap_or(""),
            line,
            col,
            start,
            end,
        })
    }
}

/// Splits `src` into tokens. The last token is always `Eof`.
pub(crate) fn lex(src: &str) -> Result<Vec<Token<'_>>, ParseError> {
    let mut lexer = Lexer {
        src,
        pos: 0,
        line: 1,
        col: 1,
    };
    let mut tokens = Vec::new();
    loop {
        let tok = lexer.next_token()?;
        let eof = tok.kind == TokenKind::Eof;
        tokens.push(tok);
        if eof {
            return Ok(tokens);
        }
    }
}

/// Joins tokens back into text: one space where the source had whitespace
/// or a comment between two tokens, nothing where they touched.
pub(crate) fn join(tokens: &[Token<'_>]) -> String {
    let mut out = String::new();
    let mut prev_end: Option<usize> = None;
    for t in tokens {
        if let Some(end) = prev_end
            && t.start > end
        {
            out.push(' ');
        }
        out.push_str(t.text);
        prev_end = Some(t.end);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(TokenKind, String)> {
        lex(src)
            .expect("lexes")
            .into_iter()
            .map(|t| (t.kind, t.text.to_string()))
            .collect()
    }

    #[test]
    fn words_keep_dots_and_double_colons() {
        let toks = kinds("cp.async.bulk.tensor.2d.shared::cluster.global [%r1], [%rd1, {%r2}];");
        assert_eq!(
            toks[0],
            (
                TokenKind::Word,
                "cp.async.bulk.tensor.2d.shared::cluster.global".into()
            )
        );
        assert_eq!(toks[1], (TokenKind::Punct('['), "[".into()));
        assert_eq!(toks[2], (TokenKind::Word, "%r1".into()));
    }

    #[test]
    fn registers_ranges_and_numbers() {
        let toks = kinds(".reg .b32 %r<100>; .version 9.0");
        let texts: Vec<_> = toks.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(
            texts,
            [
                ".reg", ".b32", "%r", "<", "100", ">", ";", ".version", "9.0", ""
            ]
        );
    }

    #[test]
    fn comments_and_dwarf_lines_are_skipped() {
        let toks = kinds("a // x\n/* y\n z */ b\n@@DWARF .byte 1, 2\nc");
        let texts: Vec<_> = toks.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(texts, ["a", "b", "c", ""]);
    }

    #[test]
    fn positions_are_one_based() {
        let toks = lex("\n  foo bar").expect("lexes");
        assert_eq!((toks[0].line, toks[0].col), (2, 3));
        assert_eq!((toks[1].line, toks[1].col), (2, 7));
    }

    #[test]
    fn unterminated_comment_and_string() {
        let e = lex("a\n  /* never").expect_err("must fail");
        assert_eq!(
            (e.line, e.column, e.kind),
            (2, 3, ParseErrorKind::UnterminatedComment)
        );
        let e = lex(".file 1 \"abc").expect_err("must fail");
        assert_eq!(
            (e.line, e.column, e.kind),
            (1, 9, ParseErrorKind::UnterminatedString)
        );
    }

    #[test]
    fn join_keeps_touching_tokens_together() {
        let toks = lex("[%rd1+4],  {%r1,%r2}").expect("lexes");
        let n = toks.len() - 1;
        assert_eq!(join(&toks[..n]), "[%rd1+4], {%r1,%r2}");
    }
}
