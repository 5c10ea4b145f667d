//! Parse errors: where the input stopped making sense (1-based line and
//! column, columns counted in characters) and why, as a typed kind plus a
//! human-readable message. Displayed as `line L, column C: message`.

use serde::Serialize;

/// What went wrong, for callers that want to branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ParseErrorKind {
    /// A `/* ...` comment with no closing `*/`.
    UnterminatedComment,
    /// A `"...` string literal with no closing quote on its line.
    UnterminatedString,
    /// A `{` (function body, nested scope, `.section` block) never closed.
    UnterminatedBlock,
    /// A `(` parameter list never closed.
    UnterminatedParamList,
    /// A statement that needs a `;` reached the end of input or a `}`.
    MissingSemicolon,
    /// `.version` not followed by `MAJOR.MINOR`.
    BadVersion,
    /// A number that does not parse or does not fit.
    BadNumber,
    /// A directive this parser does not know in that position.
    UnknownDirective,
    /// Any other token that does not fit the grammar at that point.
    UnexpectedToken,
    /// The input ended in the middle of a construct.
    UnexpectedEof,
}

/// A parse failure with its position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct ParseError {
    /// 1-based line of the offending token.
    pub line: u32,
    /// 1-based column (in characters) of the offending token.
    pub column: u32,
    /// Human-readable description.
    pub message: String,
    /// Machine-readable category.
    pub kind: ParseErrorKind,
}

impl ParseError {
    pub(crate) fn new(
        kind: ParseErrorKind,
        line: u32,
        column: u32,
        message: impl Into<String>,
    ) -> Self {
        Self {
            line,
            column,
            message: message.into(),
            kind,
        }
    }
}
