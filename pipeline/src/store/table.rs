//! A CSV table (RFC 4180: commas, `"` quoting with `""` escapes, LF or CRLF rows) read through
//! the `csv` crate as text cells. Invariant: every row has exactly as many cells as the header
//! has columns.

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
    #[error("line {line}: {message}")]
    Csv { line: usize, message: String },
}

impl Table {
    /// Parses CSV text.
    pub fn parse(text: &str) -> Result<Table, TableError> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(text.as_bytes());
        let mut records = Vec::new();
        for r in reader.records() {
            let r = r.map_err(|e| TableError::Csv {
                line: e.position().map_or(0, |p| p.line() as usize),
                message: e.to_string(),
            })?;
            let line = r.position().map_or(0, |p| p.line() as usize);
            records.push((line, r.iter().map(str::to_string).collect::<Vec<_>>()));
        }
        // The reader ends an open quote at the end of the input; RFC 4180 quotes come in
        // pairs, so an odd count means a cell was never closed (in the last record read).
        if text.bytes().filter(|&b| b == b'"').count() % 2 == 1 {
            return Err(TableError::Unterminated {
                line: records.last().map_or(1, |r| r.0),
            });
        }
        let mut records = records.into_iter();
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
