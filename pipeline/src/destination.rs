//! The files a command writes where the user says (`bundle -o`, `export results -o`,
//! `export sft --out`): written whole into a temp file beside the destination, then renamed
//! over it, so a reader never sees half a file.
//!
//! Guarantees: a destination that exists and is not a regular file (a symbolic link, a folder,
//! a FIFO, a socket, a device) is refused, naming it and what it is, never replaced; the temp
//! file is named `<prefix>*` and locked while its writer lives, and the next write beside it
//! removes those that a killed writer left ([`crate::scratch`]); the file gets the permissions
//! of any new file (0666 less the umask), not a temp file's owner-only 0600.

use std::fs;
use std::path::{Path, PathBuf};

/// Why a destination cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum DestinationError {
    #[error(
        "{path} is {what}, not a regular file: refusing to replace it (remove it or choose another path)"
    )]
    NotAFile { path: PathBuf, what: &'static str },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What the file at `path` is, if it exists and is not a regular file.
fn not_a_file(path: &Path) -> Result<Option<&'static str>, DestinationError> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(DestinationError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let t = meta.file_type();
    if t.is_file() {
        return Ok(None);
    }
    if t.is_symlink() {
        return Ok(Some("a symbolic link"));
    }
    if t.is_dir() {
        return Ok(Some("a folder"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if t.is_fifo() {
            return Ok(Some("a FIFO (named pipe)"));
        }
        if t.is_socket() {
            return Ok(Some("a socket"));
        }
        if t.is_char_device() {
            return Ok(Some("a character device"));
        }
        if t.is_block_device() {
            return Ok(Some("a block device"));
        }
    }
    Ok(Some("not a regular file"))
}

/// Checks that `path` is absent or a regular file.
pub fn check(path: &Path) -> Result<(), DestinationError> {
    match not_a_file(path)? {
        None => Ok(()),
        Some(what) => Err(DestinationError::NotAFile {
            path: path.to_path_buf(),
            what,
        }),
    }
}

/// The folder `path` is in (`.` for a bare file name).
pub fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Checks `path` ([`check`]), removes the temp files named `prefix*` that killed writers left
/// beside it, and returns a new, locked temp file there to write the whole content into.
pub fn temp_for(path: &Path, prefix: &str) -> Result<tempfile::NamedTempFile, DestinationError> {
    check(path)?;
    let dir = folder_of(path);
    let io = |source| DestinationError::Io {
        path: dir.to_path_buf(),
        source,
    };
    crate::scratch::sweep(dir, prefix, crate::scratch::STALE_AFTER, &[]).map_err(io)?;
    new_file_temp(dir, prefix).map_err(io)
}

/// Renames the written temp file over `path`, which is checked again ([`check`]) first.
pub fn persist(tmp: tempfile::NamedTempFile, path: &Path) -> Result<(), DestinationError> {
    check(path)?;
    tmp.persist(path).map_err(|e| DestinationError::Io {
        path: path.to_path_buf(),
        source: e.error,
    })?;
    Ok(())
}

/// A locked temp file in `dir` created with the permissions of any new file (0666 less the
/// umask), not the owner-only mode of a temp file: it is renamed into a file others read.
pub(crate) fn new_file_temp(dir: &Path, prefix: &str) -> std::io::Result<tempfile::NamedTempFile> {
    let mut b = tempfile::Builder::new();
    b.prefix(prefix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        b.permissions(fs::Permissions::from_mode(0o666));
    }
    b.tempfile_in(dir).and_then(crate::scratch::lock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn issue_41_only_absent_paths_and_regular_files_pass() {
        let d = tempfile::tempdir().expect("tempdir");
        let file = d.path().join("f");
        fs::write(&file, "x").expect("write");
        check(&file).expect("a regular file");
        check(&d.path().join("absent")).expect("absent");
        let link = d.path().join("l");
        std::os::unix::fs::symlink(&file, &link).expect("symlink");
        let e = check(&link).expect_err("a link");
        assert!(e.to_string().contains("a symbolic link"), "{e}");
        assert!(e.to_string().contains(&link.display().to_string()), "{e}");
        let e = check(d.path()).expect_err("a folder");
        assert!(e.to_string().contains("a folder"), "{e}");
        let e = check(Path::new("/dev/null")).expect_err("a device");
        assert!(e.to_string().contains("a character device"), "{e}");
    }
}
