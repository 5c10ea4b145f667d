//! Manifests: strict parsing with file and field in every error, closures of missing runs,
//! and the committed default manifest.

use std::path::{Path, PathBuf};

use ptxbench::digest::Digest;
use ptxbench::manifest::Manifest;
use ptxbench::store::closure::{ProblemKind, Referrer, closure};

use crate::{manifest_text, new_store, write_manifest};

#[test]
fn unknown_field_names_file_and_field() {
    let (_dir, store) = new_store();
    let text = manifest_text(&[]).replace("site:", "colour: red\nsite:");
    let path = write_manifest(&store, "bad.yaml", &text);
    let msg = Manifest::load(&path)
        .expect_err("unknown field")
        .to_string();
    assert!(msg.contains("bad.yaml") && msg.contains("colour"), "{msg}");
    let text = manifest_text(&[]).replace("title: Test", "title: Test, colour: red");
    let path = write_manifest(&store, "bad2.yaml", &text);
    let msg = Manifest::load(&path)
        .expect_err("nested unknown field")
        .to_string();
    assert!(msg.contains("bad2.yaml") && msg.contains("colour"), "{msg}");
}

#[test]
fn duplicate_keys_and_loose_booleans_are_errors() {
    let (_dir, store) = new_store();
    let text = manifest_text(&[]) + "site: { title: Again, base_path: / }\n";
    let path = write_manifest(&store, "dup.yaml", &text);
    assert!(Manifest::load(&path).is_err());
    let text = manifest_text(&[]).replace("manifest: 1", "manifest: yes");
    let path = write_manifest(&store, "bool.yaml", &text);
    assert!(Manifest::load(&path).is_err());
}

#[test]
fn bad_digest_names_the_field() {
    let (_dir, store) = new_store();
    let text = manifest_text(&[]).replace("runs: []", "runs: [\"ABC\"]");
    let path = write_manifest(&store, "d.yaml", &text);
    let msg = Manifest::load(&path).expect_err("bad digest").to_string();
    assert!(msg.contains("d.yaml") && msg.contains("runs"), "{msg}");
}

#[test]
fn manifest_naming_a_missing_run() {
    let (_dir, store) = new_store();
    let ghost = Digest::of(b"a run that was never stored");
    let path = write_manifest(&store, "m.yaml", &manifest_text(&[ghost]));
    let m = Manifest::load(&path).expect("valid manifest");
    let c = closure(&store, &m.roots(&path));
    assert_eq!(c.problems.len(), 1);
    assert_eq!(c.problems[0].digest, ghost);
    assert_eq!(c.problems[0].kind, ProblemKind::Missing);
    match &c.problems[0].referrers[..] {
        [Referrer::Root(label)] => assert!(label.ends_with("m.yaml: runs[0]"), "{label}"),
        other => panic!("{other:?}"),
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn committed_leaderboard_manifest_is_valid_and_complete() {
    let path = repo().join("manifests/leaderboard.yaml");
    let m = Manifest::load(&path).expect("leaderboard.yaml parses");
    assert_eq!(m.reported.len(), 1);
    assert!(m.models.contains_key("Claude Opus 4.8"));
    let store = ptxbench::store::Store::open(repo().join("artifacts"));
    let c = closure(&store, &m.roots(&path));
    assert!(c.is_complete(), "{:?}", c.problems);
}
