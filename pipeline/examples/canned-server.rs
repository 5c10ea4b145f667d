//! `cargo run --example canned-server -- DIR [--port N] [--count-file FILE]`: the loopback chat
//! server that replays canned answers (see tests/support/canned.rs), for dry runs of
//! `ptxbench generate` (pipeline/scripts/generate-loopback.sh) and kill tests
//! (pipeline/scripts/kill-test.sh: `--count-file` keeps the number of requests served in FILE).
//! Serves 127.0.0.1 only, until killed.

#[path = "../tests/support/canned.rs"]
mod canned;

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut dir, mut port, mut count_file) = (None, 0u16, None);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" => match args.next().map(|p| p.parse()) {
                Some(Ok(p)) => port = p,
                _ => return usage("--port: not a port number"),
            },
            "--count-file" => match args.next() {
                Some(f) => count_file = Some(std::path::PathBuf::from(f)),
                None => return usage("--count-file: a file is missing"),
            },
            _ if dir.is_none() && !a.starts_with("--") => dir = Some(a),
            _ => return usage("unexpected arguments"),
        }
    }
    let Some(dir) = dir else {
        return usage("DIR is missing");
    };
    let server = match canned::CannedServer::start(std::path::Path::new(&dir), port) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    println!("serving {dir} on {}", server.url());
    match count_file {
        // Writes the number of requests served so far, every 20 ms (for kill tests).
        Some(path) => loop {
            let tmp = path.with_extension("tmp");
            let n = server.served().len();
            if std::fs::write(&tmp, format!("{n}\n"))
                .and_then(|()| std::fs::rename(&tmp, &path))
                .is_err()
            {
                eprintln!("error: writing {}", path.display());
                return std::process::ExitCode::from(2);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        },
        None => server.wait(),
    }
    std::process::ExitCode::SUCCESS
}

fn usage(why: &str) -> std::process::ExitCode {
    eprintln!("{why}\nusage: canned-server DIR [--port N] [--count-file FILE]");
    std::process::ExitCode::from(2)
}
