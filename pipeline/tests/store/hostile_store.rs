//! Regression tests of issue 15 for the store: re-import repairs, only a manifest's closure is
//! imported, temp files of killed writers are named and swept, zip errors name their entry, the
//! manifest size cap is reported as a cap, bundles get ordinary permissions.

use std::path::Path;

use ptxbench::bundle::{ImportError, ImportLimits, ImportSummary, import_bundle, write_bundle};
use ptxbench::digest::Digest;
use ptxbench::store::Store;
use ptxbench::store::verify::verify_store;

use crate::{
    manifest_text, manifests_dir, new_store, object_entry, overwrite, sample_run, write_manifest,
};

/// A zip of (name, bytes) entries, stored uncompressed (so that bytes can be patched).
fn stored_zip(path: &Path, entries: &[(String, Vec<u8>)]) {
    crate::zip_of(path, entries, zip::CompressionMethod::Stored);
}

/// Imports `zip` into `store` with the default limits.
fn import(store: &Store, zip: &Path) -> Result<ImportSummary, ImportError> {
    import_bundle(store, &manifests_dir(store), zip, &ImportLimits::default())
}

/// Replaces the first occurrence of `from` in the file by `to` (same length).
fn patch(path: &Path, from: &[u8], to: &[u8]) {
    let mut bytes = std::fs::read(path).expect("read");
    let at = bytes
        .windows(from.len())
        .position(|w| w == from)
        .expect("pattern in the zip");
    bytes[at..at + to.len()].copy_from_slice(to);
    std::fs::write(path, bytes).expect("write");
}

/// A store with a 3-record run, its manifest and its bundle.
fn bundled() -> (tempfile::TempDir, Store, std::path::PathBuf, Vec<Digest>) {
    let (dir, store) = new_store();
    let (run, _, blobs) = sample_run(&store, "rep", 3);
    let manifest = write_manifest(&store, "m.yaml", &manifest_text(&[run]));
    let zip = dir.path().join("m.zip");
    write_bundle(&store, &manifest, &zip).expect("bundle");
    (dir, store, zip, blobs)
}

#[test]
fn issue_15_reimport_repairs_an_object_with_a_flipped_byte() {
    let (_dir, store, zip, blobs) = bundled();
    let path = store.path_of(&blobs[1]);
    let mut bytes = std::fs::read(&path).expect("read");
    bytes[3] ^= 0x01; // same length, other content
    overwrite(&path, &bytes);
    assert!(!verify_store(&store, 1).expect("verify").ok());
    let s = import(&store, &zip).expect("re-import");
    assert_eq!(s.repaired, vec![blobs[1]]);
    assert_eq!(s.new_objects, 0);
    assert!(verify_store(&store, 1).expect("verify").ok());
    assert!(store.get(&blobs[1]).is_ok());
    // A truncated copy is repaired (and counted) the same way.
    overwrite(&store.path_of(&blobs[2]), b"short");
    let s = import(&store, &zip).expect("re-import");
    assert_eq!((s.repaired, s.new_objects), (vec![blobs[2]], 0));
    assert!(verify_store(&store, 1).expect("verify").ok());
}

#[test]
fn issue_15_reimport_repair_message_from_the_cli() {
    let (_dir, store, zip, blobs) = bundled();
    let path = store.path_of(&blobs[0]);
    let mut bytes = std::fs::read(&path).expect("read");
    bytes[0] ^= 0x20;
    overwrite(&path, &bytes);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ptxbench"))
        .arg("import")
        .arg(&zip)
        .arg("--store")
        .arg(store.root())
        .output()
        .expect("runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("repaired 1 objects"), "{text}");
    assert!(text.contains(&format!("repaired {}", blobs[0])), "{text}");
}

#[test]
fn issue_15_import_stores_only_the_manifests_closure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zip = dir.path().join("z.zip");
    let mut entries: Vec<(String, Vec<u8>)> = (0..200)
        .map(|i| object_entry(format!("unreferenced {i}").as_bytes()))
        .collect();
    let blob = b"referenced blob".to_vec();
    // A run object that decodes (an import refuses one that does not), whose list is `blob`.
    let run = serde_json::to_string(&ptxbench::record::RunObject {
        schema: ptxbench::record::RUN_SCHEMA.into(),
        name: "r".into(),
        arch: ptxbench::arch::Arch::Sm90a,
        list_digest: Digest::of(&blob),
        suite_hash: Digest::of(b"suite"),
        record_digests: Vec::new(),
    })
    .expect("json");
    entries.push(object_entry(&blob));
    entries.push(object_entry(run.as_bytes()));
    entries.push((
        "manifests/m.yaml".into(),
        manifest_text(&[Digest::of(run.as_bytes())]).into_bytes(),
    ));
    stored_zip(&zip, &entries);
    let (_d, store) = new_store();
    let s = import(&store, &zip).expect("import");
    assert_eq!((s.objects, s.new_objects, s.skipped.len()), (2, 2, 200));
    assert_eq!(store.list().expect("list").len(), 2);

    // A root-less manifest brings nothing in.
    let zip2 = dir.path().join("rootless.zip");
    let mut e2: Vec<(String, Vec<u8>)> = (0..50)
        .map(|i| object_entry(format!("stray {i}").as_bytes()))
        .collect();
    e2.push(("manifests/r.yaml".into(), manifest_text(&[]).into_bytes()));
    stored_zip(&zip2, &e2);
    let (_d2, empty) = new_store();
    let s = import(&empty, &zip2).expect("import");
    assert_eq!((s.objects, s.skipped.len()), (0, 50));
    assert!(empty.list().expect("list").is_empty());
}

#[test]
fn issue_15_stale_temp_files_are_named_by_verify_and_swept_but_a_live_one_is_kept() {
    let (_dir, store) = new_store();
    let (run, _, _) = sample_run(&store, "tmp", 1);
    let tmp = store.temp_dir();
    std::fs::create_dir_all(&tmp).expect("mkdir");
    let dead = tmp.join(".tmp-killed-writer");
    std::fs::write(&dead, b"half an object").expect("write");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&dead)
        .and_then(|f| f.set_modified(old))
        .expect("age it");
    // A concurrent writer's temp file: old, but locked.
    let live = tmp.join(".tmp-live-writer");
    std::fs::write(&live, b"in flight").expect("write");
    let handle = std::fs::File::options()
        .write(true)
        .open(&live)
        .expect("open");
    handle.set_modified(old).expect("age it");
    handle.lock().expect("lock");

    let report = verify_store(&store, 1).expect("verify");
    assert!(report.ok());
    let named: Vec<(&Path, bool)> = report
        .temp_files
        .iter()
        .map(|t| (t.path.as_path(), t.stale))
        .collect();
    assert_eq!(named, vec![(dead.as_path(), true), (live.as_path(), false)]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ptxbench"))
        .args(["verify", "--store"])
        .arg(store.root())
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("leftover temp file") && err.contains(".tmp-killed-writer"),
        "{err}"
    );

    // `verify --sweep` and every import remove the stale one only.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ptxbench"))
        .args(["verify", "--sweep", "--store"])
        .arg(store.root())
        .output()
        .expect("runs");
    assert!(out.status.success());
    assert!(!dead.exists() && live.exists());
    std::fs::write(&dead, b"again").expect("write");
    std::fs::File::options()
        .write(true)
        .open(&dead)
        .and_then(|f| f.set_modified(old))
        .expect("age it");
    let zip = store.root().parent().expect("parent").join("t.zip");
    let manifest = write_manifest(&store, "t.yaml", &manifest_text(&[run]));
    write_bundle(&store, &manifest, &zip).expect("bundle");
    let s = import(&store, &zip).expect("import");
    assert_eq!(s.swept, 1);
    assert!(!dead.exists() && live.exists());
    drop(handle);
}

#[test]
fn issue_15_zip_errors_name_the_entry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let blob = b"0123456789 the object's bytes".to_vec();
    let (name, _) = object_entry(&blob);
    let manifest = manifest_text(&[]).into_bytes();
    let entries = vec![
        object_entry(&blob),
        ("manifests/m.yaml".into(), manifest.clone()),
    ];
    // A flipped byte in the object's data: the CRC check fails while reading it.
    let zip = dir.path().join("crc.zip");
    stored_zip(&zip, &entries);
    patch(&zip, b"0123456789 the", b"0123456789 tha");
    let (_d, store) = new_store();
    let e = import(&store, &zip).expect_err("refused");
    assert!(e.to_string().contains(&name), "{e}");
    // The same in the manifest's data.
    let zip = dir.path().join("mcrc.zip");
    stored_zip(&zip, &entries);
    patch(&zip, b"manifest: 1", b"manifest: 2");
    let e = import(&store, &zip).expect_err("refused");
    assert!(e.to_string().contains("manifests/m.yaml"), "{e}");
    // A broken local header of the object.
    let zip = dir.path().join("header.zip");
    stored_zip(&zip, &entries);
    patch(&zip, b"PK\x03\x04", b"PK\x09\x09");
    let e = import(&store, &zip).expect_err("refused");
    assert!(e.to_string().contains(&name), "{e}");
    assert!(store.list().expect("list").is_empty());
}

#[test]
fn issue_15_manifest_size_cap_is_reported_as_a_cap() {
    let dir = tempfile::tempdir().expect("tempdir");
    let zip = dir.path().join("big.zip");
    let mut text = manifest_text(&[]);
    text.push_str(&format!("# {}\n", "x".repeat(17 << 20)));
    stored_zip(&zip, &[("manifests/m.yaml".into(), text.into_bytes())]);
    let (_d, store) = new_store();
    let e = import(&store, &zip).expect_err("refused");
    assert!(
        matches!(e, ImportError::ManifestTooLarge { .. }),
        "not a size lie: {e}"
    );
    let s = e.to_string();
    assert!(
        s.contains("manifests/m.yaml") && s.contains("size cap") && s.contains("16777216"),
        "{s}"
    );
}

#[test]
fn issue_15_bundle_is_written_with_ordinary_permissions() {
    use std::os::unix::fs::PermissionsExt as _;
    let (dir, _store, zip, _) = bundled();
    // What any new file gets here (0666 less the umask).
    let probe = dir.path().join("probe");
    std::fs::File::create(&probe).expect("create");
    let ordinary = std::fs::metadata(&probe)
        .expect("meta")
        .permissions()
        .mode()
        & 0o777;
    let mode = std::fs::metadata(&zip).expect("meta").permissions().mode() & 0o777;
    assert_eq!(
        mode, ordinary,
        "bundle mode {mode:o}, a new file {ordinary:o}"
    );
    assert_ne!(mode, 0o600);
}

/// `bundle -o` onto a symbolic link, a FIFO or a folder is refused naming the path and what
/// it is, and leaves it as it was.
#[test]
fn issue_41_bundle_refuses_an_output_that_is_not_a_regular_file() {
    let (dir, store) = new_store();
    let (run, _, _) = sample_run(&store, "b", 1);
    let manifest = write_manifest(&store, "m.yaml", &manifest_text(&[run]));
    let target = dir.path().join("precious.txt");
    std::fs::write(&target, "keep me").expect("write");
    let link = dir.path().join("link.zip");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    let fifo = dir.path().join("fifo.zip");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let folder = dir.path().join("folder.zip");
    std::fs::create_dir(&folder).expect("mkdir");
    for (out, what) in [
        (&link, "a symbolic link"),
        (&fifo, "a FIFO"),
        (&folder, "a folder"),
    ] {
        let e = write_bundle(&store, &manifest, out).expect_err("refused");
        let text = e.to_string();
        assert!(
            text.contains(&out.display().to_string()) && text.contains(what),
            "{text}"
        );
        assert!(
            std::fs::symlink_metadata(out).is_ok(),
            "{} kept",
            out.display()
        );
    }
    assert!(std::fs::symlink_metadata(&link).expect("link").is_symlink());
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "keep me");
    let temp: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(temp.is_empty(), "{temp:?}");
}
