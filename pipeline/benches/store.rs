//! The store benchmark (`cargo bench -p ptxbench --bench store -- [--objects N] [--bytes N]
//! [--bundle-objects N] [--threads N] [--dir DIR --keep]`): generates a scratch store of
//! synthetic objects, times a whole-store verify, a bundle and an import, and deletes the data
//! unless `--keep`. Not part of the shipped binary.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::bail;
use clap::Parser;
use serde::Serialize;

use ptxbench::bundle::{ImportLimits, import_bundle, write_bundle};
use ptxbench::digest::Digest;
use ptxbench::store::Store;
use ptxbench::store::verify::verify_store;

#[derive(Debug, Parser)]
#[command(name = "bench-store")]
struct BenchStoreArgs {
    /// A folder to create (must not exist; default: a new temp folder); removed afterwards
    /// unless --keep.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Objects in the verified store.
    #[arg(long, default_value_t = 100_000)]
    objects: usize,
    /// Total bytes in the verified store.
    #[arg(long, default_value_t = 1_000_000_000)]
    bytes: u64,
    /// Objects in the bundled closure.
    #[arg(long, default_value_t = 10_000)]
    bundle_objects: usize,
    /// Hashing threads for verify (default: the number of cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Keep the generated data.
    #[arg(long)]
    keep: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

#[derive(Serialize)]
struct Item {
    schema: &'static str,
    blob_digests: Vec<Digest>,
}

/// Items reference this many blobs each.
const FAN_OUT: usize = 9;

fn main() -> ExitCode {
    let a = BenchStoreArgs::parse();
    let scratch;
    let dir = match &a.dir {
        Some(d) if d.exists() => {
            eprintln!("error: {} exists; give a new folder", d.display());
            return ExitCode::from(2);
        }
        Some(d) => d.clone(),
        None => match tempfile::tempdir() {
            Ok(t) => {
                scratch = t;
                scratch.path().join("bench")
            }
            Err(e) => {
                eprintln!("error: creating a temp folder: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let result = bench(&a, &dir);
    if !a.keep && dir.exists() {
        if let Err(e) = std::fs::remove_dir_all(&dir) {
            eprintln!("error: removing {}: {e}", dir.display());
        }
    } else if a.keep {
        println!("data kept in {}", dir.display());
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn bench(a: &BenchStoreArgs, dir: &Path) -> anyhow::Result<()> {
    let threads = a
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let store = Store::open(dir.join("artifacts")).without_sync();

    // Generate: blobs of pseudo-random bytes (sizes 0.5x..1.5x the mean), grouped into items
    // of FAN_OUT blobs, items grouped into runs of `bundle_objects` objects.
    let t = Instant::now();
    let items_total = a.objects / (FAN_OUT + 1);
    let blobs_total = a.objects - items_total;
    let mean = (a.bytes / blobs_total.max(1) as u64).max(1);
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut buf = Vec::new();
    let mut blobs = Vec::with_capacity(blobs_total);
    for _ in 0..blobs_total {
        let len = (mean / 2 + next() % mean.max(1)) as usize;
        buf.clear();
        while buf.len() < len {
            buf.extend_from_slice(&next().to_le_bytes());
        }
        buf.truncate(len);
        blobs.push(store.put(&buf)?);
    }
    let mut items = Vec::with_capacity(items_total);
    for chunk in blobs.chunks(FAN_OUT).take(items_total) {
        items.push(store.put_object(&Item {
            schema: "ptxbench.bench_item/1",
            blob_digests: chunk.to_vec(),
        })?);
    }
    let per_run = (a.bundle_objects / (FAN_OUT + 1)).max(1);
    // A run object that decodes (an import refuses one that does not); its "records" are items.
    let run = store.put_object(&ptxbench::record::RunObject {
        schema: ptxbench::record::RUN_SCHEMA.into(),
        name: "bench".into(),
        arch: ptxbench::arch::Arch::Sm90a,
        list_digest: store.put(b"bench run list\n")?,
        suite_hash: Digest::of(b"bench suite"),
        record_digests: items.iter().take(per_run).copied().collect(),
    })?;
    let gen_s = t.elapsed().as_secs_f64();
    println!(
        "generated {} objects in {gen_s:.1} s",
        blobs.len() + items.len() + 1
    );

    // Reference: blake3 over one in-memory buffer, one thread.
    let big = vec![0x5au8; 256 << 20];
    let t = Instant::now();
    let _ = Digest::of(&big);
    let mem = big.len() as f64 / t.elapsed().as_secs_f64() / 1e9;
    drop(big);
    println!("blake3 in memory, 1 thread: {mem:.2} GB/s");

    // Reference: blake3 over blob-sized inputs (the mean size), one thread.
    let blob = vec![0xa5u8; mean as usize];
    let reps = (1usize << 30) / blob.len().max(1);
    let t = Instant::now();
    for i in 0..reps {
        std::hint::black_box(Digest::of(std::hint::black_box(
            &blob[..blob.len() - i % 2],
        )));
    }
    let small = (reps * blob.len()) as f64 / t.elapsed().as_secs_f64() / 1e9;
    println!("blake3 in memory over {mean}-byte inputs, 1 thread: {small:.2} GB/s");

    let t = Instant::now();
    let listed = store.scan()?.objects.len();
    println!(
        "scan (list {listed} objects, no reads): {:.2} s",
        t.elapsed().as_secs_f64()
    );

    for th in [1, threads] {
        let t = Instant::now();
        let r = verify_store(&store, th)?;
        let s = t.elapsed().as_secs_f64();
        println!(
            "verify, {th} thread(s): {} objects, {:.3} GB in {s:.2} s = {:.2} GB/s ({:.2} GB/s per thread), problems {}",
            r.objects,
            r.bytes as f64 / 1e9,
            r.bytes as f64 / s / 1e9,
            r.bytes as f64 / s / 1e9 / th as f64,
            r.problems.len()
        );
        if !r.ok() {
            bail!("the generated store does not verify");
        }
    }

    let manifests = dir.join("manifests");
    std::fs::create_dir_all(&manifests)?;
    let manifest = manifests.join("bench.yaml");
    std::fs::write(
        &manifest,
        format!(
            "manifest: 1\nsuite: {{ version: \"0.0.0\", hash: \"{}\" }}\nruns: [\"{run}\"]\nsite: {{ title: bench, base_path: / }}\n",
            Digest::of(b"bench")
        ),
    )?;
    let zip = dir.join("bench.zip");
    let t = Instant::now();
    let b = write_bundle(&store, &manifest, &zip)?;
    let s = t.elapsed().as_secs_f64();
    let zip_len = std::fs::metadata(&zip)?.len();
    println!(
        "bundle: {} objects, {:.1} MB -> {:.1} MB zip in {s:.2} s",
        b.objects,
        b.bytes as f64 / 1e6,
        zip_len as f64 / 1e6
    );
    for (label, target) in [
        (
            "import (fsync per object)",
            Store::open(dir.join("import-a/artifacts")),
        ),
        (
            "import (no fsync)",
            Store::open(dir.join("import-b/artifacts")).without_sync(),
        ),
    ] {
        let t = Instant::now();
        let s = import_bundle(
            &target,
            &target.root().with_file_name("manifests"),
            &zip,
            &ImportLimits::default(),
        )?;
        println!(
            "{label}: {} objects ({} new) in {:.2} s",
            s.objects,
            s.new_objects,
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
