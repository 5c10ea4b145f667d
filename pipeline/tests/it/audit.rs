//! `ptxbench audit` from the store alone: in a folder with no `tasks/`, a published record's
//! task definition comes from the store (for a `ptxbench.record/1`, the stored task object with
//! its task hash). Without a GPU the re-run itself stops at the device, after the task, PTX and
//! plan were all had from the store; with one it runs and compares.

use std::process::Command;

use ptxbench::digest::Digest;
use ptxbench::record::{self, task::find_task};
use ptxbench::store::Store;
use ptxbench::store::closure::{Root, closure};

use crate::published::results;
use crate::root;

/// A store holding `record`'s closure and, if `with_task`, its task object: what a bundle of
/// the record carries.
fn store_of(record: Digest, with_task: bool) -> (tempfile::TempDir, Store) {
    let committed = Store::open(root().join("artifacts"));
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("artifacts")).without_sync();
    let mut roots = vec![Root {
        digest: record,
        label: "test".into(),
        expect: None,
    }];
    if with_task {
        let r = record::load_record(&committed, &record).expect("a record");
        let (task, _) = find_task(&committed, &r.task, &r.task_hash).expect("its task is stored");
        roots.push(Root {
            digest: task,
            label: "task".into(),
            expect: None,
        });
    }
    let c = closure(&committed, &roots);
    assert!(c.is_complete(), "{:?}", c.problems);
    for d in &c.objects {
        store
            .put(&committed.get(d).expect("readable"))
            .expect("stored");
    }
    (dir, store)
}

fn audit(dir: &std::path::Path, record: &Digest) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ptxbench"))
        .args(["audit", &record.to_string(), "--timeout", "600"])
        .current_dir(dir)
        .output()
        .expect("runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn a_published_record_audits_from_a_folder_without_tasks() {
    let gemm = results("reference-sm90a")
        .into_iter()
        .find(|r| r.evaluation == "wgmma-gemm")
        .expect("a published GEMM record");
    let (dir, _store) = store_of(gemm.digest, true);
    assert!(!dir.path().join("tasks").exists());
    let (code, text) = audit(dir.path(), &gemm.digest);
    assert!(text.contains("against task object"), "{text}");
    if text.contains("could not re-run the evaluation here") {
        // No GPU here: the worker got as far as opening the device.
        assert_eq!(code, 2, "{text}");
        assert!(
            !text.contains("task object") || !text.contains("does not validate"),
            "{text}"
        );
    } else {
        assert!(text.contains("audit: the record is"), "{text}");
    }
}

#[test]
fn a_v1_record_whose_task_is_not_stored_names_the_task_hash() {
    // The two-GPU run is still made of `ptxbench.record/1` records.
    let r = &results("multigpu-sm90a")[0];
    let (dir, _store) = store_of(r.digest, false);
    let (code, text) = audit(dir.path(), &r.digest);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(&r.record.task_hash.to_string()) && text.contains("ptxbench tasks store"),
        "{text}"
    );
}

/// Issue 58: `audit` called the engine's request directly and skipped the static safety screen,
/// so a bundle's stored PTX ran on the auditor's GPU unscreened. A record whose PTX was swapped
/// for code the screen refuses (the device heap) is decided by the static check: nothing runs,
/// and the audit says the record does not hold.
#[test]
fn issue_58_audit_screens_the_stored_ptx_before_any_gpu() {
    let gemm = results("reference-sm90a")
        .into_iter()
        .find(|r| r.evaluation == "wgmma-gemm")
        .expect("a published GEMM record");
    let (dir, store) = store_of(gemm.digest, true);
    let mut tampered = gemm.record.clone();
    let ptx = String::from_utf8(
        store
            .get(&gemm.record.ptx_digest.expect("ptx"))
            .expect("ptx"),
    )
    .expect("utf-8");
    let heap = ptx.replacen(
        ".address_size 64",
        ".address_size 64\n.extern .func (.param .b64 r) malloc(.param .b64 n);",
        1,
    );
    let heap = heap.replacen(
        "ret;",
        "{ .param .b64 n; .param .b64 r; st.param.b64 [n], 8; call.uni (r), malloc, (n); }\nret;",
        1,
    );
    assert_ne!(heap, ptx);
    tampered.ptx_digest = Some(store.put(heap.as_bytes()).expect("stored"));
    let d = store.put_object(&tampered).expect("a record");
    let (code, text) = audit(dir.path(), &d);
    assert!(
        text.contains("the static check decided it: nothing ran on the GPU"),
        "{text}"
    );
    assert!(
        !text.contains("could not re-run"),
        "it tried the GPU: {text}"
    );
    assert_eq!(code, 1, "the record does not hold: {text}");
}
