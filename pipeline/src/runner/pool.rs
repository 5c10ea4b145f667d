//! The worker pool: pairs go through [`crate::engine::stages::staged`]: compiled ahead on the
//! CPU, run through the evaluator on as many threads per GPU as it runs evaluations at once
//! (correctness-only ones share a GPU; a timed one waits for it alone; the next worker starts
//! while one evaluates), their evidence assembled and stored behind. Each
//! evaluated outcome's clock says how long its GPU waited for it to be prepared.

use super::pairs::Pair;
use crate::engine::evaluator::{Evaluator, Work};
use crate::engine::stages::staged;
use crate::engine::{COMPILE_AHEAD, GPU_IDLE};
use crate::record::Outcome;

/// Evaluates every pair of `todo` on GPUs `0..gpus` and hands each outcome to `done` (from
/// one thread) as soon as it is there. Pairs the static check decided pass without a GPU.
/// Without `compile_ahead` the workers compile their PTX themselves.
pub fn evaluate_all(
    todo: Vec<Pair>,
    gpus: usize,
    evaluator: &Evaluator,
    compile_ahead: bool,
    progress: &indicatif::ProgressBar,
    done: &(dyn Fn(&Pair, Outcome) + Sync),
) {
    staged(
        todo.into_iter(),
        gpus,
        evaluator.at_once(),
        |mut pair| {
            if let (Work::Evaluate(req), true) = (&mut pair.work, compile_ahead) {
                req.compile_ahead();
            }
            pair
        },
        |gpu, pair, waited| {
            progress.set_message(format!("{} on {}", pair.evaluation, pair.task));
            let mut ran = evaluator.gpu_stage(&pair.work, gpu, pair.timeout, None);
            if ran.evaluated {
                // Before its first lap: how long the GPU had nothing to run while this pair
                // was being prepared (the CPU's share of the GPU's idle time).
                let o = &mut ran.outcome;
                let at = usize::from(o.seconds.first().is_some_and(|(k, _)| k == COMPILE_AHEAD));
                o.seconds
                    .insert(at, (GPU_IDLE.to_string(), waited.as_secs_f64()));
            }
            (pair, ran)
        },
        |(pair, ran)| {
            let outcome = Evaluator::evidence_stage(&pair.work, ran);
            done(&pair, outcome);
            progress.inc(1);
        },
    );
}
