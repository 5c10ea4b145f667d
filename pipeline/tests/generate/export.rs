//! `ptxbench export sft` on a stored trajectory: a failed turn repaired by a correct one, and a
//! second replica that found the same PTX.

use std::process::Command;

use ptxbench::arch::Arch;
use ptxbench::digest::Digest;
use ptxbench::engine::{Outcome, Protocol, Verdict};
use ptxbench::generate::chat::Message;
use ptxbench::record::{RECORD_SCHEMA, RUN_SCHEMA, Record, Role, RunObject};
use ptxbench::store::Store;

fn put_json<T: serde::Serialize>(store: &Store, v: &T) -> Digest {
    store
        .put(&serde_json::to_vec(v).expect("json"))
        .expect("stored")
}

#[allow(clippy::too_many_arguments)]
fn record(
    store: &Store,
    verdict: Verdict,
    ptx: &str,
    convo: &[Message],
    turn: u32,
    previous: Option<Digest>,
    seed: u64,
) -> Digest {
    let r = Record {
        schema: RECORD_SCHEMA.into(),
        entry: "Canned Model".into(),
        role: Role::Entry,
        model: Some("canned-model".into()),
        evaluation: None,
        task: "gemm_n4096_k4096".into(),
        task_hash: Digest::of(b"task"),
        task_digest: None,
        suite_hash: Digest::of(b"suite"),
        suite_digest: None,
        arch: Arch::Sm90a,
        provenance: "measured".into(),
        kernel_source_digest: None,
        ptx_digest: Some(store.put(ptx.as_bytes()).expect("ptx")),
        plan_digest: store.put(b"launches: []\n").expect("plan"),
        cubin_digest: None,
        prompt_digest: Some(put_json(store, &convo)),
        response_digest: Some(store.put(b"an answer").expect("response")),
        turn: Some(turn),
        previous_digest: previous,
        seed,
        seed_given: false,
        protocol: Protocol::default(),
        workloads_selected: Vec::new(),
        correctness_only: false,
        expected: None,
        verdict,
        min_speedup: (verdict == Verdict::Correct).then_some(0.5),
        outcome: Outcome::failed(verdict, ptxbench::record::Stage::Done, ""),
    };
    store.put_object(&r).expect("record")
}

fn export(
    store: &Store,
    source: &str,
    kind: &str,
    out: &std::path::Path,
    extra: &[&str],
) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_ptxbench"))
        .args(["export", "sft", source, "--kind", kind, "--out"])
        .arg(out)
        .arg("--store")
        .arg(store.root())
        .args(extra)
        .output()
        .expect("runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{text}");
    text
}

#[test]
fn sft_exports_verified_and_repair_conditioned_examples() {
    let work = tempfile::tempdir().expect("work");
    let store = Store::open(work.path().join("artifacts"));
    let system = Message::new("system", "be an expert");
    let prompt = Message::new("user", "write a GEMM");
    let t0 = vec![system.clone(), prompt.clone()];
    let r0 = record(&store, Verdict::Numerical, "// wrong ptx", &t0, 0, None, 1);
    let mut t1 = t0.clone();
    t1.push(Message::new("assistant", "```ptx\n// wrong ptx\n```"));
    t1.push(Message::new("user", "Result: numerical ..."));
    let r1 = record(
        &store,
        Verdict::Correct,
        "// right ptx",
        &t1,
        1,
        Some(r0),
        1,
    );
    // Another replica found the same kernel at once: a duplicate for kernelgen.
    let r2 = record(&store, Verdict::Correct, "// right ptx", &t0, 0, None, 2);
    let run = RunObject {
        schema: RUN_SCHEMA.into(),
        name: "t".into(),
        arch: Arch::Sm90a,
        list_digest: store.put(b"list").expect("list"),
        suite_hash: Digest::of(b"suite"),
        record_digests: vec![r0, r1, r2],
    };
    let run = store.put_object(&run).expect("run").to_string();

    let kg = work.path().join("kernelgen.jsonl");
    let report = export(&store, &run, "kernelgen", &kg, &[]);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&kg)
        .expect("written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(lines.len(), 1, "deduplicated by PTX: {report}");
    let roles: Vec<&str> = lines[0]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["role"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(roles, ["system", "user", "assistant"]);
    assert!(
        lines[0]["messages"][2]["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("```ptx\n// right ptx\n```"))
    );
    assert!(
        report.contains("duplicates dropped (same PTX): 1"),
        "{report}"
    );
    let coverage = std::fs::read_to_string(work.path().join("kernelgen.jsonl.coverage.txt"))
        .expect("coverage beside the output");
    assert!(coverage.contains("gemm_n4096_k4096"), "{coverage}");

    let fx = work.path().join("fixit.jsonl");
    let report = export(&store, &run, "fixit", &fx, &[]);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&fx)
        .expect("written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(lines.len(), 1, "{report}");
    let roles: Vec<&str> = lines[0]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["role"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user", "assistant"]);
    assert_eq!(lines[0]["failed_verdict"], "numerical");
    assert!(
        report.contains("failures repaired, by verdict class: numerical 1"),
        "{report}"
    );

    let pq = work.path().join("fixit.parquet");
    export(&store, &run, "fixit", &pq, &[]);
    let bytes = std::fs::read(&pq).expect("parquet");
    assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"));

    let none = work.path().join("arch.jsonl");
    let report = export(&store, &run, "kernelgen", &none, &["--require-arch"]);
    assert_eq!(std::fs::read_to_string(&none).expect("written"), "");
    assert!(
        report.contains("--require-arch") && report.contains("0 of 2 kept"),
        "{report}"
    );

    let capped = work.path().join("capped.jsonl");
    let report = export(&store, &run, "kernelgen", &capped, &["--cap", "0"]);
    assert!(report.contains("over the per-task cap of 0: 1"), "{report}");
}

/// `export sft --out`: a symbolic link is refused and kept; the file gets a new file's
/// permissions (not a temp file's 0600); no temp file stays beside it.
#[cfg(unix)]
#[test]
fn issue_41_sft_export_checks_its_output_and_gets_ordinary_permissions() {
    use ptxbench::export::sft::write_examples;
    use std::os::unix::fs::PermissionsExt as _;
    let work = tempfile::tempdir().expect("work");
    let target = work.path().join("precious.txt");
    std::fs::write(&target, "keep me").expect("write");
    let link = work.path().join("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    let e = write_examples(&[], &link).expect_err("refused");
    assert!(
        e.to_string().contains("link.jsonl") && e.to_string().contains("symbolic link"),
        "{e}"
    );
    assert!(std::fs::symlink_metadata(&link).expect("kept").is_symlink());
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "keep me");
    let out = work.path().join("sft.jsonl");
    write_examples(&[], &out).expect("writes");
    let probe = work.path().join("probe");
    std::fs::File::create(&probe).expect("create");
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode(&out), mode(&probe), "export mode {:o}", mode(&out));
    let hidden: Vec<_> = std::fs::read_dir(work.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
}
