//! The GPU boundary: the only module that touches cudarc.
//!
//! cudarc loads the CUDA libraries with `dlopen` at run time, so this code builds on machines
//! without CUDA. It panics when a library is missing, so every entry point here first locates
//! the library itself ([`library`]), in an explicit, overridable order, and returns a typed
//! error naming what is missing and where it looked. Nothing outside this module names a
//! cudarc type.

pub mod cublaslt;
pub mod cudnn;
pub mod driver;
pub mod library;
pub mod nvml;
pub mod nvrtc;
pub mod profiler;
pub mod tensor_map;

pub use library::{CudaLibrary, LibraryNotFound, LocatedLibrary};
pub use tensor_map::{TensorMapDesc, TensorMapProblem};
