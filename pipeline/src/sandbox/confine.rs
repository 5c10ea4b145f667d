//! The confinement a sandboxed process enters before it runs a compiler: resource limits, death
//! with its parent, no network, and a filesystem view enforced by the kernel (Landlock).
//!
//! The view is what the compiler may open: the folders it is given to read (its own program,
//! the system's shared libraries, the CUDA include folders), its working folder (read and
//! write) and `/dev/null`. Every other path, however it is spelled (`../` segments, a name a
//! macro made, `/proc/<pid>/environ`), fails to open with `EACCES`, because the kernel checks
//! each open against the view. A kernel without Landlock cannot hold the view: the process then
//! refuses to run the compiler at all (fail closed), unless the operator set
//! `PTXBENCH_SANDBOX=unconfined` on purpose.
//!
//! No network: Landlock denies TCP bind and connect (ABI 4+) and abstract sockets and signals
//! outside the sandbox (ABI 6+); a compiler reads files, it does not run the code it is given,
//! so no other socket is within a source's reach.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    Scope, path_beneath_rules,
};

/// The newest Landlock ABI this code knows; older kernels enforce what they can of it.
const ABI_WANTED: ABI = ABI::V10;

/// The environment variable that lets an operator run compilers without the filesystem view,
/// on a kernel without Landlock (the value must be `unconfined`).
pub const UNCONFINED_VAR: &str = "PTXBENCH_SANDBOX";

/// Folders the system's dynamic loader and shared libraries live in: an executed compiler
/// needs them to start. They hold no secrets of this process.
pub const SYSTEM_LIBRARIES: [&str; 5] = [
    "/lib",
    "/lib64",
    "/usr/lib",
    "/usr/lib64",
    "/etc/ld.so.cache",
];

/// What a sandboxed process may use: the gate child reads this from its command line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Confinement {
    /// Folders or files it may read and execute from.
    pub read: Vec<PathBuf>,
    /// Its working folder, the one place it may write.
    pub work: PathBuf,
    /// Address space, bytes.
    pub memory: u64,
    /// CPU seconds.
    pub cpu_s: u64,
    /// The process that started it: it dies with that process (and refuses to start if that
    /// process is already gone).
    pub parent: u32,
    /// Whether the operator allowed running without a filesystem view.
    pub unconfined_allowed: bool,
}

/// How much of the filesystem view the kernel enforces: fully, partly (an older Landlock ABI)
/// or not at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Full,
    Partial,
    None,
}

/// Confines the calling process and returns how much of the view the kernel enforces. An error
/// means the compiler must not run.
pub fn enter(c: &Confinement) -> Result<View, String> {
    die_with_parent(c.parent)?;
    limit(c.memory, c.cpu_s)?;
    let mut read = c.read.clone();
    read.extend(SYSTEM_LIBRARIES.iter().map(PathBuf::from));
    let filesystem = restrict(&read, Some(&c.work))?;
    if filesystem == View::None && !c.unconfined_allowed {
        return Err(format!(
            "this kernel does not enforce Landlock, so a compiler would see every host file; \
             refusing to compile (use a Linux kernel of 5.13 or later with Landlock enabled, \
             or set {UNCONFINED_VAR}=unconfined to run compilers without a filesystem view)"
        ));
    }
    Ok(filesystem)
}

/// Narrows the calling thread's filesystem view to reading `read` (and writing `work`): a
/// second layer on top of [`enter`]'s, for a process that has loaded its libraries.
pub fn restrict(read: &[PathBuf], work: Option<&Path>) -> Result<View, String> {
    let abi = ABI_WANTED;
    let err = |e: landlock::RulesetError| format!("setting up the filesystem view: {e}");
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .map_err(err)?
        .handle_access(AccessNet::from_all(abi))
        .map_err(err)?
        .scope(Scope::from_all(abi))
        .map_err(err)?
        .create()
        .map_err(err)?
        .add_rules(path_beneath_rules(read, AccessFs::from_read(abi)))
        .map_err(err)?
        .add_rules(path_beneath_rules(work, AccessFs::from_all(abi)))
        .map_err(err)?
        .add_rules(path_beneath_rules(
            ["/dev/null"],
            AccessFs::ReadFile | AccessFs::WriteFile,
        ))
        .map_err(err)?
        .restrict_self()
        .map_err(err)?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => View::Full,
        RulesetStatus::PartiallyEnforced => View::Partial,
        RulesetStatus::NotEnforced => View::None,
    })
}

/// Asks the kernel to kill this process when its parent dies, then checks the parent is still
/// the one that started it (it may have died before the request).
fn die_with_parent(parent: u32) -> Result<(), String> {
    use rustix::process::{Pid, Signal, getppid, set_parent_process_death_signal};
    set_parent_process_death_signal(Some(Signal::KILL))
        .map_err(|e| format!("asking to die with the parent: {e}"))?;
    let now = Pid::as_raw(getppid());
    if u32::try_from(now).ok() != Some(parent) {
        return Err("the process that started this one is gone".into());
    }
    Ok(())
}

/// Address space, CPU time (a backstop to the parent's wall clock), file size (the largest
/// honest cubin is a few MB), no core dumps, a bounded number of open files.
fn limit(memory: u64, cpu_s: u64) -> Result<(), String> {
    use rlimit::Resource;
    for (resource, value) in [
        (Resource::AS, memory),
        (Resource::CPU, cpu_s.max(1)),
        (Resource::FSIZE, 1 << 30),
        (Resource::CORE, 0),
    ] {
        rlimit::setrlimit(resource, value, value)
            .map_err(|e| format!("setting {resource:?} to {value}: {e}"))?;
    }
    Ok(())
}

/// Whether the operator allowed compilers without a filesystem view.
pub fn unconfined_allowed() -> bool {
    std::env::var(UNCONFINED_VAR).is_ok_and(|v| v.trim() == "unconfined")
}
