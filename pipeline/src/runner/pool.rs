//! The worker pool: one thread per GPU, each taking the next pair and running it on its GPU
//! through the evaluator (timing needs the GPU alone).

use std::sync::Mutex;

use super::pairs::Pair;
use crate::engine::evaluator::Evaluator;
use crate::record::Outcome;

/// Evaluates every pair of `todo` on GPUs `0..gpus` and hands each outcome to `done` (from the
/// pool's threads) as soon as it is there. Pairs the static check decided go to `done`
/// without a GPU.
pub fn evaluate_all(
    todo: Vec<Pair>,
    gpus: usize,
    evaluator: &Evaluator,
    progress: &indicatif::ProgressBar,
    done: &(dyn Fn(&Pair, Outcome) + Sync),
) {
    let queue = Mutex::new(todo);
    std::thread::scope(|scope| {
        for gpu in 0..gpus.max(1) {
            let queue = &queue;
            scope.spawn(move || {
                loop {
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop();
                    let Some(pair) = next else { break };
                    progress.set_message(format!("{} on {}", pair.evaluation, pair.task));
                    let outcome = evaluator.finish(&pair.work, gpu, pair.timeout);
                    done(&pair, outcome);
                    progress.inc(1);
                }
            });
        }
    });
}
