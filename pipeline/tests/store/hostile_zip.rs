//! Hostile bundles: every one is refused and nothing lands in the store.

use std::io::Write as _;
use std::path::Path;

use ptxbench::bundle::{ImportError, ImportLimits, import_bundle};
use ptxbench::digest::Digest;
use ptxbench::store::Store;
use zip::write::SimpleFileOptions;

use crate::{manifest_text, manifests_dir, new_store, object_entry};

/// Writes a zip of (name, bytes) entries, deflated.
fn make_zip(path: &Path, entries: &[(String, Vec<u8>)]) {
    crate::zip_of(path, entries, zip::CompressionMethod::Deflated);
}

fn manifest_entry() -> (String, Vec<u8>) {
    ("manifests/m.yaml".into(), manifest_text(&[]).into_bytes())
}

/// Imports `zip` into a fresh store; asserts the store and manifests folder stay empty.
fn refused(zip: &Path, limits: &ImportLimits) -> ImportError {
    let (_dir, store) = new_store();
    let err = import_bundle(&store, &manifests_dir(&store), zip, limits).expect_err("refused");
    assert!(
        store.list().expect("list").is_empty(),
        "nothing lands: {err}"
    );
    assert!(
        !manifests_dir(&store).exists(),
        "no manifest written: {err}"
    );
    err
}

#[test]
fn parent_and_absolute_entries_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in [
        "../evil",
        "artifacts/../../evil",
        "/etc/evil",
        "C:/evil",
        "a\\..\\evil",
    ] {
        let zip = dir.path().join("z.zip");
        make_zip(
            &zip,
            &[
                object_entry(b"ok"),
                manifest_entry(),
                (name.into(), b"x".to_vec()),
            ],
        );
        match refused(&zip, &ImportLimits::default()) {
            ImportError::UnsafeName { name: n, .. } => assert_eq!(n, name),
            other => panic!("{name}: {other}"),
        }
    }
    assert!(!dir.path().parent().expect("parent").join("evil").exists());
}

#[test]
fn symlink_entry_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zip = dir.path().join("z.zip");
    let f = std::fs::File::create(&zip).expect("create");
    let mut z = zip::ZipWriter::new(f);
    let (mname, mbytes) = manifest_entry();
    z.start_file(mname, SimpleFileOptions::default())
        .expect("start");
    z.write_all(&mbytes).expect("write");
    let d = Digest::of(b"target");
    z.add_symlink(
        format!("artifacts/{}", Store::relative_path_of(&d)),
        "/etc/passwd",
        SimpleFileOptions::default(),
    )
    .expect("symlink");
    z.finish().expect("finish");
    assert!(matches!(
        refused(&zip, &ImportLimits::default()),
        ImportError::Symlink { .. }
    ));
}

#[test]
fn duplicate_names_are_refused() {
    // The writer refuses duplicates, so write two same-length names and patch one into the
    // other in both the local header and the central directory.
    let dir = tempfile::tempdir().expect("tempdir");
    let zip = dir.path().join("z.zip");
    let (mname, mbytes) = manifest_entry();
    make_zip(
        &zip,
        &[(mname, mbytes.clone()), ("manifests/n.yaml".into(), mbytes)],
    );
    let mut bytes = std::fs::read(&zip).expect("read");
    let (from, to) = (b"manifests/n.yaml", b"manifests/m.yaml");
    let mut i = 0;
    while let Some(pos) = bytes[i..].windows(from.len()).position(|w| w == from) {
        bytes[i + pos..i + pos + from.len()].copy_from_slice(to);
        i += pos + from.len();
    }
    std::fs::write(&zip, bytes).expect("write");
    assert!(matches!(
        refused(&zip, &ImportLimits::default()),
        ImportError::DuplicateNames { .. }
    ));
}

#[test]
fn zip_bomb_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zip = dir.path().join("bomb.zip");
    let zeros = vec![0u8; 48 << 20];
    make_zip(&zip, &[manifest_entry(), object_entry(&zeros)]);
    assert!(std::fs::metadata(&zip).expect("meta").len() < 1 << 20);
    match refused(&zip, &ImportLimits::default()) {
        ImportError::CompressionRatio { size, .. } => assert_eq!(size, 48 << 20),
        other => panic!("{other}"),
    }
    let small = ImportLimits {
        max_entry_bytes: 1 << 20,
        max_ratio: u64::MAX,
        ..ImportLimits::default()
    };
    assert!(matches!(
        refused(&zip, &small),
        ImportError::EntryTooLarge { .. }
    ));
    let total = ImportLimits {
        max_total_bytes: 1 << 20,
        max_ratio: u64::MAX,
        ..ImportLimits::default()
    };
    assert!(matches!(
        refused(&zip, &total),
        ImportError::TotalTooLarge { .. }
    ));
    let archive = ImportLimits {
        max_archive_bytes: 1000,
        ..ImportLimits::default()
    };
    assert!(matches!(
        refused(&zip, &archive),
        ImportError::ArchiveTooLarge { .. }
    ));
}

#[test]
fn entry_that_does_not_match_its_name_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zip = dir.path().join("z.zip");
    let (name, _) = object_entry(b"the real content");
    make_zip(
        &zip,
        &[
            manifest_entry(),
            object_entry(b"fine"),
            (name, b"forged content".to_vec()),
        ],
    );
    assert!(matches!(
        refused(&zip, &ImportLimits::default()),
        ImportError::HashMismatch { .. }
    ));
}

#[test]
fn unexpected_entries_and_manifest_counts_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zip = dir.path().join("z.zip");
    make_zip(
        &zip,
        &[manifest_entry(), ("README.txt".into(), b"hi".to_vec())],
    );
    assert!(matches!(
        refused(&zip, &ImportLimits::default()),
        ImportError::UnexpectedEntry { .. }
    ));
    make_zip(&zip, &[object_entry(b"x")]);
    assert!(matches!(
        refused(&zip, &ImportLimits::default()),
        ImportError::ManifestCount { count: 0, .. }
    ));
    make_zip(
        &zip,
        &[(
            "manifests/m.yaml".into(),
            b"manifest: 1\nbogus: 2\n".to_vec(),
        )],
    );
    assert!(matches!(
        refused(&zip, &ImportLimits::default()),
        ImportError::Manifest { .. }
    ));
}

#[test]
fn bundle_missing_part_of_its_closure_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zip = dir.path().join("z.zip");
    let ghost = Digest::of(b"ghost");
    let record = format!(r#"{{"schema":"ptxbench.run/1","record_digests":["{ghost}"]}}"#);
    let run = Digest::of(record.as_bytes());
    make_zip(
        &zip,
        &[
            object_entry(record.as_bytes()),
            (
                "manifests/m.yaml".into(),
                manifest_text(&[run]).into_bytes(),
            ),
        ],
    );
    match refused(&zip, &ImportLimits::default()) {
        ImportError::Incomplete { missing, .. } => assert_eq!(missing[0].0, ghost),
        other => panic!("{other}"),
    }
}

#[test]
fn existing_different_manifest_is_not_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zip = dir.path().join("z.zip");
    make_zip(&zip, &[manifest_entry()]);
    let (_d, store) = new_store();
    std::fs::create_dir_all(manifests_dir(&store)).expect("mkdir");
    std::fs::write(manifests_dir(&store).join("m.yaml"), "other").expect("write");
    let err = import_bundle(
        &store,
        &manifests_dir(&store),
        &zip,
        &ImportLimits::default(),
    );
    assert!(matches!(err, Err(ImportError::ManifestConflict { .. })));
    assert_eq!(
        std::fs::read_to_string(manifests_dir(&store).join("m.yaml")).expect("read"),
        "other"
    );
}
