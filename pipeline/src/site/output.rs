//! Writing a site to disk, the one step with side effects. The site is rendered into a fresh
//! sibling folder, then swapped in place of the output folder, so a reader never sees a half
//! site and stale pages of an earlier build never survive. A non-empty output folder is only
//! replaced if an earlier build made it (it holds [`MARKER`]): `-o .` cannot wipe a checkout.
//! The stored objects the site gives for download (`objects/<digest>`) are hard links to the
//! store's files where the file system allows (the same bytes, checked against their digest
//! when the build loaded them, without writing them again; a symbolic link in the store is
//! followed, so the site holds the file, never the link); else, and for objects loading did
//! not read, they are copied (read and re-hashed).
//! The staging folders (`.ptxbench-site-*`) are locked while their build lives
//! ([`crate::scratch`]); a build first removes those that a killed build left beside the output.

use std::fs;
use std::path::{Component, Path, PathBuf};

use super::{SiteError, SiteInput, object_bytes, render_each_placing};
use crate::digest::Digest;

/// The file that marks a folder as built by `ptxbench site`.
pub const MARKER: &str = ".ptxbench-site";
/// The name prefix of staging folders beside the output.
pub const STAGING_PREFIX: &str = ".ptxbench-site-";
const MARKER_TEXT: &str =
    "Built by `ptxbench site`; the whole folder is replaced by the next build.\n";

fn io(path: &Path, source: std::io::Error) -> SiteError {
    SiteError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Checks that `rel` is a plain relative path (no `..`, no root) before it is joined.
fn safe_join(dir: &Path, rel: &str) -> Result<PathBuf, SiteError> {
    let p = Path::new(rel);
    if rel.is_empty() || !p.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(SiteError::Output {
            path: p.to_path_buf(),
            message: "not a plain relative path".into(),
        });
    }
    Ok(dir.join(p))
}

/// Whether `out` may be replaced: absent, an empty folder, or a folder an earlier build made.
fn check_replaceable(out: &Path) -> Result<bool, SiteError> {
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

/// Hard-links `to` to the file that `from` names; `true` when it did. A symbolic link in the
/// store is followed (`AT_SYMLINK_FOLLOW`), so the site gets the bytes loading hashed, never a
/// link to a path of the building machine; one system call per object, with no check of the
/// file type first.
#[cfg(target_os = "linux")]
fn link_file(from: &Path, to: &Path) -> std::io::Result<bool> {
    use std::os::unix::ffi::OsStrExt as _;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in a path"))
    };
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: both are NUL-terminated strings that outlive the call, which only reads them.
    let rc = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if rc == 0 {
        Ok(true)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Hard-links `to` to the file `from` if it is a plain file (a link to a symbolic link would
/// put that link, and the path it names, in the site); `false` when it is not.
#[cfg(not(target_os = "linux"))]
fn link_file(from: &Path, to: &Path) -> std::io::Result<bool> {
    if !fs::symlink_metadata(from)?.file_type().is_file() {
        return Ok(false);
    }
    fs::hard_link(from, to).map(|()| true)
}

/// What a build wrote: its files and their bytes (a linked object at its size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub files: usize,
    pub bytes: u64,
}

/// The largest site GitHub Pages publishes (its documented limit, 1 GB).
pub const PAGES_LIMIT_BYTES: u64 = 1_000_000_000;

/// Renders `input` and writes it to `out`; returns what it wrote.
pub fn write_site(input: &SiteInput, out: &Path) -> Result<Written, SiteError> {
    let exists = check_replaceable(out)?;
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(|e| io(&parent, e))?;
    crate::scratch::sweep(
        &parent,
        STAGING_PREFIX,
        crate::scratch::STALE_AFTER,
        Some(out),
    )
    .map_err(|e| io(&parent, e))?;
    let staging = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .tempdir_in(&parent)
        .map_err(|e| io(&parent, e))?;
    let dir = staging.path().to_path_buf();
    let _lock = crate::scratch::lock_dir(&dir).map_err(|e| io(&dir, e))?;
    let total = std::sync::atomic::AtomicU64::new(0);
    let write = |rel: String, bytes: Vec<u8>| {
        total.fetch_add(bytes.len() as u64, std::sync::atomic::Ordering::Relaxed);
        let path = safe_join(&dir, &rel)?;
        // Folders are made on the first write that needs one (a failed write is retried once
        // after making its folder), so the common case is a single system call sequence.
        match fs::write(&path, &bytes) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(folder) = path.parent() {
                    fs::create_dir_all(folder).map_err(|e| io(folder, e))?;
                }
                fs::write(&path, &bytes).map_err(|e| io(&path, e))
            }
            other => other.map_err(|e| io(&path, e)),
        }
    };
    // Whether hard links from the store work here (same file system, allowed); the first
    // failure turns them off and every later object is copied.
    let linking = std::sync::atomic::AtomicBool::new(true);
    let place = |rel: String, d: &Digest, verified: bool| {
        use std::sync::atomic::Ordering::Relaxed;
        if verified && linking.load(Relaxed) {
            let from = input.store.path_of(d);
            let path = safe_join(&dir, &rel)?;
            let linked = match link_file(&from, &path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !path.exists() => {
                    if let Some(folder) = path.parent() {
                        fs::create_dir_all(folder).map_err(|e| io(folder, e))?;
                    }
                    link_file(&from, &path)
                }
                other => other,
            };
            match linked {
                Ok(true) => {
                    // The size loading saw; a run or suite object (a few per site) is asked.
                    let len = match input.loaded_len(d) {
                        Some(n) => n,
                        None => fs::metadata(&path).map_err(|e| io(&path, e))?.len(),
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
    let count = render_each_placing(input, &write, &place)?;
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
    let built = staging.keep();
    if exists {
        let old = tempfile::Builder::new()
            .prefix(&format!("{STAGING_PREFIX}old-"))
            .tempdir_in(&parent)
            .map_err(|e| io(&parent, e))?;
        let _old_lock = crate::scratch::lock_dir(old.path()).map_err(|e| io(old.path(), e))?;
        let old_path = old.path().join("site");
        fs::rename(out, &old_path).map_err(|e| io(out, e))?;
        fs::rename(&built, out).map_err(|e| io(out, e))?;
        // `old` is removed with the previous site in it when it drops.
        drop(old);
    } else {
        fs::rename(&built, out).map_err(|e| io(out, e))?;
    }
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
    }
}
