//! Manifests (`manifests/*.yaml`): what a leaderboard or paper table consists of.
//!
//! A manifest names the task-suite version and hash, the runs and records (by digest) that the
//! leaderboard shows, reported external data (by import-object digest), model metadata and site
//! options. Parsing is strict (unknown fields, duplicate keys and non-`true`/`false` booleans
//! are errors) and every error names the file and the field. A parsed [`Manifest`] is valid:
//! format 1, no duplicate digests, dates `YYYY-MM-DD`, links `http(s)://`, base path `/…/`.
//! Its [`Manifest::roots`] are where a store closure starts.
//!
//! ```yaml
//! manifest: 1
//! suite: { version: "1.0.0", hash: "<64 hex>" }
//! runs: ["<64 hex>"]          # ptxbench.run objects
//! generations: ["<64 hex>"]   # ptxbench.generation objects: their runs are shown as if listed
//! records: []                 # ptxbench.record objects shown on their own
//! suites: []                  # ptxbench.suite objects of suites the records were made against
//! reported:
//!   - label: PTXBench paper
//!     import_digest: "<64 hex>"
//! models:
//!   Claude Opus 4.8: { display_name: Claude Opus 4.8, organisation: Anthropic,
//!                      release_date: 2026-01-31, link: null }
//!   Qwen3.6-27B-s0: { ..., ablation_of: Qwen3.6-27B }  # optional: shown apart, unranked
//! site: { title: PTXBench leaderboard, base_path: /,
//!         repository: "https://…", paper: "https://…",      # optional
//!         code_release: "https://…", citation: "…",         # optional
//!         date: "YYYY-MM-DD" }                             # optional: the site's date
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::store::ObjectKind;
use crate::store::closure::Root;

/// The manifest format this code reads.
pub const FORMAT: u32 = 1;

/// A parsed and validated manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Format version of the file (1).
    pub manifest: u32,
    pub suite: SuiteRef,
    /// Run objects (`ptxbench.run/*`) on the leaderboard.
    #[serde(default)]
    pub runs: Vec<Digest>,
    /// Generation objects (`ptxbench.generation/*`, what `ptxbench generate` prints): each
    /// puts its runs on the leaderboard, and its trajectories in the closure.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generations: Vec<Digest>,
    /// Record objects (`ptxbench.record/*`) shown on their own.
    #[serde(default)]
    pub records: Vec<Digest>,
    /// Suite objects (`ptxbench.suite/*`) of the suites the records were measured against, so
    /// that pages can name a record's suite version where the record does not name its suite
    /// object (`ptxbench.record/1`).
    #[serde(default)]
    pub suites: Vec<Digest>,
    /// External data, shown as reported and never as measured.
    #[serde(default)]
    pub reported: Vec<ReportedRef>,
    /// Model metadata, by the model name used in runs and reported data.
    #[serde(default)]
    pub models: BTreeMap<String, ModelInfo>,
    pub site: SiteOptions,
}

/// The task suite the runs were measured against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteRef {
    pub version: String,
    /// `Suite::digest()` of the task suite (not a store object).
    pub hash: Digest,
}

/// One reported data set: an import object in the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportedRef {
    pub label: String,
    pub import_digest: Digest,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelInfo {
    pub display_name: String,
    pub organisation: String,
    /// `YYYY-MM-DD`.
    #[serde(default)]
    pub release_date: Option<String>,
    #[serde(default)]
    pub link: Option<String>,
    /// The model this one is a variant of, where a paper studied its settings (an ablation):
    /// the site shows it apart from the models, unranked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ablation_of: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteOptions {
    pub title: String,
    /// Where the site is served, `/` or `/name/`.
    pub base_path: String,
    /// The repository of this leaderboard's code and store (an http(s) link), for the pages'
    /// "install and reproduce" links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// The paper the reported data comes from (an http(s) link).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper: Option<String>,
    /// The paper's code and data release, where the reported data comes from (an http(s)
    /// link).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_release: Option<String>,
    /// How to cite what the site shows (plain text, shown as given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citation: Option<String>,
    /// The site's date, `YYYY-MM-DD`: the publishing workflow sets the date of the commit it
    /// builds, so a site is rebuilt byte for byte from its manifest (never the clock's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
}

/// Why a manifest cannot be used; always names the file.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: field `{field}`: {message}")]
    Invalid {
        path: PathBuf,
        field: String,
        message: String,
    },
}

impl Manifest {
    /// Reads and validates the manifest at `path`.
    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Manifest::parse(&text, path)
    }

    /// Parses and validates manifest text; `path` is used in errors only.
    pub fn parse(text: &str, path: &Path) -> Result<Manifest, ManifestError> {
        let options = serde_saphyr::options! {
            strict_booleans: true,
            duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
        };
        let m: Manifest = serde_saphyr::from_str_with_options(text, options).map_err(|e| {
            ManifestError::Parse {
                path: path.to_path_buf(),
                message: e.to_string(),
            }
        })?;
        m.validate(path)?;
        Ok(m)
    }

    fn validate(&self, path: &Path) -> Result<(), ManifestError> {
        let invalid = |field: String, message: String| ManifestError::Invalid {
            path: path.to_path_buf(),
            field,
            message,
        };
        if self.manifest != FORMAT {
            return Err(invalid(
                "manifest".into(),
                format!(
                    "format {} is not supported (this build reads {FORMAT})",
                    self.manifest
                ),
            ));
        }
        let v = &self.suite.version;
        if v.is_empty()
            || !v
                .split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(invalid(
                "suite.version".into(),
                format!("`{v}` is not a version like 1.0.0"),
            ));
        }
        let mut seen = BTreeSet::new();
        let lists = [
            ("runs", &self.runs),
            ("generations", &self.generations),
            ("records", &self.records),
            ("suites", &self.suites),
        ];
        for (name, list) in lists {
            for (i, d) in list.iter().enumerate() {
                if !seen.insert(*d) {
                    return Err(invalid(
                        format!("{name}[{i}]"),
                        format!("{d} is listed twice"),
                    ));
                }
            }
        }
        for (i, r) in self.reported.iter().enumerate() {
            if r.label.trim().is_empty() {
                return Err(invalid(
                    format!("reported[{i}].label"),
                    "must not be empty".into(),
                ));
            }
            if !seen.insert(r.import_digest) {
                return Err(invalid(
                    format!("reported[{i}].import_digest"),
                    format!("{} is listed twice", r.import_digest),
                ));
            }
        }
        for (name, m) in &self.models {
            let field = |f: &str| format!("models.{name}.{f}");
            if name.trim().is_empty() {
                return Err(invalid("models".into(), "a model name is empty".into()));
            }
            if m.display_name.trim().is_empty() {
                return Err(invalid(field("display_name"), "must not be empty".into()));
            }
            if m.organisation.trim().is_empty() {
                return Err(invalid(field("organisation"), "must not be empty".into()));
            }
            if let Some(d) = &m.release_date
                && !is_date(d)
            {
                return Err(invalid(
                    field("release_date"),
                    format!("`{d}` is not a date YYYY-MM-DD"),
                ));
            }
            if let Some(l) = &m.link
                && !(l.starts_with("https://") || l.starts_with("http://"))
            {
                return Err(invalid(
                    field("link"),
                    format!("`{l}` is not an http(s) link"),
                ));
            }
        }
        if self.site.title.trim().is_empty() {
            return Err(invalid("site.title".into(), "must not be empty".into()));
        }
        for (name, l) in [
            ("repository", &self.site.repository),
            ("paper", &self.site.paper),
            ("code_release", &self.site.code_release),
        ] {
            if let Some(l) = l
                && !(l.starts_with("https://") || l.starts_with("http://"))
            {
                return Err(invalid(
                    format!("site.{name}"),
                    format!("`{l}` is not an http(s) link"),
                ));
            }
        }
        if let Some(d) = &self.site.date
            && !is_date(d)
        {
            return Err(invalid(
                "site.date".into(),
                format!("`{d}` is not a date YYYY-MM-DD"),
            ));
        }
        let b = &self.site.base_path;
        if !b.starts_with('/') || !b.ends_with('/') || b.contains("//") || b.contains("..") {
            return Err(invalid(
                "site.base_path".into(),
                format!("`{b}` must be `/` or `/name/`"),
            ));
        }
        Ok(())
    }

    /// Where a closure of this manifest starts, each labelled `<file>: <field>` and with the
    /// object kind expected there.
    pub fn roots(&self, path: &Path) -> Vec<Root> {
        let p = path.display();
        let mut out = Vec::new();
        for (i, d) in self.runs.iter().enumerate() {
            out.push(Root {
                digest: *d,
                label: format!("{p}: runs[{i}]"),
                expect: Some(ObjectKind::Run),
            });
        }
        for (i, d) in self.generations.iter().enumerate() {
            out.push(Root {
                digest: *d,
                label: format!("{p}: generations[{i}]"),
                expect: Some(ObjectKind::Other("generation".into())),
            });
        }
        for (i, d) in self.records.iter().enumerate() {
            out.push(Root {
                digest: *d,
                label: format!("{p}: records[{i}]"),
                expect: Some(ObjectKind::Record),
            });
        }
        for (i, d) in self.suites.iter().enumerate() {
            out.push(Root {
                digest: *d,
                label: format!("{p}: suites[{i}]"),
                expect: Some(ObjectKind::Other("suite".into())),
            });
        }
        for (i, r) in self.reported.iter().enumerate() {
            out.push(Root {
                digest: r.import_digest,
                label: format!("{p}: reported[{i}].import_digest"),
                expect: Some(ObjectKind::Import),
            });
        }
        out
    }
}

/// A run on the leaderboard and where the manifest names it (`runs[0]`, `generations[1]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedRun {
    pub digest: Digest,
    pub field: String,
}

impl Manifest {
    /// The runs the leaderboard shows: `runs`, then the runs of each generation under
    /// `generations` (a run already listed is not listed again). Reads the generation objects
    /// from `store`; an error names the field and the digest.
    pub fn listed_runs(&self, store: &crate::store::Store) -> Result<Vec<ListedRun>, String> {
        let mut out: Vec<ListedRun> = self
            .runs
            .iter()
            .enumerate()
            .map(|(i, d)| ListedRun {
                digest: *d,
                field: format!("runs[{i}]"),
            })
            .collect();
        for (i, d) in self.generations.iter().enumerate() {
            let g = crate::generate::publish::load_generation(store, d)
                .map_err(|e| format!("field `generations[{i}]`: {e}"))?;
            for r in g.run_digests {
                if !out.iter().any(|l| l.digest == r) {
                    out.push(ListedRun {
                        digest: r,
                        field: format!("generations[{i}] ({d})"),
                    });
                }
            }
        }
        Ok(out)
    }
}

/// `YYYY-MM-DD` naming a day of the Gregorian calendar (`2026-02-31` is not one; leap years
/// count).
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        b[r].iter().try_fold(0u32, |acc, c| {
            c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
        })
    };
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(extra: &str) -> String {
        format!(
            "manifest: 1\nsuite: {{ version: \"1.0.0\", hash: \"{}\" }}\nsite: {{ title: T, base_path: / }}\n{extra}",
            Digest::of(b"suite")
        )
    }

    #[test]
    fn minimal_manifest_parses() {
        let m = Manifest::parse(&text(""), Path::new("m.yaml")).expect("valid");
        assert!(m.runs.is_empty() && m.roots(Path::new("m.yaml")).is_empty());
    }

    #[test]
    fn errors_name_file_and_field() {
        let e = Manifest::parse(&text("colour: red\n"), Path::new("x.yaml"))
            .expect_err("unknown field");
        let s = e.to_string();
        assert!(s.contains("x.yaml") && s.contains("colour"), "{s}");
        let d = Digest::of(b"r");
        let e = Manifest::parse(
            &text(&format!("runs: [\"{d}\", \"{d}\"]\n")),
            Path::new("x.yaml"),
        )
        .expect_err("duplicate");
        assert!(e.to_string().contains("runs[1]"), "{e}");
        let e = Manifest::parse(
            &text("models:\n  M: { display_name: M, organisation: O, release_date: 2026-0131 }\n"),
            Path::new("x.yaml"),
        )
        .expect_err("bad date");
        assert!(e.to_string().contains("models.M.release_date"), "{e}");
    }

    #[test]
    fn issue_43_generations_are_roots_of_their_own_kind() {
        let (g, r) = (Digest::of(b"g"), Digest::of(b"r"));
        let m = Manifest::parse(
            &text(&format!("runs: [\"{r}\"]\ngenerations: [\"{g}\"]\n")),
            Path::new("m.yaml"),
        )
        .expect("valid");
        let roots = m.roots(Path::new("m.yaml"));
        let root = roots.iter().find(|x| x.digest == g).expect("a root");
        assert_eq!(root.label, "m.yaml: generations[0]");
        assert_eq!(root.expect, Some(ObjectKind::Other("generation".into())));
        let e = Manifest::parse(
            &text(&format!("runs: [\"{g}\"]\ngenerations: [\"{g}\"]\n")),
            Path::new("m.yaml"),
        )
        .expect_err("listed twice");
        assert!(e.to_string().contains("generations[0]"), "{e}");
        // A manifest without generations writes none (bundles' run manifests stay as they were).
        let plain = Manifest::parse(&text(""), Path::new("m.yaml")).expect("valid");
        let yaml = serde_saphyr::to_string(&plain).expect("serialises");
        assert!(!yaml.contains("generations"), "{yaml}");
    }

    /// Issue 59, item 2: the site's date is a real day, named in the error otherwise.
    #[test]
    fn issue_59_the_site_date_is_a_real_day() {
        let with = |date: &str| {
            let t = text("").replace(
                "site: { title: T, base_path: / }",
                &format!("site: {{ title: T, base_path: /, date: \"{date}\" }}"),
            );
            Manifest::parse(&t, Path::new("x.yaml"))
        };
        let e = with("2026-13-01").expect_err("no 13th month");
        assert!(e.to_string().contains("site.date"), "{e}");
        assert!(with("yesterday").is_err());
        assert_eq!(
            with("2026-12-05").expect("a day").site.date.as_deref(),
            Some("2026-12-05")
        );
    }

    #[test]
    fn issue_15_release_date_must_be_a_real_day() {
        let with = |date: &str| {
            Manifest::parse(
                &text(&format!(
                    "models:\n  M: {{ display_name: M, organisation: O, release_date: {date} }}\n"
                )),
                Path::new("x.yaml"),
            )
        };
        let e = with("2026-02-31").expect_err("February has no 31st");
        assert!(e.to_string().contains("models.M.release_date"), "{e}");
        assert!(with("2026-04-31").is_err());
        assert!(with("2026-02-29").is_err(), "2026 is not a leap year");
        assert!(with("2028-02-29").is_ok());
        assert!(with("2000-02-29").is_ok());
        assert!(with("1900-02-29").is_err());
        assert!(with("2026-12-31").is_ok());
        assert!(with("2026-13-01").is_err());
        assert!(with("2026-01-00").is_err());
    }
}
