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

/// A run object of `name` naming `records`, as a bundle entry and its digest (its list is the
/// blob `b"a run list\n"`).
fn run_entry(name: &str, records: &[Digest]) -> ((String, Vec<u8>), Digest) {
    let run = ptxbench::record::RunObject {
        schema: ptxbench::record::RUN_SCHEMA.into(),
        name: name.to_string(),
        arch: ptxbench::arch::Arch::Sm90a,
        list_digest: Digest::of(b"a run list\n"),
        suite_hash: Digest::of(b"suite"),
        record_digests: records.to_vec(),
    };
    let bytes = serde_json::to_vec(&run).expect("json");
    let d = Digest::of(&bytes);
    (object_entry(&bytes), d)
}

fn manifest_of(runs: &[Digest]) -> (String, Vec<u8>) {
    ("manifests/m.yaml".into(), manifest_text(runs).into_bytes())
}

/// A run object over the size parsed for one object (64 MiB) is refused as such, naming the
/// limit, before anything is stored (issue 55: a 256 MiB object took import to 4.5 GB).
#[test]
fn issue_55_a_run_object_over_the_limit_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zip = dir.path().join("z.zip");
    let ghost = Digest::of(b"a record nobody stored");
    let (entry, run) = run_entry(&"x".repeat((64 << 20) + 1000), &[ghost]);
    assert!(entry.1.len() > 64 << 20);
    crate::zip_of(
        &zip,
        &[entry, object_entry(b"a run list\n"), manifest_of(&[run])],
        zip::CompressionMethod::Stored,
    );
    let e = refused(&zip, &ImportLimits::default());
    assert!(e.to_string().contains("MAX_OBJECT_BYTES"), "{e}");
}

#[test]
fn issue_41_a_manifest_root_of_the_wrong_kind_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zip = dir.path().join("z.zip");
    // Under `runs`: a plain blob, and a typed object that is not a run.
    let blob = object_entry(b"not a run at all\n");
    let other = br#"{"schema":"ptxbench.sample/1","speedup":1.5}"#;
    let (blob_d, other_d) = (Digest::of(&blob.1), Digest::of(other));
    make_zip(
        &zip,
        &[blob, object_entry(other), manifest_of(&[blob_d, other_d])],
    );
    let err = refused(&zip, &ImportLimits::default());
    let text = err.to_string();
    match err {
        ImportError::WrongKind { roots, .. } => {
            let found: Vec<(Digest, &str)> =
                roots.iter().map(|r| (r.digest, r.found.as_str())).collect();
            assert_eq!(
                found,
                [(blob_d, "a plain blob"), (other_d, "ptxbench.sample/1")]
            );
        }
        other => panic!("{other}"),
    }
    assert!(
        text.contains(&blob_d.to_string()) && text.contains("runs[0]") && text.contains("run"),
        "{text}"
    );
}

#[test]
fn issue_41_a_run_object_that_does_not_decode_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zip = dir.path().join("z.zip");
    // A run object without its name, arch, list and suite: its references are fine.
    let run = br#"{"schema":"ptxbench.run/1","record_digests":[]}"#;
    let run_d = Digest::of(run);
    make_zip(&zip, &[object_entry(run), manifest_of(&[run_d])]);
    // A store that already holds objects keeps them all.
    let (_d, store) = crate::new_store();
    let (kept, _, _) = crate::sample_run(&store, "kept", 2);
    let before = store.list().expect("list");
    let err = import_bundle(
        &store,
        &manifests_dir(&store),
        &zip,
        &ImportLimits::default(),
    )
    .expect_err("refused");
    let text = err.to_string();
    match err {
        ImportError::Undecodable { objects, .. } => {
            assert_eq!(objects.len(), 1);
            assert_eq!(objects[0].0, run_d);
        }
        other => panic!("{other}"),
    }
    assert!(
        text.contains(&run_d.to_string()) && text.contains("name"),
        "{text}"
    );
    assert_eq!(store.list().expect("list"), before);
    assert!(store.is_sound(&kept).expect("sound"));
    assert!(!manifests_dir(&store).exists());
}

/// A run naming thousands of missing records gives an error of a few lines: the first of them
/// by name, and a count.
#[test]
fn issue_41_an_incomplete_closure_lists_a_bounded_number_of_missing_objects() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zip = dir.path().join("z.zip");
    let ghosts: Vec<Digest> = (0..5000u32).map(|i| Digest::of(&i.to_le_bytes())).collect();
    let (entry, run) = run_entry("many", &ghosts);
    make_zip(
        &zip,
        &[entry, object_entry(b"a run list\n"), manifest_of(&[run])],
    );
    let err = refused(&zip, &ImportLimits::default());
    let text = err.to_string();
    assert!(matches!(err, ImportError::Incomplete { ref missing, .. } if missing.len() == 5000));
    assert!(text.len() < 10_000, "{} bytes", text.len());
    assert!(
        text.contains("5000 missing") && text.contains("and 4980 more"),
        "{text}"
    );
}
