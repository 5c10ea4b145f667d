//! Integration tests of the artifact store, one module per feature. Hostile fixtures are
//! generated in temp folders.

mod bundle;
mod cli;
mod closure;
mod concurrency;
mod hostile_store;
mod hostile_zip;
mod manifest;
mod objects;
mod reported;

use std::path::{Path, PathBuf};

use serde::Serialize;

use ptxbench::digest::Digest;
use ptxbench::record::{RUN_SCHEMA, RunObject};
use ptxbench::store::Store;

/// A fresh store in a temp folder (the folder is `<tmp>/artifacts`).
pub fn new_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("artifacts"));
    (dir, store)
}

#[derive(Debug, Serialize)]
pub struct Record {
    pub schema: &'static str,
    pub ptx_digest: Digest,
    pub log_digest: Option<Digest>,
    pub speedup: f64,
}

/// A run of `n` objects (generic ones that reference blobs, not engine records), each with its
/// own PTX and a shared log, and the run list. Returns (run, records, blobs).
pub fn sample_run(store: &Store, tag: &str, n: usize) -> (Digest, Vec<Digest>, Vec<Digest>) {
    let log = store.put(b"shared compiler log\n").expect("put log");
    let mut records = Vec::new();
    let mut blobs = vec![log];
    for i in 0..n {
        let ptx = store
            .put(format!(".version 8.5\n// {tag} kernel {i}\n").as_bytes())
            .expect("put ptx");
        blobs.push(ptx);
        records.push(
            store
                .put_object(&Record {
                    schema: "ptxbench.sample/1",
                    ptx_digest: ptx,
                    log_digest: Some(log),
                    speedup: 1.25 + i as f64,
                })
                .expect("put record"),
        );
    }
    let list = store.put(b"a run list\n").expect("put list");
    blobs.push(list);
    let run = store
        .put_object(&RunObject {
            schema: RUN_SCHEMA.into(),
            name: format!("model {tag}"),
            arch: ptxbench::arch::Arch::Sm90a,
            list_digest: list,
            suite_hash: Digest::of(b"suite"),
            record_digests: records.clone(),
        })
        .expect("put run");
    (run, records, blobs)
}

/// Manifest text naming `runs`.
pub fn manifest_text(runs: &[Digest]) -> String {
    let runs: Vec<String> = runs.iter().map(|d| format!("\"{d}\"")).collect();
    format!(
        "manifest: 1\nsuite: {{ version: \"1.0.0\", hash: \"{}\" }}\nruns: [{}]\nsite: {{ title: Test, base_path: / }}\n",
        Digest::of(b"suite"),
        runs.join(", ")
    )
}

/// Writes `manifests/<name>` beside the store and returns its path.
pub fn write_manifest(store: &Store, name: &str, text: &str) -> PathBuf {
    let dir = manifests_dir(store);
    std::fs::create_dir_all(&dir).expect("mkdir manifests");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write manifest");
    path
}

pub fn manifests_dir(store: &Store) -> PathBuf {
    store
        .root()
        .parent()
        .unwrap_or(Path::new("."))
        .join("manifests")
}

/// Overwrites an object file (objects are written 0644, so this works as the owner).
pub fn overwrite(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).expect("overwrite object");
}

/// Writes a zip of (name, bytes) entries with one compression method.
pub fn zip_of(path: &Path, entries: &[(String, Vec<u8>)], method: zip::CompressionMethod) {
    use std::io::Write as _;
    let f = std::fs::File::create(path).expect("create zip");
    let mut z = zip::ZipWriter::new(f);
    let o = zip::write::SimpleFileOptions::default().compression_method(method);
    for (name, bytes) in entries {
        z.start_file(name.as_str(), o).expect("start");
        z.write_all(bytes).expect("write");
    }
    z.finish().expect("finish");
}

/// The bundle entry of a blob: (`artifacts/v1/blake3/…`, bytes).
pub fn object_entry(bytes: &[u8]) -> (String, Vec<u8>) {
    let d = Digest::of(bytes);
    (
        format!("artifacts/{}", Store::relative_path_of(&d)),
        bytes.to_vec(),
    )
}
