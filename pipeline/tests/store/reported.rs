//! Reported data: byte-for-byte import, provenance, read-time normalisation, and the committed
//! paper data.

use std::path::Path;

use ptxbench::store::Store;
use ptxbench::store::reported::{
    ImportObject, PAPER_SOURCE, Provenance, ReportedData, import_reported,
};

use crate::new_store;

const CORRECTNESS: &str = "model,arch,workload,workload_name,definition,exp_dir,date,turn_limit,n_trajectories,correct,correctness_rate\n\
M,hopper,w1,gemm_M8,gemm,/home/u/eval_runs/m-h100-gemm,2026-0131,1,12,9,0.75\n";
const SPEEDUP: &str = "model,arch,workload,workload_name,definition,exp_dir,date,turn_limit,n_trajectories,best_speedup\n\
M,hopper,w1,gemm_M8,gemm,/home/u/eval_runs/m-h100-gemm,2026-01-31,1,12,\n";
const ARCH: &str = "model,arch,required_arch_sass_tag,workload,workload_name,definition,exp_dir,date,turn_limit,n_trajectories,correct_with_arch,correct_with_arch_rate,n_correct_turns,n_unknown_correct_turns,tag_evidence\n\
M,hopper,H,w1,gemm_M8,gemm,/home/u/eval_runs/m-h100-gemm,2026-0131,1,12,3,0.25,9,0,dynamic_sass\n";

fn fixture(dir: &Path) {
    std::fs::write(
        dir.join("correctness_rate_by_release_date.csv"),
        CORRECTNESS,
    )
    .expect("w");
    std::fs::write(dir.join("best_speedup_by_release_date.csv"), SPEEDUP).expect("w");
    std::fs::write(
        dir.join("arch_instruction_correctness_by_release_date.csv"),
        ARCH,
    )
    .expect("w");
    std::fs::write(dir.join("README.md"), "as published\r\n").expect("w");
    std::fs::create_dir(dir.join("subfolder")).expect("mkdir");
}

#[test]
fn import_keeps_bytes_and_marks_reported() {
    let src = tempfile::tempdir().expect("tempdir");
    fixture(src.path());
    let (_dir, store) = new_store();
    let d = import_reported(&store, src.path(), "Test source").expect("import");
    let import: ImportObject = store.get_json(&d).expect("import object");
    assert_eq!(import.provenance, Provenance::Reported);
    assert_eq!(import.source, "Test source");
    let names: Vec<&str> = import.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "README.md",
            "arch_instruction_correctness_by_release_date.csv",
            "best_speedup_by_release_date.csv",
            "correctness_rate_by_release_date.csv"
        ]
    );
    for f in &import.files {
        let original = std::fs::read(src.path().join(&f.name)).expect("read");
        assert_eq!(
            store.get(&f.content_digest).expect("blob"),
            original,
            "{}",
            f.name
        );
        assert_eq!(f.size, original.len() as u64);
    }
    // The object holds no path or time of the import: a second import is the same object.
    let (_d2, other) = new_store();
    assert_eq!(
        import_reported(&other, src.path(), "Test source").expect("again"),
        d
    );
}

#[test]
fn reader_normalises_dates_and_exp_dirs_on_read() {
    let src = tempfile::tempdir().expect("tempdir");
    fixture(src.path());
    let (_dir, store) = new_store();
    let d = import_reported(&store, src.path(), "S").expect("import");
    let data = ReportedData::load(&store, &d).expect("load");
    assert_eq!(data.provenance, Provenance::Reported);
    let t = data
        .table("arch_instruction_correctness_by_release_date")
        .expect("table");
    assert_eq!(t.get(0, "date"), Some("2026-01-31"));
    assert_eq!(t.get(0, "exp_dir"), Some("m-h100-gemm"));
    let r = data.results().expect("results");
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].run, "m-h100-gemm");
    assert_eq!(r[0].date, "2026-01-31");
    assert_eq!(r[0].best_speedup, None);
    assert_eq!(r[0].correct_with_arch, Some(3));
    assert_eq!(r[0].correctness_rate, 0.75);
    // The stored bytes keep the quirks.
    let raw = store
        .get(
            &data
                .files
                .iter()
                .find(|f| f.name.starts_with("arch"))
                .expect("file")
                .content_digest,
        )
        .expect("blob");
    assert!(String::from_utf8(raw).expect("utf8").contains("2026-0131"));
}

#[test]
fn committed_paper_data_reads_back() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let m = ptxbench::manifest::Manifest::load(&repo.join("manifests/leaderboard.yaml"))
        .expect("manifest");
    let store = Store::open(repo.join("artifacts"));
    let data = ReportedData::load(&store, &m.reported[0].import_digest).expect("load");
    assert_eq!(data.source, PAPER_SOURCE);
    assert_eq!(data.files.len(), 12);
    let results = data.results().expect("results");
    assert_eq!(results.len(), 315);
    assert!(
        results
            .iter()
            .all(|r| r.date.len() == 10 && r.date.as_bytes()[7] == b'-')
    );
    assert!(results.iter().all(|r| !r.run.contains('/')));
    let exp = data.table("experiments").expect("experiments");
    assert_eq!(exp.rows.len(), 105);
    let tokens = data
        .table("reasoning_tokens_vs_performance")
        .expect("tokens");
    let c = tokens.column("arch_tag").expect("column");
    assert!(
        tokens.rows.iter().any(|r| r[c] == "H, B"),
        "quoted cells parse"
    );
}
