//! `cargo run --example canned-server -- DIR [--port N]`: the loopback chat server that replays
//! canned answers (see tests/support/canned.rs), for dry runs of `ptxbench generate`
//! (pipeline/scripts/generate-loopback.sh). Serves 127.0.0.1 only, until killed.

#[path = "../tests/support/canned.rs"]
mod canned;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dir, port) = match args.as_slice() {
        [dir] => (dir, Ok(0)),
        [dir, flag, port] if flag == "--port" => (dir, port.parse::<u16>()),
        _ => {
            eprintln!("usage: canned-server DIR [--port N]");
            return std::process::ExitCode::from(2);
        }
    };
    let Ok(port) = port else {
        eprintln!("--port: not a port number");
        return std::process::ExitCode::from(2);
    };
    match canned::CannedServer::start(std::path::Path::new(dir), port) {
        Ok(server) => {
            println!("serving {dir} on {}", server.url());
            server.wait();
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::from(2)
        }
    }
}
