//! Model-written CUDA C++ to PTX with NVRTC, in a sandboxed child (`ptxbench compile-cuda`).
//!
//! The parent screens the includes, locates NVRTC and the CUDA headers, and sends the child
//! a [`Job`] on stdin; the child, with an empty environment but for the library folder, compiles
//! with `--no-source-include` and prints a [`Reply`] as JSON. A child that hangs is killed at
//! its limit and one that crashes is a compile failure: both are the source's doing.

use std::path::{Path, PathBuf};

use crate::arch::Arch;
use crate::cuda::nvrtc::{self as cuda_nvrtc, NvrtcError, NvrtcOutput};
use crate::cuda::{CudaLibrary, library};

use super::{Limits, SandboxError};

/// The hidden subcommand the child runs.
pub const SUBCOMMAND: &str = "compile-cuda";

/// What the child is asked to compile.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Job {
    pub source: String,
    pub name: String,
    pub virtual_arch: String,
    pub include_dirs: Vec<PathBuf>,
}

/// What the child answers.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub enum Reply {
    Compiled(NvrtcOutput),
    Failed {
        status: String,
        log: String,
        options: Vec<String>,
    },
    Internal(String),
}

/// Why a candidate's CUDA C++ did not become PTX.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// NVRTC is not installed here: the harness's problem, not the candidate's.
    #[error(transparent)]
    LibraryMissing(#[from] library::LibraryNotFound),
    /// The sandbox could not start: the harness's problem, not the candidate's.
    #[error("the compiler sandbox could not run: {0}")]
    Harness(String),
    /// The source was refused or did not compile (the candidate's doing).
    #[error("{0}")]
    Source(String),
}

/// Compiles `source` for `arch` in the sandbox.
pub fn compile(source: &str, name: &str, arch: Arch) -> Result<NvrtcOutput, CompileError> {
    // NVRTC takes the source as a C string: a NUL byte is the source's fault, said here rather
    // than by the child (whose other failures are the harness's).
    if let Some(at) = source.find('\0') {
        let line = source.get(..at).map_or(1, |s| s.matches('\n').count() + 1);
        return Err(CompileError::Source(format!(
            "the CUDA source contains a NUL byte on line {line} (byte offset {at}), which NVRTC cannot take"
        )));
    }
    let refused = super::includes::screen(source);
    if !refused.is_empty() {
        let lines: Vec<String> = refused.iter().map(ToString::to_string).collect();
        return Err(CompileError::Source(format!(
            "the CUDA source was not compiled:\n{}",
            lines.join("\n")
        )));
    }
    let lib = library::locate(CudaLibrary::Nvrtc)?;
    let lib_dir = lib.parent().map(Path::to_path_buf).unwrap_or_default();
    let job = Job {
        source: source.to_string(),
        name: name.to_string(),
        virtual_arch: virtual_arch(arch),
        include_dirs: cuda_nvrtc::default_include_dirs(),
    };
    let body = serde_json::to_vec(&job).map_err(|e| CompileError::Harness(e.to_string()))?;
    let exe = super::executable().map_err(|e| CompileError::Harness(e.to_string()))?;
    // The child loads NVRTC from its library folder, then narrows its view to the include
    // folders alone before it reads the source ([`serve`]).
    let access = super::Access {
        read: [lib_dir.clone(), exe.clone()]
            .into_iter()
            .chain(job.include_dirs.iter().cloned())
            .collect(),
        work: None,
    };
    let lib_dir = lib_dir.to_string_lossy();
    let mut env = vec![("PTXBENCH_CUDA_LIB_PATH", lib_dir.as_ref())];
    if super::confine::unconfined_allowed() {
        env.push((super::confine::UNCONFINED_VAR, "unconfined"));
    }
    let limits = Limits::NVRTC.from_env();
    let finished = match super::run_with(&exe, &[SUBCOMMAND.as_ref()], &env, &body, limits, &access)
    {
        Ok(f) => f,
        Err(SandboxError::TimedOut { limits, .. }) => {
            return Err(CompileError::Source(format!(
                "NVRTC did not finish within {} s and was killed (it runs under {})",
                limits.wall.as_secs(),
                limits.describe()
            )));
        }
        Err(e) => return Err(CompileError::Harness(e.to_string())),
    };
    let reply = serde_json::from_slice::<Reply>(&finished.stdout);
    // Where the CUDA headers are installed is this machine's business, not the record's; and
    // whether a refused path exists is none of the source's ([`hide_existence`]).
    let mask = |text: &str| hide_existence(&mask_include_dirs(text, &job.include_dirs));
    match reply {
        Ok(Reply::Compiled(mut out)) => {
            out.log = mask(&out.log);
            out.options = out.options.iter().map(|o| mask(o)).collect();
            Ok(out)
        }
        Ok(Reply::Failed {
            status,
            log,
            options,
        }) => Err(CompileError::Source(
            NvrtcError::Compile {
                status,
                log: mask(&log),
                options: options.iter().map(|o| mask(o)).collect(),
            }
            .to_string(),
        )),
        Ok(Reply::Internal(e)) => Err(CompileError::Harness(format!("NVRTC: {e}"))),
        Err(_) => {
            let how = finished
                .abnormal_end()
                .unwrap_or_else(|| format!("exited with {}", finished.status));
            let tail: String = finished.stderr.chars().take(2000).collect();
            Err(CompileError::Source(format!(
                "NVRTC ended without a result: {how}\n{tail}"
            )))
        }
    }
}

/// NVRTC's message for an include it could not open, with the reason cut: the view makes an
/// existing host file fail with "Permission denied" and a missing one without a reason, so the
/// reason alone told which paths exist. Every such open now reads the same.
fn hide_existence(log: &str) -> String {
    log.lines()
        .map(|l| {
            if l.contains("cannot open source file") {
                let cut = l
                    .trim_end()
                    .strip_suffix(": Permission denied")
                    .unwrap_or(l.trim_end());
                format!("{cut} (outside the CUDA include folders, or missing)")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// How an include folder is named in what is stored: `<cuda>/include`, `<cuda>/include/cccl`.
const MASKED_ROOT: &str = "<cuda>";

/// `text` with each include folder's path replaced by its name under [`MASKED_ROOT`].
fn mask_include_dirs(text: &str, dirs: &[PathBuf]) -> String {
    let mut dirs: Vec<&PathBuf> = dirs.iter().collect();
    // Longest first, so `…/include/cccl` is not masked as `…/include` + `/cccl` twice over.
    dirs.sort_by_key(|d| std::cmp::Reverse(d.as_os_str().len()));
    let mut out = text.to_string();
    for d in dirs {
        let shown = d.to_string_lossy();
        let tail = if shown.ends_with("/cccl") {
            "include/cccl"
        } else {
            "include"
        };
        out = out.replace(shown.as_ref(), &format!("{MASKED_ROOT}/{tail}"));
    }
    out
}

fn virtual_arch(arch: Arch) -> String {
    format!("compute_{}", &arch.as_str()[3..])
}

/// A source with no include: compiling it loads NVRTC and its built-ins.
const WARM_UP: &str = "extern \"C\" __global__ void ptxbench_warm_up() {}\n";

/// Loads NVRTC and everything it loads on a first compile, then narrows this process's view of
/// the filesystem to reading the include folders: the model's source is read by a compiler
/// that can open no other file.
fn narrow_to_headers(job: &Job, options: &[String]) -> Result<(), NvrtcError> {
    cuda_nvrtc::compile_with(WARM_UP, "warm_up.cu", options)?;
    match super::confine::restrict(&job.include_dirs, None) {
        Ok(super::confine::View::None) if !super::confine::unconfined_allowed() => {
            Err(NvrtcError::Internal(
                "the kernel does not enforce Landlock: refusing to compile".into(),
            ))
        }
        Ok(_) => Ok(()),
        Err(e) => Err(NvrtcError::Internal(e)),
    }
}

/// The child's side: read a [`Job`] from stdin, compile, print the [`Reply`].
pub fn serve() -> std::io::Result<()> {
    let mut body = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin(), &mut body)?;
    let reply = match serde_json::from_slice::<Job>(&body) {
        Err(e) => Reply::Internal(format!("bad job: {e}")),
        Ok(job) => {
            let options = cuda_nvrtc::candidate_options(&job.virtual_arch, &job.include_dirs);
            match narrow_to_headers(&job, &options)
                .and_then(|()| cuda_nvrtc::compile_with(&job.source, &job.name, &options))
            {
                Ok(out) => Reply::Compiled(out),
                Err(NvrtcError::Compile {
                    status,
                    log,
                    options,
                }) => Reply::Failed {
                    status,
                    log,
                    options,
                },
                Err(e) => Reply::Internal(e.to_string()),
            }
        }
    };
    let json = serde_json::to_vec(&reply).map_err(std::io::Error::other)?;
    use std::io::Write as _;
    std::io::stdout().lock().write_all(&json)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 55 (the campaign's finding): "Permission denied" after an include told an existing
    /// host file from a missing one.
    #[test]
    fn issue_55_a_refused_include_reads_the_same_whether_it_exists() {
        let exists = hide_existence(
            "x.h(31): catastrophic error: cannot open source file \"../../etc/shadow\": Permission denied\n  #include X",
        );
        let missing = hide_existence(
            "x.h(31): catastrophic error: cannot open source file \"../../etc/nothing\"\n  #include X",
        );
        assert_eq!(
            exists.replace("shadow", "P"),
            missing.replace("nothing", "P"),
            "{exists}\n{missing}"
        );
        assert!(!exists.contains("Permission denied"));
    }

    /// A NUL byte fails the source (the check's `compilation` class), where the child's
    /// "internal" answer made it the harness's problem, a warning, and `check` passed.
    #[test]
    fn issue_41_a_nul_byte_is_the_sources_fault() {
        let e =
            compile("__global__ void k() {}\n\0\n", "kernel.cu", Arch::Sm90a).expect_err("refused");
        match e {
            CompileError::Source(msg) => {
                assert!(msg.contains("NUL byte on line 2 (byte offset 23)"), "{msg}")
            }
            other => panic!("{other}"),
        }
    }
}
