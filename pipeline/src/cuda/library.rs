//! Finding and loading the CUDA shared libraries in an explicit order.
//!
//! Search order, first hit wins (each entry is a folder):
//! 1. `PTXBENCH_CUDA_LIB_PATH` (colon-separated), the explicit override;
//! 2. `$CUDA_HOME/lib64`, `$CUDA_HOME/lib`, then the same under `$CUDA_PATH`;
//! 3. `LD_LIBRARY_PATH`;
//! 4. `/usr/local/cuda/lib64`, `/usr/local/nvidia/lib64`, `/usr/lib/x86_64-linux-gnu`,
//!    `/usr/lib64`, `/usr/lib`, `/usr/lib/wsl/lib`.
//!
//! A located library is loaded by its full path and kept loaded for the life of the process;
//! cudarc's later `dlopen` by soname then resolves to that same object, so the file recorded
//! in a result is the file that ran.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// A CUDA library the pipeline may load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CudaLibrary {
    /// The driver API (`libcuda.so.1`), installed with the GPU driver.
    Driver,
    /// NVRTC, the runtime CUDA C++ compiler.
    Nvrtc,
    /// cuBLASLt, the GEMM baseline.
    CublasLt,
    /// cuDNN, the attention baseline.
    Cudnn,
}

impl CudaLibrary {
    /// File names tried in each folder, most specific first.
    pub fn file_names(self) -> &'static [&'static str] {
        match self {
            CudaLibrary::Driver => &["libcuda.so.1", "libcuda.so"],
            CudaLibrary::Nvrtc => &["libnvrtc.so.13", "libnvrtc.so"],
            CudaLibrary::CublasLt => &["libcublasLt.so.13", "libcublasLt.so"],
            CudaLibrary::Cudnn => &["libcudnn.so.9", "libcudnn.so"],
        }
    }

    /// Companion libraries loaded first from the same folder (NVRTC loads its builtins by name).
    fn companions(self) -> &'static [&'static str] {
        match self {
            CudaLibrary::Nvrtc => &["libnvrtc-builtins.so.13"],
            // cuDNN 9's `libcudnn.so.9` is a shim that opens its sub-libraries by name; loading
            // them first from the chosen folder makes those names resolve to the same folder.
            CudaLibrary::Cudnn => &[
                "libcudnn_graph.so.9",
                "libcudnn_heuristic.so.9",
                "libcudnn_engines_runtime_compiled.so.9",
                "libcudnn_engines_precompiled.so.9",
            ],
            _ => &[],
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CudaLibrary::Driver => "CUDA driver (libcuda)",
            CudaLibrary::Nvrtc => "NVRTC (libnvrtc)",
            CudaLibrary::CublasLt => "cuBLASLt (libcublasLt)",
            CudaLibrary::Cudnn => "cuDNN (libcudnn)",
        }
    }

    fn hint(self) -> &'static str {
        match self {
            CudaLibrary::Driver => {
                "install the NVIDIA driver; a machine without a GPU cannot run this command"
            }
            CudaLibrary::Nvrtc => {
                "install the CUDA toolkit, or `pip install nvidia-cuda-nvrtc==13.0.88` and point CUDA_HOME (or PTXBENCH_CUDA_LIB_PATH) at its nvidia/cu13 folder"
            }
            CudaLibrary::CublasLt => {
                "install the CUDA toolkit's cuBLAS, or set PTXBENCH_CUDA_LIB_PATH"
            }
            CudaLibrary::Cudnn => "install cuDNN 9, or set PTXBENCH_CUDA_LIB_PATH",
        }
    }
}

/// A library found on disk and loaded.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LocatedLibrary {
    pub library: CudaLibrary,
    pub path: PathBuf,
}

/// A library that is not on this machine, with every folder searched.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{} not found: looked for {} in {}; {}", .library.name(), .library.file_names().join(" / "), display_dirs(.searched), .library.hint())]
pub struct LibraryNotFound {
    pub library: CudaLibrary,
    pub searched: Vec<PathBuf>,
}

fn display_dirs(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        return "no folders".into();
    }
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The folders searched, in order, given the process environment.
pub fn search_dirs() -> Vec<PathBuf> {
    search_dirs_from(|k| std::env::var_os(k).map(|v| v.to_string_lossy().into_owned()))
}

fn search_dirs_from(env: impl Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut push = |p: PathBuf| {
        if !p.as_os_str().is_empty() && !dirs.contains(&p) {
            dirs.push(p);
        }
    };
    if let Some(list) = env("PTXBENCH_CUDA_LIB_PATH") {
        list.split(':').map(PathBuf::from).for_each(&mut push);
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = env(var) {
            push(Path::new(&root).join("lib64"));
            push(Path::new(&root).join("lib"));
        }
    }
    if let Some(list) = env("LD_LIBRARY_PATH") {
        list.split(':').map(PathBuf::from).for_each(&mut push);
    }
    for d in [
        "/usr/local/cuda/lib64",
        "/usr/local/nvidia/lib64",
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/lib/wsl/lib",
    ] {
        push(PathBuf::from(d));
    }
    dirs
}

/// Finds `library` without loading it.
pub fn locate(library: CudaLibrary) -> Result<PathBuf, LibraryNotFound> {
    let dirs = search_dirs();
    for dir in &dirs {
        for name in library.file_names() {
            let p = dir.join(name);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    Err(LibraryNotFound {
        library,
        searched: dirs,
    })
}

/// Libraries loaded so far: the path recorded for each, and the handles that keep it loaded.
type Loaded = BTreeMap<CudaLibrary, (PathBuf, Vec<libloading::Library>)>;

fn loaded() -> &'static Mutex<Loaded> {
    static LOADED: OnceLock<Mutex<Loaded>> = OnceLock::new();
    LOADED.get_or_init(|| Mutex::new(BTreeMap::new()))
}

/// Locates and loads `library` (once per process), so cudarc can use it without panicking.
pub fn load(library: CudaLibrary) -> Result<LocatedLibrary, LibraryNotFound> {
    let mut map = loaded().lock().unwrap_or_else(|e| e.into_inner());
    if let Some((path, _)) = map.get(&library) {
        return Ok(LocatedLibrary {
            library,
            path: path.clone(),
        });
    }
    let path = locate(library)?;
    let mut handles = Vec::new();
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    for companion in library.companions() {
        if let Some(p) = find_prefixed(&dir, companion) {
            // SAFETY: loading a vendor library runs its initialisers; these are NVIDIA's own
            // libraries from the folder the user's search order selected.
            if let Ok(h) = unsafe { libloading::Library::new(&p) } {
                handles.push(h);
            }
        }
    }
    // SAFETY: as above.
    match unsafe { libloading::Library::new(&path) } {
        Ok(h) => handles.push(h),
        Err(_) => {
            return Err(LibraryNotFound {
                library,
                searched: vec![dir],
            });
        }
    }
    map.insert(library, (path.clone(), handles));
    Ok(LocatedLibrary { library, path })
}

/// The address of the exported symbol `name` in the main file of `library`, which must have
/// been loaded with [`load`] (companions are not searched). The address stays valid for the
/// life of the process: loaded libraries are never unloaded.
pub fn symbol(library: CudaLibrary, name: &str) -> Option<*const std::ffi::c_void> {
    let map = loaded().lock().unwrap_or_else(|e| e.into_inner());
    let (_, handles) = map.get(&library)?;
    let main = handles.last()?;
    // SAFETY: the symbol is read as an address, not called here; callers cast it to the
    // function type the vendor header declares.
    let sym = unsafe { main.get::<*const std::ffi::c_void>(name.as_bytes()) }.ok()?;
    let addr = *sym;
    (!addr.is_null()).then_some(addr)
}

/// A file in `dir` whose name starts with `prefix` (`libnvrtc-builtins.so.13` matches `.13.0`).
fn find_prefixed(dir: &Path, prefix: &str) -> Option<PathBuf> {
    let mut hits: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && !n.contains(".alt."))
        })
        .collect();
    hits.sort();
    hits.into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_comes_first_then_cuda_home_then_ld_path() {
        let env = |k: &str| match k {
            "PTXBENCH_CUDA_LIB_PATH" => Some("/opt/a:/opt/b".to_string()),
            "CUDA_HOME" => Some("/opt/cuda".to_string()),
            "LD_LIBRARY_PATH" => Some("/opt/ld::/opt/a".to_string()),
            _ => None,
        };
        let dirs = search_dirs_from(env);
        let want: Vec<PathBuf> = [
            "/opt/a",
            "/opt/b",
            "/opt/cuda/lib64",
            "/opt/cuda/lib",
            "/opt/ld",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(&dirs[..want.len()], &want[..]);
        assert!(dirs.contains(&PathBuf::from("/usr/local/cuda/lib64")));
    }

    #[test]
    fn missing_library_names_every_folder() {
        let err = LibraryNotFound {
            library: CudaLibrary::Driver,
            searched: vec![PathBuf::from("/x"), PathBuf::from("/y")],
        };
        let msg = err.to_string();
        assert!(
            msg.contains("libcuda.so.1") && msg.contains("/x, /y"),
            "{msg}"
        );
    }
}
