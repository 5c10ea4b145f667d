//! A small CSV table (RFC 4180: commas, `"` quoting with `""` escapes, LF or CRLF rows), read
//! as text cells. Invariant: every row has exactly as many cells as the header has columns.

/// A parsed CSV file: a header and rows of text cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Why a CSV file does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    #[error("empty file (no header)")]
    Empty,
    #[error("line {line}: {found} cells where the header has {expected}")]
    Width {
        line: usize,
        found: usize,
        expected: usize,
    },
    #[error("line {line}: unterminated quoted cell")]
    Unterminated { line: usize },
    #[error("line {line}: text after a closing quote")]
    AfterQuote { line: usize },
}

impl Table {
    /// Parses CSV text.
    pub fn parse(text: &str) -> Result<Table, TableError> {
        let mut records = parse_records(text)?.into_iter();
        let (_, columns) = records.next().ok_or(TableError::Empty)?;
        let mut rows = Vec::new();
        for (line, row) in records {
            if row.len() != columns.len() {
                return Err(TableError::Width {
                    line,
                    found: row.len(),
                    expected: columns.len(),
                });
            }
            rows.push(row);
        }
        Ok(Table { columns, rows })
    }

    /// The index of a column by name.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// The cell of `row` in column `name`.
    pub fn get(&self, row: usize, name: &str) -> Option<&str> {
        let c = self.column(name)?;
        self.rows.get(row)?.get(c).map(String::as_str)
    }
}

/// Records with the line number each starts on (1-based). A blank last line is not a record.
fn parse_records(text: &str) -> Result<Vec<(usize, Vec<String>)>, TableError> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while chars.peek().is_some() {
        let start = line;
        let mut row = Vec::new();
        let mut cell = String::new();
        loop {
            match chars.next() {
                None => {
                    row.push(std::mem::take(&mut cell));
                    break;
                }
                Some('"') if cell.is_empty() => {
                    loop {
                        match chars.next() {
                            None => return Err(TableError::Unterminated { line: start }),
                            Some('"') if chars.peek() == Some(&'"') => {
                                chars.next();
                                cell.push('"');
                            }
                            Some('"') => break,
                            Some(c) => {
                                if c == '\n' {
                                    line += 1;
                                }
                                cell.push(c);
                            }
                        }
                    }
                    match chars.peek() {
                        None | Some(',') | Some('\n') | Some('\r') => {}
                        Some(_) => return Err(TableError::AfterQuote { line }),
                    }
                }
                Some(',') => row.push(std::mem::take(&mut cell)),
                Some('\r') if chars.peek() == Some(&'\n') => {}
                Some('\n') => {
                    line += 1;
                    row.push(std::mem::take(&mut cell));
                    break;
                }
                Some(c) => cell.push(c),
            }
        }
        out.push((start, row));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_quotes_and_crlf() {
        let t = Table::parse("a,b,c\r\n1,\"H, B\",\"say \"\"hi\"\"\"\r\n2,,x\n").expect("valid");
        assert_eq!(t.columns, ["a", "b", "c"]);
        assert_eq!(t.rows[0], ["1", "H, B", "say \"hi\""]);
        assert_eq!(t.get(1, "c"), Some("x"));
        assert_eq!(t.get(1, "b"), Some(""));
    }

    #[test]
    fn rejects_ragged_rows_and_open_quotes() {
        assert!(matches!(
            Table::parse("a,b\n1\n"),
            Err(TableError::Width { line: 2, .. })
        ));
        assert!(matches!(
            Table::parse("a\n\"x\n"),
            Err(TableError::Unterminated { .. })
        ));
        assert!(matches!(Table::parse(""), Err(TableError::Empty)));
    }
}
