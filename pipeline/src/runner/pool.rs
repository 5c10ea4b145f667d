//! The worker pool: pairs go through [`crate::engine::stages::staged`]: compiled ahead on the
//! CPU, run on one thread per GPU through the evaluator (timing needs the GPU alone, and the
//! next worker starts while one evaluates), their evidence assembled and stored behind.

use super::pairs::Pair;
use crate::engine::evaluator::{Evaluator, Work};
use crate::engine::stages::staged;
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
        |mut pair| {
            if let (Work::Evaluate(req), true) = (&mut pair.work, compile_ahead) {
                req.compile_ahead();
            }
            pair
        },
        |gpu, pair| {
            progress.set_message(format!("{} on {}", pair.evaluation, pair.task));
            let outcome = match &pair.work {
                Work::Decided(o) => (**o).clone(),
                Work::Evaluate(req) => evaluator.on_gpu(req, gpu, pair.timeout),
            };
            (pair, outcome)
        },
        |(pair, outcome)| {
            let outcome = match &pair.work {
                Work::Decided(_) => outcome,
                Work::Evaluate(req) => Evaluator::with_evidence(req, outcome),
            };
            done(&pair, outcome);
            progress.inc(1);
        },
    );
}
