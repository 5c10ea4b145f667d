//! Exports of training data built from what the pipeline measured: [`sft`] writes supervised
//! fine-tuning sets (verified kernels, repair-conditioned examples) with a coverage report.

pub mod sft;
