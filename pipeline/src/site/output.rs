//! Writing a site to disk, the one step with side effects. The site is rendered into a fresh
//! sibling folder, then swapped in place of the output folder, so a reader never sees a half
//! site and stale pages of an earlier build never survive. A non-empty output folder is only
//! replaced if an earlier build made it (it holds [`MARKER`]): `-o .` cannot wipe a checkout.
//! On Linux each folder of the output is opened once, and its files are created and linked
//! relative to it. The stored objects the site gives for download (`objects/<digest>`) are
//! hard links to the store's files where the file system allows (the same bytes, checked
//! against their digest when the build loaded them, without writing them again; a symbolic
//! link in the store is followed, so the site holds the file, never the link); else, and for
//! objects loading did not read, they are copied (read and re-hashed).
//! On Linux the written files are drained as the build goes ([`DRAIN_BYTES`]): their pages go
//! to the disk and out of the page cache in batches, so a large site is not held in memory.
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

/// How many bytes of written files a build lets wait in the page cache, dirty, before the
/// drain sends them to the disk and drops them from the cache (Linux): each time more than this
/// waits, the waiting files' data is written (`sync_file_range`: the site's data only, not the
/// rest of the file system's dirty pages as `syncfs` did until 2026-12-03, 0.3 s slower on the
/// site benchmark's disk; the site's metadata is left to the kernel, and the machine had
/// 36–147 MB dirty when a 100k-record build ended) and their pages dropped
/// (`posix_fadvise(POSIX_FADV_DONTNEED)`), on a thread of its own while the pages go on
/// rendering. A site of 3 GB then holds some tens of MB of page cache instead of 3 GB of dirty
/// pages for the kernel to write after the build, and the memory the dropped pages free is what
/// the next pages are written into. Where fresh memory is dear, it is what a large build pays
/// for most: on the 2-core virtual machine of the site benchmark, memory that was not used
/// lately cost about 9 µs per 4 KiB page on first touch in some hours, against about 1 µs for
/// memory freed lately (in other hours any page cost under 1 µs, and the drain was no slower
/// than none). A site smaller than this never waits for the disk; on a file system held in
/// memory (tmpfs) nothing is drained.
pub const DRAIN_BYTES: u64 = 32 << 20;

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

/// The folders a build writes into. On Linux each folder is opened once and every file is
/// created, and every object linked, relative to it (`openat`, `linkat`), so the kernel walks one
/// path component per file rather than the dozen of an absolute path: a 100k-record site makes
/// 311k files. Elsewhere, plain paths.
struct Folders<'a> {
    dir: &'a Path,
    #[cfg(not(target_os = "linux"))]
    store: &'a Store,
    #[cfg(target_os = "linux")]
    open: std::sync::RwLock<std::collections::HashMap<String, std::os::fd::OwnedFd>>,
    /// The store's root, opened for linking from on the first link (a site may link none).
    #[cfg(target_os = "linux")]
    store_root: std::sync::OnceLock<Option<std::os::fd::OwnedFd>>,
    #[cfg(target_os = "linux")]
    store_path: &'a Path,
    /// Where written files go, still open, to be drained ([`drain`]); `None`: they are closed.
    #[cfg(target_os = "linux")]
    drained: Option<std::sync::mpsc::SyncSender<(fs::File, u64)>>,
}

/// `rel` as a C string, for a system call.
#[cfg(target_os = "linux")]
fn c_path(rel: &str) -> std::io::Result<std::ffi::CString> {
    std::ffi::CString::new(rel)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in a path"))
}

/// The result of a system call that returns -1 on failure.
#[cfg(target_os = "linux")]
fn check(rc: libc::c_int) -> std::io::Result<libc::c_int> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

impl<'a> Folders<'a> {
    fn new(dir: &'a Path, store: &'a Store) -> Folders<'a> {
        Folders {
            dir,
            #[cfg(not(target_os = "linux"))]
            store,
            #[cfg(target_os = "linux")]
            open: Default::default(),
            #[cfg(target_os = "linux")]
            store_root: std::sync::OnceLock::new(),
            #[cfg(target_os = "linux")]
            store_path: store.root(),
            #[cfg(target_os = "linux")]
            drained: None,
        }
    }

    /// Hands a file just written (`bytes` long) to the drain, if there is one; else closes it.
    fn retire(&self, file: fs::File, bytes: u64) {
        #[cfg(target_os = "linux")]
        if let Some(drained) = &self.drained {
            // A drain that stopped (it failed; its error ends the build) closes the file.
            let _ = drained.send((file, bytes));
            return;
        }
        let _ = bytes;
        drop(file);
    }

    /// Checks the relative path `rel` and runs `f` with its folder (made if it is not there
    /// yet) and its file name.
    #[cfg(target_os = "linux")]
    fn with_folder<T>(
        &self,
        rel: &str,
        f: impl FnOnce(std::os::fd::RawFd, &std::ffi::CStr) -> std::io::Result<T>,
    ) -> Result<std::io::Result<T>, SiteError> {
        use std::os::fd::AsRawFd as _;
        check_relative(rel)?;
        let (folder, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        let name = match c_path(name) {
            Ok(n) => n,
            Err(e) => return Ok(Err(e)),
        };
        let poisoned = || SiteError::Internal("the output's folder table is poisoned".into());
        {
            let open = self.open.read().map_err(|_| poisoned())?;
            if let Some(fd) = open.get(folder) {
                return Ok(f(fd.as_raw_fd(), &name));
            }
        }
        let mut open = self.open.write().map_err(|_| poisoned())?;
        if !open.contains_key(folder) {
            let path = self.dir.join(folder);
            fs::create_dir_all(&path).map_err(|e| io(&path, e))?;
            let fd = fs::File::open(&path).map_err(|e| io(&path, e))?;
            open.insert(folder.to_string(), fd.into());
        }
        Ok(f(open[folder].as_raw_fd(), &name))
    }

    /// Creates (or truncates) the file `rel` (a checked relative path) for writing.
    fn create(&self, rel: &str) -> Result<fs::File, SiteError> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::FromRawFd as _;
            self.with_folder(rel, |dir, name| {
                let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC;
                // SAFETY: `dir` is an open folder and `name` a NUL-terminated string; the
                // descriptor returned is owned by the `File` made from it, which closes it.
                let fd = check(unsafe { libc::openat(dir, name.as_ptr(), flags, 0o644) })?;
                Ok(unsafe { fs::File::from_raw_fd(fd) })
            })?
            .map_err(|e| io(&self.dir.join(rel), e))
        }
        #[cfg(not(target_os = "linux"))]
        {
            let path = safe_join(self.dir, rel)?;
            // Folders are made on the first file that needs one (a failed create is retried
            // once after making its folder).
            match fs::File::create(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if let Some(folder) = path.parent() {
                        fs::create_dir_all(folder).map_err(|e| io(folder, e))?;
                    }
                    fs::File::create(&path).map_err(|e| io(&path, e))
                }
                other => other.map_err(|e| io(&path, e)),
            }
        }
    }

    /// Writes `bytes` to the file `rel` (a checked relative path), replacing it.
    fn write(&self, rel: &str, bytes: &[u8]) -> Result<(), SiteError> {
        use std::io::Write as _;
        let mut file = self.create(rel)?;
        file.write_all(bytes)
            .map_err(|e| io(&self.dir.join(rel), e))?;
        self.retire(file, bytes.len() as u64);
        Ok(())
    }

    /// Writes the file `rel` (a checked relative path) with `write`, through a buffer;
    /// returns its size.
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
        let file = out
            .inner
            .into_inner()
            .map_err(|e| io(&self.dir.join(rel), e.into_error()))?;
        self.retire(file, out.bytes);
        Ok(out.bytes)
    }

    /// Hard-links the file `rel` (a checked relative path) to the stored object `d`; `Ok(true)`
    /// when it did, `Ok(false)` when the stored file is not a plain file, `Err` when linking
    /// failed (another file system, not allowed, the object missing). On Linux a symbolic link
    /// in the store is followed (`AT_SYMLINK_FOLLOW`), so the site gets the bytes loading
    /// hashed, never a link to a path of the building machine; one system call per object,
    /// with no check of the file type first.
    fn link(&self, d: &Digest, rel: &str) -> Result<std::io::Result<bool>, SiteError> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let from = c_path(&Store::relative_path_of(d));
            let store = self
                .store_root
                .get_or_init(|| fs::File::open(self.store_path).ok().map(Into::into))
                .as_ref()
                .map(AsRawFd::as_raw_fd);
            self.with_folder(rel, |dir, name| {
                let store = store.ok_or_else(|| {
                    std::io::Error::new(std::io::ErrorKind::NotFound, "the store cannot be opened")
                })?;
                let from = from?;
                // SAFETY: both folders are open and both names NUL-terminated strings that
                // outlive the call, which only reads them.
                check(unsafe {
                    libc::linkat(
                        store,
                        from.as_ptr(),
                        dir,
                        name.as_ptr(),
                        libc::AT_SYMLINK_FOLLOW,
                    )
                })
                .map(|_| true)
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            // A link to a symbolic link would put that link, and the path it names, in the
            // site: only a plain file is linked.
            let path = safe_join(self.dir, rel)?;
            let from = self.store.path_of(d);
            let link = || -> std::io::Result<bool> {
                if !fs::symlink_metadata(&from)?.file_type().is_file() {
                    return Ok(false);
                }
                fs::hard_link(&from, &path).map(|()| true)
            };
            Ok(match link() {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !path.exists() => {
                    if let Some(folder) = path.parent() {
                        fs::create_dir_all(folder).map_err(|e| io(folder, e))?;
                    }
                    link()
                }
                other => other,
            })
        }
    }
}

/// Whether the open folder `dir` is on a file system held in memory (tmpfs, ramfs): there
/// nothing is written to a disk and no page can be dropped, so nothing is drained (the advice
/// would only cost: the kernel tries each dirty page, and drains every CPU's page lists when it
/// fails).
#[cfg(target_os = "linux")]
pub fn in_memory(dir: &fs::File) -> bool {
    use std::os::fd::AsRawFd as _;
    // `RAMFS_MAGIC` of `linux/magic.h`, which the libc crate does not name.
    let ramfs = 0x8584_58f6;
    // SAFETY: `fs` is a plain struct the call fills; `dir` is an open descriptor.
    unsafe {
        let mut fs: libc::statfs = std::mem::zeroed();
        libc::fstatfs(dir.as_raw_fd(), &mut fs) == 0
            && (fs.f_type == libc::TMPFS_MAGIC || fs.f_type == ramfs)
    }
}

/// How many written files the drain keeps open at most while they wait in a batch, and at most
/// on their way to it: each a quarter of the process's open-file limit, at most 4,096 (the
/// bytes bound comes first on ordinary pages).
#[cfg(target_os = "linux")]
fn drain_files_at_most() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit for the call to fill.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur
    } else {
        1024
    };
    usize::try_from(soft / 4).unwrap_or(4096).clamp(16, 4096)
}

/// Writes the data of `files` to the disk and waits for it (`sync_file_range`): started for
/// every file first, then waited for, so the disk gets the batch at once. Only these files'
/// pages: not the file system's other dirty data (a store written just before the build, whose
/// write-back the kernel does in its own time), not their metadata, no flush of the device's
/// cache. The drain is about the page cache, not durability. An error of the write-back is
/// returned.
#[cfg(target_os = "linux")]
fn write_out(files: &[fs::File]) -> std::io::Result<()> {
    use std::os::fd::AsRawFd as _;
    let whole = |f: &fs::File, flags: libc::c_uint| {
        // SAFETY: `f` is an open file; offset 0 and length 0 name all of it.
        check(unsafe { libc::sync_file_range(f.as_raw_fd(), 0, 0, flags) })
    };
    for f in files {
        whole(f, libc::SYNC_FILE_RANGE_WRITE)?;
    }
    for f in files {
        whole(
            f,
            libc::SYNC_FILE_RANGE_WAIT_BEFORE
                | libc::SYNC_FILE_RANGE_WRITE
                | libc::SYNC_FILE_RANGE_WAIT_AFTER,
        )?;
    }
    Ok(())
}

/// The drain ([`DRAIN_BYTES`]): receives the files the build wrote, still open, until every
/// writer is done; each time more than `after` bytes (or `most` files) wait, writes their pages
/// to the disk ([`write_out`]) and drops them from the page cache. Files that wait when the
/// build ends are closed and left to the kernel. Fails if writing to the disk failed (the site
/// may not be what was rendered); it still takes every file it is sent, so no writer waits on
/// it.
#[cfg(target_os = "linux")]
fn drain(
    files: std::sync::mpsc::Receiver<(fs::File, u64)>,
    after: u64,
    most: usize,
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd as _;
    let mut waiting: Vec<fs::File> = Vec::with_capacity(most);
    let mut bytes = 0u64;
    let mut failed = None;
    for (file, n) in files {
        if failed.is_some() {
            continue;
        }
        waiting.push(file);
        bytes += n;
        if bytes > after || waiting.len() >= most {
            if let Err(e) = write_out(&waiting) {
                failed = Some(e);
                waiting.clear();
                continue;
            }
            for f in waiting.drain(..) {
                // SAFETY: `f` is an open file. Advice only: a page the kernel keeps stays
                // cached with the same bytes, so its result is not checked.
                unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            }
            bytes = 0;
        }
    }
    failed.map_or(Ok(()), Err)
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
    // Whether hard links from the store work here (same file system, allowed); the first
    // failure turns them off and every later object is copied.
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
    write_site_draining(input, out, DRAIN_BYTES)
}

/// [`write_site`], draining written files after `drain_after` bytes instead of
/// [`DRAIN_BYTES`] (on Linux; elsewhere it is not used).
pub fn write_site_draining(
    input: &SiteInput,
    out: &Path,
    drain_after: u64,
) -> Result<Written, SiteError> {
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
    #[cfg(target_os = "linux")]
    let root = fs::File::open(&dir).map_err(|e| io(&dir, e))?;
    let count = std::thread::scope(|s| -> Result<usize, SiteError> {
        #[allow(unused_mut)]
        let mut folders = Folders::new(&dir, &input.store);
        #[cfg(target_os = "linux")]
        let drained = (!in_memory(&root)).then(|| {
            // Writers wait only when as many files are on their way as may wait in a batch: a
            // drain that writes to the disk for a while does not stop the rendering.
            let most = drain_files_at_most();
            let (send, files) = std::sync::mpsc::sync_channel(most);
            folders.drained = Some(send);
            s.spawn(move || drain(files, drain_after, most))
        });
        #[cfg(not(target_os = "linux"))]
        let _ = (s, drain_after);
        let count = write_files(input, &dir, &folders, &total);
        // The drain ends once every sender is gone.
        drop(folders);
        #[cfg(target_os = "linux")]
        if let Some(drained) = drained {
            drained
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the drain thread panicked")))
                .map_err(|e| io(&dir, e))?;
        }
        count
    })?;
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
