//! Scratch files and folders: the temp files (and staging folders) a writer renames into place,
//! locked while their writer lives, and the sweeping of those that a killed writer left behind.
//!
//! A writer takes an exclusive advisory lock (`flock`) on its temp file or folder right after
//! creating it ([`lock`], [`lock_dir`]) and holds it until the handle drops; the kernel releases
//! the lock when the process dies, however it dies. [`sweep`] removes an entry with the given
//! name prefix only if it can take that lock itself *and* the entry is older than
//! [`STALE_AFTER`] (which covers the instant between a writer's create and its lock), so the
//! live temp file of a concurrent writer is never removed.

use std::fs::{self, File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How old an unlocked scratch entry must be before it counts as left over.
pub const STALE_AFTER: Duration = Duration::from_secs(10);

/// Locks a freshly created temp file for as long as `tmp` lives.
pub fn lock(tmp: tempfile::NamedTempFile) -> io::Result<tempfile::NamedTempFile> {
    tmp.as_file().lock()?;
    Ok(tmp)
}

/// Locks the folder `dir`; the lock lasts as long as the returned handle (renaming the folder
/// keeps it).
pub fn lock_dir(dir: &Path) -> io::Result<File> {
    let f = File::open(dir)?;
    f.lock()?;
    Ok(f)
}

/// One scratch entry found in a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    pub path: PathBuf,
    /// Unlocked and older than the age asked for: its writer is gone.
    pub stale: bool,
}

/// The name prefix of [`ScratchDir`]s in the system's temp folder.
pub const SCRATCH_PREFIX: &str = "ptxbench-scratch-";

/// A folder of the system's temp folder (`$TMPDIR`) for one compile or one worker, named
/// [`SCRATCH_PREFIX`]`*`, locked while it lives and removed when it drops. Making one first
/// sweeps the stale ones a killed process left (a compiler's input, a worker's outcome): they
/// never pile up, and a live one is never touched.
#[derive(Debug)]
pub struct ScratchDir {
    dir: tempfile::TempDir,
    _lock: File,
}

impl ScratchDir {
    pub fn new() -> io::Result<ScratchDir> {
        ScratchDir::new_in(&std::env::temp_dir())
    }

    fn new_in(tmp: &Path) -> io::Result<ScratchDir> {
        sweep(tmp, SCRATCH_PREFIX, STALE_AFTER, &[])?;
        let dir = tempfile::Builder::new()
            .prefix(SCRATCH_PREFIX)
            .tempdir_in(tmp)?;
        let lock = lock_dir(dir.path())?;
        Ok(ScratchDir { dir, _lock: lock })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// The entries of `dir` whose names start with `prefix` (sorted), each with whether it is stale
/// (no writer holds its lock and it is older than `older_than`). A missing folder has none.
pub fn leftovers(dir: &Path, prefix: &str, older_than: Duration) -> io::Result<Vec<Leftover>> {
    let entries = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry?;
        if !entry.file_name().to_string_lossy().starts_with(prefix) {
            continue;
        }
        let path = entry.path();
        let stale = is_stale(&path, older_than);
        out.push(Leftover { path, stale });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Removes the stale entries of `dir` named `prefix*` (see [`leftovers`]), except those in
/// `keep`; returns what was removed. An entry that vanishes meanwhile is not an error.
pub fn sweep(
    dir: &Path,
    prefix: &str,
    older_than: Duration,
    keep: &[PathBuf],
) -> io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for l in leftovers(dir, prefix, older_than)? {
        if !l.stale || keep.contains(&l.path) {
            continue;
        }
        // Hold the lock while removing, so that no writer can take the entry over meanwhile.
        let Ok(f) = File::open(&l.path) else { continue };
        if f.try_lock().is_err() {
            continue;
        }
        let gone = match fs::symlink_metadata(&l.path) {
            Ok(m) if m.is_dir() => fs::remove_dir_all(&l.path),
            Ok(_) => fs::remove_file(&l.path),
            Err(e) => Err(e),
        };
        match gone {
            Ok(()) => removed.push(l.path),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(removed)
}

/// Whether no writer holds `path`'s lock and it was last modified over `older_than` ago.
fn is_stale(path: &Path, older_than: Duration) -> bool {
    let old = fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| {
            SystemTime::now()
                .duration_since(t)
                .is_ok_and(|age| age >= older_than)
        });
    if !old {
        return false;
    }
    match File::open(path).map(|f| f.try_lock()) {
        Ok(Ok(())) => true,
        Ok(Err(TryLockError::WouldBlock)) => false,
        Ok(Err(TryLockError::Error(_))) | Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 55, finding 7: a killed worker or compile left its temp folder (with the kernel)
    /// behind. The next scratch folder sweeps such leftovers, and never a live one.
    #[test]
    fn issue_55_scratch_folders_of_killed_processes_are_swept() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let left = tmp.path().join(format!("{SCRATCH_PREFIX}killed"));
        fs::create_dir(&left).expect("mkdir");
        fs::write(left.join("kernel.ptx"), "// a candidate").expect("write");
        let old = std::process::Command::new("touch")
            .args(["-d", "2020-01-01"])
            .arg(&left)
            .status()
            .expect("touch");
        assert!(old.success());
        let live = ScratchDir::new_in(tmp.path()).expect("a scratch folder");
        assert!(!left.exists(), "the stale folder was swept");
        let older = std::process::Command::new("touch")
            .args(["-d", "2020-01-01"])
            .arg(live.path())
            .status()
            .expect("touch");
        assert!(older.success());
        let _second = ScratchDir::new_in(tmp.path()).expect("another");
        assert!(
            live.path().exists(),
            "a live (locked) folder is kept, however old"
        );
    }

    #[test]
    fn a_locked_temp_file_is_never_swept_and_an_unlocked_old_one_is() {
        let d = tempfile::tempdir().expect("tempdir");
        let live = lock(
            tempfile::Builder::new()
                .prefix(".tmp-")
                .tempfile_in(d.path())
                .expect("temp"),
        )
        .expect("lock");
        let dead = d.path().join(".tmp-dead");
        fs::write(&dead, b"half").expect("write");
        fs::write(d.path().join("object"), b"x").expect("write");
        // Age 0: only the lock decides.
        let found = leftovers(d.path(), ".tmp-", Duration::ZERO).expect("list");
        assert_eq!(found.len(), 2);
        let removed = sweep(d.path(), ".tmp-", Duration::ZERO, &[]).expect("sweep");
        assert_eq!(removed, vec![dead.clone()]);
        assert!(live.path().exists() && d.path().join("object").exists());
        // A fresh unlocked file is not stale yet.
        fs::write(&dead, b"half").expect("write");
        assert!(
            sweep(d.path(), ".tmp-", Duration::from_secs(3600), &[])
                .expect("sweep")
                .is_empty()
        );
        drop(live);
    }

    #[test]
    fn a_locked_folder_is_kept_and_a_dead_one_removed() {
        let d = tempfile::tempdir().expect("tempdir");
        let live = d.path().join(".stage-live");
        let dead = d.path().join(".stage-dead");
        for p in [&live, &dead] {
            fs::create_dir_all(p.join("sub")).expect("mkdir");
            fs::write(p.join("sub/page.html"), b"x").expect("write");
        }
        let _held = lock_dir(&live).expect("lock");
        let removed = sweep(d.path(), ".stage-", Duration::ZERO, &[]).expect("sweep");
        assert_eq!(removed, vec![dead]);
        assert!(live.join("sub/page.html").exists());
    }
}
