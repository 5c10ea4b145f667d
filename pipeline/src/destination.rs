//! The files a command writes where the user says (`bundle -o`, `export results -o`,
//! `export sft --out`): written whole into a temp file beside the destination, then renamed
//! over it, so a reader never sees half a file.
//!
//! Guarantees: a destination that exists and is not a regular file (a symbolic link, a folder,
//! a FIFO, a socket, a device) is refused, naming it and what it is, never replaced; so is one
//! inside a store's layout folder (`<store>/v1/`), whose files only the store writes; the temp
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
    #[error(
        "{path} is inside the store {store}, whose files only the store writes: refusing to write it (choose a path outside {store})"
    )]
    InStore { path: PathBuf, store: PathBuf },
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
    match fs::symlink_metadata(path) {
        Ok(m) => Ok(kind_of(m.file_type())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(DestinationError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// What a file of type `t` is, in words (`a folder`, `a FIFO (named pipe)`), unless it is a
/// regular file.
pub(crate) fn kind_of(t: fs::FileType) -> Option<&'static str> {
    if t.is_file() {
        return None;
    }
    if t.is_symlink() {
        return Some("a symbolic link");
    }
    if t.is_dir() {
        return Some("a folder");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if t.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if t.is_socket() {
            return Some("a socket");
        }
        if t.is_char_device() {
            return Some("a character device");
        }
        if t.is_block_device() {
            return Some("a block device");
        }
    }
    Some("not a regular file")
}

/// Checks that `path` is absent or a regular file, and not inside a store ([`store_around`]).
pub fn check(path: &Path) -> Result<(), DestinationError> {
    if let Some(what) = not_a_file(path)? {
        return Err(DestinationError::NotAFile {
            path: path.to_path_buf(),
            what,
        });
    }
    if let Some(store) = store_around(folder_of(path)) {
        return Err(DestinationError::InStore {
            path: path.to_path_buf(),
            store,
        });
    }
    Ok(())
}

/// The store whose layout folder (`<store>/v1/`, holding `blake3/`) `dir` is in, if any: a file
/// written there could replace an object with other bytes. A folder that does not resolve is
/// in no store (writing into it fails anyway).
fn store_around(dir: &Path) -> Option<PathBuf> {
    use crate::store::layout::{LAYOUT_DIR, OBJECTS_DIR};
    let dir = fs::canonicalize(dir).ok()?;
    dir.ancestors()
        .find(|a| a.file_name() == Some(LAYOUT_DIR.as_ref()) && a.join(OBJECTS_DIR).is_dir())
        .and_then(Path::parent)
        .map(Path::to_path_buf)
}

/// The store `dir` is in anywhere below its root (`<store>/…`, where `<store>/v1/blake3/` is),
/// if any: a whole output (a site) is never written there.
pub fn store_containing(dir: &Path) -> Option<PathBuf> {
    use crate::store::layout::{LAYOUT_DIR, OBJECTS_DIR};
    let dir = fs::canonicalize(dir).ok()?;
    dir.ancestors()
        .find(|a| a.join(LAYOUT_DIR).join(OBJECTS_DIR).is_dir())
        .map(Path::to_path_buf)
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
    // Named by the destination asked for (`missing/out.zip: No such file or directory`), not
    // only by its folder or the temp file.
    let io = |source| DestinationError::Io {
        path: path.to_path_buf(),
        source,
    };
    crate::scratch::sweep(dir, prefix, crate::scratch::STALE_AFTER, &[]).map_err(io)?;
    new_file_temp(dir, prefix).map_err(io)
}

/// Flushes the written temp file to the disk, renames it over `path` (checked again first,
/// [`check`]) and flushes the folder, so that after a crash `path` holds the old content or
/// the new, whole: the one way this crate replaces a file.
pub fn persist(tmp: tempfile::NamedTempFile, path: &Path) -> Result<(), DestinationError> {
    tmp.as_file()
        .sync_all()
        .map_err(|source| DestinationError::Write {
            path: path.to_path_buf(),
            source,
        })?;
    check(path)?;
    tmp.persist(path).map_err(|e| DestinationError::Io {
        path: path.to_path_buf(),
        source: e.error,
    })?;
    let dir = folder_of(path);
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| DestinationError::Io {
            path: dir.to_path_buf(),
            source,
        })
}

/// Writes `bytes` to `path` whole: into a temp file beside it, then [`persist`]ed over it: a
/// reader sees the old file or the new one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), DestinationError> {
    use std::io::Write as _;
    let mut tmp = temp_for(path, ".ptxbench-write-")?;
    let write = |source| DestinationError::Write {
        path: path.to_path_buf(),
        source,
    };
    tmp.write_all(bytes).map_err(write)?;
    persist(tmp, path)
}

/// Opens `path` for reading if it is a regular file (after following links); a FIFO, socket or
/// device is refused with an error naming what it is, without blocking (a FIFO opened for
/// reading would wait for a writer forever).
pub fn open_regular(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = f.metadata()?;
    match kind_of(meta.file_type()) {
        None => Ok(f),
        Some(what) => Err(std::io::Error::other(format!(
            "{} is {what}, not a regular file",
            path.display()
        ))),
    }
}

/// The bytes of the regular file at `path` ([`open_regular`]).
pub fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut f = open_regular(path)?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    Ok(bytes)
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

    /// The first error the inner writer gave, if any (tests read it raw).
    #[cfg(test)]
    pub fn take_error(&mut self) -> Option<std::io::Error> {
        self.error.take()
    }

    /// The first failure of the inner writer, reported as the write error of `path` (a full
    /// disk as itself, not as what an encoder made of it).
    pub fn check(&mut self, path: &Path) -> Result<(), DestinationError> {
        match self.error.take() {
            Some(source) => Err(DestinationError::Write {
                path: path.to_path_buf(),
                source,
            }),
            None => Ok(()),
        }
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

    /// A writer whose device is full.
    struct Full;
    impl std::io::Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from_raw_os_error(28))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_write_is_reported_as_itself_naming_the_file() {
        use std::io::Write;
        let mut w = FirstError::new(Full);
        assert!(w.check(Path::new("out.csv")).is_ok());
        assert!(w.write_all(b"x").is_err());
        let e = w.check(Path::new("out.csv")).expect_err("the write failed");
        assert!(matches!(&e, DestinationError::Write { path, source }
            if path == Path::new("out.csv") && source.raw_os_error() == Some(28)));
        // Reported once.
        assert!(w.check(Path::new("out.csv")).is_ok());
    }

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

    /// A path in a store's layout folder is refused, whether it names an object (which it
    /// would replace with other bytes) or a new file; beside the store it is fine.
    #[test]
    fn issue_41_a_path_inside_a_store_is_refused() {
        let d = tempfile::tempdir().expect("tempdir");
        let store = crate::store::Store::open(d.path().join("artifacts"));
        let digest = store.put(b"an object").expect("put");
        for path in [
            store.path_of(&digest),
            store.objects_dir().join("new.zip"),
            store.root().join("v1").join("out.csv"),
        ] {
            let e = check(&path).expect_err("inside the store");
            assert!(matches!(e, DestinationError::InStore { .. }), "{e}");
            assert!(e.to_string().contains("is inside the store"), "{e}");
        }
        assert_eq!(store.get(&digest).expect("get"), b"an object");
        check(&store.root().join("beside.zip")).expect("the store's own folder is not its layout");
        check(&d.path().join("out.zip")).expect("beside the store");
    }

    /// A destination in a folder that does not exist is named in the error, not only its
    /// folder and the temp file that could not be made there.
    #[test]
    fn issue_41_a_missing_folder_is_named_with_the_destination() {
        let d = tempfile::tempdir().expect("tempdir");
        let out = d.path().join("missing").join("out.zip");
        let e = temp_for(&out, ".test-").expect_err("no folder");
        assert!(
            e.to_string().starts_with(&format!("{}: ", out.display())),
            "{e}"
        );
    }
}
