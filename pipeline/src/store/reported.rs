//! Reported (external) data: importing a folder of published files byte-for-byte, and reading
//! its CSVs back normalised.
//!
//! [`import_reported`] stores every regular file of a folder as a blob, unchanged, plus one
//! `ptxbench.import/1` object naming the source and each file's name, size and digest, marked
//! `"provenance":"reported"`. Nothing about the importing machine (path, time) is recorded, so
//! importing the same files twice gives the same object.
//!
//! [`ReportedData::load`] re-hashes those blobs and parses the CSVs, normalising on read, never
//! on disk: dates written `2026-0131` become `2026-01-31` (columns `date`, `dates`, `*_date`),
//! and `exp_dir` (absolute paths on the authors' machines) is reduced to its last component,
//! which names the run. Everything read through this module is [`Provenance::Reported`]: the
//! published numbers, never results measured here.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::store::object::{ObjectKind, Schema};
use crate::store::table::{Table, TableError};
use crate::store::{Store, StoreError};

pub use crate::record::provenance::Provenance;

/// The schema tag of import objects.
pub const IMPORT_SCHEMA: &str = "ptxbench.import/1";
/// The source name of the paper's published data.
pub const PAPER_SOURCE: &str = "PTXBench paper, zhang677/PTXBench commit 491860b";

/// The `ptxbench.import/1` object. Field order is the canonical JSON order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportObject {
    pub schema: String,
    /// Always [`Provenance::Reported`]: an object that says otherwise is refused when read.
    #[serde(deserialize_with = "reported_only")]
    pub provenance: Provenance,
    pub source: String,
    /// Sorted by name; names are unique.
    pub files: Vec<ImportedFile>,
}

/// Reads an import object's provenance, refusing anything but `reported`: imported numbers
/// were published elsewhere, never measured here.
fn reported_only<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Provenance, D::Error> {
    match Provenance::deserialize(d)? {
        Provenance::Reported => Ok(Provenance::Reported),
        other => Err(serde::de::Error::custom(format!(
            "an import object's provenance must be `reported` (imported data is never \
             measured here), not `{other}`"
        ))),
    }
}

/// One imported file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportedFile {
    pub name: String,
    pub size: u64,
    pub content_digest: Digest,
}

#[derive(Debug, thiserror::Error)]
pub enum ReportedError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a regular file (symlinks and special files are not imported)")]
    NotAFile { path: PathBuf },
    #[error("{path}: the folder has no files to import")]
    EmptyFolder { path: PathBuf },
    #[error("object {digest} is a `{schema}` object, not {IMPORT_SCHEMA}")]
    WrongSchema { digest: Digest, schema: String },
    #[error("import {import}: file {file} is not UTF-8 text")]
    NotText { import: Digest, file: String },
    #[error("import {import}: {file}: {source}")]
    Table {
        import: Digest,
        file: String,
        #[source]
        source: TableError,
    },
    #[error("import {import}: {file} has no column `{column}`")]
    MissingColumn {
        import: Digest,
        file: String,
        column: String,
    },
    #[error(transparent)]
    BadCell(Box<BadCell>),
}

/// A cell that does not hold what its column should (boxed in [`ReportedError`] to keep the
/// error small).
#[derive(Debug, thiserror::Error)]
#[error("import {import}: {file} row {row} column `{column}`: `{value}` is not {expected}")]
pub struct BadCell {
    pub import: Digest,
    pub file: String,
    /// 1-based line number in the file (the header is line 1).
    pub row: usize,
    pub column: String,
    pub value: String,
    pub expected: &'static str,
}

/// Stores every regular file of `dir` (not recursive) byte-for-byte and an import object
/// naming them; returns the import object's digest.
pub fn import_reported(store: &Store, dir: &Path, source: &str) -> Result<Digest, ReportedError> {
    let io = |path: &Path, source| ReportedError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut entries: Vec<(String, PathBuf)> = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let entry = entry.map_err(|e| io(dir, e))?;
        let path = entry.path();
        let meta = fs::symlink_metadata(&path).map_err(|e| io(&path, e))?;
        if meta.is_dir() {
            continue;
        }
        if !meta.is_file() {
            return Err(ReportedError::NotAFile { path });
        }
        let name = entry
            .file_name()
            .into_string()
            .map_err(|_| ReportedError::NotAFile { path: path.clone() })?;
        entries.push((name, path));
    }
    if entries.is_empty() {
        return Err(ReportedError::EmptyFolder {
            path: dir.to_path_buf(),
        });
    }
    entries.sort();
    let mut files = Vec::with_capacity(entries.len());
    for (name, path) in entries {
        let (content_digest, size) = store.put_file(&path)?;
        files.push(ImportedFile {
            name,
            size,
            content_digest,
        });
    }
    let object = ImportObject {
        schema: IMPORT_SCHEMA.to_string(),
        provenance: Provenance::Reported,
        source: source.to_string(),
        files,
    };
    Ok(store.put_object(&object)?)
}

/// Reported data read back from the store: the import object and its CSVs, normalised.
#[derive(Debug, Clone)]
pub struct ReportedData {
    pub import_digest: Digest,
    pub source: String,
    /// Always [`Provenance::Reported`].
    pub provenance: Provenance,
    pub files: Vec<ImportedFile>,
    /// Every `*.csv` file, by file name without `.csv`, normalised.
    pub tables: BTreeMap<String, Table>,
}

/// One (run, turn limit) row of the paper's results, joined from
/// `correctness_rate_by_release_date`, `best_speedup_by_release_date` and
/// `arch_instruction_correctness_by_release_date`. Reported, never measured here.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportedResult {
    pub model: String,
    /// `hopper` (H100) or `blackwell` (B200).
    pub arch: String,
    /// The last component of `exp_dir`: names the evaluation run.
    pub run: String,
    pub definition: String,
    pub workload: String,
    pub workload_name: String,
    /// The model's release date, normalised to `YYYY-MM-DD`.
    pub date: String,
    pub turn_limit: u32,
    pub n_trajectories: u32,
    pub correct: u32,
    pub correctness_rate: f64,
    pub best_speedup: Option<f64>,
    pub correct_with_arch: Option<u32>,
    pub correct_with_arch_rate: Option<f64>,
    pub tag_evidence: Option<String>,
    /// Where the row comes from: the file and 1-based line (the header is line 1) of each
    /// of the joined tables' rows, in the order named above.
    pub lines: Vec<SourceLine>,
}

/// One line of an imported file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceLine {
    pub file: String,
    pub line: usize,
}

impl ReportedData {
    /// Reads the import object `import_digest` and parses its CSV files (every blob re-hashed).
    pub fn load(store: &Store, import_digest: &Digest) -> Result<ReportedData, ReportedError> {
        let object = store.get_object(import_digest)?;
        if object.schema != Schema::new(ObjectKind::Import, 1) {
            return Err(ReportedError::WrongSchema {
                digest: *import_digest,
                schema: object.schema.to_string(),
            });
        }
        let import: ImportObject = store.get_json(import_digest)?;
        let mut tables = BTreeMap::new();
        for f in &import.files {
            let Some(stem) = f.name.strip_suffix(".csv") else {
                continue;
            };
            let bytes = store.get(&f.content_digest)?;
            let text = String::from_utf8(bytes).map_err(|_| ReportedError::NotText {
                import: *import_digest,
                file: f.name.clone(),
            })?;
            let mut table = Table::parse(&text).map_err(|source| ReportedError::Table {
                import: *import_digest,
                file: f.name.clone(),
                source,
            })?;
            normalise(&mut table);
            tables.insert(stem.to_string(), table);
        }
        Ok(ReportedData {
            import_digest: *import_digest,
            source: import.source,
            provenance: import.provenance,
            files: import.files,
            tables,
        })
    }

    pub fn table(&self, stem: &str) -> Option<&Table> {
        self.tables.get(stem)
    }

    /// The paper's per-(run, turn limit) results, sorted by model, arch, run, turn limit.
    pub fn results(&self) -> Result<Vec<ReportedResult>, ReportedError> {
        let base = self.typed("correctness_rate_by_release_date")?;
        let speed = self.typed("best_speedup_by_release_date")?;
        let arch = self.typed("arch_instruction_correctness_by_release_date")?;
        let key =
            |t: &TypedTable, r: usize| -> Result<(String, String, String, u32), ReportedError> {
                Ok((
                    t.text(r, "model")?,
                    t.text(r, "arch")?,
                    t.text(r, "exp_dir")?,
                    t.num(r, "turn_limit")?,
                ))
            };
        let mut speed_at = BTreeMap::new();
        for r in 0..speed.table.rows.len() {
            speed_at.insert(key(&speed, r)?, r);
        }
        let mut arch_at = BTreeMap::new();
        for r in 0..arch.table.rows.len() {
            arch_at.insert(key(&arch, r)?, r);
        }
        let mut out = Vec::with_capacity(base.table.rows.len());
        for r in 0..base.table.rows.len() {
            let k = key(&base, r)?;
            let s = speed_at.get(&k).copied();
            let a = arch_at.get(&k).copied();
            out.push(ReportedResult {
                model: k.0.clone(),
                arch: k.1.clone(),
                run: k.2.clone(),
                definition: base.text(r, "definition")?,
                workload: base.text(r, "workload")?,
                workload_name: base.text(r, "workload_name")?,
                date: base.text(r, "date")?,
                turn_limit: k.3,
                n_trajectories: base.num(r, "n_trajectories")?,
                correct: base.num(r, "correct")?,
                correctness_rate: base.float(r, "correctness_rate")?,
                best_speedup: s
                    .map(|s| speed.opt_float(s, "best_speedup"))
                    .transpose()?
                    .flatten(),
                correct_with_arch: a.map(|a| arch.num(a, "correct_with_arch")).transpose()?,
                correct_with_arch_rate: a
                    .map(|a| arch.float(a, "correct_with_arch_rate"))
                    .transpose()?,
                tag_evidence: a.map(|a| arch.text(a, "tag_evidence")).transpose()?,
                lines: [(&base, Some(r)), (&speed, s), (&arch, a)]
                    .into_iter()
                    .filter_map(|(t, row)| {
                        row.map(|row| SourceLine {
                            file: t.file.clone(),
                            line: row + 2,
                        })
                    })
                    .collect(),
            });
        }
        out.sort_by(|x, y| {
            (&x.model, &x.arch, &x.run, x.turn_limit).cmp(&(
                &y.model,
                &y.arch,
                &y.run,
                y.turn_limit,
            ))
        });
        Ok(out)
    }

    fn typed(&self, stem: &str) -> Result<TypedTable<'_>, ReportedError> {
        let file = format!("{stem}.csv");
        let table = self
            .tables
            .get(stem)
            .ok_or_else(|| ReportedError::MissingColumn {
                import: self.import_digest,
                file: file.clone(),
                column: "(the whole file is missing)".to_string(),
            })?;
        Ok(TypedTable {
            import: self.import_digest,
            file,
            table,
        })
    }
}

struct TypedTable<'a> {
    import: Digest,
    file: String,
    table: &'a Table,
}

impl TypedTable<'_> {
    fn cell(&self, row: usize, column: &str) -> Result<&str, ReportedError> {
        self.table
            .get(row, column)
            .ok_or_else(|| ReportedError::MissingColumn {
                import: self.import,
                file: self.file.clone(),
                column: column.to_string(),
            })
    }
    fn bad(&self, row: usize, column: &str, value: &str, expected: &'static str) -> ReportedError {
        ReportedError::BadCell(Box::new(BadCell {
            import: self.import,
            file: self.file.clone(),
            row: row + 2,
            column: column.to_string(),
            value: value.to_string(),
            expected,
        }))
    }
    fn text(&self, row: usize, column: &str) -> Result<String, ReportedError> {
        self.cell(row, column).map(str::to_string)
    }
    fn num(&self, row: usize, column: &str) -> Result<u32, ReportedError> {
        let v = self.cell(row, column)?;
        v.parse()
            .map_err(|_| self.bad(row, column, v, "a whole number"))
    }
    fn float(&self, row: usize, column: &str) -> Result<f64, ReportedError> {
        self.opt_float(row, column)?
            .ok_or_else(|| self.bad(row, column, "", "a number"))
    }
    fn opt_float(&self, row: usize, column: &str) -> Result<Option<f64>, ReportedError> {
        let v = self.cell(row, column)?;
        if v.is_empty() {
            return Ok(None);
        }
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(Some(x)),
            _ => Err(self.bad(row, column, v, "a finite number")),
        }
    }
}

/// Applies the read-time normalisations to every cell of date and `exp_dir` columns.
pub fn normalise(table: &mut Table) {
    for (c, name) in table.columns.iter().enumerate() {
        let f: fn(&str) -> String = if name == "date" || name == "dates" || name.ends_with("_date")
        {
            normalise_date
        } else if name == "exp_dir" {
            last_component
        } else {
            continue;
        };
        for row in &mut table.rows {
            if let Some(cell) = row.get_mut(c) {
                *cell = f(cell);
            }
        }
    }
}

/// `2026-0131` → `2026-01-31`; anything else is returned unchanged.
pub fn normalise_date(s: &str) -> String {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() == 9 && b[4] == b'-' && digits(0..4) && digits(5..9) {
        format!("{}-{}-{}", &s[0..4], &s[5..7], &s[7..9])
    } else {
        s.to_string()
    }
}

/// The last non-empty `/`-separated component of a path (`/a/b/run-1/` → `run-1`).
pub fn last_component(s: &str) -> String {
    s.rsplit(['/', '\\'])
        .find(|p| !p.is_empty())
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_dates_and_paths() {
        assert_eq!(normalise_date("2026-0131"), "2026-01-31");
        assert_eq!(normalise_date("2026-01-31"), "2026-01-31");
        assert_eq!(normalise_date("junk"), "junk");
        assert_eq!(
            last_component("/home/u/eval_runs/opus48-b200-gemm"),
            "opus48-b200-gemm"
        );
        assert_eq!(last_component("/a/b/"), "b");
        let mut t = Table::parse("model,date,exp_dir\nm,2026-0131,/x/y/run-1\n").expect("csv");
        normalise(&mut t);
        assert_eq!(t.rows[0], ["m", "2026-01-31", "run-1"]);
    }

    /// The committed paper import reads back and writes the very same bytes: the shared
    /// provenance type keeps `"provenance":"reported"`.
    #[test]
    fn committed_import_round_trips_byte_for_byte() {
        let store = Store::open(Path::new(env!("CARGO_MANIFEST_DIR")).join("../artifacts"));
        let mut found = 0;
        for d in store.list().expect("the committed store lists") {
            let bytes = store.get(&d).expect("readable");
            if !bytes.starts_with(b"{\"schema\":\"ptxbench.import/1\"") {
                continue;
            }
            let import: ImportObject = store.get_json(&d).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(import.provenance, Provenance::Reported);
            assert_eq!(
                serde_json::to_vec(&import).expect("serialise"),
                bytes,
                "{d}"
            );
            found += 1;
        }
        assert!(found > 0, "the committed store holds the paper import");
    }

    /// An import object that says its numbers were measured is refused when read, with an
    /// error naming the object and the provenance it gave.
    #[test]
    fn import_object_marked_measured_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path());
        let files = dir.path().join("in");
        fs::create_dir(&files).expect("mkdir");
        fs::write(files.join("a.csv"), "model\nm\n").expect("write");
        let good = import_reported(&store, &files, "test").expect("import");
        let mut object: ImportObject = store.get_json(&good).expect("reads");
        assert!(
            String::from_utf8(store.get(&good).expect("bytes"))
                .expect("utf-8")
                .contains(r#""provenance":"reported""#)
        );
        object.provenance = Provenance::Measured;
        let bad = store.put_object(&object).expect("stored");
        assert!(
            String::from_utf8(store.get(&bad).expect("bytes"))
                .expect("utf-8")
                .contains(r#""provenance":"measured""#)
        );
        let e = ReportedData::load(&store, &bad).expect_err("measured import refused");
        let msg = e.to_string();
        assert!(msg.contains(&bad.to_string()), "{msg}");
        assert!(
            msg.contains("provenance must be `reported`") && msg.contains("not `measured`"),
            "{msg}"
        );
        assert!(ReportedData::load(&store, &good).is_ok());
    }
}
