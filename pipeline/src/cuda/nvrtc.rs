//! CUDA C++ device code (with inline PTX) to PTX through NVRTC, in process.
//!
//! The options and NVRTC version are returned with the PTX so a record can say exactly how the
//! PTX was made. No host code is compiled: NVRTC accepts device code only. In process, this
//! compiles the harness's own sources; a candidate's source is compiled by the same code in a
//! sandboxed child (`crate::sandbox::nvrtc`), never here.

use std::ffi::{CStr, CString};
use std::path::PathBuf;

use cudarc::nvrtc::{result, sys};

use super::library::{self, CudaLibrary, LibraryNotFound};

/// The PTX NVRTC produced, with how it was produced.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct NvrtcOutput {
    pub ptx: String,
    /// NVRTC's log (warnings); empty when it printed nothing.
    pub log: String,
    pub options: Vec<String>,
    pub nvrtc_version: (i32, i32),
    pub library: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum NvrtcError {
    #[error(transparent)]
    LibraryMissing(#[from] LibraryNotFound),
    #[error("the CUDA source contains a NUL byte at offset {0}")]
    NulByte(usize),
    #[error("NVRTC failed to compile the CUDA source ({status}):\n{log}")]
    Compile {
        status: String,
        log: String,
        options: Vec<String>,
    },
    #[error("NVRTC failed: {0}")]
    Internal(String),
}

/// The options for a candidate's CUDA C++ (recorded with the output): the folder of the
/// (in-memory) source is not searched for headers, only `include_dirs`.
pub fn candidate_options(virtual_arch: &str, include_dirs: &[PathBuf]) -> Vec<String> {
    let mut opts = options_for(virtual_arch, include_dirs);
    opts.push("--no-source-include".to_string());
    opts
}

fn options_for(virtual_arch: &str, include_dirs: &[PathBuf]) -> Vec<String> {
    let mut opts = vec![
        format!("--gpu-architecture={virtual_arch}"),
        "--std=c++17".to_string(),
        "--device-as-default-execution-space".to_string(),
        // No -lineinfo: NVRTC would write the working folder into `.file`, and the PTX (and its
        // digest, which keys results) would then depend on where the checkout lives.
    ];
    for d in include_dirs {
        opts.push(format!("--include-path={}", d.display()));
    }
    opts
}

/// Folders holding the CUDA headers NVRTC needs (`cuda_bf16.h`, `cuda/std/...`).
pub fn default_include_dirs() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(r) = std::env::var_os(var) {
            roots.push(PathBuf::from(r));
        }
    }
    roots.push(PathBuf::from("/usr/local/cuda"));
    let mut dirs = Vec::new();
    for r in roots {
        for sub in ["include", "include/cccl"] {
            let d = r.join(sub);
            if d.is_dir() && !dirs.contains(&d) {
                dirs.push(d);
            }
        }
    }
    dirs
}

/// Compiles the harness's own `source` to PTX for a virtual architecture such as `compute_90`.
pub fn compile_for(
    source: &str,
    name: &str,
    virtual_arch: &str,
) -> Result<NvrtcOutput, NvrtcError> {
    compile_with(
        source,
        name,
        &options_for(virtual_arch, &default_include_dirs()),
    )
}

/// Compiles `source` with exactly `options`.
pub fn compile_with(
    source: &str,
    name: &str,
    options: &[String],
) -> Result<NvrtcOutput, NvrtcError> {
    if let Some(i) = source.bytes().position(|b| b == 0) {
        return Err(NvrtcError::NulByte(i));
    }
    let lib = library::load(CudaLibrary::Nvrtc)?;
    let src = CString::new(source).map_err(|e| NvrtcError::NulByte(e.nul_position()))?;
    let cname =
        CString::new(name.replace('\0', "")).map_err(|e| NvrtcError::Internal(e.to_string()))?;
    let internal = |e: result::NvrtcError| NvrtcError::Internal(format!("{e:?}"));

    let mut major = 0;
    let mut minor = 0;
    // SAFETY: the library is loaded (above); nvrtcVersion writes two ints.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(internal)?;

    let prog = result::create_program(&src, Some(&cname)).map_err(internal)?;
    // SAFETY: `prog` is a live program until destroy_program below; the options outlive the call.
    let compiled = unsafe { result::compile_program(prog, options) };
    // SAFETY: as above.
    let log = unsafe { result::get_program_log(prog) }
        .map(|raw| c_chars_to_string(&raw))
        .unwrap_or_default();
    let outcome = match compiled {
        Err(e) => Err(NvrtcError::Compile {
            status: format!("{e:?}"),
            log: log.clone(),
            options: options.to_vec(),
        }),
        // SAFETY: as above.
        Ok(()) => unsafe { result::get_ptx(prog) }
            .map(|raw| c_chars_to_string(&raw))
            .map_err(internal),
    };
    // SAFETY: destroyed exactly once.
    let _ = unsafe { result::destroy_program(prog) };
    let ptx = outcome?;
    Ok(NvrtcOutput {
        ptx,
        log: log.trim().to_string(),
        options: options.to_vec(),
        nvrtc_version: (major, minor),
        library: lib.path,
    })
}

fn c_chars_to_string(raw: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = raw.iter().map(|&c| c as u8).collect();
    match CStr::from_bytes_until_nul(&bytes) {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
    }
}
