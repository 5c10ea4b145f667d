//! Integration tests, one module per feature, on the real task suite and real PTX fixtures.

mod audit;
mod candidates;
mod cli;
mod evaluator;
mod evidence;
mod plan_errors;
mod prompts;
mod published;
mod reference;
mod runner;
mod sandbox;
mod serve;
mod zoo;
mod zoo_static;

use std::path::PathBuf;

use ptxbench::task::Suite;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("pipeline/ has a parent")
        .to_path_buf()
}

pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// A PTX fixture of the PTX front end's tests (real nvcc output, with its source beside it).
pub fn ptx_fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("ptx/tests/fixtures")
        .join(name)
}

pub fn suite() -> Suite {
    Suite::load(&root().join("tasks")).expect("the committed suite loads")
}

/// Whether ptxas and NVRTC are installed (see [`tools_present`]).
pub fn cuda_tools(test: &str) -> bool {
    let ptxas = ptxbench::toolchain::locate(ptxbench::toolchain::Tool::Ptxas);
    let nvrtc = ptxbench::cuda::library::locate(ptxbench::cuda::CudaLibrary::Nvrtc);
    let missing: Vec<String> = [
        ptxas.err().map(|e| e.to_string()),
        nvrtc.err().map(|e| e.to_string()),
    ]
    .into_iter()
    .flatten()
    .collect();
    tools_present(test, &missing)
}

/// True when nothing is `missing`; otherwise skips with a notice, or fails when
/// `PTXBENCH_REQUIRE_CUDA_TOOLS=1` (CI) says the tools must be there.
pub fn tools_present(test: &str, missing: &[String]) -> bool {
    if missing.is_empty() {
        return true;
    }
    if std::env::var_os("PTXBENCH_REQUIRE_CUDA_TOOLS").is_some_and(|v| v == "1") {
        panic!(
            "{test}: CUDA tools required but missing: {}",
            missing.join("; ")
        );
    }
    eprintln!("SKIP {test}: {}", missing.join("; "));
    false
}

/// The `ptxbench` binary run from the repository root: exit code, stdout, stderr.
pub fn ptxbench(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ptxbench"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
