//! NVIDIA's command-line tools (ptxas, nvdisasm, nvcc): where they are and how to run them.
//!
//! They need no GPU (the PyPI wheels `nvidia-cuda-nvcc` and `nvidia-cuda-nvdisasm` run on any
//! x86-64 Linux), so compiling PTX for sm_90a and sm_100a is tested on CPU machines.
//! Search order, first hit wins: `PTXBENCH_CUDA_BIN` (colon-separated folders), `$CUDA_HOME/bin`,
//! `$CUDA_PATH/bin`, `PATH`, `/usr/local/cuda/bin`.

pub mod ptxas;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

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
    #[error("{} did not finish within {} s and was killed", .path.display(), .limit.as_secs())]
    TimedOut { path: PathBuf, limit: Duration },
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

/// The first line of `tool --version` that names a release, e.g. `release 13.0, V13.0.88`.
pub fn version(path: &Path) -> Result<String, ToolError> {
    let out = run(Command::new(path).arg("--version"), Duration::from_secs(30))?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .lines()
        .find(|l| l.contains("release"))
        .map(|l| l.trim().to_string())
        .unwrap_or_else(|| text.lines().last().unwrap_or("").trim().to_string()))
}

/// Runs a command to completion, killing it after `limit`.
pub fn run(cmd: &mut Command, limit: Duration) -> Result<Output, ToolError> {
    let path = PathBuf::from(cmd.get_program());
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ToolError::Spawn {
            path: path.clone(),
            reason: e.to_string(),
        })?;
    // Drain the pipes on threads so a chatty tool cannot block on a full pipe.
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let out_t = std::thread::spawn(move || read_all(stdout.as_mut()));
    let err_t = std::thread::spawn(move || read_all(stderr.as_mut()));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ToolError::TimedOut { path, limit });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                return Err(ToolError::Spawn {
                    path,
                    reason: e.to_string(),
                });
            }
        }
    };
    Ok(Output {
        status,
        stdout: out_t.join().unwrap_or_default(),
        stderr: err_t.join().unwrap_or_default(),
    })
}

fn read_all(r: Option<&mut impl std::io::Read>) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Some(r) = r {
        let _ = r.read_to_end(&mut buf);
    }
    buf
}
