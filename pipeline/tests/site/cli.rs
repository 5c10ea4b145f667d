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

#[test]
fn issue_15_site_build_leaves_no_staging_folder_and_sweeps_those_of_killed_builds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = make_fixture(dir.path(), false);
    let out = dir.path().join("public");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let age = |p: &std::path::Path| {
        std::fs::File::open(p)
            .and_then(|f| f.set_modified(old))
            .expect("age it");
    };
    // What a killed build leaves: a half-written staging folder and a previous site that was
    // being moved out of the way.
    let dead = dir.path().join(".ptxbench-site-killed");
    std::fs::create_dir_all(dead.join("record")).expect("mkdir");
    std::fs::write(dead.join("record/x.html"), "half").expect("write");
    age(&dead);
    let dead_old = dir.path().join(".ptxbench-site-old-killed");
    std::fs::create_dir_all(dead_old.join("site")).expect("mkdir");
    age(&dead_old);
    // A concurrent build's staging folder: old, but locked by its live builder.
    let live = dir.path().join(".ptxbench-site-live");
    std::fs::create_dir_all(&live).expect("mkdir");
    age(&live);
    let held = std::fs::File::open(&live).expect("open");
    held.lock().expect("lock");
    let o = ptxbench()
        .arg("--tasks")
        .arg(fixtures().join("suite"))
        .arg("site")
        .arg(&manifest)
        .arg("--store")
        .arg(dir.path().join("artifacts"))
        .arg("-o")
        .arg(&out)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.join("index.html").is_file());
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".ptxbench-site"))
        .collect();
    left.sort();
    assert_eq!(left, [".ptxbench-site-live"]);
    drop(held);
}
