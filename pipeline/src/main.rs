//! The `ptxbench` command line: parses arguments and hands each subcommand to `ptxbench::cmd`.
//!
//! A closed stdout or stderr (`ptxbench tasks list | head -c0`) ends any command quietly with
//! exit status 141 (128 + SIGPIPE, what a shell shows for a tool killed by the broken pipe):
//! no panic message, and the unwinding still runs every destructor, so temp files are removed.
//! Rust ignores SIGPIPE, so the write fails with `BrokenPipe`: either as an error that reaches
//! `main` or as the panic of `println!`, and both are caught here.
//!
//! Any other failure to write standard output (a full disk, `> /dev/full`) ends the command
//! with one line, `error: cannot write to standard output: ...`, and exit status 2: commands
//! print through `cmd::write_stdout`, which returns the error; a `println!` left elsewhere
//! panics, and that panic is caught here and reported the same way; output still buffered
//! when the command returns is flushed, and a failure there is reported too; so is a failure
//! to print `--help` or `--version`.

use std::process::ExitCode;

use clap::Parser;

use ptxbench::cmd::Cli;

/// mimalloc rather than the system allocator: a site build makes millions of short-lived
/// strings. Building the 100k-record site of `cargo bench -p ptxbench --bench site` on tmpfs,
/// alternated: 9.35 s mean with it against 11.15 s without (4 runs each,
/// `artifacts/evidence/site-bench/v3-allocator-2026-12-04.log`). Its defaults, no options.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The exit status of a command whose output pipe was closed.
const BROKEN_PIPE_EXIT: u8 = 141;

fn main() -> ExitCode {
    // The compiler sandbox's gate runs before anything else (no argument parsing, no threads):
    // it confines this process and becomes the compiler.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|a| a == ptxbench::sandbox::GATE_SUBCOMMAND)
    {
        return ptxbench::sandbox::gate(&args[2..]);
    }
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if stdout_failure(info.payload()).is_none() {
            default_hook(info);
        }
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_failure(&e),
    };
    let result = std::panic::catch_unwind(|| -> anyhow::Result<ExitCode> {
        let code = ptxbench::cmd::run(cli)?;
        flush_stdout()?;
        Ok(code)
    });
    match result {
        Ok(Ok(code)) => code,
        Ok(Err(err)) if is_broken_pipe_error(&err) => ExitCode::from(BROKEN_PIPE_EXIT),
        Ok(Err(err)) => {
            eprintln_quietly(&format!("error: {err}"));
            for cause in err.chain().skip(1) {
                eprintln_quietly(&format!("  caused by: {cause}"));
            }
            ExitCode::from(2)
        }
        Err(payload) => match stdout_failure(payload.as_ref()) {
            Some(StdoutFailure::BrokenPipe) => ExitCode::from(BROKEN_PIPE_EXIT),
            Some(StdoutFailure::Other { stream, why }) => {
                eprintln_quietly(&format!("error: cannot write to standard {stream}: {why}"));
                ExitCode::from(2)
            }
            None => std::panic::resume_unwind(payload),
        },
    }
}

/// What clap does with `e` (help or the version on stdout, a usage error on stderr, then its
/// exit status), except that a failure to write is reported as for any command: clap's own
/// exit ignores it, so `--help > /dev/full` printed nothing and exited 0.
fn parse_failure(e: &clap::Error) -> ExitCode {
    let stream = if e.use_stderr() { "error" } else { "output" };
    let written = e.print().and_then(|()| {
        use std::io::Write as _;
        std::io::stdout().lock().flush()
    });
    match written {
        Ok(()) => ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2)),
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::from(BROKEN_PIPE_EXIT)
        }
        Err(err) => {
            eprintln_quietly(&format!("error: cannot write to standard {stream}: {err}"));
            ExitCode::from(2)
        }
    }
}

/// Flushes what is still buffered for standard output (Rust's own flush at exit ignores
/// errors); a failure is one line, as in `ptxbench::cmd::write_stdout`.
fn flush_stdout() -> anyhow::Result<()> {
    use std::io::Write as _;
    match std::io::stdout().lock().flush() {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(e.into()),
        Err(e) => Err(anyhow::anyhow!("cannot write to standard output: {e}")),
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

/// Why `print!` or `eprint!` panicked.
enum StdoutFailure {
    BrokenPipe,
    /// Any other error: the stream (`output`, `error`) and the error.
    Other {
        stream: &'static str,
        why: String,
    },
}

/// Whether a panic is `print!`'s failure to write ("failed printing to stdout: ..."), and why.
fn stdout_failure(payload: &(dyn std::any::Any + Send)) -> Option<StdoutFailure> {
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("");
    let (stream, why) = match message.strip_prefix("failed printing to stdout: ") {
        Some(why) => ("output", why),
        None => (
            "error",
            message.strip_prefix("failed printing to stderr: ")?,
        ),
    };
    Some(if why.contains("Broken pipe") {
        StdoutFailure::BrokenPipe
    } else {
        StdoutFailure::Other {
            stream,
            why: why.to_string(),
        }
    })
}
