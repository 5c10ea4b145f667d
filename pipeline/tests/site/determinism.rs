//! Same manifest and store ⇒ byte-identical site, in memory and on disk.

use std::collections::BTreeMap;
use std::path::Path;

use ptxbench::site::output::{self, MARKER, write_site, write_site_draining};
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

/// Pages of the files under `dir` (stored objects aside: they are the store's files, linked)
/// that are in the page cache, and all their pages.
#[cfg(target_os = "linux")]
fn cached_pages(dir: &Path) -> (usize, usize) {
    use std::os::fd::AsRawFd as _;
    let page = 4096;
    let (mut cached, mut all) = (0, 0);
    for e in walkdir::WalkDir::new(dir) {
        let e = e.expect("walk");
        let objects = e
            .path()
            .strip_prefix(dir)
            .expect("under dir")
            .starts_with("objects");
        if !e.file_type().is_file() || objects {
            continue;
        }
        let file = std::fs::File::open(e.path()).expect("open");
        let len = file.metadata().expect("stat").len() as usize;
        if len == 0 {
            continue;
        }
        let pages = len.div_ceil(page);
        // SAFETY: a read-only shared map of an open file, unmapped below; `mincore` fills one
        // byte per page of it, never touching the pages themselves.
        unsafe {
            let map = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            );
            assert_ne!(map, libc::MAP_FAILED, "mmap {}", e.path().display());
            let mut resident = vec![0u8; pages];
            assert_eq!(libc::mincore(map, len, resident.as_mut_ptr()), 0, "mincore");
            libc::munmap(map, len);
            cached += resident.iter().filter(|b| *b & 1 == 1).count();
        }
        all += pages;
    }
    (cached, all)
}

/// A build that drains every few KiB (its pages written to the disk and dropped from the page
/// cache as it goes, as a large site's are every 32 MiB) writes the same folder as one that
/// never drains; on a file system with a disk, the drained pages are out of the page cache
/// (tmpfs keeps every page: there the check is skipped, and said).
#[cfg(target_os = "linux")]
#[test]
fn a_draining_build_writes_the_same_folder_and_leaves_its_pages_on_the_disk() {
    let (dir, input) = fixture_input();
    let kept = dir.path().join("kept");
    write_site_draining(&input, &kept, u64::MAX).expect("writes without draining");
    let drained = dir.path().join("drained");
    write_site_draining(&input, &drained, 4096).expect("writes, draining");
    // Before anything reads them back.
    let (kept_cached, kept_all) = cached_pages(&kept);
    let (drained_cached, drained_all) = cached_pages(&drained);
    assert_eq!(kept_all, drained_all);
    assert!(drained_all > 100, "{drained_all} pages");
    let in_memory = output::in_memory(&std::fs::File::open(dir.path()).expect("open the folder"));
    if in_memory {
        eprintln!(
            "{} is in memory (tmpfs): page cache not checked",
            dir.path().display()
        );
    } else {
        // Every page of the build that never drained is still cached; of the drained one, at
        // most the last batch (the files written after the last drain, a few KiB here).
        assert!(
            kept_cached * 10 >= kept_all * 9,
            "{kept_cached} of {kept_all} kept pages cached"
        );
        assert!(
            drained_cached * 4 < drained_all,
            "{drained_cached} of {drained_all} drained pages still cached"
        );
    }
    assert_eq!(tree(&kept), tree(&drained));
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
