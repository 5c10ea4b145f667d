//! PTXBench: task suite, candidate front end, evaluation engine, the record schema, runs, store
//! and leaderboard.
//!
//! The `ptxbench` binary (src/main.rs) is a thin CLI over this library; everything here except
//! the `cuda` module is plain CPU code and is tested everywhere.

pub mod arch;
pub(crate) mod audit;
pub mod bundle;
pub mod candidate;
pub mod check;
pub mod cmd;
pub mod cuda;
pub(crate) mod destination;
pub mod digest;
pub mod engine;
pub(crate) mod entropy;
pub mod evidence;
pub mod export;
pub mod expr;
pub mod generate;
pub mod manifest;
pub mod metrics;
pub mod peak_memory;
pub mod prompt;
pub mod record;
pub mod runner;
pub mod sandbox;
pub(crate) mod scratch;
pub(crate) mod secrets;
pub mod serve;
pub mod site;
pub mod store;
pub mod task;
mod text_enum;
pub mod toolchain;
