//! How an evaluation stops with a verdict: [`Stop`] carries the outcome of a step that ended
//! it; a driver error is the candidate's fault (runtime) only when it left the context broken.

use super::{Outcome, Verdict};
use crate::cuda::driver::DriverError;
use crate::record::Stage;

/// An error that ends the evaluation with a verdict.
#[derive(Debug)]
pub struct Stop(pub Box<Outcome>);

impl Stop {
    pub fn new(o: Outcome) -> Stop {
        Stop(Box::new(o))
    }
}

impl From<DriverError> for Stop {
    fn from(e: DriverError) -> Stop {
        let verdict = if e.is_sticky() {
            Verdict::Runtime
        } else {
            Verdict::Other
        };
        Stop::new(Outcome::failed(verdict, Stage::Launch, e.to_string()))
    }
}

/// A harness-side setup failure (sizes, allocation bookkeeping): never the candidate's fault.
pub fn setup_error(e: impl std::fmt::Display) -> Stop {
    Stop::new(Outcome::failed(Verdict::Other, Stage::Setup, e.to_string()))
}
