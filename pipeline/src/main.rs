//! The `ptxbench` command line: parses arguments and hands each subcommand to `ptxbench::cmd`.

use std::process::ExitCode;

use clap::Parser;

use ptxbench::cmd::Cli;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match ptxbench::cmd::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::from(2)
        }
    }
}
