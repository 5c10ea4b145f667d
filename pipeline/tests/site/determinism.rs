//! Same manifest and store ⇒ byte-identical site, in memory and on disk.

use std::collections::BTreeMap;
use std::path::Path;

use ptxbench::site::output::{MARKER, write_site};
use ptxbench::site::{SiteInput, build};
use ptxbench::store::Store;

use crate::{fixture_input, fixture_suite, make_fixture};

fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.expect("walk"))
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e
                .path()
                .strip_prefix(dir)
                .expect("under dir")
                .to_string_lossy()
                .into_owned();
            (rel, std::fs::read(e.path()).expect("read"))
        })
        .collect()
}

#[test]
fn building_twice_gives_the_same_bytes() {
    let (_dir, input) = fixture_input();
    let a = build(&input).expect("builds");
    let b = build(&input).expect("builds again");
    assert_eq!(a.files.len(), b.files.len());
    for (path, bytes) in &a.files {
        assert!(
            b.files.get(path) == Some(bytes),
            "{path} differs between builds"
        );
    }
    assert!(a.files.len() > 60, "{} files", a.files.len());
}

/// The folder `write_site` makes holds what `build` makes in memory, byte for byte: pages,
/// objects and the downloads it streams to their files (plus its marker).
#[test]
fn the_written_folder_is_the_built_site() {
    let (dir, input) = fixture_input();
    let built = build(&input).expect("builds");
    let out = dir.path().join("public");
    write_site(&input, &out).expect("writes");
    let mut written = tree(&out);
    assert!(written.remove(MARKER).is_some());
    assert!(written.keys().any(|p| p.ends_with("records.json")));
    assert_eq!(
        written.keys().collect::<Vec<_>>(),
        built.files.keys().collect::<Vec<_>>()
    );
    for (path, bytes) in &built.files {
        assert!(written.get(path) == Some(bytes), "{path} differs");
    }
}

#[test]
fn two_stores_made_the_same_way_give_identical_folders() {
    let one = tempfile::tempdir().expect("tempdir");
    let two = tempfile::tempdir().expect("tempdir");
    let mut trees = Vec::new();
    for dir in [one.path(), two.path()] {
        let manifest = make_fixture(dir, true);
        let input = SiteInput::load(
            &manifest,
            &Store::open(dir.join("artifacts")),
            fixture_suite(),
        )
        .expect("loads");
        let out = dir.join("public");
        write_site(&input, &out).expect("writes");
        trees.push(tree(&out));
    }
    assert_eq!(trees[0].len(), trees[1].len());
    for (path, bytes) in &trees[0] {
        assert!(trees[1].get(path) == Some(bytes), "{path} differs");
    }
    assert!(trees[0].contains_key(MARKER));
    assert!(trees[0].contains_key("index.html"));
}

#[test]
fn rebuilding_replaces_the_folder_and_drops_stale_pages() {
    let (dir, input) = fixture_input();
    let out = dir.path().join("site");
    let written = write_site(&input, &out).expect("first build");
    // What the build says it wrote is what is in the folder (linked objects included).
    let first = tree(&out);
    assert_eq!(written.files, first.len());
    let bytes: usize = first.values().map(Vec::len).sum();
    assert_eq!(written.bytes, bytes as u64);
    std::fs::write(out.join("stale.html"), "old").expect("write");
    let first = tree(&out);
    write_site(&input, &out).expect("second build");
    let second = tree(&out);
    assert!(!second.contains_key("stale.html"));
    assert_eq!(first.len() - 1, second.len());
    // Nothing is left beside the output.
    let siblings: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".ptxbench-site"))
        .collect();
    assert!(siblings.is_empty(), "{siblings:?}");
}

#[test]
fn a_folder_the_site_did_not_make_is_refused() {
    let (dir, input) = fixture_input();
    let out = dir.path().join("mine");
    std::fs::create_dir_all(&out).expect("mkdir");
    std::fs::write(out.join("notes.txt"), "keep me").expect("write");
    let e = write_site(&input, &out).expect_err("refused");
    assert!(e.to_string().contains("did not make"), "{e}");
    assert_eq!(
        std::fs::read_to_string(out.join("notes.txt")).expect("kept"),
        "keep me"
    );
}

/// An object the store holds as a symbolic link (to a file with the right bytes) is in the
/// site as a plain file with those bytes: never as a link to a path of the building machine.
#[cfg(unix)]
#[test]
fn a_symbolic_link_in_the_store_gives_the_site_its_bytes() {
    use ptxbench::digest::Digest;
    use ptxbench::site::paths;
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = make_fixture(dir.path(), false);
    let store = Store::open(dir.path().join("artifacts"));
    let input = SiteInput::load(&manifest, &store, fixture_suite()).expect("loads");
    let (record, ptx) = input
        .records
        .iter()
        .find_map(|r| Some((r.digest, r.record.ptx_digest?)))
        .expect("a record with PTX");
    for d in [record, ptx] {
        let stored = store.path_of(&d);
        let elsewhere = dir.path().join(format!("elsewhere-{}", d.short(12)));
        std::fs::rename(&stored, &elsewhere).expect("move the object out");
        std::os::unix::fs::symlink(&elsewhere, &stored).expect("link it back");
    }
    let input = SiteInput::load(&manifest, &store, fixture_suite()).expect("loads via links");
    let out = dir.path().join("public");
    let written = write_site(&input, &out).expect("writes");
    for d in [record, ptx] {
        let file = out.join(paths::object(&d));
        let meta = std::fs::symlink_metadata(&file).expect("in the site");
        assert!(
            meta.file_type().is_file(),
            "{} is {:?}",
            file.display(),
            meta
        );
        assert_eq!(Digest::of(&std::fs::read(&file).expect("read")), d);
    }
    let all = tree(&out);
    assert_eq!(written.files, all.len());
    assert_eq!(
        written.bytes,
        all.values().map(Vec::len).sum::<usize>() as u64
    );
}

/// What stays beside `dir`'s outputs: names starting with `.ptxbench-site`.
fn leftovers(dir: &Path) -> Vec<String> {
    let mut left: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".ptxbench-site"))
        .collect();
    left.sort();
    left
}

/// A rebuild killed between its two renames left the previous site in its `old` folder and no
/// output: the next build puts it back first, so a build that then fails leaves it in place.
#[test]
fn issue_41_a_rebuild_killed_between_its_renames_loses_no_site() {
    let (dir, input) = fixture_input();
    let out = dir.path().join("public");
    write_site(&input, &out).expect("first build");
    let first = tree(&out);
    // The killed rebuild's state, older than a live build's.
    let old = dir.path().join(".ptxbench-site-old-killed");
    std::fs::create_dir(&old).expect("mkdir");
    std::fs::rename(&out, old.join("public")).expect("move out");
    let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::open(&old)
        .and_then(|f| f.set_modified(an_hour_ago))
        .expect("age it");
    // A stored record the build copies is gone: this build fails after it started.
    let record = input.records[0].digest;
    std::fs::remove_file(input.store.path_of(&record)).expect("remove a record");
    let e = write_site(&input, &out).expect_err("fails");
    assert!(e.to_string().contains(&record.to_string()), "{e}");
    assert_eq!(tree(&out), first, "the previous site is the output again");
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );
}

/// Two builds into one new output at once both succeed and leave no staging folder.
#[test]
fn issue_41_two_builds_into_one_new_output_both_succeed() {
    let (dir, input) = fixture_input();
    for round in 0..3 {
        let out = dir.path().join(format!("new-{round}"));
        let start = std::sync::Barrier::new(2);
        let results: Vec<_> = std::thread::scope(|s| {
            let builds: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        write_site(&input, &out).map_err(|e| e.to_string())
                    })
                })
                .collect();
            builds
                .into_iter()
                .map(|b| b.join().expect("no panic"))
                .collect()
        });
        for r in results {
            r.expect("both builds succeed");
        }
        assert!(out.join("index.html").is_file() && out.join(MARKER).is_file());
        assert!(
            leftovers(dir.path()).is_empty(),
            "{:?}",
            leftovers(dir.path())
        );
    }
}

/// A record whose entry and task names are 300 characters long gets pages with bounded
/// file names, the same on every build.
#[test]
fn issue_41_names_of_300_characters_give_bounded_file_names() {
    let (dir, mut input) = fixture_input();
    let entry = "Entry with a very long name ".repeat(11);
    let task = "t".repeat(300);
    input.records[0].record.entry = entry.clone();
    input.records[0].record.task = task.clone();
    let out = dir.path().join("public");
    write_site(&input, &out).expect("builds");
    let files = tree(&out);
    let longest = files
        .keys()
        .filter_map(|p| p.rsplit('/').next())
        .map(str::len)
        .max()
        .expect("files");
    assert!(longest <= 120, "a file name of {longest} bytes");
    let entry_page = ptxbench::site::paths::entry(&ptxbench::site::paths::slug(&entry));
    assert!(files.contains_key(&entry_page), "{entry_page}");
    assert!(files.contains_key(&ptxbench::site::paths::task(&task)));
    write_site(&input, &out).expect("builds again");
    assert_eq!(tree(&out), files);
}
