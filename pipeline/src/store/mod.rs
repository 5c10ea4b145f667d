//! The content-addressed artifact store (`artifacts/`), modelled on cacache-rs.
//!
//! Layout: `<root>/v1/blake3/ab/cd/<64 hex>` holds the blob whose blake3 digest is that hex
//! (`ab`, `cd`: its first two bytes in hex). `<root>/v1/tmp/` holds in-flight writes, each a
//! `.tmp-*` file its writer locks ([`crate::scratch`]); one that a killed writer left is named by
//! `verify` and removed by [`Store::sweep_temp`]. A new layout gets a new `vN` folder, so old
//! and new readers never misread each other.
//!
//! Guarantees:
//! - **Immutable, atomic writes.** A blob is written to a temp file in `v1/tmp/` (the same file
//!   system), fsynced, then renamed onto its name, and the folder is fsynced. Readers see a
//!   whole object or none. A target that already exists with the same length counts as success
//!   (two writers of the same content both succeed); one with another length is corrupt and is
//!   atomically replaced by the verified bytes, and [`Store::put_reader_replacing`] replaces one
//!   whose bytes do not hash to its name (how `import` repairs). So any number of threads or
//!   processes may write one store at once and lose nothing.
//! - **Reads re-hash.** [`Store::get`] returns the bytes only if they hash to their name; a
//!   corrupt or truncated object is [`StoreError::Corrupt`] naming the hash and the path.
//! - **Unique prefixes.** [`Store::resolve`] finds an object by any unique hex prefix; an
//!   unknown or ambiguous prefix is an error listing the candidates.
//! - **Typed objects** ([`object`]) are canonical JSON with a `schema` tag; they reference other
//!   blobs by digest under keys ending in `_digest` / `_digests`, so a manifest's closure is a
//!   Merkle DAG walked by [`closure::closure`] with no per-kind code. [`Store::put_object`]
//!   stores an object only once everything it references is present.

pub mod closure;
mod error;
pub mod layout;
pub mod object;
pub mod reported;
pub mod table;
pub mod verify;

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::digest::Digest;

pub use error::StoreError;
pub use layout::{LAYOUT_DIR, OBJECTS_DIR, TEMP_DIR, TEMP_PREFIX};
pub use object::{Content, Object, ObjectKind, Reference, Schema};

/// Top-level shard folders (name, path) and the strays beside them.
type TopShards = (Vec<(String, PathBuf)>, Vec<PathBuf>);

/// A store rooted at a folder (usually `artifacts/`). Cheap to clone; holds no open files.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    sync: bool,
}

/// The result of listing the object folders: well-named objects and anything else found.
#[derive(Debug, Default)]
pub struct Scan {
    /// Objects whose file name is a digest in the right shard, sorted by digest.
    pub objects: Vec<(Digest, PathBuf)>,
    /// Files or folders that do not belong (misplaced, misnamed, leftover temp files).
    pub strays: Vec<PathBuf>,
}

impl Store {
    /// A store at `root`. Nothing is created until the first write.
    pub fn open(root: impl Into<PathBuf>) -> Store {
        Store {
            root: root.into(),
            sync: true,
        }
    }

    /// Turns fsync off (for scratch stores in tests and benchmarks). Renames stay atomic.
    pub fn without_sync(mut self) -> Store {
        self.sync = false;
        self
    }

    /// The `artifacts` folder in `start` or its nearest parent that has one.
    pub fn discover(start: &Path) -> Option<PathBuf> {
        start
            .ancestors()
            .map(|d| d.join("artifacts"))
            .find(|d| d.is_dir())
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/v1/blake3`.
    pub fn objects_dir(&self) -> PathBuf {
        self.root.join(LAYOUT_DIR).join(OBJECTS_DIR)
    }

    /// Where the object named `digest` lives (whether or not it exists).
    pub fn path_of(&self, digest: &Digest) -> PathBuf {
        let hex = digest.hex();
        self.objects_dir()
            .join(&hex[0..2])
            .join(&hex[2..4])
            .join(&hex)
    }

    /// The path of `digest` relative to the store root, with `/` separators (used in bundles).
    pub fn relative_path_of(digest: &Digest) -> String {
        let hex = digest.hex();
        format!(
            "{LAYOUT_DIR}/{OBJECTS_DIR}/{}/{}/{hex}",
            &hex[0..2],
            &hex[2..4]
        )
    }

    /// Whether an object file named `digest` exists (its content is not checked).
    pub fn contains(&self, digest: &Digest) -> bool {
        self.path_of(digest).is_file()
    }

    /// Stores `bytes`; returns their digest. Idempotent and safe to call concurrently.
    pub fn put(&self, bytes: &[u8]) -> Result<Digest, StoreError> {
        let digest = Digest::of(bytes);
        let path = self.path_of(&digest);
        if has_len(&path, bytes.len() as u64) {
            return Ok(digest);
        }
        let mut tmp = self.temp_file()?;
        tmp.write_all(bytes)
            .map_err(|e| StoreError::io(tmp.path(), e))?;
        let dir = parent(&path);
        fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        self.commit(tmp, &path)?;
        Ok(digest)
    }

    /// `<root>/v1/tmp`.
    pub fn temp_dir(&self) -> PathBuf {
        self.root.join(LAYOUT_DIR).join(TEMP_DIR)
    }

    /// A new locked temp file in `v1/tmp/`.
    fn temp_file(&self) -> Result<tempfile::NamedTempFile, StoreError> {
        let dir = self.temp_dir();
        fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
        tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .tempfile_in(&dir)
            .and_then(crate::scratch::lock)
            .map_err(|e| StoreError::io(&dir, e))
    }

    /// The temp files in `v1/tmp/`, each with whether it is stale (its writer is gone).
    pub fn leftover_temp(&self) -> Result<Vec<crate::scratch::Leftover>, StoreError> {
        let dir = self.temp_dir();
        crate::scratch::leftovers(&dir, TEMP_PREFIX, crate::scratch::STALE_AFTER)
            .map_err(|e| StoreError::io(&dir, e))
    }

    /// Removes the temp files that killed writers left in `v1/tmp/` (never a live writer's);
    /// returns them.
    pub fn sweep_temp(&self) -> Result<Vec<PathBuf>, StoreError> {
        let dir = self.temp_dir();
        crate::scratch::sweep(&dir, TEMP_PREFIX, crate::scratch::STALE_AFTER, &[])
            .map_err(|e| StoreError::io(&dir, e))
    }

    /// Streams `reader` into the store, hashing while writing; returns the digest and length.
    pub fn put_reader(&self, reader: &mut dyn Read) -> Result<(Digest, u64), StoreError> {
        self.put_stream(reader, None, false)
    }

    /// Streams `reader` into the store only if it hashes to `expected`; otherwise nothing lands
    /// and the result is [`StoreError::Mismatch`].
    pub fn put_reader_expecting(
        &self,
        reader: &mut dyn Read,
        expected: &Digest,
    ) -> Result<u64, StoreError> {
        self.put_stream(reader, Some(expected), false)
            .map(|(_, n)| n)
    }

    /// Like [`Store::put_reader_expecting`], but once the bytes are verified they replace
    /// whatever file holds that name (a corrupt copy of the same length included).
    pub fn put_reader_replacing(
        &self,
        reader: &mut dyn Read,
        expected: &Digest,
    ) -> Result<u64, StoreError> {
        self.put_stream(reader, Some(expected), true)
            .map(|(_, n)| n)
    }

    /// Whether the object `digest` is present and its bytes hash to its name (read as a
    /// stream); `false` when it is missing or corrupt.
    pub fn is_sound(&self, digest: &Digest) -> Result<bool, StoreError> {
        let path = self.path_of(digest);
        let mut f = match crate::destination::open_regular(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(StoreError::io(path, e)),
        };
        let mut hasher = blake3::Hasher::new();
        io::copy(&mut f, &mut hasher).map_err(|e| StoreError::io(&path, e))?;
        Ok(Digest::from_hasher(&hasher) == *digest)
    }

    /// Stores the file at `path` byte-for-byte.
    pub fn put_file(&self, path: &Path) -> Result<(Digest, u64), StoreError> {
        let mut f = crate::destination::open_regular(path).map_err(|e| StoreError::io(path, e))?;
        self.put_stream(&mut f, None, false)
    }

    fn put_stream(
        &self,
        reader: &mut dyn Read,
        expected: Option<&Digest>,
        replace: bool,
    ) -> Result<(Digest, u64), StoreError> {
        let mut tmp = self.temp_file()?;
        let mut hasher = blake3::Hasher::new();
        let mut buf = vec![0u8; 256 * 1024];
        let mut len = 0u64;
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(StoreError::io(tmp.path(), e)),
            };
            hasher.update(&buf[..n]);
            tmp.write_all(&buf[..n])
                .map_err(|e| StoreError::io(tmp.path(), e))?;
            len += n as u64;
        }
        let digest = Digest::from_hasher(&hasher);
        if let Some(expected) = expected
            && *expected != digest
        {
            return Err(StoreError::Mismatch {
                expected: *expected,
                actual: digest,
            });
        }
        let path = self.path_of(&digest);
        if !replace && has_len(&path, len) {
            return Ok((digest, len));
        }
        let dir = parent(&path);
        fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        self.commit(tmp, &path)?;
        Ok((digest, len))
    }

    /// fsync, rename onto `path`, fsync the folder.
    fn commit(&self, tmp: tempfile::NamedTempFile, path: &Path) -> Result<(), StoreError> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            tmp.as_file()
                .set_permissions(fs::Permissions::from_mode(0o644))
                .map_err(|e| StoreError::io(tmp.path(), e))?;
        }
        if self.sync {
            tmp.as_file()
                .sync_all()
                .map_err(|e| StoreError::io(tmp.path(), e))?;
        }
        tmp.persist(path)
            .map_err(|e| StoreError::io(path, e.error))?;
        if self.sync {
            let dir = parent(path);
            fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| StoreError::io(dir, e))?;
        }
        Ok(())
    }

    /// Stores a typed object as canonical JSON (see [`object`]). The value must serialise with
    /// `schema` as its first field, and everything it references must already be stored.
    pub fn put_object<T: Serialize + ?Sized>(&self, value: &T) -> Result<Digest, StoreError> {
        let bytes = serde_json::to_vec(value).map_err(|e| StoreError::Serialize {
            message: e.to_string(),
        })?;
        let object =
            object::parse_object(&bytes).map_err(|source| StoreError::Invalid { source })?;
        for r in &object.references {
            if !self.contains(&r.digest) {
                return Err(StoreError::DanglingReference {
                    field: r.field.clone(),
                    digest: r.digest,
                });
            }
        }
        self.put(&bytes)
    }

    /// The bytes of `digest`, re-hashed: missing or corrupt objects are errors.
    pub fn get(&self, digest: &Digest) -> Result<Vec<u8>, StoreError> {
        let path = self.path_of(digest);
        let bytes = crate::destination::read_regular(&path);
        checked(digest, path, bytes)
    }

    /// [`Store::get`] of each of `digests`, in order, with every file opened and the kernel
    /// asked to read it ahead before the first is read: the disk is given their reads at once,
    /// and the thread waits for the first, not for each in turn. Holds a file open per digest
    /// until it is read: give it a few dozen at a time.
    pub fn get_many(&self, digests: &[Digest]) -> Vec<Result<Vec<u8>, StoreError>> {
        let opened: Vec<(PathBuf, io::Result<fs::File>)> = digests
            .iter()
            .map(|d| {
                let path = self.path_of(d);
                let file = crate::destination::open_regular(&path);
                if let Ok(f) = &file {
                    read_ahead(f);
                }
                (path, file)
            })
            .collect();
        opened
            .into_iter()
            .zip(digests)
            .map(|((path, file), d)| {
                // `File`'s `read_to_end` sizes the buffer from the file's length, as `fs::read`.
                let bytes = file.and_then(|mut f| {
                    let mut bytes = Vec::new();
                    f.read_to_end(&mut bytes).map(|_| bytes)
                });
                checked(d, path, bytes)
            })
            .collect()
    }

    /// The typed object `digest`, parsed (schema checked, references collected).
    pub fn get_object(&self, digest: &Digest) -> Result<Object, StoreError> {
        let bytes = self.get(digest)?;
        if !object::looks_like_object(&bytes) {
            return Err(StoreError::NotAnObject { digest: *digest });
        }
        object::parse_object(&bytes).map_err(|source| StoreError::Malformed {
            digest: *digest,
            source,
        })
    }

    /// The object `digest` decoded into `T` (after re-hashing and schema checks).
    pub fn get_json<T: DeserializeOwned>(&self, digest: &Digest) -> Result<T, StoreError> {
        let object = self.get_object(digest)?;
        serde_json::from_value(object.value).map_err(|e| StoreError::Decode {
            digest: *digest,
            expected: std::any::type_name::<T>(),
            message: e.to_string(),
        })
    }

    /// The one object whose hex digest starts with `prefix` (1 to 64 lowercase hex).
    pub fn resolve(&self, prefix: &str) -> Result<Digest, StoreError> {
        let valid = !prefix.is_empty()
            && prefix.len() <= 64
            && prefix
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !valid {
            return Err(StoreError::BadPrefix {
                prefix: prefix.chars().take(80).collect(),
            });
        }
        let mut found = Vec::new();
        self.visit(Some(prefix), &mut |d, _| found.push(d), &mut |_| {})?;
        found.sort();
        match found.len() {
            0 => Err(StoreError::UnknownPrefix {
                prefix: prefix.to_string(),
                root: self.root.clone(),
            }),
            1 => Ok(found[0]),
            count => Err(StoreError::AmbiguousPrefix {
                prefix: prefix.to_string(),
                candidates: found.into_iter().take(20).collect(),
                count,
            }),
        }
    }

    /// Every object in the store (by name; content is not checked), sorted.
    pub fn list(&self) -> Result<Vec<Digest>, StoreError> {
        let mut out = Vec::new();
        self.visit(None, &mut |d, _| out.push(d), &mut |_| {})?;
        out.sort();
        Ok(out)
    }

    /// Lists the object folders: objects and strays.
    pub fn scan(&self) -> Result<Scan, StoreError> {
        let mut scan = Scan::default();
        let mut strays = Vec::new();
        self.visit(
            None,
            &mut |d, p| scan.objects.push((d, p.to_path_buf())),
            &mut |p| strays.push(p.to_path_buf()),
        )?;
        scan.objects.sort();
        strays.sort();
        scan.strays = strays;
        Ok(scan)
    }

    /// Walks `v1/blake3/xx/yy/*`, pruning shards that cannot match `prefix`.
    fn visit(
        &self,
        prefix: Option<&str>,
        object: &mut dyn FnMut(Digest, &Path),
        stray: &mut dyn FnMut(&Path),
    ) -> Result<(), StoreError> {
        let (shards, strays) = self.top_shards()?;
        strays.iter().for_each(|p| stray(p));
        for (name1, dir1) in shards {
            if shard_matches(prefix, &name1, 0) {
                self.visit_shard(&name1, &dir1, prefix, object, stray)?;
            }
        }
        Ok(())
    }

    /// The top-level shard folders `v1/blake3/xx`, sorted, and anything else found there.
    pub(crate) fn top_shards(&self) -> Result<TopShards, StoreError> {
        let (mut shards, mut strays) = (Vec::new(), Vec::new());
        for (name, dir, kind) in read_dir_sorted(&self.objects_dir())? {
            if is_shard(&name, kind) {
                shards.push((name, dir));
            } else {
                strays.push(dir);
            }
        }
        Ok((shards, strays))
    }

    /// Walks one top-level shard `v1/blake3/<name1>` (see [`Store::top_shards`]).
    pub(crate) fn visit_shard(
        &self,
        name1: &str,
        dir1: &Path,
        prefix: Option<&str>,
        object: &mut dyn FnMut(Digest, &Path),
        stray: &mut dyn FnMut(&Path),
    ) -> Result<(), StoreError> {
        for (name2, dir2, kind2) in read_dir_sorted(dir1)? {
            if !is_shard(&name2, kind2) {
                stray(&dir2);
                continue;
            }
            if !shard_matches(prefix, &name2, 2) {
                continue;
            }
            // An entry named as an object is one, whatever it is: a FIFO or a folder there is a
            // broken object (its read fails, naming what it is), never a stray.
            for (name, path, _) in read_dir_sorted(&dir2)? {
                match name.parse::<Digest>() {
                    Ok(d) if name[0..2] == *name1 && name[2..4] == name2 => {
                        if prefix.is_none_or(|p| name.starts_with(p)) {
                            object(d, &path);
                        }
                    }
                    _ => stray(&path),
                }
            }
        }
        Ok(())
    }
}

/// Whether shard folder `name` (hex digits `offset..offset+2` of a digest) can hold objects
/// starting with `prefix`.
fn shard_matches(prefix: Option<&str>, name: &str, offset: usize) -> bool {
    let Some(p) = prefix else { return true };
    let part = p.get(offset..).unwrap_or("");
    name.starts_with(&part[..part.len().min(2)])
}

fn is_shard(name: &str, kind: fs::FileType) -> bool {
    name.len() == 2
        && name
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && kind.is_dir()
}

/// Entries of `dir` sorted by name, with their type as the directory listing gives it (no
/// `stat` per entry: symlinks are neither files nor folders here); a missing folder is empty.
fn read_dir_sorted(dir: &Path) -> Result<Vec<(String, PathBuf, fs::FileType)>, StoreError> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StoreError::io(dir, e)),
    };
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| StoreError::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry
            .file_type()
            .map_err(|e| StoreError::io(entry.path(), e))?;
        out.push((name, entry.path(), kind));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn has_len(path: &Path, len: u64) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == len)
}

fn parent(path: &Path) -> &Path {
    path.parent()
        .expect("object paths always have a shard folder")
}

/// Bytes read from `path` for object `digest`, checked: a file that is not there is a missing
/// object, bytes that do not hash to `digest` a corrupt one.
fn checked(
    digest: &Digest,
    path: PathBuf,
    read: io::Result<Vec<u8>>,
) -> Result<Vec<u8>, StoreError> {
    let bytes = match read {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(StoreError::Missing {
                digest: *digest,
                path,
            });
        }
        Err(e) => return Err(StoreError::io(path, e)),
    };
    let actual = Digest::of(&bytes);
    if actual != *digest {
        return Err(StoreError::Corrupt {
            digest: *digest,
            path,
            actual,
        });
    }
    Ok(bytes)
}

/// Asks the kernel to start reading all of `file` into its cache, without waiting for it (a
/// hint: where it is not taken, or not supported, reads just wait as usual).
fn read_ahead(file: &fs::File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid open descriptor; the call only reads its arguments.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_WILLNEED) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_and_layout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path());
        let d = store.put(b"hello").expect("put");
        assert_eq!(d, Digest::of(b"hello"));
        let rel = Store::relative_path_of(&d);
        assert!(dir.path().join(&rel).is_file(), "{rel}");
        assert_eq!(store.get(&d).expect("get"), b"hello");
        assert_eq!(store.put(b"hello").expect("second put"), d);
        assert_eq!(store.list().expect("list"), vec![d]);
        assert_eq!(store.resolve(&d.hex()[..3]).expect("prefix"), d);
    }

    #[test]
    fn get_many_reads_each_as_get_does() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path());
        let stored: Vec<Digest> = (0..40)
            .map(|i| {
                store
                    .put(format!("object {i}\n").repeat(i).as_bytes())
                    .expect("put")
            })
            .collect();
        let missing = Digest::of(b"never stored");
        let corrupt = store.put(b"to be damaged").expect("put");
        let path = dir.path().join(Store::relative_path_of(&corrupt));
        let mut perms = fs::metadata(&path).expect("metadata").permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        fs::set_permissions(&path, perms).expect("writable");
        fs::write(&path, b"damaged").expect("damage");
        let mut asked = stored.clone();
        asked.insert(7, missing);
        asked.insert(20, corrupt);
        asked.push(stored[3]);
        let got = store.get_many(&asked);
        assert_eq!(got.len(), asked.len());
        for (d, r) in asked.iter().zip(&got) {
            match (r, store.get(d)) {
                (Ok(a), Ok(b)) => assert_eq!(*a, b, "{d}"),
                (Err(StoreError::Missing { digest, .. }), Err(StoreError::Missing { .. })) => {
                    assert_eq!((digest, d), (&missing, &missing));
                }
                (
                    Err(StoreError::Corrupt { digest, actual, .. }),
                    Err(StoreError::Corrupt { .. }),
                ) => {
                    assert_eq!((digest, d), (&corrupt, &corrupt));
                    assert_eq!(*actual, Digest::of(b"damaged"));
                }
                (a, b) => panic!("{d}: get_many gave {a:?}, get gave {b:?}"),
            }
        }
        assert_eq!(got[0].as_deref().expect("empty object"), b"");
        assert_eq!(
            got[40].as_deref().expect("read"),
            "object 38\n".repeat(38).as_bytes()
        );
        assert!(store.get_many(&[]).is_empty());
    }

    #[test]
    fn put_object_requires_references() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path());
        #[derive(Serialize)]
        struct Run {
            schema: &'static str,
            log_digest: Digest,
        }
        let obj = Run {
            schema: "ptxbench.run/1",
            log_digest: Digest::of(b"nope"),
        };
        assert!(matches!(
            store.put_object(&obj),
            Err(StoreError::DanglingReference { .. })
        ));
        let log = store.put(b"nope").expect("put");
        let d = store.put_object(&obj).expect("now referenced blob exists");
        let o = store.get_object(&d).expect("object");
        assert_eq!(o.references[0].digest, log);
    }

    #[test]
    fn streaming_put_checks_expected_digest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path());
        let wrong = Digest::of(b"other");
        let err = store.put_reader_expecting(&mut &b"data"[..], &wrong);
        assert!(matches!(err, Err(StoreError::Mismatch { .. })));
        assert!(store.list().expect("list").is_empty());
        let n = store
            .put_reader_expecting(&mut &b"data"[..], &Digest::of(b"data"))
            .expect("matches");
        assert_eq!(n, 4);
    }
}
