//! Store basics: re-hash on read, corrupt and truncated objects, prefixes, typed objects.

use ptxbench::digest::Digest;
use ptxbench::store::{ObjectKind, StoreError};

use crate::{new_store, overwrite, sample_run};

#[test]
fn corrupt_object_is_a_clear_error_naming_hash_and_path() {
    let (_dir, store) = new_store();
    let d = store.put(b"original content").expect("put");
    let path = store.path_of(&d);
    overwrite(&path, b"original CONTENT");
    let err = store.get(&d).expect_err("corrupt");
    let msg = err.to_string();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{msg}");
    assert!(
        msg.contains(&d.hex()) && msg.contains(&path.display().to_string()),
        "{msg}"
    );
}

#[test]
fn truncated_object_is_corrupt_and_put_repairs_it() {
    let (_dir, store) = new_store();
    let d = store.put(b"0123456789").expect("put");
    overwrite(&store.path_of(&d), b"01234");
    assert!(matches!(store.get(&d), Err(StoreError::Corrupt { .. })));
    // Putting the true bytes again replaces the truncated file atomically.
    assert_eq!(store.put(b"0123456789").expect("re-put"), d);
    assert_eq!(store.get(&d).expect("repaired"), b"0123456789");
}

#[test]
fn missing_object_names_expected_path() {
    let (_dir, store) = new_store();
    let d = Digest::of(b"never stored");
    let msg = store.get(&d).expect_err("missing").to_string();
    assert!(msg.contains(&d.hex()) && msg.contains("v1/blake3"), "{msg}");
}

#[test]
fn ambiguous_and_unknown_prefixes_list_candidates() {
    let (_dir, store) = new_store();
    // Store blobs until two share a 3-character prefix.
    let mut seen = std::collections::BTreeMap::new();
    let (a, b) = (0u32..)
        .find_map(|i| {
            let d = store.put(&i.to_le_bytes()).expect("put");
            seen.insert(d.hex()[..3].to_string(), d)
                .map(|prev| (prev, d))
        })
        .expect("a collision exists");
    let prefix = &a.hex()[..3];
    match store.resolve(prefix) {
        Err(e @ StoreError::AmbiguousPrefix { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(&a.hex()) && msg.contains(&b.hex()), "{msg}");
        }
        other => panic!("expected ambiguity, got {other:?}"),
    }
    assert_eq!(store.resolve(&a.hex()[..12]).expect("unique"), a);
    assert_eq!(store.resolve(&a.hex()).expect("full"), a);
    let unknown = if a.hex().starts_with("ffff") {
        "0000"
    } else {
        "ffff"
    };
    if store
        .list()
        .expect("list")
        .iter()
        .all(|d| !d.hex().starts_with(unknown))
    {
        assert!(matches!(
            store.resolve(unknown),
            Err(StoreError::UnknownPrefix { .. })
        ));
    }
    assert!(matches!(
        store.resolve("XYZ"),
        Err(StoreError::BadPrefix { .. })
    ));
    assert!(matches!(
        store.resolve(""),
        Err(StoreError::BadPrefix { .. })
    ));
}

#[test]
fn typed_objects_are_canonical_and_reference_by_key() {
    let (_dir, store) = new_store();
    let (run, records, _) = sample_run(&store, "x", 2);
    let bytes = store.get(&run).expect("run");
    assert!(bytes.starts_with(b"{\"schema\":\"ptxbench.run/1\""));
    assert!(!bytes.contains(&b'\n'), "canonical JSON is compact");
    let o = store.get_object(&run).expect("object");
    assert_eq!(o.schema.kind, ObjectKind::Run);
    let refs: Vec<Digest> = o
        .references
        .iter()
        .filter(|r| r.field.starts_with("record_digests"))
        .map(|r| r.digest)
        .collect();
    assert_eq!(refs, records);
    // Same value, same digest.
    let (again, _, _) = sample_run(&store, "x", 2);
    assert_eq!(again, run);
}

#[test]
fn put_object_refuses_schema_not_first() {
    let (_dir, store) = new_store();
    let v = serde_json::json!({"a": 1, "schema": "ptxbench.run/1"});
    assert!(matches!(
        store.put_object(&v),
        Err(StoreError::Invalid { .. })
    ));
}
