//! The one set of conditions every launch sequence of a candidate starts from: checked
//! correctness trials, the counted trial and timed launches alike.
//!
//! Before each: outputs poisoned (NaN), every workspace reset to its declared fill over its
//! whole allocation, and L2 flushed by writing a buffer twice its size with a value that
//! changes every time. So a kernel that times its own first walk over a buffer, or looks for
//! what an earlier launch left in a workspace or in L2, sees the same thing in a launch that is
//! checked or counted as in one that is timed (integrity v4: before, only timed launches
//! followed a flush). Every tensor sits in its own allocation, guarded to the allocation's real
//! end, and is allocated afresh for each set; the library's launches get a flush of their own.

use super::inputs::{TensorSet, prepare_outputs};
use super::verdict::Stop;
use crate::cuda::driver::{DeviceBuffer, DriverError, Gpu};
use crate::task::Task;

/// A buffer twice the size of L2: writing it all evicts whatever an earlier launch left there.
fn l2_flush_buffer(gpu: &Gpu) -> Result<DeviceBuffer, Stop> {
    let l2 = usize::try_from(gpu.info.l2_bytes)
        .unwrap_or(64 << 20)
        .max(1 << 20);
    Ok(gpu.alloc(2 * l2)?)
}

/// The flush buffer the conditions are made with.
#[derive(Debug)]
pub struct Conditions {
    flush: DeviceBuffer,
}

impl Conditions {
    pub fn new(gpu: &Gpu) -> Result<Conditions, Stop> {
        Ok(Conditions {
            flush: l2_flush_buffer(gpu)?,
        })
    }

    /// Outputs poisoned, workspaces reset, then L2 flushed (with `salt` written over the flush
    /// buffer), on the stream.
    pub fn before_launch(
        &self,
        gpu: &Gpu,
        task: &Task,
        set: &TensorSet,
        salt: u32,
    ) -> Result<(), DriverError> {
        prepare_outputs(gpu, task, set)?;
        self.flush_l2(gpu, salt)
    }

    /// L2 flushed alone (before a library launch, whose outputs are its own).
    pub fn flush_l2(&self, gpu: &Gpu, salt: u32) -> Result<(), DriverError> {
        gpu.fill_u32(&self.flush, 0, salt, self.flush.bytes() / 4)
    }
}
