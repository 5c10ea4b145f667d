//! Many concurrent writers of overlapping content lose nothing and leave no partial object.

use std::collections::BTreeSet;

use ptxbench::digest::Digest;
use ptxbench::store::verify::verify_store;

use crate::new_store;

#[test]
fn concurrent_overlapping_puts_lose_nothing() {
    let (_dir, store) = new_store();
    let threads = 8;
    let per_thread = 300;
    // Thread t writes items t*100 .. t*100+300: every item is written by up to 3 threads.
    let content = |i: usize| -> Vec<u8> {
        let len = 1 + (i * 7919) % 20_000;
        (0..len).map(|j| (i.wrapping_mul(31) ^ j) as u8).collect()
    };
    let written: Vec<Vec<Digest>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let store = store.clone();
                s.spawn(move || {
                    (t * 100..t * 100 + per_thread)
                        .map(|i| {
                            if i % 2 == 0 {
                                store.put(&content(i)).expect("put")
                            } else {
                                let bytes = content(i);
                                store.put_reader(&mut &bytes[..]).expect("put_reader").0
                            }
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("no panic"))
            .collect()
    });
    let expected: BTreeSet<Digest> = (0..(threads - 1) * 100 + per_thread)
        .map(|i| Digest::of(&content(i)))
        .collect();
    let got: BTreeSet<Digest> = written.into_iter().flatten().collect();
    assert_eq!(got, expected);
    let listed: BTreeSet<Digest> = store.list().expect("list").into_iter().collect();
    assert_eq!(listed, expected);
    let report = verify_store(&store, 2).expect("verify");
    assert!(report.ok(), "{:?}", report.problems);
    assert!(
        report.strays.is_empty(),
        "leftover temp files: {:?}",
        report.strays
    );
}

#[test]
fn concurrent_processes_importing_one_bundle_into_one_store() {
    let (dir, source) = new_store();
    let (run, _, _) = crate::sample_run(&source, "proc", 40);
    let manifest = crate::write_manifest(&source, "m.yaml", &crate::manifest_text(&[run]));
    let zip = dir.path().join("b.zip");
    ptxbench::bundle::write_bundle(&source, &manifest, &zip).expect("bundle");

    let target = tempfile::tempdir().expect("tempdir");
    let store_dir = target.path().join("artifacts");
    let children: Vec<_> = (0..4)
        .map(|_| {
            std::process::Command::new(env!("CARGO_BIN_EXE_ptxbench"))
                .arg("import")
                .arg(&zip)
                .arg("--store")
                .arg(&store_dir)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn ptxbench")
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().expect("wait");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let store = ptxbench::store::Store::open(&store_dir);
    assert_eq!(store.list().expect("list"), source.list().expect("list"));
    let report = verify_store(&store, 2).expect("verify");
    assert!(report.ok() && report.strays.is_empty(), "{report:?}");
}
