//! The CUDA C++ sources of the committed PTX that nvcc made (`tasks/ptx-sources.txt`): a record
//! whose PTX is one of those files byte for byte (the hand-written reference kernels, the
//! suite's SIMT kernels) names no kernel source, yet its source is in the repository. The site
//! finds it by the PTX's digest and publishes it with the headers it includes, so the source
//! of every such number is one click away. Nothing in the store changes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::digest::Digest;

use super::SiteError;

/// The file, relative to the repository root, that maps nvcc-made PTX to its source.
pub const LIST: &str = "tasks/ptx-sources.txt";

/// One file of a kernel's source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// Relative to the repository root.
    pub path: String,
    pub digest: Digest,
    pub text: String,
}

/// The source nvcc made one committed PTX file from: the `.cu` first, then every header it
/// includes (by `#include "…"`, found in its folder or an `-I` folder), each once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvccSource {
    /// The committed PTX, relative to the repository root.
    pub ptx: String,
    pub files: Vec<SourceFile>,
}

/// Every nvcc-made PTX of the repository, by the digest of its bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelSources {
    pub by_ptx: BTreeMap<Digest, NvccSource>,
}

impl KernelSources {
    /// Reads [`LIST`] under `root` (nothing when there is none, as in a folder of tasks
    /// alone); a line naming a file that cannot be read is an error naming the line.
    pub fn load(root: &Path) -> Result<KernelSources, SiteError> {
        let list = root.join(LIST);
        let Ok(text) = std::fs::read_to_string(&list) else {
            return Ok(KernelSources::default());
        };
        let mut by_ptx = BTreeMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |message: String| SiteError::Output {
                path: list.clone(),
                message: format!("line {}: {message}", n + 1),
            };
            let words: Vec<&str> = line.split_whitespace().collect();
            let [ptx, source, flags @ ..] = words.as_slice() else {
                return Err(at("expected `OUTPUT_PTX SOURCE_CU [flags]`".into()));
            };
            let includes: Vec<PathBuf> = flags
                .windows(2)
                .filter(|w| w[0] == "-I")
                .map(|w| root.join(w[1]))
                .collect();
            let bytes = std::fs::read(root.join(ptx)).map_err(|e| at(format!("{ptx}: {e}")))?;
            let files = closure(root, source, &includes).map_err(at)?;
            by_ptx.insert(
                Digest::of(&bytes),
                NvccSource {
                    ptx: ptx.to_string(),
                    files,
                },
            );
        }
        Ok(KernelSources { by_ptx })
    }

    pub fn of(&self, ptx: Option<Digest>) -> Option<&NvccSource> {
        self.by_ptx.get(&ptx?)
    }
}

/// `source` and the headers it includes, recursively, in the order first met.
fn closure(root: &Path, source: &str, includes: &[PathBuf]) -> Result<Vec<SourceFile>, String> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let mut todo = vec![root.join(source)];
    while let Some(path) = todo.pop() {
        let path = std::fs::canonicalize(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if !seen.insert(path.clone()) {
            continue;
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let root_abs = std::fs::canonicalize(root).map_err(|e| e.to_string())?;
        let rel = path
            .strip_prefix(&root_abs)
            .map_err(|_| format!("{} is outside the repository", path.display()))?
            .to_string_lossy()
            .into_owned();
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut found = Vec::new();
        for line in text.lines() {
            let Some(name) = line
                .trim_start()
                .strip_prefix("#include")
                .map(str::trim)
                .and_then(|r| r.strip_prefix('"'))
                .and_then(|r| r.split('"').next())
            else {
                continue;
            };
            if let Some(p) = std::iter::once(&dir)
                .chain(includes)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
            {
                found.push(p);
            }
        }
        // Popped last first: push in reverse so headers come in the order they are included.
        todo.extend(found.into_iter().rev());
        out.push(SourceFile {
            path: rel,
            digest: Digest::of(text.as_bytes()),
            text,
        });
    }
    Ok(out)
}
