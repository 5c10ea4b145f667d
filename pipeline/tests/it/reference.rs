//! The committed reference-kernel evidence (tasks/reference/, run on the H200 and the H100 as
//! tasks/runs/reference-sm90a.yaml) is about the committed PTX, and every hand-written kernel is
//! correct with arch: wgmma and TMA executed, on every workload of every task it ran.

use ptxbench::digest::Digest;
use ptxbench::record::Verdict;
use ptxbench::runner::list::RunList;

use crate::published::results;
use crate::root;

#[test]
fn every_reference_kernel_is_correct_with_arch_on_every_workload() {
    let suite = crate::suite();
    let refs: Vec<_> = results("reference-sm90a")
        .into_iter()
        .filter(|r| r.evaluation.starts_with("wgmma-"))
        .collect();
    // 17 bf16 GEMM tasks, the fp8 GEMM, 4 forward and 4 backward attention tasks, once per
    // GPU the published list ran on.
    let per_gpu = crate::published::per_gpu(refs.iter());
    assert!(!per_gpu.is_empty());
    assert!(per_gpu.values().all(|&n| n == 26), "{per_gpu:?}");
    for r in &refs {
        assert_eq!(r.record.verdict, Verdict::Correct, "{}", r.label());
        assert_eq!(r.record.correct_with_arch(), Some(true), "{}", r.label());
        for f in ["wgmma", "tma"] {
            let count = r.family(f).and_then(|x| x.dynamic_count);
            assert!(count.is_some_and(|n| n > 0), "{}: {f}", r.label());
        }
        let task = suite.get(&r.record.task).expect("in the suite");
        for w in &task.workloads {
            assert!(
                r.record
                    .outcome
                    .workloads
                    .iter()
                    .any(|x| x.workload == w.name),
                "{}: {} not run",
                r.label(),
                w.name
            );
        }
    }
}

#[test]
fn the_measured_ptx_is_the_committed_ptx() {
    let path = root().join("tasks/runs/reference-sm90a.yaml");
    let (list, _) = RunList::load(&path).expect("list");
    let rs = results("reference-sm90a");
    for e in &list.evaluations {
        let bytes = std::fs::read(path.parent().expect("dir").join(&e.kernel)).expect("kernel");
        for r in rs.iter().filter(|r| r.evaluation == e.name) {
            assert_eq!(
                r.record.ptx_digest,
                Some(Digest::of(&bytes)),
                "{}: {} changed since its run",
                r.label(),
                e.kernel.display()
            );
        }
    }
}

#[test]
fn the_multi_gpu_run_used_both_gpus() {
    // `ptxbench run` on a 2-GPU host: one worker thread per GPU, each record names its GPU.
    let ordinals: std::collections::BTreeSet<usize> = results("multigpu-sm90a")
        .iter()
        .map(|r| r.record.outcome.device.as_ref().expect("a device").ordinal)
        .collect();
    assert_eq!(ordinals.into_iter().collect::<Vec<_>>(), vec![0, 1]);
}

/// A host program (nvcc) that walks gemm_sk.cuh's `Cursor` for every worker of a launch and
/// prints each unit: the schedule the v2 reference GEMMs' producer and consumers follow.
const CURSOR_DRIVER: &str = r#"#include "gemm_sk.cuh"
#include <cstdio>
int main() {
  unsigned m, n, k, elem, bk, bn, cl, workers, splits;
  while (scanf("%u %u %u %u %u %u %u %u %u", &m, &n, &k, &elem, &bk, &bn, &cl, &workers, &splits) == 9) {
    const unsigned rows = cl * gemm_ws::BM;
    const unsigned tiles = ((m + rows - 1) / rows) * ((n + bn - 1) / bn), k_iters = (k * elem + bk - 1) / bk;
    printf("launch %u %u\n", tiles, k_iters);
    for (unsigned me = 0; me < workers; ++me) {
      gemm_ws::Cursor cur(tiles, k_iters, splits, me, workers);
      for (gemm_ws::Unit w; cur.step(w);) printf("%u %u %u %u %u\n", me, w.tile, w.kb0, w.kb1, w.partial ? 1u : 0u);
    }
  }
  return 0;
}
"#;

/// Every k-block of every tile is computed exactly once under the stream-K schedule, by every
/// bf16 GEMM workload of the suite on one CTA per SM and on clusters of 2, and by the fp8 GEMM's
/// whole tiles on clusters of 2. Whole tiles (the data-parallel waves) store C themselves;
/// exactly the `tiles % workers` tiles past the last whole wave go through the workspace that
/// finish_stream_k rounds. The stream's ranges differ by at most one k-block, so the busiest
/// worker has at most one k-block more than the least busy one that takes a range.
#[test]
fn the_stream_k_schedule_covers_every_k_block_once() {
    let Ok(nvcc) = ptxbench::toolchain::locate(ptxbench::toolchain::Tool::Nvcc) else {
        let missing = ["nvcc not found".to_string()];
        assert!(!crate::tools_present("stream-k schedule", &missing));
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let common = root().join("tasks/reference/common");
    let exe = ptxbench::toolchain::build_host_program(
        &nvcc,
        dir.path(),
        CURSOR_DRIVER,
        "sm_90a",
        &[&common],
    )
    .unwrap_or_else(|e| panic!("nvcc: {e}"));
    // (M, N, K, element bytes, k-block bytes, BN, cluster, workers, splits)
    let suite = crate::suite();
    let mut launches = Vec::new();
    for task in suite
        .tasks
        .iter()
        .filter(|t| t.id.as_str().starts_with("gemm_"))
    {
        let fp8 = task.id.as_str().starts_with("gemm_fp8");
        for w in &task.workloads {
            let b = task.bindings(w);
            let (m, n, k) = (b["M"] as u32, b["N"] as u32, b["K"] as u32);
            if fp8 {
                let tiles = m.div_ceil(256) * n.div_ceil(128);
                launches.push([m, n, k, 1, 128, 128, 2, tiles.min(66), 1]);
            } else {
                launches.push([m, n, k, 2, 128, 256, 1, 132, 0]);
                launches.push([m, n, k, 2, 128, 256, 2, 66, 0]);
            }
        }
    }
    let input: String = launches
        .iter()
        .map(|l| l.map(|x| x.to_string()).join(" ") + "\n")
        .collect();
    let mut child = std::process::Command::new(&exe)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the driver starts");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), input.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("the driver ends");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let mut blocks = text.split("launch ").skip(1);
    for l in &launches {
        let block = blocks.next().expect("one block per launch");
        let mut lines = block.lines();
        let head: Vec<u32> = lines
            .next()
            .expect("head")
            .split(' ')
            .map(|x| x.parse().expect("number"))
            .collect();
        let (tiles, k_iters, workers, splits) = (head[0], head[1], l[7], l[8]);
        let streamed = if splits == 0 { tiles % workers } else { 0 };
        let mut seen = vec![0u32; (tiles * k_iters) as usize];
        let mut load = vec![0u32; workers as usize];
        let mut stream_load = vec![0u32; workers as usize];
        for line in lines {
            let u: Vec<u32> = line
                .split(' ')
                .map(|x| x.parse().expect("number"))
                .collect();
            let (me, tile, kb0, kb1, partial) = (u[0], u[1], u[2], u[3], u[4] == 1);
            assert!(
                tile < tiles && kb0 < kb1 && kb1 <= k_iters,
                "{l:?}: unit {u:?}"
            );
            for kb in kb0..kb1 {
                seen[(tile * k_iters + kb) as usize] += 1;
            }
            load[me as usize] += kb1 - kb0;
            let in_stream = tile >= tiles - streamed;
            assert_eq!(
                partial,
                in_stream,
                "{l:?}: unit {u:?} (stream from tile {})",
                tiles - streamed
            );
            if in_stream {
                stream_load[me as usize] += kb1 - kb0;
            } else {
                assert!(kb0 == 0 && kb1 == k_iters, "{l:?}: a whole tile cut: {u:?}");
            }
        }
        if let Some(c) = seen.iter().find(|&&c| c != 1) {
            panic!("{l:?}: a k-block computed {c} times");
        }
        let ranges: Vec<u32> = stream_load.iter().copied().filter(|&x| x > 0).collect();
        if let (Some(lo), Some(hi)) = (ranges.iter().min(), ranges.iter().max()) {
            assert!(
                hi - lo <= 1,
                "{l:?}: stream ranges from {lo} to {hi} k-blocks"
            );
        }
        // Stream-K: the whole waves plus one range; whole tiles only (splits = 1): round robin.
        let bound = if splits == 0 {
            (tiles - streamed) / workers * k_iters + ranges.iter().max().copied().unwrap_or(0)
        } else {
            tiles.div_ceil(workers) * k_iters
        };
        let most = *load.iter().max().expect("workers");
        assert!(
            most <= bound,
            "{l:?}: the busiest worker has {most} k-blocks, more than {bound}"
        );
    }
    assert!(blocks.next().is_none());
}
