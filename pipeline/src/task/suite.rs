//! A task suite on disk: `suite.yaml` (version, description) and one YAML file per task in a
//! family directory (`gemm/`, `attention_fwd/`, `attention_bwd/`). Loading reads and checks
//! every file and reports every problem; the suite's digest is derived from its tasks' digests.
//!
//! Only `*.yaml` files directly inside a family directory are tasks; other directories
//! (candidates, reference kernels, tooling), other files and deeper levels are left alone. A
//! task file or family directory that is a symbolic link is a problem, reported, not followed.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::file::SuiteFile;
use super::model::{Task, TaskFamily};
use super::validate::{Problem, parse_task, read_yaml};
use crate::digest::Digest;

/// The suite description file, at the root of the suite directory.
pub const SUITE_FILE: &str = "suite.yaml";

/// A loaded, fully valid suite. Invariant: tasks sorted by id, ids unique, workload uuids
/// unique across the suite.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    /// Semantic version from `suite.yaml`.
    pub version: String,
    pub description: String,
    /// Where it was loaded from; not part of the digest.
    pub dir: PathBuf,
    pub tasks: Vec<Task>,
}

/// Why a suite did not load: everything that is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct SuiteError {
    pub dir: PathBuf,
    pub problems: Vec<Problem>,
}

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "task suite {} has {} problem(s):",
            self.dir.display(),
            self.problems.len()
        )?;
        for p in &self.problems {
            write!(f, "\n  {p}")?;
        }
        Ok(())
    }
}

/// What the suite digest is computed over.
#[derive(Serialize)]
struct SuiteDigestInput<'a> {
    version: &'a str,
    description: &'a str,
    tasks: Vec<(&'a str, String)>,
}

impl Suite {
    /// Loads and validates every task under `dir`.
    pub fn load(dir: &Path) -> Result<Suite, SuiteError> {
        let mut problems = Vec::new();
        let header = load_header(dir, &mut problems);
        let mut tasks = load_tasks(dir, &mut problems);
        tasks.sort_by(|a, b| a.id.cmp(&b.id));
        check_across(dir, &tasks, &mut problems);
        match header {
            Some(h) if problems.is_empty() => Ok(Suite {
                version: h.version,
                description: h.description.trim_end().to_string(),
                dir: dir.to_path_buf(),
                tasks,
            }),
            _ => Err(SuiteError {
                dir: dir.to_path_buf(),
                problems,
            }),
        }
    }

    pub fn get(&self, id: &str) -> Option<&Task> {
        self.tasks
            .binary_search_by(|t| t.id.as_str().cmp(id))
            .ok()
            .map(|i| &self.tasks[i])
    }

    pub fn of_family(&self, family: TaskFamily) -> impl Iterator<Item = &Task> {
        self.tasks.iter().filter(move |t| t.family == family)
    }

    /// The JSON the suite digest hashes: version, description and each task's id and digest,
    /// in id order.
    pub fn canonical_json(&self) -> String {
        let input = SuiteDigestInput {
            version: &self.version,
            description: &self.description,
            tasks: self
                .tasks
                .iter()
                .map(|t| (t.id.as_str(), t.digest().to_string()))
                .collect(),
        };
        serde_json::to_string(&input).expect("strings and a list of pairs always serialize")
    }

    /// Changes whenever the version, the description or any task changes.
    pub fn digest(&self) -> Digest {
        Digest::of(self.canonical_json().as_bytes())
    }
}

/// Everything wrong with the suite in `dir` (empty when it loads).
pub fn check_dir(dir: &Path) -> Vec<Problem> {
    match Suite::load(dir) {
        Ok(_) => Vec::new(),
        Err(e) => e.problems,
    }
}

fn load_header(dir: &Path, problems: &mut Vec<Problem>) -> Option<SuiteFile> {
    let path = dir.join(SUITE_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            problems.push(Problem::new(&path, "", format!("cannot read: {e}")));
            return None;
        }
    };
    let header = match read_yaml::<SuiteFile>(&text, &path) {
        Ok(h) => h,
        Err(p) => {
            problems.extend(p);
            return None;
        }
    };
    let parts: Vec<&str> = header.version.split('.').collect();
    let semver = parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    if !semver {
        problems.push(Problem::new(
            &path,
            "version",
            format!("`{}` is not a version like 1.0.0", header.version),
        ));
    }
    if header.description.trim().is_empty() {
        problems.push(Problem::new(&path, "description", "must not be empty"));
    }
    Some(header)
}

fn load_tasks(dir: &Path, problems: &mut Vec<Problem>) -> Vec<Task> {
    let family_dirs: Vec<&str> = {
        let mut d: Vec<&str> = TaskFamily::ALL.iter().map(|f| f.dir()).collect();
        d.dedup();
        d
    };
    let mut tasks = Vec::new();
    let walk = walkdir::WalkDir::new(dir)
        .min_depth(1)
        .max_depth(2)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !e.file_name().to_string_lossy().starts_with('.'));
    for entry in walk {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let path = e.path().unwrap_or(dir).to_path_buf();
                problems.push(Problem::new(&path, "", format!("cannot read: {e}")));
                continue;
            }
        };
        let path = entry.path();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let rel = path.strip_prefix(dir).unwrap_or(path).to_path_buf();
        let parent = rel.parent().and_then(|p| p.to_str()).unwrap_or("");
        if entry.file_type().is_symlink() {
            // A link is not followed (the suite is the files in it), and never skipped quietly.
            let family = entry.depth() == 1 && family_dirs.contains(&rel.to_str().unwrap_or(""));
            let task = entry.depth() == 2
                && family_dirs.contains(&parent)
                && matches!(ext, "yaml" | "yml");
            if family || task {
                let what = if family { "family folder" } else { "task file" };
                problems.push(Problem::new(
                    path,
                    "",
                    format!(
                        "is a symbolic link; a {what} must be a plain {} in the suite, so links are not read (copy it here)",
                        if family { "folder" } else { "file" }
                    ),
                ));
            }
            continue;
        }
        let task_name = entry.depth() == 2 && matches!(ext, "yaml" | "yml");
        if task_name
            && family_dirs.contains(&parent)
            && let Some(what) = crate::destination::kind_of(entry.file_type())
        {
            // A FIFO or folder named like a task file is not read, and not skipped quietly.
            problems.push(Problem::new(
                path,
                "",
                format!("is {what}; a task file must be a plain file"),
            ));
            continue;
        }
        if !entry.file_type().is_file() || !matches!(ext, "yaml" | "yml") {
            continue;
        }
        if entry.depth() == 2 && !family_dirs.contains(&parent) {
            // Not a family directory: candidates, reference kernels, tooling.
            continue;
        }
        if entry.depth() == 1 {
            if rel != Path::new(SUITE_FILE) {
                problems.push(Problem::new(
                    path,
                    "",
                    format!(
                        "task files belong in a family directory ({}/)",
                        family_dirs.join("/, ")
                    ),
                ));
            }
            continue;
        }
        if ext == "yml" {
            problems.push(Problem::new(path, "", "task files use the .yaml extension"));
            continue;
        }
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                problems.push(Problem::new(path, "", format!("cannot read: {e}")));
                continue;
            }
        };
        match parse_task(&text, path, &rel) {
            Ok(task) => {
                let in_dir = rel
                    .parent()
                    .and_then(|p| p.to_str())
                    .unwrap_or("")
                    .to_string();
                if in_dir != task.family.dir() {
                    problems.push(Problem::new(
                        path,
                        "family",
                        format!(
                            "a `{}` task belongs in `{}/`, not `{in_dir}/`",
                            task.family,
                            task.family.dir()
                        ),
                    ));
                }
                tasks.push(task);
            }
            Err(p) => problems.extend(p),
        }
    }
    tasks
}

/// Ids unique, uuids unique across tasks, at least one task.
fn check_across(dir: &Path, tasks: &[Task], problems: &mut Vec<Problem>) {
    if tasks.is_empty() && problems.is_empty() {
        problems.push(Problem::new(dir, "", "the suite has no tasks"));
    }
    for pair in tasks.windows(2) {
        if pair[0].id == pair[1].id {
            problems.push(Problem::new(
                &dir.join(&pair[1].source),
                "id",
                format!(
                    "task `{}` is also defined in {}",
                    pair[1].id,
                    pair[0].source.display()
                ),
            ));
        }
    }
    let mut uuids: BTreeMap<&str, (&Task, &str)> = BTreeMap::new();
    for t in tasks {
        for (i, w) in t.workloads.iter().enumerate() {
            let Some(u) = w.uuid.as_deref() else { continue };
            if let Some((other, name)) = uuids.insert(u, (t, &w.name))
                && other.id != t.id
            {
                problems.push(Problem::new(
                    &dir.join(&t.source),
                    format!("workloads[{i}].uuid"),
                    format!(
                        "`{u}` is also the uuid of workload `{name}` of task `{}`",
                        other.id
                    ),
                ));
            }
        }
    }
}
