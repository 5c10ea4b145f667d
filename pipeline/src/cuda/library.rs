//! Finding and loading the CUDA shared libraries in an explicit order.
//!
//! Search order (each entry is a folder):
//! 1. `PTXBENCH_CUDA_LIB_PATH` (colon-separated), the explicit override;
//! 2. `$CUDA_HOME/lib64`, `$CUDA_HOME/lib`, then the same under `$CUDA_PATH`;
//! 3. `LD_LIBRARY_PATH`;
//! 4. `/usr/local/cuda/lib64`, `/usr/local/nvidia/lib64`, `/usr/lib/x86_64-linux-gnu`,
//!    `/usr/lib64`, `/usr/lib`, `/usr/lib/wsl/lib`;
//! 5. for the baselines (cuBLASLt, cuDNN) only: the NVIDIA wheels of the Python environments
//!    on this machine (`$VIRTUAL_ENV`, `$CONDA_PREFIX` and the folder above each `bin` of
//!    `PATH`: `lib/python3*/{site,dist}-packages/nvidia/{cudnn,cublas,cu13}/lib`), where
//!    PyTorch keeps its own, often newer, copies.
//!
//! The driver and NVRTC: the first hit wins. A baseline is the library at its best, so for
//! cuBLASLt and cuDNN the newest version found anywhere in that order wins (ties and files of
//! no readable version: the first), read from the file name a link resolves to
//! (`libcudnn.so.9.14.0`) or from the wheel's `*.dist-info` folder beside its package
//! (`nvidia_cudnn_cu13-9.19.0.56.dist-info`); a hit in `PTXBENCH_CUDA_LIB_PATH` always wins.
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
    /// CUPTI, whose range profiler reads the hardware counters of a timed launch.
    Cupti,
}

impl CudaLibrary {
    /// File names tried in each folder, most specific first.
    pub fn file_names(self) -> &'static [&'static str] {
        match self {
            CudaLibrary::Driver => &["libcuda.so.1", "libcuda.so"],
            CudaLibrary::Nvrtc => &["libnvrtc.so.13", "libnvrtc.so"],
            CudaLibrary::CublasLt => &["libcublasLt.so.13", "libcublasLt.so"],
            CudaLibrary::Cudnn => &["libcudnn.so.9", "libcudnn.so"],
            CudaLibrary::Cupti => &["libcupti.so.13", "libcupti.so"],
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
            // The profiler's host and target halves, which CUPTI opens by name.
            CudaLibrary::Cupti => &["libnvperf_host.so", "libnvperf_target.so"],
            _ => &[],
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CudaLibrary::Driver => "CUDA driver (libcuda)",
            CudaLibrary::Nvrtc => "NVRTC (libnvrtc)",
            CudaLibrary::CublasLt => "cuBLASLt (libcublasLt)",
            CudaLibrary::Cudnn => "cuDNN (libcudnn)",
            CudaLibrary::Cupti => "CUPTI (libcupti)",
        }
    }

    /// Whether the newest copy on the machine is taken rather than the first one found.
    fn newest_wins(self) -> bool {
        matches!(self, CudaLibrary::CublasLt | CudaLibrary::Cudnn)
    }

    /// The start of its wheel's `*.dist-info` folder name (`nvidia_cudnn_cu13-9.19.0.56`).
    fn wheel_prefix(self) -> &'static str {
        match self {
            CudaLibrary::CublasLt => "nvidia_cublas",
            CudaLibrary::Cudnn => "nvidia_cudnn",
            _ => "-",
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
            CudaLibrary::Cupti => {
                "install the CUDA toolkit's CUPTI (extras/CUPTI/lib64), or `pip install nvidia-cuda-cupti`, or set PTXBENCH_CUDA_LIB_PATH"
            }
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
    search_dirs_from(&process_env)
}

/// A variable of this process's environment, as text.
fn process_env(name: &str) -> Option<String> {
    std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
}

fn search_dirs_from(env: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
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

/// Where the toolkit keeps CUPTI, outside its `lib64`: `extras/CUPTI/lib64` of `CUDA_HOME`,
/// `CUDA_PATH` and `/usr/local/cuda`.
fn cupti_dirs_from(env: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let mut roots: Vec<String> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|k| env(k))
        .collect();
    roots.push("/usr/local/cuda".into());
    roots
        .iter()
        .map(|r| Path::new(r).join("extras/CUPTI/lib64"))
        .collect()
}

/// The NVIDIA wheels' library folders of the Python environments named by `env` (see the
/// module's search order, step 5), those that exist.
fn python_dirs_from(env: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = ["VIRTUAL_ENV", "CONDA_PREFIX"]
        .iter()
        .filter_map(|k| env(k).map(PathBuf::from))
        .collect();
    if let Some(path) = env("PATH") {
        for bin in path.split(':').map(Path::new) {
            if bin.file_name().is_some_and(|n| n == "bin")
                && let Some(root) = bin.parent()
            {
                roots.push(root.to_path_buf());
            }
        }
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(root.join("lib")) else {
            continue;
        };
        let mut pythons: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("python3"))
            })
            .collect();
        pythons.sort();
        for py in pythons {
            for packages in ["site-packages", "dist-packages"] {
                for sub in ["cudnn", "cublas", "cu13", "cuda_cupti"] {
                    let d = py.join(packages).join("nvidia").join(sub).join("lib");
                    if d.is_dir() && !dirs.contains(&d) {
                        dirs.push(d);
                    }
                }
            }
        }
    }
    dirs
}

/// A library file's version, when one can be read without loading it: from the file name
/// its links resolve to (`libcudnn.so.9.14.0`), else from the `*.dist-info` folder of its
/// wheel (`site-packages/nvidia_cudnn_cu13-9.19.0.56.dist-info` for
/// `site-packages/nvidia/cudnn/lib/libcudnn.so.9`).
pub fn version_of(library: CudaLibrary, path: &Path) -> Option<Vec<u64>> {
    let numbers = |text: &str| -> Option<Vec<u64>> {
        let v: Vec<u64> = text
            .split('.')
            .map(|p| p.parse().ok())
            .collect::<Option<_>>()?;
        (v.len() >= 2).then_some(v)
    };
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let name = real.file_name()?.to_str()?;
    if let Some(v) = name.split_once(".so.").and_then(|(_, v)| numbers(v)) {
        return Some(v);
    }
    // site-packages/nvidia/<package>/lib/<file>
    let site = path.parent()?.parent()?.parent()?.parent()?;
    let prefix = library.wheel_prefix();
    let mut found: Vec<Vec<u64>> = std::fs::read_dir(site)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(prefix))
        .filter_map(|n| {
            let rest = n.strip_suffix(".dist-info")?;
            numbers(rest.split_once('-')?.1)
        })
        .collect();
    found.sort();
    found.pop()
}

/// Finds `library` without loading it.
pub fn locate(library: CudaLibrary) -> Result<PathBuf, LibraryNotFound> {
    locate_from(library, &process_env)
}

fn locate_from(
    library: CudaLibrary,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PathBuf, LibraryNotFound> {
    let hit = |dir: &Path| {
        library
            .file_names()
            .iter()
            .map(|name| dir.join(name))
            .find(|p| p.is_file())
    };
    // The explicit override wins outright.
    if let Some(list) = env("PTXBENCH_CUDA_LIB_PATH")
        && let Some(p) = list.split(':').map(Path::new).find_map(hit)
    {
        return Ok(p);
    }
    let mut dirs = search_dirs_from(env);
    if library == CudaLibrary::Cupti {
        dirs.extend(cupti_dirs_from(env));
    }
    if library.newest_wins() || library == CudaLibrary::Cupti {
        for d in python_dirs_from(env) {
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        }
    }
    let hits: Vec<PathBuf> = dirs.iter().filter_map(|d| hit(d)).collect();
    let chosen = if library.newest_wins() {
        // The newest readable version; the first of equals (max_by_key keeps the last).
        hits.iter()
            .rev()
            .max_by_key(|p| version_of(library, p))
            .cloned()
    } else {
        hits.first().cloned()
    };
    chosen.ok_or(LibraryNotFound {
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
        let dirs = search_dirs_from(&env);
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

    /// A folder with `file` in it (an empty file standing in for the library), and `link`
    /// pointing at it when given.
    fn lib_dir(dir: &Path, file: &str, link: Option<&str>) -> PathBuf {
        std::fs::create_dir_all(dir).expect("mkdir");
        std::fs::write(dir.join(file), b"").expect("write");
        if let Some(link) = link {
            std::os::unix::fs::symlink(file, dir.join(link)).expect("symlink");
        }
        dir.to_path_buf()
    }

    /// A Python environment at `root` with an NVIDIA wheel's copy of `file` and its
    /// `dist-info` folder `wheel`; the library folder.
    fn venv(root: &Path, package: &str, file: &str, wheel: &str) -> PathBuf {
        let site = root.join("lib/python3.12/site-packages");
        std::fs::create_dir_all(site.join(wheel)).expect("dist-info");
        lib_dir(&site.join("nvidia").join(package).join("lib"), file, None)
    }

    fn env_of(vars: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
        move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn the_newest_baseline_library_wins_across_system_folders_and_python_wheels() {
        let t = tempfile::tempdir().expect("tempdir");
        let system = lib_dir(
            &t.path().join("system"),
            "libcudnn.so.98.14.0",
            Some("libcudnn.so.9"),
        );
        let wheel = venv(
            &t.path().join("venv"),
            "cudnn",
            "libcudnn.so.9",
            "nvidia_cudnn_cu13-98.19.0.56.dist-info",
        );
        assert_eq!(
            version_of(CudaLibrary::Cudnn, &system.join("libcudnn.so.9")),
            Some(vec![98, 14, 0])
        );
        assert_eq!(
            version_of(CudaLibrary::Cudnn, &wheel.join("libcudnn.so.9")),
            Some(vec![98, 19, 0, 56])
        );
        let ld = system.display().to_string();
        let env = env_of(vec![
            ("LD_LIBRARY_PATH", ld.clone()),
            (
                "PATH",
                format!("/nowhere/bin:{}/venv/bin", t.path().display()),
            ),
        ]);
        let chosen = locate_from(CudaLibrary::Cudnn, &env).expect("found");
        assert_eq!(
            chosen,
            wheel.join("libcudnn.so.9"),
            "9.19's wheel beats 9.14"
        );
        // The explicit override wins even when older.
        let env = env_of(vec![
            ("PTXBENCH_CUDA_LIB_PATH", ld),
            ("VIRTUAL_ENV", t.path().join("venv").display().to_string()),
        ]);
        let chosen = locate_from(CudaLibrary::Cudnn, &env).expect("found");
        assert_eq!(chosen, system.join("libcudnn.so.9"));
    }

    #[test]
    fn the_driver_and_nvrtc_keep_the_first_hit_and_unreadable_versions_lose() {
        let t = tempfile::tempdir().expect("tempdir");
        let first = lib_dir(
            &t.path().join("first"),
            "libnvrtc.so.13.0.88",
            Some("libnvrtc.so.13"),
        );
        venv(
            &t.path().join("venv"),
            "cu13",
            "libnvrtc.so.13",
            "nvidia_cuda_nvrtc-99.9.0.dist-info",
        );
        let env = env_of(vec![
            ("LD_LIBRARY_PATH", first.display().to_string()),
            ("VIRTUAL_ENV", t.path().join("venv").display().to_string()),
        ]);
        let chosen = locate_from(CudaLibrary::Nvrtc, &env).expect("found");
        assert_eq!(chosen, first.join("libnvrtc.so.13"), "NVRTC is pinned");
        // A bare soname with no wheel beside it has no version to compare.
        let bare = lib_dir(&t.path().join("bare/a/b/c"), "libcublasLt.so.13", None);
        assert_eq!(
            version_of(CudaLibrary::CublasLt, &bare.join("libcublasLt.so.13")),
            None
        );
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
