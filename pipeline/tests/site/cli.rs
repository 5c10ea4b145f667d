//! The `site` and `export results` commands, run as a user would.

use std::process::Command;

use crate::{fixtures, make_fixture};

fn ptxbench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ptxbench"))
}

#[test]
fn site_and_export_run_from_the_command_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = make_fixture(dir.path(), false);
    let out = dir.path().join("public");
    let run = |args: &[&str]| {
        let o = ptxbench()
            .arg("--tasks")
            .arg(fixtures().join("suite"))
            .args(args)
            .output()
            .expect("runs");
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let store = dir.path().join("artifacts");
    let (m, s, o) = (
        manifest.to_str().expect("utf-8"),
        store.to_str().expect("utf-8"),
        out.to_str().expect("utf-8"),
    );
    let (ok, err) = run(&["site", m, "--store", s, "-o", o]);
    assert!(ok, "{err}");
    assert!(err.contains("wrote"), "{err}");
    assert!(out.join("index.html").is_file());
    assert!(out.join("record").is_dir());
    // A second build replaces the first.
    let (ok, err) = run(&["site", m, "--store", s, "-o", o]);
    assert!(ok, "{err}");

    let csv = dir.path().join("r.csv");
    let (ok, err) = run(&[
        "export",
        "results",
        m,
        "--store",
        s,
        "--format",
        "csv",
        "-o",
        csv.to_str().expect("utf-8"),
    ]);
    assert!(ok, "{err}");
    assert!(
        std::fs::read_to_string(&csv)
            .expect("csv")
            .starts_with("provenance,")
    );
    let pq = dir.path().join("r.parquet");
    let (ok, err) = run(&[
        "export",
        "results",
        m,
        "--store",
        s,
        "--format",
        "parquet",
        "-o",
        pq.to_str().expect("utf-8"),
    ]);
    assert!(ok, "{err}");
    assert!(std::fs::read(&pq).expect("parquet").starts_with(b"PAR1"));

    // Never over a folder it did not make.
    let (ok, err) = run(&[
        "site",
        m,
        "--store",
        s,
        "-o",
        dir.path().to_str().expect("utf-8"),
    ]);
    assert!(!ok);
    assert!(err.contains("did not make"), "{err}");
}

#[test]
fn a_missing_record_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = make_fixture(dir.path(), false);
    // Remove one record object from the store.
    let store = ptxbench::store::Store::open(dir.path().join("artifacts"));
    let text = std::fs::read_to_string(&manifest).expect("manifest");
    let run: ptxbench::digest::Digest = text
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("- \"")
                .and_then(|r| r.strip_suffix('"'))
        })
        .expect("a run")
        .parse()
        .expect("digest");
    let run_obj: serde_json::Value =
        serde_json::from_slice(&store.get(&run).expect("run")).expect("json");
    let first = run_obj["record_digests"][0]
        .as_str()
        .expect("a record")
        .to_string();
    std::fs::remove_file(store.path_of(&first.parse().expect("digest"))).expect("rm");
    let o = ptxbench()
        .arg("--tasks")
        .arg(fixtures().join("suite"))
        .args(["site", manifest.to_str().expect("utf-8"), "--store"])
        .arg(dir.path().join("artifacts"))
        .arg("-o")
        .arg(dir.path().join("public"))
        .output()
        .expect("runs");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&first) && err.contains("synthetic"), "{err}");
    assert!(!dir.path().join("public").exists(), "no half site");
}
