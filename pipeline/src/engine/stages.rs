//! Evaluations in three overlapping stages, so the GPU never waits for the CPU: `prepare` on
//! several CPU threads ahead of the GPUs (ptxas for the next candidates), `on_gpu` on a thread
//! for each evaluation a GPU may run at once, and `finish` (evidence, storing) on a few threads
//! behind them.

use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// CPU threads for the prepare stage: `PTXBENCH_PREPARE_THREADS`, else the machine's cores, at
/// least 2 and at most 16.
pub fn cpu_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 16));
    tuning("PTXBENCH_PREPARE_THREADS", cores).max(1)
}

/// A tuning variable's value: `default` when unset; when set to something other than a whole
/// number, `default` with a warning that names the variable and its value.
pub fn tuning(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Err(_) => default,
        Ok(v) => v.trim().parse().unwrap_or_else(|_| {
            eprintln!("warning: {name}={v:?} is not a whole number; using {default}");
            default
        }),
    }
}

/// Threads of the finish stage: the target evidence disassembles each cubin (nvdisasm, about
/// as long as a correctness-only evaluation), so one thread would fall behind the GPU.
pub const FINISH_THREADS: usize = 4;

/// Runs every item of `items` through `prepare` (on [`cpu_threads`] threads, at most that
/// many prepared items waiting), then `on_gpu` (`per_gpu` threads for each GPU `0..gpus`, each
/// taking the next prepared item, with how long that thread waited for it), then `finish` (on
/// [`FINISH_THREADS`] threads, taking items in the order the GPUs end them). Returns when every
/// item is finished; `items` may block for its next item (a service's queue).
///
/// A panic in a stage loses that item only: the stages go on draining (so none waits forever
/// on another that is gone), and the first panic is raised again once every item is through.
pub fn staged<I, P, O>(
    items: impl Iterator<Item = I> + Send,
    gpus: usize,
    per_gpu: usize,
    prepare: impl Fn(I) -> P + Sync,
    on_gpu: impl Fn(usize, P, Duration) -> O + Sync,
    finish: impl Fn(O) + Sync,
) where
    I: Send,
    P: Send,
    O: Send,
{
    let cpu = cpu_threads();
    let items = Mutex::new(items);
    let (ready_tx, ready_rx) = mpsc::sync_channel::<P>(cpu);
    let ready_rx = Mutex::new(ready_rx);
    let (done_tx, done_rx) = mpsc::channel::<O>();
    let done_rx = Mutex::new(done_rx);
    let panicked: Mutex<Option<Box<dyn std::any::Any + Send>>> = Mutex::new(None);
    // `f()`, or `None` with its panic kept (the first one).
    let guard = |f: &mut dyn FnMut() -> Option<()>| {
        if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            panicked
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert(p);
        }
    };
    let (items, ready_rx, done_rx, prepare, on_gpu, finish, guard) = (
        &items, &ready_rx, &done_rx, &prepare, &on_gpu, &finish, &guard,
    );
    std::thread::scope(|s| {
        for _ in 0..cpu {
            let tx = ready_tx.clone();
            s.spawn(move || {
                loop {
                    let next = items.lock().unwrap_or_else(|e| e.into_inner()).next();
                    let Some(item) = next else { break };
                    let mut item = Some(item);
                    let mut ready = None;
                    guard(&mut || {
                        ready = Some(prepare(item.take()?));
                        Some(())
                    });
                    if let Some(p) = ready
                        && tx.send(p).is_err()
                    {
                        break;
                    }
                }
            });
        }
        drop(ready_tx);
        for gpu in (0..gpus.max(1)).flat_map(|g| std::iter::repeat_n(g, per_gpu.max(1))) {
            let tx = done_tx.clone();
            s.spawn(move || {
                loop {
                    let asked = Instant::now();
                    let next = ready_rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok(p) = next else { break };
                    let waited = asked.elapsed();
                    let mut p = Some(p);
                    let mut done = None;
                    guard(&mut || {
                        done = Some(on_gpu(gpu, p.take()?, waited));
                        Some(())
                    });
                    if let Some(o) = done
                        && tx.send(o).is_err()
                    {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        for _ in 0..FINISH_THREADS {
            s.spawn(move || {
                loop {
                    let next = done_rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok(o) = next else { break };
                    let mut o = Some(o);
                    guard(&mut || {
                        finish(o.take()?);
                        Some(())
                    });
                }
            });
        }
    });
    if let Some(p) = panicked.into_inner().unwrap_or_else(|e| e.into_inner()) {
        std::panic::resume_unwind(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_item_passes_every_stage_once() {
        let gpu_calls: Vec<AtomicUsize> = (0..3).map(|_| AtomicUsize::new(0)).collect();
        let done = Mutex::new(Vec::new());
        staged(
            0..200u32,
            3,
            2,
            |i| i * 2,
            |gpu, p, _| {
                gpu_calls[gpu].fetch_add(1, Ordering::Relaxed);
                p + 1
            },
            |o| done.lock().expect("not poisoned").push(o),
        );
        let mut done = done.into_inner().expect("not poisoned");
        done.sort_unstable();
        assert_eq!(done, (0..200u32).map(|i| i * 2 + 1).collect::<Vec<_>>());
        let calls: usize = gpu_calls.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        assert_eq!(calls, 200);
    }

    #[test]
    fn preparing_goes_on_while_the_gpu_stage_works() {
        // The first GPU call waits for later items to be prepared: with the stages one after
        // another it would wait in vain.
        let prepared = AtomicUsize::new(0);
        let saw = Mutex::new(None);
        staged(
            0..8u32,
            1,
            1,
            |i| {
                prepared.fetch_add(1, Ordering::SeqCst);
                i
            },
            |_, p, _| {
                if p == 0 {
                    let until = std::time::Instant::now() + Duration::from_secs(10);
                    while prepared.load(Ordering::SeqCst) < 3 && std::time::Instant::now() < until {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    *saw.lock().expect("not poisoned") = Some(prepared.load(Ordering::SeqCst));
                }
                p
            },
            |_| {},
        );
        let saw = saw.into_inner().expect("not poisoned");
        assert!(
            saw.is_some_and(|n| n >= 3),
            "prepared during the first GPU call: {saw:?}"
        );
    }

    #[test]
    fn the_gpu_stage_is_told_how_long_it_waited_for_the_cpu() {
        // One item that takes 150 ms to prepare: the GPU's thread had nothing to do meanwhile.
        let waits = Mutex::new(Vec::new());
        staged(
            0..1u32,
            1,
            1,
            |i| {
                std::thread::sleep(Duration::from_millis(150));
                i
            },
            |_, _, waited| waits.lock().expect("not poisoned").push(waited),
            |()| {},
        );
        let waits = waits.into_inner().expect("not poisoned");
        assert_eq!(waits.len(), 1);
        assert!(waits[0] >= Duration::from_millis(140), "{waits:?}");
    }

    #[test]
    fn items_are_finished_on_several_threads_at_once() {
        // Each finish waits until another one has started (or 2 s pass): one thread alone
        // would see no other finishing beside it.
        let now = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        staged(
            0..8u32,
            1,
            1,
            |i| i,
            |_, p, _| p,
            |_| {
                let here = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(here, Ordering::SeqCst);
                let until = Instant::now() + Duration::from_secs(2);
                while most.load(Ordering::SeqCst) < 2 && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(1));
                }
                now.fetch_sub(1, Ordering::SeqCst);
            },
        );
        assert!(most.load(Ordering::SeqCst) >= 2, "finished one at a time");
    }

    #[test]
    fn each_gpu_runs_as_many_items_at_once_as_it_has_threads() {
        // Each GPU call waits until another call on the same GPU is under way (or 2 s pass);
        // with one thread per GPU no GPU ever sees two.
        for per_gpu in [1, 2] {
            let now: Vec<AtomicUsize> = (0..2).map(|_| AtomicUsize::new(0)).collect();
            let most: Vec<AtomicUsize> = (0..2).map(|_| AtomicUsize::new(0)).collect();
            staged(
                0..16u32,
                2,
                per_gpu,
                |i| i,
                |gpu, p, _| {
                    let here = now[gpu].fetch_add(1, Ordering::SeqCst) + 1;
                    most[gpu].fetch_max(here, Ordering::SeqCst);
                    let until = Instant::now() + Duration::from_millis(300 * per_gpu as u64);
                    while most[gpu].load(Ordering::SeqCst) < per_gpu && Instant::now() < until {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    now[gpu].fetch_sub(1, Ordering::SeqCst);
                    p
                },
                |_| {},
            );
            let most: Vec<usize> = most.iter().map(|m| m.load(Ordering::SeqCst)).collect();
            assert!(
                most.iter().all(|&m| m <= per_gpu),
                "{most:?}, {per_gpu} a GPU"
            );
            assert_eq!(most.iter().max(), Some(&per_gpu), "{most:?}");
        }
    }

    #[test]
    fn a_panicking_stage_loses_its_item_only_and_is_raised_at_the_end() {
        for stage in 0..3 {
            let finished = AtomicUsize::new(0);
            let boom = |at: usize, i: u32| {
                if at == stage && i == 7 {
                    panic!("stage {stage} fails on item 7");
                }
                i
            };
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                staged(
                    0..40u32,
                    1,
                    1,
                    |i| boom(0, i),
                    |_, p, _| boom(1, p),
                    |o| {
                        boom(2, o);
                        finished.fetch_add(1, Ordering::SeqCst);
                    },
                );
            }));
            assert!(result.is_err(), "stage {stage}: the panic is raised");
            assert_eq!(finished.load(Ordering::SeqCst), 39, "stage {stage}");
        }
    }
}
