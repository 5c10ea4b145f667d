//! Loading a site's input: what is reported when the manifest names records that cannot be
//! loaded.

use ptxbench::digest::Digest;
use ptxbench::site::SiteInput;
use ptxbench::store::Store;

use crate::{fixture_suite, make_fixture};

#[test]
fn loading_reports_a_missing_record_before_one_that_does_not_decode() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = make_fixture(dir.path(), false);
    let store = Store::open(dir.path().join("artifacts"));
    // A stored text that is no record, and a digest nothing was stored under; the text sorts
    // first, so a build that decoded as it read would report it first.
    let missing = Digest::of(b"never stored");
    let not_a_record = (0u32..)
        .map(|i| {
            store
                .put(format!("not a record {i}\n").as_bytes())
                .expect("put")
        })
        .find(|d| *d < missing)
        .expect("a digest below the missing one");
    let text = std::fs::read_to_string(&manifest).expect("manifest");
    assert!(text.contains("records: []\n"), "{text}");
    let listing = |ds: &[Digest]| {
        let items: Vec<String> = ds.iter().map(|d| format!("  - \"{d}\"\n")).collect();
        text.replace("records: []\n", &format!("records:\n{}", items.concat()))
    };
    let load = |ds: &[Digest]| {
        std::fs::write(&manifest, listing(ds)).expect("write manifest");
        SiteInput::load(&manifest, &store, fixture_suite())
            .map(|_| ())
            .expect_err("does not load")
            .to_string()
    };
    let both = load(&[not_a_record, missing]);
    assert!(both.contains(&missing.to_string()), "{both}");
    assert!(both.contains("no object"), "{both}");
    assert!(!both.contains(&not_a_record.to_string()), "{both}");
    let one = load(&[not_a_record]);
    assert!(one.contains(&not_a_record.to_string()), "{one}");
    assert!(one.contains("manifest.yaml `records`"), "{one}");
}
