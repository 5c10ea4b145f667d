//! Writing a site to disk, the one step with side effects. The site is rendered into a fresh
//! sibling folder, then swapped in place of the output folder, so a reader never sees a half
//! site and stale pages of an earlier build never survive. A non-empty output folder is only
//! replaced if an earlier build made it (it holds [`MARKER`]): `-o .` cannot wipe a checkout.
//! The stored objects the site gives for download (`objects/<digest>`) are
//! hard links to the store's files where the file system allows (the same bytes, checked
//! against their digest when the build loaded them, without writing them again; a symbolic
//! link in the store is followed, so the site holds the file, never the link); else, and for
//! objects loading did not read, they are copied (read and re-hashed).
//! The staging folders (`.ptxbench-site-*`) are locked while their build lives
//! ([`crate::scratch`]); a build first removes those that a killed build left beside the output.
//!
//! The previous site is never lost. A rebuild moves it into `.ptxbench-site-old-*/<name>` (the
//! output's own name) before it moves the new one in; a build killed between the two renames
//! leaves it there, and the next build puts it back as the output before anything else (and
//! never removes a previous site whose output is missing). Builds beside one another take turns
//! for those steps (an exclusive lock on the output's parent folder), so two builds into one new
//! output both succeed, the later one's site winning; a build that fails removes its staging.

use std::fs;
use std::path::{Component, Path, PathBuf};

use super::{SiteError, SiteInput, object_bytes, render_each_placing};
use crate::digest::Digest;
use crate::store::Store;

/// The file that marks a folder as built by `ptxbench site`.
pub const MARKER: &str = ".ptxbench-site";
/// The name prefix of staging folders beside the output.
pub const STAGING_PREFIX: &str = ".ptxbench-site-";
/// The name prefix of the folder a previous site is moved into while the new one moves in.
pub const OLD_PREFIX: &str = ".ptxbench-site-old-";
const MARKER_TEXT: &str =
    "Built by `ptxbench site`; the whole folder is replaced by the next build.\n";

fn io(path: &Path, source: std::io::Error) -> SiteError {
    SiteError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Checks that `rel` is a plain relative path (no `..`, no root, no empty or `.` part).
fn check_relative(rel: &str) -> Result<(), SiteError> {
    let p = Path::new(rel);
    if rel.is_empty()
        || rel.split('/').any(|part| part.is_empty() || part == ".")
        || !p.components().all(|c| matches!(c, Component::Normal(_)))
    {
        return Err(SiteError::Output {
            path: p.to_path_buf(),
            message: "not a plain relative path".into(),
        });
    }
    Ok(())
}

/// `rel` under `dir`, once [`check_relative`] passed.
fn safe_join(dir: &Path, rel: &str) -> Result<PathBuf, SiteError> {
    check_relative(rel)?;
    Ok(dir.join(rel))
}

/// Whether `out` may be replaced: absent, an empty folder, or a folder an earlier build made;
/// never a folder inside a store (its files are the store's to write).
fn check_replaceable(out: &Path) -> Result<bool, SiteError> {
    if let Some(store) = crate::destination::store_containing(crate::destination::folder_of(out)) {
        return Err(SiteError::Output {
            path: out.to_path_buf(),
            message: format!(
                "is inside the store {}, whose files only the store writes; choose a folder outside it",
                store.display()
            ),
        });
    }
    match fs::symlink_metadata(out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io(out, e)),
        Ok(m) if !m.is_dir() => Err(SiteError::Output {
            path: out.to_path_buf(),
            message: "exists and is not a folder".into(),
        }),
        Ok(_) => {
            let mut entries = fs::read_dir(out).map_err(|e| io(out, e))?;
            if entries.next().is_none() || out.join(MARKER).is_file() {
                Ok(true)
            } else {
                Err(SiteError::Output {
                    path: out.to_path_buf(),
                    message: format!(
                        "is a folder that `ptxbench site` did not make (no {MARKER}); choose an empty or new folder"
                    ),
                })
            }
        }
    }
}

/// Waits for this build's turn among the builds beside one another: an exclusive lock on the
/// output's parent folder, held while the handle lives (released by the kernel if the process
/// dies).
fn take_turn(parent: &Path) -> Result<fs::File, SiteError> {
    crate::scratch::lock_dir(parent).map_err(|e| SiteError::Output {
        path: parent.to_path_buf(),
        message: format!("cannot lock the folder for the site's swap: {e}"),
    })
}

/// The previous sites that killed builds left in `.ptxbench-site-old-*` folders beside the
/// output (each `(its folder, its site, the output it was)`); only folders no build holds.
fn previous_sites(parent: &Path) -> Result<Vec<(PathBuf, PathBuf, PathBuf)>, SiteError> {
    let mut out = Vec::new();
    let old = crate::scratch::leftovers(parent, OLD_PREFIX, crate::scratch::STALE_AFTER)
        .map_err(|e| io(parent, e))?;
    for l in old.into_iter().filter(|l| l.stale) {
        let Ok(entries) = fs::read_dir(&l.path) else {
            continue;
        };
        for entry in entries.flatten() {
            let site = entry.path();
            if site.join(MARKER).is_file() {
                out.push((l.path.clone(), site, parent.join(entry.file_name())));
            }
        }
    }
    Ok(out)
}

/// Puts the previous site of `out` back where a build killed between its two renames left it
/// moved out (`.ptxbench-site-old-*/<name>`), when `out` is missing; the newest if several.
fn restore_previous(parent: &Path, out: &Path, name: &std::ffi::OsStr) -> Result<(), SiteError> {
    if fs::symlink_metadata(out).is_ok() {
        return Ok(());
    }
    let mut ours: Vec<(std::time::SystemTime, PathBuf, PathBuf)> = previous_sites(parent)?
        .into_iter()
        .filter(|(_, site, _)| site.file_name() == Some(name))
        .map(|(folder, site, _)| {
            let at = fs::metadata(site.join(MARKER))
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            (at, site, folder)
        })
        .collect();
    ours.sort();
    if let Some((_, site, folder)) = ours.pop() {
        fs::rename(&site, out).map_err(|e| SiteError::Output {
            path: out.to_path_buf(),
            message: format!(
                "cannot restore the previous site from {}: {e}",
                site.display()
            ),
        })?;
        // Its folder, now empty, goes (one that holds more stays for the sweep to judge).
        let _ = fs::remove_dir(&folder);
    }
    Ok(())
}

/// The `.ptxbench-site-old-*` folders that hold the only copy of a site: its output is missing.
/// They are never swept.
fn only_copies(parent: &Path) -> Result<Vec<PathBuf>, SiteError> {
    Ok(previous_sites(parent)?
        .into_iter()
        .filter(|(_, _, output)| fs::symlink_metadata(output).is_err())
        .map(|(folder, _, _)| folder)
        .collect())
}

/// Where a build writes: the staging folder, and the store its objects are linked from.
/// Folders are made on the first file that needs one.
struct Folders<'a> {
    dir: &'a Path,
    store: &'a Store,
}

impl<'a> Folders<'a> {
    fn new(dir: &'a Path, store: &'a Store) -> Folders<'a> {
        Folders { dir, store }
    }

    /// Runs `f` on the path of `rel` (a relative path, checked); when it fails because the
    /// folder is not there yet, makes the folder and runs it once more.
    fn in_folder<T>(
        &self,
        rel: &str,
        f: impl Fn(&Path) -> std::io::Result<T>,
    ) -> Result<std::io::Result<T>, SiteError> {
        let path = safe_join(self.dir, rel)?;
        Ok(match f(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !path.exists() => {
                if let Some(folder) = path.parent() {
                    fs::create_dir_all(folder).map_err(|e| io(folder, e))?;
                }
                f(&path)
            }
            other => other,
        })
    }

    /// Creates (or truncates) the file `rel` for writing.
    fn create(&self, rel: &str) -> Result<fs::File, SiteError> {
        self.in_folder(rel, |path| fs::File::create(path))?
            .map_err(|e| io(&self.dir.join(rel), e))
    }

    /// Writes `bytes` to the file `rel`, replacing it.
    fn write(&self, rel: &str, bytes: &[u8]) -> Result<(), SiteError> {
        self.in_folder(rel, |path| fs::write(path, bytes))?
            .map_err(|e| io(&self.dir.join(rel), e))
    }

    /// Writes the file `rel` with `write`, through a buffer; returns its size.
    fn stream(&self, rel: &str, write: &mut super::WriteFile<'_>) -> Result<u64, SiteError> {
        let mut out = Counted {
            inner: std::io::BufWriter::with_capacity(256 * 1024, self.create(rel)?),
            bytes: 0,
        };
        // Whatever failed (the writer, the file), the error names the file being written.
        write(&mut out).map_err(|e| SiteError::Output {
            path: self.dir.join(rel),
            message: e.to_string(),
        })?;
        out.inner
            .into_inner()
            .map_err(|e| io(&self.dir.join(rel), e.into_error()))?;
        Ok(out.bytes)
    }

    /// Copies the stored object `d` (already verified) to the file `rel`; `Ok(true)` when it
    /// did, `Ok(false)` when the stored file is not a plain file (a copy of a link would put the
    /// path it names in the site), `Err` when copying failed. A copy, never a hard link: an
    /// edit of the published folder must not reach the store's file.
    fn link(&self, d: &Digest, rel: &str) -> Result<std::io::Result<bool>, SiteError> {
        let from = self.store.path_of(d);
        self.in_folder(rel, |path| {
            if !fs::symlink_metadata(&from)?.file_type().is_file() {
                return Ok(false);
            }
            fs::copy(&from, path).map(|_| true)
        })
    }
}

/// A writer that counts the bytes that pass through it.
struct Counted<W> {
    inner: W,
    bytes: u64,
}

impl<W: std::io::Write> std::io::Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// What a build wrote: its files and their bytes (a linked object at its size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub files: usize,
    pub bytes: u64,
}

/// The largest site GitHub Pages publishes (its documented limit, 1 GB).
pub const PAGES_LIMIT_BYTES: u64 = 1_000_000_000;

/// Renders `input` into the staging folder `dir` through `folders`, adding the bytes written to
/// `total`; returns how many files it made.
fn write_files(
    input: &SiteInput,
    dir: &Path,
    folders: &Folders<'_>,
    total: &std::sync::atomic::AtomicU64,
) -> Result<usize, SiteError> {
    let write = |rel: String, bytes: Vec<u8>| {
        total.fetch_add(bytes.len() as u64, std::sync::atomic::Ordering::Relaxed);
        folders.write(&rel, &bytes)
    };
    // Verified objects are copied file to file (no re-hash); the first failure turns that off
    // and every later object is read, re-hashed and written.
    let linking = std::sync::atomic::AtomicBool::new(true);
    let place = |rel: String, d: &Digest, verified: bool| {
        use std::sync::atomic::Ordering::Relaxed;
        if verified && linking.load(Relaxed) {
            match folders.link(d, &rel)? {
                Ok(true) => {
                    // The size loading saw; a run or suite object (a few per site) is asked.
                    let len = match input.loaded_len(d) {
                        Some(n) => n,
                        None => {
                            let path = safe_join(dir, &rel)?;
                            fs::metadata(&path).map_err(|e| io(&path, e))?.len()
                        }
                    };
                    total.fetch_add(len, Relaxed);
                    return Ok(());
                }
                // Not a plain file: copied (read and re-hashed) below.
                Ok(false) => {}
                Err(_) => linking.store(false, Relaxed),
            }
        }
        write(rel, object_bytes(input, d)?)
    };
    let stream = |rel: String, w: &mut super::WriteFile<'_>| {
        let n = folders.stream(&rel, w)?;
        total.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    };
    render_each_placing(input, &write, &place, &stream)
}

/// Renders `input` and writes it to `out`; returns what it wrote.
pub fn write_site(input: &SiteInput, out: &Path) -> Result<Written, SiteError> {
    check_replaceable(out)?;
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = out.file_name().ok_or_else(|| SiteError::Output {
        path: out.to_path_buf(),
        message: "has no folder name of its own; name the output folder".into(),
    })?;
    fs::create_dir_all(&parent).map_err(|e| io(&parent, e))?;
    {
        let _turn = take_turn(&parent)?;
        restore_previous(&parent, out, name)?;
        let keep = only_copies(&parent)?;
        crate::scratch::sweep(
            &parent,
            STAGING_PREFIX,
            crate::scratch::STALE_AFTER,
            &[keep, vec![out.to_path_buf()]].concat(),
        )
        .map_err(|e| io(&parent, e))?;
    }
    let staging = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .tempdir_in(&parent)
        .map_err(|e| io(&parent, e))?;
    let dir = staging.path().to_path_buf();
    let _lock = crate::scratch::lock_dir(&dir).map_err(|e| io(&dir, e))?;
    let total = std::sync::atomic::AtomicU64::new(0);
    let count = write_files(input, &dir, &Folders::new(&dir, &input.store), &total)?;
    fs::write(dir.join(MARKER), MARKER_TEXT).map_err(|e| io(&dir, e))?;
    let written = Written {
        files: count + 1,
        bytes: total.into_inner() + MARKER_TEXT.len() as u64,
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).map_err(|e| io(&dir, e))?;
    }
    // Another build may have made or replaced the output meanwhile: checked again, in turn.
    let _turn = take_turn(&parent)?;
    let exists = check_replaceable(out)?;
    if exists {
        let old = tempfile::Builder::new()
            .prefix(OLD_PREFIX)
            .tempdir_in(&parent)
            .map_err(|e| io(&parent, e))?;
        let _old_lock = crate::scratch::lock_dir(old.path()).map_err(|e| io(old.path(), e))?;
        let old_path = old.path().join(name);
        fs::rename(out, &old_path).map_err(|e| io(out, e))?;
        if let Err(e) = fs::rename(&dir, out) {
            // The previous site goes back (the staging folder is removed when it drops); if it
            // cannot, its folder is kept for the next build to restore.
            if fs::rename(&old_path, out).is_err() {
                let _ = old.keep();
            }
            return Err(io(out, e));
        }
        // `old` is removed with the previous site in it when it drops.
        drop(old);
    } else {
        fs::rename(&dir, out).map_err(|e| io(out, e))?;
    }
    // Moved into place: nothing left to remove.
    let _ = staging.keep();
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_foreign_folders_and_odd_paths() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::write(d.path().join("precious.txt"), "x").expect("write");
        assert!(check_replaceable(d.path()).is_err());
        std::fs::write(d.path().join(MARKER), "").expect("write");
        assert!(check_replaceable(d.path()).expect("ours"));
        assert!(!check_replaceable(&d.path().join("new")).expect("absent"));
        assert!(safe_join(d.path(), "../x").is_err());
        assert!(safe_join(d.path(), "/etc/passwd").is_err());
        assert!(safe_join(d.path(), "a/b.html").is_ok());
        for odd in [
            "",
            "a//b.html",
            "a/./b.html",
            "./b.html",
            "a/",
            "a/../b.html",
        ] {
            assert!(check_relative(odd).is_err(), "{odd:?} passed");
        }
    }
}
