//! Untrusted compilation: model-written code reaches NVRTC, ptxas and nvdisasm only in a child
//! process with an empty environment, an empty working folder, and limits on wall-clock time,
//! CPU time, address space and file size.
//!
//! What that guarantees: a compiler fed a hostile source cannot read a secret from the
//! environment (the child has none, and `/proc/self/environ` is the child's), cannot hang or
//! exhaust the host (it is killed at its wall-clock limit, and allocations past its memory limit
//! fail), and its output is redacted of every secret value this process holds ([`crate::secrets`])
//! before anyone reads it. CUDA C++ is screened before it is compiled: an `#include` of anything
//! but a header found relative to the CUDA include folders is refused ([`includes`]).
//!
//! The limits are set with `prlimit(2)` on a `/bin/sh` that waits for a line on its stdin and
//! then `exec`s the tool, so the tool never runs before its limits hold, and no code of ours
//! runs between fork and exec.

pub mod includes;
pub mod nvrtc;

use std::ffi::OsStr;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The limits a sandboxed process runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock time before the process is killed.
    pub wall: Duration,
    /// Address space, bytes (`RLIMIT_AS`): allocations past it fail.
    pub memory: u64,
}

impl Limits {
    /// NVRTC on one candidate: honest kernels compile in a second or two.
    pub const NVRTC: Limits = Limits {
        wall: Duration::from_secs(60),
        memory: 4 << 30,
    };
    /// ptxas on one candidate: the largest honest kernels take tens of seconds.
    pub const PTXAS: Limits = Limits {
        wall: Duration::from_secs(180),
        memory: 8 << 30,
    };

    /// These limits, lowered by `PTXBENCH_COMPILE_LIMIT_S` (seconds) and
    /// `PTXBENCH_COMPILE_MEMORY_MIB` where they are set (never raised: an operator who wants
    /// more changes the code, where it is reviewed).
    pub fn from_env(self) -> Limits {
        let read = |var: &str| {
            std::env::var(var)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        Limits {
            wall: read("PTXBENCH_COMPILE_LIMIT_S")
                .map(Duration::from_secs)
                .map_or(self.wall, |w| w.min(self.wall)),
            memory: read("PTXBENCH_COMPILE_MEMORY_MIB")
                .map(|m| m.saturating_mul(1 << 20))
                .map_or(self.memory, |m| m.min(self.memory)),
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "{} s of wall-clock time and {} MiB of memory",
            self.wall.as_secs(),
            self.memory >> 20
        )
    }
}

/// Why a sandboxed process gave no result.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SandboxError {
    #[error("could not run {}: {reason}", .program.display())]
    Spawn { program: PathBuf, reason: String },
    #[error("{} did not finish within {} s and was killed (limits: {})", .program.display(), .limits.wall.as_secs(), .limits.describe())]
    TimedOut { program: PathBuf, limits: Limits },
}

/// What a sandboxed process left: its status and its output, already redacted of secrets.
#[derive(Debug, Clone)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub limits: Limits,
}

impl Finished {
    /// A sentence on how the process ended when it did not exit by itself: a signal usually
    /// means it ran into its memory limit.
    pub fn abnormal_end(&self) -> Option<String> {
        use std::os::unix::process::ExitStatusExt as _;
        self.status.signal().map(|sig| {
            format!(
                "killed by signal {sig} (it runs under {}; a process that needs more memory than that is stopped)",
                self.limits.describe()
            )
        })
    }
}

/// The shell that holds the child until its limits are set: it waits for one line on its
/// stdin, then becomes the program (`exec`), which inherits the limits. No code of ours runs
/// between fork and exec, and the program never runs unconfined.
const GATE: &str = "/bin/sh";
const GATE_SCRIPT: &str = "read -r _ && exec \"$0\" \"$@\"";

/// Runs `program` with `args` under `limits`, with an empty environment but for `env`, in an
/// empty folder, with `stdin` as its input.
pub fn run(
    program: &Path,
    args: &[&OsStr],
    env: &[(&str, &str)],
    stdin: &[u8],
    limits: Limits,
) -> Result<Finished, SandboxError> {
    let program = program.to_path_buf();
    let spawn_err = |reason: String| SandboxError::Spawn {
        program: program.clone(),
        reason,
    };
    // An empty folder of its own: nothing to find relative to the working folder.
    let cwd = tempfile::tempdir().map_err(|e| spawn_err(format!("working folder: {e}")))?;
    let mut child = Command::new(GATE)
        .env_clear()
        .envs(env.iter().copied())
        .arg("-c")
        .arg(GATE_SCRIPT)
        .arg(&program)
        .args(args)
        .current_dir(cwd.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| spawn_err(e.to_string()))?;
    if let Err(e) = confine(child.id(), limits) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(spawn_err(format!("setting its limits: {e}")));
    }
    // The line that lets the gate go on, then the program's input; fed and drained on threads
    // so neither side blocks on a full pipe.
    let mut input = b"go\n".to_vec();
    input.extend_from_slice(stdin);
    let mut child_in = child.stdin.take();
    let in_t = std::thread::spawn(move || {
        if let Some(w) = child_in.as_mut() {
            let _ = w.write_all(&input);
        }
    });
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let out_t = std::thread::spawn(move || read_all(stdout.as_mut()));
    let err_t = std::thread::spawn(move || read_all(stderr.as_mut()));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() > limits.wall => {
                let _ = child.kill();
                let _ = child.wait();
                // The pipe threads are not joined: a process the child started could hold the
                // pipes open; they end when it does (none of the compilers starts one).
                drop((in_t, out_t, err_t));
                return Err(SandboxError::TimedOut { program, limits });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(spawn_err(e.to_string())),
        }
    };
    let _ = in_t.join();
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    Ok(Finished {
        status,
        stdout: crate::secrets::redact_bytes(&stdout),
        stderr: crate::secrets::redact(&String::from_utf8_lossy(&stderr)).into_owned(),
        limits,
    })
}

/// Sets the child's resource limits: address space, CPU time (a backstop to the wall clock),
/// file size (the largest honest cubin is a few MB) and no core dumps.
fn confine(pid: u32, limits: Limits) -> std::io::Result<()> {
    use rlimit::Resource;
    let pid = libc_pid(pid)?;
    let cpu = limits.wall.as_secs().saturating_mul(2).max(1);
    for (resource, value) in [
        (Resource::AS, limits.memory),
        (Resource::CPU, cpu),
        (Resource::FSIZE, 1 << 30),
        (Resource::CORE, 0),
    ] {
        rlimit::prlimit(pid, resource, Some((value, value)), None)?;
    }
    Ok(())
}

fn libc_pid(pid: u32) -> std::io::Result<i32> {
    i32::try_from(pid).map_err(|_| std::io::Error::other(format!("process id {pid} out of range")))
}

fn read_all(r: Option<&mut impl std::io::Read>) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Some(r) = r {
        let _ = r.read_to_end(&mut buf);
    }
    buf
}

/// The executable the command line registered as itself ([`serve_from`]).
static EXECUTABLE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Registers this process's executable as the one that serves the sandbox's children: the
/// `ptxbench` command line does this before it runs a command, whatever the file is called.
pub fn serve_from(exe: PathBuf) {
    let _ = EXECUTABLE.set(exe);
}

/// The `ptxbench` executable that serves the sandbox's own children (the NVRTC compiler):
/// `PTXBENCH_EXE` where set, else the executable the command line registered ([`serve_from`]),
/// else a `ptxbench` next to this executable or one folder up (a test binary in cargo's
/// `deps/`, which is not the command line).
pub fn executable() -> Result<PathBuf, SandboxError> {
    let missing = |reason: String| SandboxError::Spawn {
        program: PathBuf::from("ptxbench"),
        reason,
    };
    if let Some(p) = std::env::var_os("PTXBENCH_EXE") {
        return Ok(PathBuf::from(p));
    }
    if let Some(p) = EXECUTABLE.get() {
        return Ok(p.clone());
    }
    let me = std::env::current_exe().map_err(|e| missing(format!("locating this program: {e}")))?;
    if me.file_name().is_some_and(|n| n == "ptxbench") {
        return Ok(me);
    }
    let dir = me.parent().map(Path::to_path_buf).unwrap_or_default();
    [dir.join("ptxbench"), dir.join("../ptxbench")]
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| {
            missing(format!(
                "no ptxbench executable beside {} (set PTXBENCH_EXE)",
                me.display()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, limits: Limits) -> Result<Finished, SandboxError> {
        run(
            Path::new("/bin/sh"),
            &[OsStr::new("-c"), OsStr::new(script)],
            &[],
            b"",
            limits,
        )
    }

    #[test]
    fn the_child_sees_only_the_environment_it_is_given() {
        // The test process has PATH, HOME and cargo's variables; the child has the one it is
        // given, and the gate shell's PWD (the empty folder).
        let f = run(
            Path::new("/usr/bin/env"),
            &[],
            &[("ONLY", "this")],
            b"",
            Limits::NVRTC,
        )
        .expect("env runs");
        let out = String::from_utf8_lossy(&f.stdout);
        let mut vars: Vec<&str> = out.lines().filter(|l| !l.starts_with("PWD=")).collect();
        vars.sort_unstable();
        assert_eq!(vars, ["ONLY=this"], "{out}");
    }

    #[test]
    fn the_child_runs_under_its_memory_limit_from_its_first_instruction() {
        let limits = Limits {
            wall: Duration::from_secs(10),
            memory: 256 << 20,
        };
        let f = sh("ulimit -v", limits).expect("sh runs");
        assert_eq!(String::from_utf8_lossy(&f.stdout).trim(), "262144");
    }

    #[test]
    fn the_child_gets_its_input() {
        let f = run(
            Path::new("/bin/cat"),
            &[],
            &[],
            b"line 1\nline 2",
            Limits::NVRTC,
        )
        .expect("cat runs");
        assert_eq!(f.stdout, b"line 1\nline 2");
    }

    #[test]
    fn a_hang_is_killed_at_its_wall_clock_limit() {
        let limits = Limits {
            wall: Duration::from_millis(300),
            memory: 1 << 30,
        };
        let start = Instant::now();
        let e = sh("sleep 30", limits).expect_err("killed");
        assert!(matches!(e, SandboxError::TimedOut { .. }), "{e}");
        assert!(start.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn the_working_folder_is_empty() {
        let f = sh("ls -A | wc -l", Limits::NVRTC).expect("sh runs");
        assert_eq!(String::from_utf8_lossy(&f.stdout).trim(), "0");
    }
}
