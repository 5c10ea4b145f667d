//! Bundle import (`ptxbench::bundle::import_bundle`): a real bundle (`manifests/loopback.yaml`
//! with its closure from the repository's store) with its bytes mutated, zips generated with
//! hostile entry names, sizes, methods and contents, and random bytes are imported into a
//! store that already holds an object of the bundle and an unrelated one. Whatever happens, the
//! objects that were there keep their bytes, every object in the store hashes to its name, and
//! no temp file is left behind; a refused import adds nothing, and its error names the archive.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::*;

use ptxbench::bundle::{ImportLimits, import_bundle, write_bundle};
use ptxbench::digest::Digest;
use ptxbench::store::Store;

use crate::{bounded, config};

/// The real bundle's bytes and one of its blobs.
fn real_bundle() -> &'static (Vec<u8>, Vec<u8>) {
    static BUNDLE: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    BUNDLE.get_or_init(|| {
        let repo = crate::repo();
        let store = Store::open(repo.join("artifacts"));
        let dir = tempfile::tempdir().expect("tempdir");
        let zip = dir.path().join("loopback.zip");
        write_bundle(&store, &repo.join("manifests/loopback.yaml"), &zip)
            .expect("the loopback manifest's closure is in the repository's store");
        let bytes = std::fs::read(&zip).expect("read the bundle");
        // A blob of the bundle, which the target store will already hold.
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes.clone())).expect("a zip");
        let mut blob = Vec::new();
        for i in 0..archive.len() {
            let mut f = archive.by_index(i).expect("an entry");
            if f.name().is_ok_and(|n| n.starts_with("artifacts/")) {
                std::io::copy(&mut f, &mut blob).expect("read the entry");
                break;
            }
        }
        assert!(!blob.is_empty());
        (bytes, blob)
    })
}

/// One edit of a bundle's bytes.
#[derive(Debug, Clone)]
enum ByteEdit {
    Flip(usize, u8),
    /// Four bytes set to 0xff (a count, size or offset made huge).
    Max32(usize),
    Zero(usize, u16),
    Truncate(usize),
    Insert(usize, Vec<u8>),
    /// Copy `.2` bytes from `.0` to `.1`.
    Copy(usize, usize, u16),
}

fn byte_edit() -> impl Strategy<Value = ByteEdit> {
    prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(i, x)| ByteEdit::Flip(i, x)),
        any::<usize>().prop_map(ByteEdit::Max32),
        (any::<usize>(), any::<u16>()).prop_map(|(i, n)| ByteEdit::Zero(i, n)),
        any::<usize>().prop_map(ByteEdit::Truncate),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..64))
            .prop_map(|(i, b)| ByteEdit::Insert(i, b)),
        (any::<usize>(), any::<usize>(), any::<u16>())
            .prop_map(|(a, b, n)| ByteEdit::Copy(a, b, n)),
    ]
}

/// Offsets near the end matter most (the central directory), so half of them land there.
fn at(b: &[u8], i: usize) -> usize {
    let len = b.len().max(1);
    if i.is_multiple_of(2) {
        (i / 2) % len
    } else {
        len - 1 - ((i / 2) % len.min(512))
    }
}

fn apply(mut b: Vec<u8>, e: &ByteEdit) -> Vec<u8> {
    if b.is_empty() {
        return b;
    }
    match e {
        ByteEdit::Flip(i, x) => {
            let i = at(&b, *i);
            b[i] ^= x;
        }
        ByteEdit::Max32(i) => {
            let i = at(&b, *i);
            let end = (i + 4).min(b.len());
            b[i..end].fill(0xff);
        }
        ByteEdit::Zero(i, n) => {
            let i = at(&b, *i);
            let end = (i + usize::from(*n)).min(b.len());
            b[i..end].fill(0);
        }
        ByteEdit::Truncate(i) => b.truncate(at(&b, *i)),
        ByteEdit::Insert(i, bytes) => {
            let i = at(&b, *i);
            b.splice(i..i, bytes.iter().copied());
        }
        ByteEdit::Copy(from, to, n) => {
            let (from, to) = (at(&b, *from), at(&b, *to));
            let n = usize::from(*n).min(b.len() - from).min(b.len() - to);
            let chunk = b[from..from + n].to_vec();
            b[to..to + n].copy_from_slice(&chunk);
        }
    }
    b
}

/// An entry of a generated zip.
#[derive(Debug, Clone)]
struct GenEntry {
    name: String,
    bytes: Vec<u8>,
    deflate: bool,
}

/// Entry names: objects named by their content's hash, by another hash or by no hash,
/// manifests, and names an archive must never get to write.
fn entry() -> impl Strategy<Value = GenEntry> {
    let content = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..256),
        Just(b"{\"schema\": \"ptxbench.run/1\"}".to_vec()),
        Just(b"{\"schema\": \"ptxbench.record/3\", \"x\": 1}".to_vec()),
        Just(vec![0u8; 200_000]),
    ];
    let name = prop::sample::select(
        &[
            "own",
            "other",
            "artifacts/v1/blake3/zz/zz/zzzz",
            "artifacts/v1/blake3/",
            "artifacts/../../escape",
            "../escape",
            "/abs/escape",
            "C:/escape",
            "manifests\\..\\escape",
            "manifests/m.yaml",
            "manifests/.hidden.yaml",
            "manifests/../m.yaml",
            "manifests/sub/m.yaml",
            "manifests/m.yaml\u{0}.txt",
            "",
            "x",
        ][..],
    );
    (name, content, any::<bool>()).prop_map(|(name, bytes, deflate)| {
        let name = match name {
            "own" => format!("artifacts/{}", Store::relative_path_of(&Digest::of(&bytes))),
            "other" => format!(
                "artifacts/{}",
                Store::relative_path_of(&Digest::of(b"something else"))
            ),
            n => n.to_string(),
        };
        GenEntry {
            name,
            bytes,
            deflate,
        }
    })
}

/// A manifest naming `runs` (some of them maybe objects of the zip).
fn manifest_entry(runs: &[Digest]) -> GenEntry {
    let runs: Vec<String> = runs.iter().map(|d| format!("\"{d}\"")).collect();
    GenEntry {
        name: "manifests/m.yaml".into(),
        bytes: format!(
            "manifest: 1\nsuite: {{ version: \"1.0.0\", hash: \"{}\" }}\nruns: [{}]\nsite: {{ title: T, base_path: / }}\n",
            Digest::of(b"suite"),
            runs.join(", ")
        )
        .into_bytes(),
        deflate: true,
    }
}

fn zip_of(entries: &[GenEntry]) -> Vec<u8> {
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for e in entries {
        let method = if e.deflate {
            zip::CompressionMethod::Deflated
        } else {
            zip::CompressionMethod::Stored
        };
        let o = zip::write::SimpleFileOptions::default().compression_method(method);
        // The writer refuses some names (duplicates); such an entry is left out.
        if z.start_file(e.name.as_str(), o).is_ok() {
            z.write_all(&e.bytes).expect("write into memory");
        }
    }
    z.finish().expect("finish in memory").into_inner()
}

/// Every file under `dir`, relative to it.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| !e.file_type().is_dir())
        .filter_map(|e| e.path().strip_prefix(dir).ok().map(Path::to_path_buf))
        .collect();
    out.sort();
    out
}

/// Imports `bytes` (written as a file) into a store that holds a blob of the real bundle and an
/// unrelated object, and checks what the import did.
fn exercise(bytes: Vec<u8>) {
    bounded("bundle import", move || {
        let dir = tempfile::tempdir().expect("tempdir");
        let zip = dir.path().join("hostile.zip");
        std::fs::write(&zip, &bytes).expect("write the zip");
        let store = Store::open(dir.path().join("artifacts")).without_sync();
        let manifests = dir.path().join("manifests");
        let before = [
            store.put(&real_bundle().1).expect("put"),
            store.put(b"an unrelated object").expect("put"),
        ];
        std::fs::create_dir_all(&manifests).expect("mkdir");
        std::fs::write(manifests.join("kept.yaml"), "kept\n").expect("write");
        let listed = store.list().expect("list");

        let result = import_bundle(&store, &manifests, &zip, &ImportLimits::default());

        for d in &before {
            assert!(
                store.is_sound(d).expect("read"),
                "{d} kept its bytes: {result:?}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(manifests.join("kept.yaml")).expect("read"),
            "kept\n"
        );
        for d in store.list().expect("list") {
            assert!(store.is_sound(&d).expect("read"), "{d} hashes to its name");
        }
        let litter: Vec<PathBuf> = files(dir.path())
            .into_iter()
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                let object = p.starts_with("artifacts/v1/blake3");
                let manifest = p.starts_with("manifests") && !name.starts_with('.');
                !(object || manifest || p == Path::new("hostile.zip"))
            })
            .collect();
        assert!(litter.is_empty(), "left behind: {litter:?} ({result:?})");
        match result {
            Ok(summary) => {
                assert!(summary.manifest.starts_with(&manifests));
                assert!(summary.manifest.is_file());
            }
            Err(e) => {
                assert_eq!(
                    store.list().expect("list"),
                    listed,
                    "a refusal adds nothing: {e}"
                );
                assert_eq!(files(&manifests), vec![PathBuf::from("kept.yaml")], "{e}");
                let msg = e.to_string();
                assert!(
                    msg.contains(&zip.display().to_string())
                        || msg.contains("already exists")
                        || msg.contains(&dir.path().display().to_string()),
                    "the error names the archive: {msg}"
                );
            }
        }
    });
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn mutated_real_bundles_import_or_are_refused_whole(
        edits in prop::collection::vec(byte_edit(), 1..6),
    ) {
        let bytes = edits.iter().fold(real_bundle().0.clone(), apply);
        exercise(bytes);
    }

    #[test]
    fn generated_zips_import_or_are_refused_whole(
        entries in prop::collection::vec(entry(), 0..8),
        with_manifest in any::<bool>(),
        edits in prop::collection::vec(byte_edit(), 0..3),
    ) {
        let mut entries = entries;
        if with_manifest {
            let runs: Vec<Digest> = entries.iter().map(|e| Digest::of(&e.bytes)).collect();
            entries.push(manifest_entry(&runs));
        }
        let bytes = edits.iter().fold(zip_of(&entries), apply);
        exercise(bytes);
    }

    #[test]
    fn random_bytes_are_refused(
        prefix in prop::sample::select(PREFIXES),
        body in prop::collection::vec(any::<u8>(), 0..2048),
        eocd in any::<bool>(),
    ) {
        let mut bytes = prefix.to_vec();
        bytes.extend(body);
        if eocd {
            // An end-of-central-directory record claiming many entries far away.
            bytes.extend(b"PK\x05\x06\0\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f\0\0");
        }
        exercise(bytes);
    }
}

/// How random bytes start: as nothing, or as a zip's local header, end of central directory
/// or zip64 end record.
const PREFIXES: &[&[u8]] = &[b"", b"PK\x03\x04", b"PK\x05\x06", b"PK\x06\x06"];

/// The unmutated real bundle imports, so the mutations start from a bundle that is accepted.
#[test]
fn the_real_bundle_imports() {
    exercise(real_bundle().0.clone());
}
