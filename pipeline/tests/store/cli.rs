//! The store subcommands end to end: exit codes and output.

use std::path::Path;
use std::process::{Command, Output};

use crate::{manifest_text, new_store, overwrite, sample_run, write_manifest};

fn ptxbench(store: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptxbench"))
        .args(args)
        .arg("--store")
        .arg(store)
        .output()
        .expect("run ptxbench")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn verify_exit_codes_and_problem_listing() {
    let (_dir, store) = new_store();
    let (run, records, blobs) = sample_run(&store, "cli", 2);
    let manifest = write_manifest(&store, "m.yaml", &manifest_text(&[run]));
    let m = manifest.to_str().expect("utf8 path");
    let ok = ptxbench(store.root(), &["verify"]);
    assert!(ok.status.success(), "{}", text(&ok));
    let ok = ptxbench(store.root(), &["verify", m]);
    assert!(ok.status.success(), "{}", text(&ok));

    overwrite(&store.path_of(&blobs[1]), b"bad");
    for args in [vec!["verify"], vec!["verify", m]] {
        let out = ptxbench(store.root(), &args);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        let t = text(&out);
        assert!(
            t.contains(&blobs[1].hex()) && t.contains(&records[0].hex()),
            "{t}"
        );
    }
}

#[test]
fn show_raw_is_exact_and_show_marks_reported() {
    let (dir, store) = new_store();
    let blob = store.put(b"\x00\x01binary\xff").expect("put");
    let out = ptxbench(store.root(), &["show", &blob.hex()[..10], "--raw"]);
    assert!(out.status.success());
    assert_eq!(out.stdout, b"\x00\x01binary\xff");

    let src = dir.path().join("paper");
    std::fs::create_dir(&src).expect("mkdir");
    std::fs::write(src.join("a.csv"), "model,date\nM,2026-0131\n").expect("write");
    let out = ptxbench(
        store.root(),
        &["import-reported", src.to_str().expect("utf8")],
    );
    assert!(out.status.success(), "{}", text(&out));
    let import = store
        .list()
        .expect("list")
        .into_iter()
        .find(|d| store.get_object(d).is_ok())
        .expect("import object");
    let out = ptxbench(store.root(), &["show", &import.hex()[..8]]);
    let t = text(&out);
    assert!(
        out.status.success() && t.contains("REPORTED") && t.contains("\"provenance\""),
        "{t}"
    );
    let csv = ptxbench::digest::Digest::of(b"model,date\nM,2026-0131\n");
    let out = ptxbench(store.root(), &["show", &csv.hex()]);
    let t = text(&out);
    assert!(
        t.contains("text blob") && t.contains("REPORTED") && t.contains(&import.hex()),
        "{t}"
    );
}

#[test]
fn bundle_and_import_commands() {
    let (dir, store) = new_store();
    let (run, _, _) = sample_run(&store, "c", 3);
    let manifest = write_manifest(&store, "m.yaml", &manifest_text(&[run]));
    let zip = dir.path().join("out.zip");
    let out = ptxbench(
        store.root(),
        &[
            "bundle",
            manifest.to_str().expect("utf8"),
            "-o",
            zip.to_str().expect("utf8"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let target = tempfile::tempdir().expect("tempdir");
    let out = ptxbench(
        &target.path().join("artifacts"),
        &["import", zip.to_str().expect("utf8")],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(target.path().join("manifests/m.yaml").is_file());
    let out = ptxbench(&target.path().join("artifacts"), &["show", "zz"]);
    assert_eq!(out.status.code(), Some(2));
}
