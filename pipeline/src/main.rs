//! The `ptxbench` command line: parses arguments and hands each subcommand to `ptxbench::cmd`.
//!
//! A closed stdout or stderr (`ptxbench tasks list | head -c0`) ends any command quietly with
//! exit status 141 (128 + SIGPIPE, what a shell shows for a tool killed by the broken pipe):
//! no panic message, and the unwinding still runs every destructor, so temp files are removed.
//! Rust ignores SIGPIPE, so the write fails with `BrokenPipe`: either as an error that reaches
//! `main` or as the panic of `println!`, and both are caught here.

use std::process::ExitCode;

use clap::Parser;

use ptxbench::cmd::Cli;

/// mimalloc rather than the system allocator: a site build makes millions of short-lived
/// strings, and glibc's malloc and free took about a fifth of its CPU time (the site bench).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The exit status of a command whose output pipe was closed.
const BROKEN_PIPE_EXIT: u8 = 141;

fn main() -> ExitCode {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !is_broken_pipe_panic(info.payload()) {
            default_hook(info);
        }
    }));
    let cli = Cli::parse();
    match std::panic::catch_unwind(|| ptxbench::cmd::run(cli)) {
        Ok(Ok(code)) => code,
        Ok(Err(err)) if is_broken_pipe_error(&err) => ExitCode::from(BROKEN_PIPE_EXIT),
        Ok(Err(err)) => {
            eprintln_quietly(&format!("error: {err}"));
            for cause in err.chain().skip(1) {
                eprintln_quietly(&format!("  caused by: {cause}"));
            }
            ExitCode::from(2)
        }
        Err(payload) if is_broken_pipe_panic(payload.as_ref()) => ExitCode::from(BROKEN_PIPE_EXIT),
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

/// Writes a line to stderr, ignoring a closed stderr (the status still tells).
fn eprintln_quietly(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

fn is_broken_pipe_error(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Whether a panic is `print!`'s "failed printing to stdout: Broken pipe".
fn is_broken_pipe_panic(payload: &(dyn std::any::Any + Send)) -> bool {
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("");
    message.starts_with("failed printing to std") && message.contains("Broken pipe")
}
