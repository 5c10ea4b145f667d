//! NVIDIA's command-line tools (ptxas, nvdisasm, nvcc): where they are and how to run them.
//!
//! They need no GPU (the PyPI wheels `nvidia-cuda-nvcc` and `nvidia-cuda-nvdisasm` run on any
//! x86-64 Linux), so compiling PTX for sm_90a and sm_100a is tested on CPU machines.
//! Search order, first hit wins: `PTXBENCH_CUDA_BIN` (colon-separated folders), `$CUDA_HOME/bin`,
//! `$CUDA_PATH/bin`, `PATH`, `/usr/local/cuda/bin`. Every tool runs in the sandbox
//! ([`crate::sandbox`]): its input may be a candidate's. The one exception is
//! [`build_host_program`], which builds the project's own test sources and nothing else.

pub mod ptxas;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::sandbox::{self, Finished, Limits, SandboxError};

/// A tool the pipeline can use when it is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tool {
    Ptxas,
    Nvdisasm,
    Nvcc,
}

impl Tool {
    pub fn file_name(self) -> &'static str {
        match self {
            Tool::Ptxas => "ptxas",
            Tool::Nvdisasm => "nvdisasm",
            Tool::Nvcc => "nvcc",
        }
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum ToolError {
    #[error("{} not found in {}; install the CUDA toolkit or `pip install nvidia-cuda-nvcc==13.0.88` and set CUDA_HOME (or PTXBENCH_CUDA_BIN)", .tool.file_name(), display(.searched))]
    NotFound { tool: Tool, searched: Vec<PathBuf> },
    #[error("could not run {}: {reason}", .path.display())]
    Spawn { path: PathBuf, reason: String },
    #[error("{} did not finish within {} s and was killed (it runs under {})", tool_name(.path), .limits.wall.as_secs(), .limits.describe())]
    TimedOut { path: PathBuf, limits: Limits },
}

/// A tool's file name: where it is installed is noise in a message that may be stored.
fn tool_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn display(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The folders searched for tools, in order.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut push = |p: PathBuf| {
        if !p.as_os_str().is_empty() && !dirs.contains(&p) {
            dirs.push(p);
        }
    };
    if let Some(list) = std::env::var_os("PTXBENCH_CUDA_BIN") {
        std::env::split_paths(&list).for_each(&mut push);
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = std::env::var_os(var) {
            push(Path::new(&root).join("bin"));
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        std::env::split_paths(&path).for_each(&mut push);
    }
    push(PathBuf::from("/usr/local/cuda/bin"));
    dirs
}

/// Finds `tool` in the search order.
pub fn locate(tool: Tool) -> Result<PathBuf, ToolError> {
    let dirs = search_dirs();
    dirs.iter()
        .map(|d| d.join(tool.file_name()))
        .find(|p| p.is_file())
        .ok_or(ToolError::NotFound {
            tool,
            searched: dirs,
        })
}

/// Builds `source` (a `.cu` file's text with a host `main`) into an executable in `dir` with
/// nvcc for `arch`, with `includes` on the include path: how the tests run CUDA C++ that the GPU
/// code shares (`__host__ __device__` functions) on the CPU. The pip-installed toolkit keeps its
/// host libraries in CUDA_HOME/lib. The executable's path, or nvcc's messages.
///
/// For the project's own sources only: unlike the tools above it runs outside the sandbox (the
/// host compiler and linker need the system's headers and libraries), so never on a
/// candidate's code.
pub fn build_host_program(
    nvcc: &Path,
    dir: &Path,
    source: &str,
    arch: &str,
    includes: &[&Path],
) -> Result<PathBuf, String> {
    let file = dir.join("driver.cu");
    std::fs::write(&file, source).map_err(|e| format!("writing {}: {e}", file.display()))?;
    let lib = nvcc
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| format!("{} does not sit in CUDA_HOME/bin", nvcc.display()))?
        .join("lib");
    let exe = dir.join("driver");
    let mut cmd = std::process::Command::new(nvcc);
    cmd.current_dir(dir)
        .args(["-std=c++17", &format!("-arch={arch}"), "-L"])
        .arg(&lib);
    for i in includes {
        cmd.arg("-I").arg(i);
    }
    let out = cmd
        .args(["driver.cu", "-o"])
        .arg(&exe)
        .output()
        .map_err(|e| format!("running {}: {e}", nvcc.display()))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(exe)
}

/// The first line of `tool --version` that names a release, e.g. `release 13.0, V13.0.88`.
pub fn version(path: &Path) -> Result<String, ToolError> {
    let limits = Limits {
        wall: Duration::from_secs(30),
        memory: 1 << 30,
    };
    let out = run(path, &[OsStr::new("--version")], limits, None)?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .lines()
        .find(|l| l.contains("release"))
        .map(|l| l.trim().to_string())
        .unwrap_or_else(|| text.lines().last().unwrap_or("").trim().to_string()))
}

/// Runs the tool at `path` with `args` in the sandbox, to completion or its limits, in `work`
/// (the one folder it may read and write besides its own; an empty one when `None`).
pub fn run(
    path: &Path,
    args: &[&OsStr],
    limits: Limits,
    work: Option<&Path>,
) -> Result<Finished, ToolError> {
    let access = sandbox::Access {
        read: Vec::new(),
        work: work.map(Path::to_path_buf),
    };
    sandbox::run_with(path, args, &[], b"", limits, &access).map_err(|e| match e {
        SandboxError::TimedOut { limits, .. } => ToolError::TimedOut {
            path: path.to_path_buf(),
            limits,
        },
        SandboxError::Spawn { reason, .. } => ToolError::Spawn {
            path: path.to_path_buf(),
            reason,
        },
    })
}
