//! PTX to cubin with ptxas, with the resource usage it reports (`-v`).

use std::ffi::OsStr;
use std::path::Path;

use super::{Tool, ToolError, locate, run, version};
use crate::arch::Arch;
use crate::sandbox::Limits;

/// Resources ptxas reports for one function.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Resources {
    pub function: String,
    pub registers: u32,
    pub barriers: u32,
    pub shared_bytes: u64,
    pub stack_frame_bytes: u64,
    pub spill_store_bytes: u64,
    pub spill_load_bytes: u64,
}

/// The outcome of one ptxas run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PtxasResult {
    pub arch: Arch,
    pub ok: bool,
    pub version: String,
    /// ptxas's messages (errors, warnings and the `-v` report).
    pub log: String,
    pub resources: Vec<Resources>,
    #[serde(skip)]
    pub cubin: Option<Vec<u8>>,
}

/// Compiles `ptx` for `arch` with the ptxas found in the search order.
pub fn compile(ptx: &str, arch: Arch) -> Result<PtxasResult, ToolError> {
    let path = locate(Tool::Ptxas)?;
    compile_with(&path, ptx, arch)
}

/// Compiles `ptx` for `arch` with the ptxas at `path`.
pub fn compile_with(path: &Path, ptx: &str, arch: Arch) -> Result<PtxasResult, ToolError> {
    let spawn_err = |e: std::io::Error| ToolError::Spawn {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let dir = crate::scratch::ScratchDir::new().map_err(spawn_err)?;
    let input = dir.path().join("kernel.ptx");
    let output = dir.path().join("kernel.cubin");
    std::fs::write(&input, ptx).map_err(spawn_err)?;
    let arch_flag = format!("-arch={arch}");
    let out = run(
        path,
        &[
            OsStr::new(&arch_flag),
            OsStr::new("-v"),
            OsStr::new("-o"),
            output.as_os_str(),
            input.as_os_str(),
        ],
        Limits::PTXAS.from_env(),
        Some(dir.path()),
    )?;
    let mut log = out.stderr.clone();
    log.push_str(&String::from_utf8_lossy(&out.stdout));
    if let Some(end) = out.abnormal_end() {
        log.push_str(&format!("\nptxas {end}\n"));
    } else if log.contains("Memory allocation failure") {
        log.push_str(&format!(
            "\nptxas ran out of memory: it runs under {} (the limit is the smaller of its own and \
             this process's compile budget)\n",
            out.limits.describe()
        ));
    }
    // The temp folder's name is noise in a log that gets stored and compared.
    let log = log.replace(&input.display().to_string(), "kernel.ptx");
    let ok = out.status.success();
    let cubin = if ok {
        std::fs::read(&output).ok()
    } else {
        None
    };
    Ok(PtxasResult {
        arch,
        ok: ok && cubin.is_some(),
        version: version(path)?,
        resources: parse_resources(&log),
        log,
        cubin,
    })
}

/// Reads the per-function report of `ptxas -v`.
pub fn parse_resources(log: &str) -> Vec<Resources> {
    let mut out: Vec<Resources> = Vec::new();
    for line in log.lines() {
        let line = line.trim();
        if let Some(rest) = line
            .split_once("Compiling entry function '")
            .or_else(|| line.split_once("Function properties for "))
            .map(|(_, r)| r)
        {
            let name = rest.split(['\'', ' ']).next().unwrap_or("").to_string();
            if !name.is_empty() && out.last().is_none_or(|r| r.function != name) {
                out.push(Resources {
                    function: name,
                    ..Resources::default()
                });
            }
            continue;
        }
        let Some(cur) = out.last_mut() else { continue };
        for part in line.split(',') {
            let part = part.trim().trim_start_matches("ptxas info    : ");
            let num = |s: &str| {
                s.split_whitespace()
                    .find_map(|w| w.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            if part.contains("bytes stack frame") {
                cur.stack_frame_bytes = num(part);
            } else if part.contains("bytes spill stores") {
                cur.spill_store_bytes = num(part);
            } else if part.contains("bytes spill loads") {
                cur.spill_load_bytes = num(part);
            } else if part.starts_with("Used") && part.contains("registers") {
                cur.registers = u32::try_from(num(part)).unwrap_or(u32::MAX);
            } else if part.contains("barriers") {
                cur.barriers = u32::try_from(num(part)).unwrap_or(u32::MAX);
            } else if part.contains("bytes smem") {
                cur.shared_bytes = num(part);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_verbose_report() {
        let log = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'gemm' for 'sm_90a'\n\
ptxas info    : Function properties for gemm\n\
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
ptxas info    : Used 168 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]\n";
        let r = parse_resources(log);
        assert_eq!(
            r,
            vec![Resources {
                function: "gemm".into(),
                registers: 168,
                barriers: 1,
                shared_bytes: 1024,
                stack_frame_bytes: 8,
                spill_store_bytes: 4,
                spill_load_bytes: 12,
            }]
        );
    }
}
