//! The site benchmark: generates a store of synthetic records and a manifest naming them,
//! times loading and building the site from it, and times the metric aggregation on a number
//! of generated samples. `cargo bench -p ptxbench --bench site -- --dir DIR [--records N]`.
//! It prints the wall time of each step, the CPU time (user and system) the process spent in
//! it, and the process's peak resident memory (Linux's `VmHWM`; for the site, also the peak when
//! loading ends); run with `--reuse` on a folder of an earlier run to see the build's own peak,
//! without the generation's. With `--dir` on a tmpfs (`/dev/shm`) the build's own CPU time
//! shows without the disk's: on a busy or nearly full disk the same write of a 100k-record site
//! has cost from 13 to 91 s of system time here, against 5 to 11 s on tmpfs.
//! `pipeline/scripts/write_floor.py` writes the same number of pages and links with no
//! rendering at all: the floor under the "render and write" time on the same folder.
//!
//! On a virtual machine that hands freed memory back to its host ("Free page reporting
//! enabled" in the kernel log), every page the build takes fresh (its heap, the store's pages
//! it reads, the site's pages it writes) is faulted in by the host again, at a cost that moves
//! with the host: here 7–9 µs a 4 KiB page in some hours (under 1 µs in others), against
//! about 1 µs for memory freed lately and not handed back yet (the host took back about 110
//! of 3,000 MiB freed in the next 30 s;
//! `artifacts/evidence/site-bench/fresh-memory-2026-12-03.log`). So a `--reuse` run first
//! moves the earlier run's site aside and waits `--settle` seconds (15) for memory freed before
//! it to go back; as the host takes back only part of it in that time, what a build pays still
//! depends on what the machine freed before it. With `--earlier delete --settle 0` (the earlier
//! site moved aside and deleted after the timing) runs here alternated between about 9 and
//! 13 s, the same binary in every other run. Compare builds side by side, alternated (ABBA),
//! never against a figure from another hour. After the settle a probe writes `--probe-mib`
//! (64) MiB to a file in `--dir` and prints what a fresh 4 KiB page of that file system cost
//! at that moment; the file is deleted only after the timing, so the build gets none of its
//! pages. With it each figure comes with a reading of the machine's state, as do how full the
//! file system is (blocks and inodes in use: kept sites fill it), the CPU time the host stole
//! from this machine during the build and the CPU time other processes took
//! (`artifacts/evidence/site-bench/` has the runs and what they showed).
//!
//! Where the kernel pages out page cache it sees unused (a DAMON `pageout` scheme, as on the
//! machine of these figures), a `--reuse` run reads most of its store from the disk: files read
//! a minute before are mostly gone. A store read just before loaded in 1.5–1.8 s against
//! 2.8–4.6 s from the disk (`artifacts/evidence/site-bench/cold-store-2026-12-03.log`).
//!
//! The earlier run's site is kept (`DIR/earlier-sites/`), not deleted, because on ext4 without
//! a journal (the disk of these figures) the kernel does not reuse an inode freed in the last
//! 60 s, or the last 360 s while its inode table block is dirty: each file a build creates
//! then scans past the freed inodes of its block group, one buffer lookup each, under the
//! folder's lock. Deleting the earlier site a minute before each build (`--earlier delete`,
//! the default until 2026-12-03) made every build pay for the one before it, more with each
//! run: 8.6, 10.6, 12.8, 14.1 and 13.7 s in five runs in a row, against 8.2–10.3 s with the
//! sites kept (`artifacts/evidence/site-bench/kept-sites-2026-12-03.log`). A first build, or
//! CI's on a fresh machine, pays none of it; nor does ext4 with a journal, which skips the
//! check. Delete the kept sites at least 6 minutes before the next timed build: three minutes
//! after 4 million files were deleted here, `write_floor.py` took 11.6 s to write 100,000
//! files of 15 KB that took 2.7 s eight minutes after (`floor-2026-12-03.log`).
//!
//! A bench target rather than a subcommand so that the synthetic data (shared with the tests,
//! `tests/support/synthetic.rs`) never ships in the `ptxbench` binary.

#[path = "../tests/support/synthetic.rs"]
#[allow(dead_code)]
mod synthetic;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context as _, bail};
use clap::Parser;

use ptxbench::metrics::{self, Provenance, Sample, Samples};
use ptxbench::site::SiteInput;
use ptxbench::site::output::write_site;
use ptxbench::store::Store;
use ptxbench::task::Suite;
use synthetic::Rng;

/// The allocator of the `ptxbench` binary, so the bench measures what a build runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
struct BenchSiteArgs {
    /// A folder for the generated store, manifest and site (created; must not exist unless
    /// --reuse).
    #[arg(long)]
    pub dir: PathBuf,
    /// Synthetic records (role `entry`); 0 skips the site benchmark.
    #[arg(long, default_value_t = 100_000)]
    pub records: usize,
    /// Entries (models) they are spread over.
    #[arg(long, default_value_t = 20)]
    pub entries: usize,
    /// Tasks of the suite to use (0: every sm_90a task).
    #[arg(long, default_value_t = 0)]
    pub task_count: usize,
    /// Samples for the aggregation benchmark; 0 skips it.
    #[arg(long, default_value_t = 1_000_000)]
    pub rows: usize,
    /// Use the store already in --dir (made by an earlier run) instead of generating one.
    #[arg(long)]
    pub reuse: bool,
    /// Only generate the store and manifest (time the build yourself with `ptxbench site`).
    #[arg(long)]
    pub generate_only: bool,
    /// Also render the site into memory without writing it (pages and objects counted and
    /// dropped), to tell rendering from writing.
    #[arg(long)]
    pub render_only: bool,
    /// The task suite (default: the repository's `tasks/`).
    #[arg(long)]
    pub tasks: Option<PathBuf>,
    /// What becomes of an earlier run's site (`DIR/public`) before the clock starts: `keep`
    /// moves it into `DIR/earlier-sites/` and deletes nothing, so no inode of the file system
    /// was freed just before the build (see the module doc); `delete` removes it (with
    /// `--settle 0`, after the timing instead).
    #[arg(long, value_enum, default_value_t = Earlier::Keep)]
    pub earlier: Earlier,
    /// Seconds to wait, after moving or deleting an earlier run's site and before the clock
    /// starts, for memory freed before the build to go back to the host (see the module doc);
    /// with `--earlier delete`, 0 moves the earlier site aside instead and deletes it after
    /// the timing.
    #[arg(long, default_value_t = 15)]
    pub settle: u64,
    /// MiB to write to a file in --dir after the settle, timed, to report what a fresh page
    /// of that file system costs at the moment (the cost a build pays about a million times,
    /// and that moves with the host; see the module doc); 0 skips it.
    #[arg(long, default_value_t = 64)]
    pub probe_mib: u64,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    pub bench: bool,
}

/// What a `--reuse` run does with the site an earlier run left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Earlier {
    /// Moved into `DIR/earlier-sites/`, deleted by no one but the user.
    Keep,
    /// Deleted before the build (after it with `--settle 0`).
    Delete,
}

/// This process's CPU time so far, user and system, from `/proc/self/stat` (in USER_HZ, 100
/// ticks a second); `None` where there is no such file.
fn cpu_times() -> Option<(f64, f64)> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name (in parentheses, which may hold spaces) start with the
    // state (field 3); utime and stime are fields 14 and 15.
    let rest = s.get(s.rfind(')')? + 1..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i)?.parse::<f64>().ok().map(|t| t / 100.0);
    Some((tick(11)?, tick(12)?))
}

/// The CPU time spent since `before` ([`cpu_times`]), in words: how much of a step's wall time
/// was this process computing (user) and in system calls (system), on all its threads.
fn cpu_since(before: Option<(f64, f64)>) -> String {
    match (before, cpu_times()) {
        (Some((u0, s0)), Some((u1, s1))) => {
            format!("CPU user {:.1} s, system {:.1} s", u1 - u0, s1 - s0)
        }
        _ => "CPU time unknown (no /proc/self/stat)".into(),
    }
}

/// The whole machine's CPU time so far from `/proc/stat`, in seconds: busy (user, nice,
/// system, irq, softirq, on every CPU) and stolen (the time the hypervisor ran something else
/// while a virtual CPU of this machine wanted to run); `None` where there is no such file.
fn machine_times() -> Option<(f64, f64)> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let line = s.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse::<f64>().map(|t| t / 100.0))
        .collect::<Result<_, _>>()
        .ok()?;
    // user nice system idle iowait irq softirq steal ...
    let busy = f.first()? + f.get(1)? + f.get(2)? + f.get(5)? + f.get(6)?;
    Some((busy, *f.get(7)?))
}

/// What else the machine did during a step: the CPU time its virtual CPUs lost to the host
/// (steal) and the CPU time other processes took, given the readings before it and this
/// process's own CPU time in it. A figure taken while either is large says as much about the
/// machine as about the build.
fn machine_since(before: Option<(f64, f64)>, own_cpu: Option<f64>) -> String {
    match (before, machine_times(), own_cpu) {
        (Some((b0, s0)), Some((b1, s1)), Some(own)) => format!(
            "machine: steal {:.1} s, other processes {:.1} s of CPU",
            s1 - s0,
            (b1 - b0 - own).max(0.0)
        ),
        _ => "machine: unknown (no /proc/stat)".into(),
    }
}

/// Writes `mib` MiB of fresh file pages into `dir` (1 MiB a write) and times it: the cost of
/// one fresh 4 KiB page on that file system now, in words, and the file, for the caller to
/// delete after the build (deleted before, its pages would be freed, not fresh, memory for the
/// build to take).
fn probe_fresh_pages(dir: &std::path::Path, mib: u64) -> anyhow::Result<(String, PathBuf)> {
    use std::io::Write as _;
    let path = dir.join("probe.bin");
    let chunk = vec![0x5au8; 1 << 20];
    let t = Instant::now();
    let mut f =
        std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    for _ in 0..mib {
        f.write_all(&chunk)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    drop(f);
    let secs = t.elapsed().as_secs_f64();
    let pages = (mib << 20) as f64 / 4096.0;
    Ok((
        format!(
            "probe: {mib} MiB of fresh file pages written in {secs:.3} s, {:.2} µs per 4 KiB page",
            secs * 1e6 / pages
        ),
        path,
    ))
}

/// How full the file system holding `dir` is, blocks and inodes, in words: the state a build
/// creates its 311k files in (kept sites fill it; see the module doc).
#[cfg(unix)]
fn file_system_state(dir: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt as _;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return "file system: unknown (NUL in the path)".into();
    };
    // SAFETY: `s` is a plain struct the call fills; `path` is a NUL-terminated string that
    // outlives the call.
    let s = unsafe {
        let mut s: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(path.as_ptr(), &mut s) != 0 {
            return format!("file system: unknown ({})", std::io::Error::last_os_error());
        }
        s
    };
    // The fields' types differ between systems (64 bits on Linux).
    #[allow(clippy::useless_conversion)]
    let (blocks, blocks_free, blocks_avail, inodes, inodes_free, inodes_avail) = (
        u64::from(s.f_blocks),
        u64::from(s.f_bfree),
        u64::from(s.f_bavail),
        u64::from(s.f_files),
        u64::from(s.f_ffree),
        u64::from(s.f_favail),
    );
    // As `df` counts: used against used plus what this user may still take, so blocks
    // reserved for others (here most of the disk) do not pass for room.
    let used = |total: u64, free: u64, avail: u64| {
        let used = total.saturating_sub(free);
        if used + avail == 0 {
            0.0
        } else {
            100.0 * used as f64 / (used + avail) as f64
        }
    };
    format!(
        "file system: {:.0}% of its space and {:.0}% of its inodes in use (as `df` counts)",
        used(blocks, blocks_free, blocks_avail),
        used(inodes, inodes_free, inodes_avail)
    )
}

#[cfg(not(unix))]
fn file_system_state(_dir: &std::path::Path) -> String {
    "file system: unknown".into()
}

/// Moves the site `out` into `DIR/earlier-sites/<n>` (the first free number) and returns where.
fn keep_earlier(dir: &std::path::Path, out: &std::path::Path) -> anyhow::Result<PathBuf> {
    let kept = dir.join("earlier-sites");
    std::fs::create_dir_all(&kept).with_context(|| format!("creating {}", kept.display()))?;
    let mut n = 1usize;
    while kept.join(n.to_string()).exists() {
        n += 1;
    }
    let to = kept.join(n.to_string());
    std::fs::rename(out, &to)
        .with_context(|| format!("moving {} to {}", out.display(), to.display()))?;
    Ok(to)
}

fn main() -> anyhow::Result<()> {
    // As `ptxbench site` does.
    let a = BenchSiteArgs::parse();
    let store_dir = a.dir.join("artifacts");
    let manifest = a.dir.join("manifest.yaml");
    let out = a.dir.join("public");
    let tasks = a
        .tasks
        .clone()
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tasks"));
    let suite = Suite::load(&tasks).with_context(|| format!("loading {}", tasks.display()))?;
    if a.records > 0 {
        if a.reuse {
            if !manifest.is_file() {
                bail!("--reuse: no {} from an earlier run", manifest.display());
            }
        } else {
            if a.dir.exists() {
                bail!("{} exists; pass a new folder (or --reuse)", a.dir.display());
            }
            std::fs::create_dir_all(&a.dir)
                .with_context(|| format!("creating {}", a.dir.display()))?;
            let store = Store::open(&store_dir).without_sync();
            let t = Instant::now();
            let opts = synthetic::Options {
                records: a.records,
                entries: a.entries,
                harness_tests: 8,
                references: 2,
                tasks: a.task_count,
                seed: 2026,
            };
            synthetic::generate(&store, &suite, &opts, &manifest, None)?;
            println!(
                "generate: {} records into {} in {:.2} s",
                a.records,
                store_dir.display(),
                t.elapsed().as_secs_f64()
            );
        }
        if a.render_only {
            let store = Store::open(&store_dir);
            let cpu = cpu_times();
            let t = Instant::now();
            let input = SiteInput::load(&manifest, &store, suite.clone())?;
            let load = t.elapsed().as_secs_f64();
            let bytes = std::sync::atomic::AtomicU64::new(0);
            let pages = |_path: String, b: Vec<u8>| {
                bytes.fetch_add(b.len() as u64, std::sync::atomic::Ordering::Relaxed);
                Ok(())
            };
            let files = ptxbench::site::render_each_placing(
                &input,
                &pages,
                &|_path, _d, _verified| Ok(()),
                &ptxbench::site::buffered(&pages),
            )?;
            let total = t.elapsed().as_secs_f64();
            println!(
                "render only: {} records, {files} files ({:.0} MB of pages, objects not counted): load {load:.2} s, render {:.2} s, total {total:.2} s; {}; peak memory {}",
                input.records.len(),
                bytes.into_inner() as f64 / 1e6,
                total - load,
                cpu_since(cpu),
                ptxbench::peak_memory::peak_resident_text()
            );
        }
        if !a.generate_only {
            // By default (`--earlier keep`) an earlier run's site is moved aside and kept: no
            // file is deleted before the build, the state of a machine that has not built a
            // site in the last minutes (CI's). With `--earlier delete` it is deleted first and
            // the build waits `--settle` seconds for the memory it held to go back to the host;
            // with `--settle 0` it is moved aside before the clock starts and deleted after it
            // stops (the time printed, not counted): then the build takes pages that were freed
            // moments before, or were not, in a pattern that alternated fast and slow runs here.
            let earlier = a.dir.join("public.earlier");
            if earlier.exists() {
                std::fs::remove_dir_all(&earlier)
                    .with_context(|| format!("removing {}", earlier.display()))?;
            }
            if out.exists() {
                match (a.earlier, a.settle) {
                    (Earlier::Keep, _) => {
                        let kept = keep_earlier(&a.dir, &out)?;
                        println!(
                            "kept the earlier run's site as {} (sites kept: {}; delete them at least 6 minutes before a timed build, see the bench's doc)",
                            kept.display(),
                            kept.parent()
                                .map_or(0, |p| std::fs::read_dir(p).map_or(0, |d| d.count()))
                        );
                    }
                    (Earlier::Delete, 0) => std::fs::rename(&out, &earlier)
                        .with_context(|| format!("moving {} aside", out.display()))?,
                    (Earlier::Delete, _) => std::fs::remove_dir_all(&out)
                        .with_context(|| format!("removing {}", out.display()))?,
                }
            }
            let mut probe_file = None;
            if a.settle > 0 {
                std::thread::sleep(std::time::Duration::from_secs(a.settle));
                if a.probe_mib > 0 {
                    let (line, path) = probe_fresh_pages(&a.dir, a.probe_mib)?;
                    println!("{line}");
                    probe_file = Some(path);
                }
            }
            println!("{}", file_system_state(&a.dir));
            let store = Store::open(&store_dir);
            let machine = machine_times();
            let cpu = cpu_times();
            let t = Instant::now();
            let input = SiteInput::load(&manifest, &store, suite.clone())?;
            let load = t.elapsed().as_secs_f64();
            let load_cpu = cpu_since(cpu);
            let load_peak = ptxbench::peak_memory::peak_resident_text();
            let written = write_site(&input, &out)?;
            let total = t.elapsed().as_secs_f64();
            let own = cpu
                .zip(cpu_times())
                .map(|((u0, s0), (u1, s1))| u1 - u0 + s1 - s0);
            println!(
                "site: {} records, {} files ({:.0} MB): load {load:.2} s ({load_cpu}; peak memory {load_peak}), render and write {:.2} s, total {total:.2} s; {}; peak memory {}; {}",
                input.records.len(),
                written.files,
                written.bytes as f64 / 1e6,
                total - load,
                cpu_since(cpu),
                ptxbench::peak_memory::peak_resident_text(),
                machine_since(machine, own)
            );
            let t = Instant::now();
            drop(input);
            println!(
                "dropped the loaded input in {:.2} s (not counted; `ptxbench site` exits without)",
                t.elapsed().as_secs_f64()
            );
            if let Some(path) = probe_file {
                std::fs::remove_file(&path)
                    .with_context(|| format!("removing {}", path.display()))?;
            }
            if earlier.exists() {
                let t = Instant::now();
                std::fs::remove_dir_all(&earlier)
                    .with_context(|| format!("removing {}", earlier.display()))?;
                println!(
                    "removed the earlier run's site in {:.2} s (not counted)",
                    t.elapsed().as_secs_f64()
                );
            }
        }
    }
    if a.rows > 0 {
        let mut rng = Rng::new(99);
        let t = Instant::now();
        let mut samples = Samples::with_capacity(a.rows);
        let tasks: Vec<String> = suite.tasks.iter().map(|t| t.id.to_string()).collect();
        for i in 0..a.rows {
            let correct = rng.unit() < 0.4;
            let s = 0.1 + 1.5 * rng.unit();
            samples.push(Sample {
                provenance: if i % 10 == 0 {
                    Provenance::Reported
                } else {
                    Provenance::Measured
                },
                entry: format!("model-{:02}", i % 40),
                arch: if i % 3 == 0 { "sm_100a" } else { "sm_90a" }.to_string(),
                gpu: if i % 3 == 0 {
                    "NVIDIA B200"
                } else {
                    "NVIDIA H200"
                }
                .to_string(),
                task: tasks[(i / 40) % tasks.len()].clone(),
                trajectory: format!("t{}", i / 8),
                turn: (i % 8) as u32,
                correct,
                correct_with_arch: (i % 10 == 0).then_some(correct && rng.unit() < 0.5),
                correct_on_target: None,
                mma_flop_share: None,
                speedup_min_ci95: None,
                speedup_best_ci95: None,
                speedup_min: Some(s),
                speedup_best: Some(s * 1.2),
                peak_fraction: Some(s / 3.0),
                composed_baseline: false,
            });
        }
        let built = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let m = metrics::compute(samples)?;
        println!(
            "aggregate: {} rows → {} task rows, {} overall rows in {:.2} s (building the samples took {built:.2} s)",
            a.rows,
            m.tasks.len(),
            m.overall.len(),
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
