//! Untrusted compilation: model-written code reaches NVRTC, ptxas and nvdisasm only in a child
//! process that sees almost nothing of the host.
//!
//! What that guarantees, each by the kernel rather than by reading the source:
//! - **Files**: the child's filesystem view ([`confine`], Landlock) holds its program, the
//!   system's shared libraries, the folders it is given to read (the CUDA include folders for
//!   NVRTC, which narrows its view to them alone once its libraries are loaded) and its own
//!   working folder. An include of any other path fails to open, whatever macro made its name.
//! - **Environment and network**: the child starts with an empty environment (but for what it
//!   is given), with TCP, abstract sockets and signals outside its sandbox denied (Landlock).
//! - **Machine**: limits on wall-clock time, CPU time, address space and file size; the
//!   address-space limits of all compilers running at once stay within one budget per process
//!   ([`budget`]); the child dies with the process that started it.
//! - **Output**: what it prints is redacted of every secret value this process holds
//!   ([`crate::secrets`]) before anyone reads it.
//!
//! The child is this executable's hidden `sandbox-exec` subcommand: it confines itself, then
//! `exec`s the compiler, which inherits the confinement, so the compiler never runs unconfined
//! and no code of ours runs between fork and exec in the (multithreaded) parent. CUDA C++ is
//! also screened before it is compiled ([`includes`]), so that a refused include gets a clear
//! message rather than a failed open.

pub mod budget;
pub mod confine;
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
    /// ptxas on one candidate: the largest honest kernels take tens of seconds and well under
    /// 1 GiB (the hand-written attention backward: 50 MB); a register bomb that would take
    /// 6.7 GB fails here, naming the limit.
    pub const PTXAS: Limits = Limits {
        wall: Duration::from_secs(180),
        memory: 4 << 30,
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

/// The hidden subcommand of this executable that confines itself and then runs the compiler.
pub const GATE_SUBCOMMAND: &str = "sandbox-exec";

/// The exit status of a gate that could not confine itself (the compiler did not run).
const GATE_REFUSED: u8 = 125;
/// How a refusing gate starts its one line on stderr.
const GATE_PREFIX: &str = "ptxbench-sandbox: ";

/// What a sandboxed process may read besides its program and the system's shared libraries,
/// and where it works.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// Folders (or files) it may read.
    pub read: Vec<PathBuf>,
    /// Its working folder (read and write); a fresh empty folder when `None`.
    pub work: Option<PathBuf>,
}

/// Runs `program` with `args` under `limits`, with an empty environment but for `env`, in an
/// empty folder, with `stdin` as its input, seeing only its program and the system's libraries.
pub fn run(
    program: &Path,
    args: &[&OsStr],
    env: &[(&str, &str)],
    stdin: &[u8],
    limits: Limits,
) -> Result<Finished, SandboxError> {
    run_with(program, args, env, stdin, limits, &Access::default())
}

/// [`run`], seeing also what `access` gives.
pub fn run_with(
    program: &Path,
    args: &[&OsStr],
    env: &[(&str, &str)],
    stdin: &[u8],
    limits: Limits,
    access: &Access,
) -> Result<Finished, SandboxError> {
    let program = program.to_path_buf();
    let spawn_err = |reason: String| SandboxError::Spawn {
        program: program.clone(),
        reason,
    };
    // The budget first: the wall clock counts from the start, not from the wait.
    let lease = budget::global().lease(limits.memory);
    let limits = Limits {
        memory: lease.bytes(),
        ..limits
    };
    let fresh;
    let work = match &access.work {
        Some(w) => w.clone(),
        None => {
            // An empty folder of its own: nothing to find relative to the working folder.
            fresh = crate::scratch::ScratchDir::new()
                .map_err(|e| spawn_err(format!("working folder: {e}")))?;
            fresh.path().to_path_buf()
        }
    };
    let gate = executable()?;
    let mut read = access.read.clone();
    read.push(
        program
            .parent()
            .map_or_else(|| program.clone(), Path::to_path_buf),
    );
    let spec = confine::Confinement {
        read,
        work: work.clone(),
        memory: limits.memory,
        cpu_s: limits.wall.as_secs().saturating_mul(2).max(1),
        parent: std::process::id(),
        unconfined_allowed: confine::unconfined_allowed(),
    };
    let spec = serde_json::to_string(&spec).map_err(|e| spawn_err(e.to_string()))?;
    let mut child = Command::new(&gate)
        .env_clear()
        .envs(env.iter().copied())
        .arg(GATE_SUBCOMMAND)
        .arg(spec)
        .arg(&program)
        .args(args)
        .current_dir(&work)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| spawn_err(e.to_string()))?;
    // The input is fed and the output drained on threads so neither side blocks on a pipe.
    let input = stdin.to_vec();
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
    let stderr = crate::secrets::redact(&String::from_utf8_lossy(&stderr)).into_owned();
    if status.code() == Some(i32::from(GATE_REFUSED))
        && let Some(reason) = stderr.strip_prefix(GATE_PREFIX)
    {
        return Err(spawn_err(format!(
            "the sandbox refused to start it: {}",
            reason.trim()
        )));
    }
    Ok(Finished {
        status,
        stdout: crate::secrets::redact_bytes(&stdout),
        stderr,
        limits,
    })
}

/// The gate's side (`ptxbench sandbox-exec SPEC PROGRAM ARGS...`): confine this process as
/// the spec says, then become the program. Returns only when it could not.
pub fn gate(args: &[std::ffi::OsString]) -> std::process::ExitCode {
    use std::os::unix::process::CommandExt as _;
    let refuse = |reason: String| {
        eprintln!("{GATE_PREFIX}{reason}");
        std::process::ExitCode::from(GATE_REFUSED)
    };
    let [spec, program, rest @ ..] = args else {
        return refuse("usage: sandbox-exec SPEC PROGRAM [ARGS...]".into());
    };
    let spec: confine::Confinement = match serde_json::from_str(&spec.to_string_lossy()) {
        Ok(s) => s,
        Err(e) => return refuse(format!("bad confinement: {e}")),
    };
    if let Err(reason) = confine::enter(&spec) {
        return refuse(reason);
    }
    let e = Command::new(program).args(rest).exec();
    refuse(format!(
        "could not run {}: {e}",
        Path::new(program).display()
    ))
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

    /// A host file outside the view cannot be read, though the same process can read it.
    #[test]
    fn issue_55_the_child_opens_no_file_outside_its_view() {
        let dir = tempfile::tempdir().expect("tempdir");
        let secret = dir.path().join("secret.txt");
        std::fs::write(&secret, "SECRET-OUTSIDE-THE-VIEW\n").expect("write");
        let script = format!(
            "cat '{}'; echo status=$?; cat /proc/$PPID/environ; echo environ=$?",
            secret.display()
        );
        let f = sh(&script, Limits::NVRTC).expect("sh runs");
        let out = String::from_utf8_lossy(&f.stdout);
        assert!(!out.contains("SECRET-OUTSIDE-THE-VIEW"), "{out}");
        assert!(out.contains("status=1"), "{out}");
        assert!(out.contains("environ=1"), "{out}");
        assert!(f.stderr.contains("Permission denied"), "{}", f.stderr);
        // What the view holds: the working folder, read and written.
        let f = sh("echo hi > mine && cat mine", Limits::NVRTC).expect("sh runs");
        assert_eq!(String::from_utf8_lossy(&f.stdout).trim(), "hi");
    }

    /// A TCP listener on loopback cannot be reached from the child.
    #[test]
    fn issue_55_the_child_reaches_no_network() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let f = run(
            Path::new("/bin/bash"),
            &[
                OsStr::new("-c"),
                OsStr::new(&format!(
                    "exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected || echo refused"
                )),
            ],
            &[],
            b"",
            Limits::NVRTC,
        )
        .expect("bash runs");
        assert_eq!(String::from_utf8_lossy(&f.stdout).trim(), "refused");
    }

    #[test]
    fn the_working_folder_is_empty() {
        let f = sh("ls -A | wc -l", Limits::NVRTC).expect("sh runs");
        assert_eq!(String::from_utf8_lossy(&f.stdout).trim(), "0");
    }
}
