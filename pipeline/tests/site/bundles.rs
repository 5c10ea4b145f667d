//! A bundle per published run on the data page: the zip is in the site, its size and blake3
//! on the page are its own, and it imports into an empty store as a manifest of that run alone.

use ptxbench::bundle::{ImportLimits, import_bundle};
use ptxbench::digest::Digest;
use ptxbench::manifest::Manifest;
use ptxbench::site::{SiteInput, build};
use ptxbench::store::Store;

use crate::{fixture_input, fixture_suite};

#[test]
fn every_run_has_a_bundle_whose_digest_the_data_page_shows() {
    let (_dir, input) = fixture_input();
    let pages = build(&input).expect("builds");
    let data = pages.text("data.html").expect("data page");
    assert!(!input.runs.is_empty());
    for r in &input.runs {
        let path = format!("data/bundles/run-{}.zip", r.digest);
        let zip = pages.get(&path).unwrap_or_else(|| panic!("no {path}"));
        assert!(data.contains(&format!("href=\"{path}\"")));
        assert!(
            data.contains(&Digest::of(zip).to_string()),
            "its blake3 is shown"
        );

        // It imports, and names this run alone.
        let dir = tempfile::tempdir().expect("tempdir");
        let zip_path = dir.path().join("run.zip");
        std::fs::write(&zip_path, zip).expect("write");
        let store = Store::open(dir.path().join("artifacts"));
        let summary = import_bundle(
            &store,
            &dir.path().join("manifests"),
            &zip_path,
            &ImportLimits::default(),
        )
        .expect("imports");
        let m = Manifest::load(&summary.manifest).expect("its manifest loads");
        assert_eq!(m.runs, vec![r.digest]);
        assert!(m.reported.is_empty());
        // And its site builds from the imported store alone.
        let sub = SiteInput::load(&summary.manifest, &store, fixture_suite()).expect("loads");
        assert_eq!(sub.runs.len(), 1);
        assert_eq!(sub.records.len(), r.run.record_digests.len());
    }
}
