//! Bundles: round trip into an empty store, byte-identical output, refusal of broken closures.

use ptxbench::bundle::{BundleError, ImportLimits, import_bundle, write_bundle};
use ptxbench::store::verify::verify_store;

use crate::{manifest_text, manifests_dir, new_store, sample_run, write_manifest};

#[test]
fn bundle_import_round_trip_into_an_empty_store() {
    let (dir, source) = new_store();
    let (run, _, _) = sample_run(&source, "rt", 5);
    let _unrelated = sample_run(&source, "other", 2);
    let text = manifest_text(&[run]);
    let manifest = write_manifest(&source, "lb.yaml", &text);
    let zip = dir.path().join("lb.zip");
    let summary = write_bundle(&source, &manifest, &zip).expect("bundle");
    // The run, its records, their PTX, the shared log and the run list.
    assert_eq!(summary.objects, 1 + 5 + 5 + 1 + 1);

    let (_t, target) = new_store();
    let s = import_bundle(
        &target,
        &manifests_dir(&target),
        &zip,
        &ImportLimits::default(),
    )
    .expect("import");
    assert_eq!((s.objects, s.new_objects), (13, 13));
    assert_eq!(
        std::fs::read_to_string(&s.manifest).expect("manifest"),
        text
    );
    // Exactly the closure, nothing else, and it verifies.
    assert_eq!(target.list().expect("list").len(), 13);
    assert!(verify_store(&target, 2).expect("verify").ok());
    for d in target.list().expect("list") {
        assert_eq!(target.get(&d).expect("get"), source.get(&d).expect("get"));
    }
    // Importing again changes nothing.
    let again = import_bundle(
        &target,
        &manifests_dir(&target),
        &zip,
        &ImportLimits::default(),
    )
    .expect("re-import");
    assert_eq!(again.new_objects, 0);
}

#[test]
fn bundles_are_byte_identical() {
    let (dir, a) = new_store();
    let (run, _, _) = sample_run(&a, "det", 4);
    let manifest = write_manifest(&a, "m.yaml", &manifest_text(&[run]));
    let z1 = dir.path().join("1.zip");
    let z2 = dir.path().join("2.zip");
    write_bundle(&a, &manifest, &z1).expect("bundle 1");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    write_bundle(&a, &manifest, &z2).expect("bundle 2");
    let b1 = std::fs::read(&z1).expect("read");
    assert_eq!(b1, std::fs::read(&z2).expect("read"));

    // A store built in another order (here: by importing) gives the same bundle too.
    let (other_dir, b) = new_store();
    let s = import_bundle(&b, &manifests_dir(&b), &z1, &ImportLimits::default()).expect("import");
    let z3 = other_dir.path().join("3.zip");
    write_bundle(&b, &s.manifest, &z3).expect("bundle 3");
    assert_eq!(b1, std::fs::read(&z3).expect("read"));
}

#[test]
fn bundling_an_incomplete_closure_is_refused() {
    let (dir, store) = new_store();
    let (run, _, blobs) = sample_run(&store, "x", 2);
    std::fs::remove_file(store.path_of(&blobs[1])).expect("rm");
    let manifest = write_manifest(&store, "m.yaml", &manifest_text(&[run]));
    let zip = dir.path().join("x.zip");
    match write_bundle(&store, &manifest, &zip) {
        Err(BundleError::Incomplete { problems, .. }) => assert_eq!(problems[0].digest, blobs[1]),
        other => panic!("{other:?}"),
    }
    assert!(!zip.exists());
}

/// A run naming thousands of missing records: the error lists the first of them and counts
/// the rest, instead of megabytes of lines.
#[test]
fn issue_41_an_incomplete_closure_is_reported_in_a_bounded_message() {
    let (dir, store) = new_store();
    let ghosts: Vec<ptxbench::digest::Digest> = (0..5000u32)
        .map(|i| ptxbench::digest::Digest::of(&i.to_le_bytes()))
        .collect();
    // Stored as bytes: `put_object` refuses a run whose records are missing.
    let run = ptxbench::record::RunObject {
        schema: ptxbench::record::RUN_SCHEMA.into(),
        name: "many".into(),
        arch: ptxbench::arch::Arch::Sm90a,
        list_digest: store.put(b"a run list\n").expect("put"),
        suite_hash: ptxbench::digest::Digest::of(b"suite"),
        record_digests: ghosts,
    };
    let run = store
        .put(&serde_json::to_vec(&run).expect("json"))
        .expect("put run");
    let manifest = write_manifest(&store, "m.yaml", &manifest_text(&[run]));
    let e = write_bundle(&store, &manifest, &dir.path().join("x.zip")).expect_err("refused");
    let text = e.to_string();
    assert!(matches!(&e, BundleError::Incomplete { problems, .. } if problems.len() == 5000));
    assert!(text.len() < 10_000, "{} bytes", text.len());
    assert!(
        text.contains("5000 problems") && text.contains("and 4980 more"),
        "{text}"
    );
}
