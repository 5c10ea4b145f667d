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
    /// Writing the content failed (a full disk: "No space left on device").
    #[error("writing {path} failed: {source}")]
    Write {
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

/// A writer that keeps the first error of the writer inside it, and after that writes nothing
/// more but goes on as if it did (counting the position and length it would have). A library
/// that writes on after a failure then reports nothing of its own: the zip writer's finishing
/// on drop (which prints `ZipWriter::drop: ...` to stderr when it fails), a Parquet writer
/// (which says "File out of specification" when its footer cannot be written). The error to
/// report is [`FirstError::error`], the real one, such as a full disk.
#[derive(Debug)]
pub struct FirstError<W> {
    inner: W,
    error: Option<std::io::Error>,
    /// Where the next byte would go, and the length written so far.
    position: u64,
    len: u64,
}

impl<W> FirstError<W> {
    /// Wraps `inner`, empty and at its start (a new file or buffer).
    pub fn new(inner: W) -> FirstError<W> {
        FirstError {
            inner,
            error: None,
            position: 0,
            len: 0,
        }
    }

    /// The first error the inner writer gave, if any.
    pub fn take_error(&mut self) -> Option<std::io::Error> {
        self.error.take()
    }

    /// Whether the inner writer failed.
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    pub fn into_inner(self) -> W {
        self.inner
    }

    /// Keeps `e` as the first failure (an interrupted call is not one: it is returned as it
    /// is, to be retried) and returns the error of this call.
    fn keep(&mut self, e: std::io::Error) -> std::io::Error {
        if e.kind() == std::io::ErrorKind::Interrupted {
            return e;
        }
        let copy = std::io::Error::new(e.kind(), e.to_string());
        self.error.get_or_insert(e);
        copy
    }

    fn advance(&mut self, n: usize) {
        self.position += n as u64;
        self.len = self.len.max(self.position);
    }
}

impl<W: std::io::Write> std::io::Write for FirstError<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.error.is_none() {
            match self.inner.write(buf) {
                Ok(n) => {
                    self.advance(n);
                    return Ok(n);
                }
                Err(e) => return Err(self.keep(e)),
            }
        }
        self.advance(buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.error.is_none()
            && let Err(e) = self.inner.flush()
        {
            return Err(self.keep(e));
        }
        Ok(())
    }
}

impl<W: std::io::Seek> std::io::Seek for FirstError<W> {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        use std::io::SeekFrom;
        if self.error.is_none() {
            match self.inner.seek(to) {
                Ok(p) => {
                    self.position = p;
                    return Ok(p);
                }
                Err(e) => return Err(self.keep(e)),
            }
        }
        let base = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::Current(d) => self.position.checked_add_signed(d),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
        };
        self.position = base.ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start")
        })?;
        Ok(self.position)
    }
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
