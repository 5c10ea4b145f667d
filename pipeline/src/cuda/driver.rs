//! The CUDA driver API, used directly: one device, one context, one stream per process.
//!
//! Every call's status is checked and turned into a [`DriverError`] naming the call. Errors
//! that corrupt the context (illegal address, trap, ...) are marked sticky: the process that
//! saw one must not launch again, which is why candidates run in worker processes.

use std::ffi::{CStr, CString, c_void};
use std::time::Instant;

use cudarc::driver::sys;

use super::library::{self, CudaLibrary, LibraryNotFound};
use crate::arch::Arch;
use crate::record::device::{DeviceInfo, GpuState, KernelAttributes};
use crate::toolchain::{self, Tool, ToolError, ptxas};

/// A failed driver call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[error("{call} failed: {name} ({description})")]
pub struct DriverError {
    pub call: &'static str,
    pub code: u32,
    pub name: String,
    pub description: String,
}

impl DriverError {
    /// Errors after which the context cannot be used again.
    pub fn is_sticky(&self) -> bool {
        matches!(
            self.name.as_str(),
            "CUDA_ERROR_ILLEGAL_ADDRESS"
                | "CUDA_ERROR_LAUNCH_FAILED"
                | "CUDA_ERROR_ILLEGAL_INSTRUCTION"
                | "CUDA_ERROR_MISALIGNED_ADDRESS"
                | "CUDA_ERROR_INVALID_ADDRESS_SPACE"
                | "CUDA_ERROR_INVALID_PC"
                | "CUDA_ERROR_HARDWARE_STACK_ERROR"
                | "CUDA_ERROR_ASSERT"
                | "CUDA_ERROR_TENSOR_MEMORY_LEAK"
                | "CUDA_ERROR_LAUNCH_TIMEOUT"
        )
    }
}

fn check(call: &'static str, r: sys::CUresult) -> Result<(), DriverError> {
    if r == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let text = |f: unsafe fn(sys::CUresult, *mut *const std::ffi::c_char) -> sys::CUresult| {
        let mut p: *const std::ffi::c_char = std::ptr::null();
        // SAFETY: the driver writes a pointer to a static string, or leaves it null.
        let ok = unsafe { f(r, &mut p) } == sys::CUresult::CUDA_SUCCESS;
        if ok && !p.is_null() {
            // SAFETY: non-null and NUL-terminated, owned by the driver for the process's life.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        } else {
            format!("{r:?}")
        }
    };
    Err(DriverError {
        call,
        code: r as u32,
        name: text(sys::cuGetErrorName),
        description: text(sys::cuGetErrorString),
    })
}

/// Why no GPU could be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    NoDriver(#[from] LibraryNotFound),
    #[error("no CUDA device {ordinal}: this machine has {count}")]
    NoDevice { ordinal: usize, count: i32 },
    #[error(transparent)]
    Driver(#[from] DriverError),
}

/// A device allocation, freed on drop (or kept for the next allocation of its size while its
/// `Gpu` reuses buffers, see [`Gpu::reuse_buffers`]).
#[derive(Debug)]
pub struct DeviceBuffer {
    ptr: sys::CUdeviceptr,
    /// The allocation's real extent (what the driver reserved, at least what was asked for):
    /// bytes past a request up to here are still the kernel's to write, so guards and resets
    /// run to here.
    bytes: usize,
    /// What was asked for (the key under which a kept buffer is reused).
    requested: usize,
    kept: std::rc::Rc<Kept>,
}

/// Buffers given back while reuse is on, with their sizes.
#[derive(Debug, Default)]
struct Kept {
    on: std::cell::Cell<bool>,
    free: std::cell::RefCell<Vec<(usize, sys::CUdeviceptr)>>,
}

impl Kept {
    /// Frees every kept buffer.
    fn release(&self) {
        for (_, ptr) in self.free.borrow_mut().drain(..) {
            // SAFETY: allocated by cuMemAlloc in this context; kept once, freed once.
            let _ = unsafe { sys::cuMemFree_v2(ptr) };
        }
    }
}

impl DeviceBuffer {
    pub fn ptr(&self) -> u64 {
        self.ptr
    }
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.kept.on.get() {
            self.kept.free.borrow_mut().push((self.requested, self.ptr));
            return;
        }
        // SAFETY: allocated by cuMemAlloc in the current context; freed once.
        let _ = unsafe { sys::cuMemFree_v2(self.ptr) };
    }
}

/// A loaded module, unloaded on drop.
#[derive(Debug)]
pub struct Module {
    handle: sys::CUmodule,
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: loaded by cuModuleLoadData; unloaded once.
        let _ = unsafe { sys::cuModuleUnload(self.handle) };
    }
}

/// A kernel in a loaded module (valid while the module lives).
#[derive(Debug, Clone, Copy)]
pub struct Kernel {
    handle: sys::CUfunction,
}

/// One PTX module, compiled and loaded.
#[derive(Debug)]
pub struct Compiled {
    pub module: Module,
    /// The cubin that was loaded (absent when the driver compiled the PTX itself).
    pub cubin: Option<Vec<u8>>,
    /// The compiler's messages (`-v` report, warnings).
    pub log: String,
    /// Which compiler, version and options.
    pub compiler: String,
    pub millis: f64,
}

fn tool_error(e: &ToolError) -> DriverError {
    DriverError {
        call: "ptxas",
        code: 0,
        name: "PTXAS_UNAVAILABLE".into(),
        description: e.to_string(),
    }
}

/// The JIT rejected the PTX.
#[derive(Debug, Clone, thiserror::Error, serde::Serialize)]
#[error("{error}\n{log}")]
pub struct JitError {
    pub error: DriverError,
    pub log: String,
}

/// What ptxas made of a PTX module for one arch, before a GPU is involved: the cubin a worker
/// loads, or why there is none (no ptxas here: the driver compiles the PTX instead).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Cubin {
    Made {
        #[serde(with = "crate::digest::hex_bytes")]
        bytes: Vec<u8>,
        /// ptxas's messages (`-v` report, warnings).
        log: String,
        /// Which compiler, version and options.
        compiler: String,
    },
    NoPtxas(String),
}

/// Compiles `ptx` for `arch` as a whole program with the ptxas of the toolchain search order
/// (no GPU needed). A rejection is the candidate's compilation failure; a missing ptxas is
/// [`Cubin::NoPtxas`].
pub fn whole_program(ptx: &str, arch: Arch) -> Result<Cubin, JitError> {
    let path = match toolchain::locate(Tool::Ptxas) {
        Ok(p) => p,
        Err(e) => return Ok(Cubin::NoPtxas(e.to_string())),
    };
    let res = ptxas::compile_with(&path, ptx, arch).map_err(|e| JitError {
        error: tool_error(&e),
        log: e.to_string(),
    })?;
    let compiler = format!("ptxas {} -arch={arch} (whole program)", res.version);
    match (res.ok, res.cubin) {
        (true, Some(bytes)) => Ok(Cubin::Made {
            bytes,
            log: res.log,
            compiler,
        }),
        _ => Err(JitError {
            error: DriverError {
                call: "ptxas",
                code: 0,
                name: "PTXAS_FAILED".into(),
                description: format!("{compiler} rejected the PTX"),
            },
            log: res.log,
        }),
    }
}

/// A CUDA event for timing.
#[derive(Debug)]
pub struct Event {
    handle: sys::CUevent,
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created by cuEventCreate; destroyed once.
        let _ = unsafe { sys::cuEventDestroy_v2(self.handle) };
    }
}

/// A launch's geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_mem: u32,
    pub cluster: Option<[u32; 3]>,
}

/// One kernel parameter's bytes, aligned for any PTX parameter type.
#[repr(C, align(128))]
#[derive(Debug, Clone, Copy)]
pub struct ParamBytes {
    bytes: [u8; 128],
}

impl ParamBytes {
    /// Copies `v` (at most 128 bytes; longer input is cut, which the binder never produces).
    pub fn new(v: &[u8]) -> ParamBytes {
        let mut bytes = [0u8; 128];
        let n = v.len().min(128);
        bytes[..n].copy_from_slice(&v[..n]);
        ParamBytes { bytes }
    }
}

/// Number of CUDA devices (loads the driver library; creates no context).
pub fn device_count() -> Result<usize, OpenError> {
    library::load(CudaLibrary::Driver)?;
    let mut count = 0;
    // SAFETY: plain driver calls with an out-pointer to a local.
    unsafe {
        check("cuInit", sys::cuInit(0))?;
        check("cuDeviceGetCount", sys::cuDeviceGetCount(&mut count))?;
    }
    Ok(usize::try_from(count).unwrap_or(0))
}

/// The device, its primary context and the one stream everything runs on.
#[derive(Debug)]
pub struct Gpu {
    dev: sys::CUdevice,
    /// The context this `Gpu` created (never the device's primary context, which a vendor
    /// library's runtime may hold on to): destroying it takes every allocation, module and
    /// error state of its evaluation with it, so the next `Gpu` opened in the same process
    /// starts from a clean context.
    ctx: sys::CUcontext,
    stream: sys::CUstream,
    kept: std::rc::Rc<Kept>,
    pub info: DeviceInfo,
}

impl Gpu {
    /// Opens device `ordinal`: loads the driver library, initialises, creates a context of its
    /// own (current on this thread) and a stream.
    pub fn open(ordinal: usize) -> Result<Gpu, OpenError> {
        let lib = library::load(CudaLibrary::Driver)?;
        // SAFETY: plain driver calls with out-pointers to locals.
        unsafe {
            check("cuInit", sys::cuInit(0))?;
            let mut count = 0;
            check("cuDeviceGetCount", sys::cuDeviceGetCount(&mut count))?;
            if usize::try_from(count).map_or(true, |c| ordinal >= c) {
                return Err(OpenError::NoDevice { ordinal, count });
            }
            let mut dev = 0;
            let ord = i32::try_from(ordinal).unwrap_or(i32::MAX);
            check("cuDeviceGet", sys::cuDeviceGet(&mut dev, ord))?;
            let attr = |a: sys::CUdevice_attribute| -> Result<i32, DriverError> {
                let mut v = 0;
                check(
                    "cuDeviceGetAttribute",
                    sys::cuDeviceGetAttribute(&mut v, a, dev),
                )?;
                Ok(v)
            };
            use sys::CUdevice_attribute as A;
            let mut name = [0 as std::ffi::c_char; 256];
            check(
                "cuDeviceGetName",
                sys::cuDeviceGetName(name.as_mut_ptr(), 256, dev),
            )?;
            let mut mem = 0usize;
            check("cuDeviceTotalMem", sys::cuDeviceTotalMem_v2(&mut mem, dev))?;
            let mut version = 0;
            check("cuDriverGetVersion", sys::cuDriverGetVersion(&mut version))?;
            let mut bus = [0 as std::ffi::c_char; 64];
            check(
                "cuDeviceGetPCIBusId",
                sys::cuDeviceGetPCIBusId(bus.as_mut_ptr(), 64, dev),
            )?;
            let info = DeviceInfo {
                name: CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned(),
                ordinal,
                compute_capability: (
                    attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                    attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
                ),
                sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
                l2_bytes: i64::from(attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?),
                memory_bytes: mem as u64,
                driver_api_version: version,
                sm_clock_khz: attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
                memory_clock_khz: attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?,
                driver_library: lib.path.display().to_string(),
                pci_bus_id: CStr::from_ptr(bus.as_ptr()).to_string_lossy().into_owned(),
            };
            // The device's facts need no context; the context is made last.
            let mut ctx = std::ptr::null_mut();
            check(
                "cuCtxCreate",
                sys::cuCtxCreate_v4(&mut ctx, std::ptr::null_mut(), 0, dev),
            )?;
            let mut stream = std::ptr::null_mut();
            if let Err(e) = check(
                "cuStreamCreate",
                sys::cuStreamCreate(
                    &mut stream,
                    sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32,
                ),
            ) {
                let _ = sys::cuCtxDestroy_v2(ctx);
                return Err(e.into());
            }
            Ok(Gpu {
                dev,
                ctx,
                stream,
                kept: std::rc::Rc::default(),
                info,
            })
        }
    }

    /// Allocates `bytes` (at least 256, so that a zero-size tensor still has an address).
    /// Its contents are undefined: every caller writes what it reads.
    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer, DriverError> {
        let bytes = bytes.max(256);
        let reused = {
            let mut free = self.kept.free.borrow_mut();
            free.iter()
                .position(|(b, _)| *b == bytes)
                .map(|i| free.swap_remove(i).1)
        };
        let ptr = match reused {
            Some(ptr) => ptr,
            None => {
                let mut ptr = 0;
                // SAFETY: out-pointer to a local.
                check("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) })?;
                ptr
            }
        };
        // The allocation's real extent: the driver may reserve more than was asked for.
        let mut base = 0;
        let mut extent = 0usize;
        // SAFETY: out-pointers to locals; `ptr` is an allocation of this context.
        check("cuMemGetAddressRange", unsafe {
            sys::cuMemGetAddressRange_v2(&mut base, &mut extent, ptr)
        })?;
        let real = if base == ptr {
            extent.max(bytes)
        } else {
            bytes
        };
        Ok(DeviceBuffer {
            ptr,
            bytes: real,
            requested: bytes,
            kept: self.kept.clone(),
        })
    }

    /// While `on`, a dropped buffer is kept for the next allocation of the same size instead
    /// of being freed: a correctness trial allocates the same tensors as the trial before,
    /// and every `cuMemAlloc`/`cuMemFree` waits on the driver while another process changes
    /// context. Turning it off frees what is kept.
    pub fn reuse_buffers(&self, on: bool) {
        self.kept.on.set(on);
        if !on {
            self.kept.release();
        }
    }

    /// Copies `data` to `dst + offset` (synchronous).
    pub fn upload(
        &self,
        dst: &DeviceBuffer,
        offset: usize,
        data: &[u8],
    ) -> Result<(), DriverError> {
        assert!(
            offset + data.len() <= dst.bytes,
            "upload past the end of a buffer"
        );
        self.sync()?;
        // SAFETY: in bounds (asserted); the host slice lives across the synchronous copy.
        check("cuMemcpyHtoD", unsafe {
            sys::cuMemcpyHtoD_v2(dst.ptr + offset as u64, data.as_ptr().cast(), data.len())
        })
    }

    /// Copies `len` bytes from `src + offset` to the host (synchronous).
    pub fn download(
        &self,
        src: &DeviceBuffer,
        offset: usize,
        len: usize,
    ) -> Result<Vec<u8>, DriverError> {
        assert!(
            offset + len <= src.bytes,
            "download past the end of a buffer"
        );
        self.sync()?;
        let mut out = vec![0u8; len];
        // SAFETY: in bounds; `out` has `len` bytes.
        check("cuMemcpyDtoH", unsafe {
            sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), src.ptr + offset as u64, len)
        })?;
        Ok(out)
    }

    /// Copies all of `src` into `dst` (at least as large), on the stream.
    pub fn copy(&self, dst: &DeviceBuffer, src: &DeviceBuffer) -> Result<(), DriverError> {
        assert!(src.bytes <= dst.bytes, "copy into a smaller buffer");
        // SAFETY: both buffers are live allocations; `src.bytes` fits in `dst` (asserted).
        check("cuMemcpyDtoDAsync", unsafe {
            sys::cuMemcpyDtoDAsync_v2(dst.ptr, src.ptr, src.bytes, self.stream)
        })
    }

    /// Fills `count` 32-bit words at `dst + offset` with `value`, on the stream.
    pub fn fill_u32(
        &self,
        dst: &DeviceBuffer,
        offset: usize,
        value: u32,
        count: usize,
    ) -> Result<(), DriverError> {
        assert!(
            offset.is_multiple_of(4) && offset + count * 4 <= dst.bytes,
            "fill out of bounds"
        );
        // SAFETY: in bounds (asserted).
        check("cuMemsetD32Async", unsafe {
            sys::cuMemsetD32Async(dst.ptr + offset as u64, value, count, self.stream)
        })
    }

    /// Fills `count` bytes at `dst + offset` with `value`, on the stream.
    pub fn fill_u8(
        &self,
        dst: &DeviceBuffer,
        offset: usize,
        value: u8,
        count: usize,
    ) -> Result<(), DriverError> {
        assert!(offset + count <= dst.bytes, "fill out of bounds");
        // SAFETY: in bounds (asserted).
        check("cuMemsetD8Async", unsafe {
            sys::cuMemsetD8Async(dst.ptr + offset as u64, value, count, self.stream)
        })
    }

    /// Waits for everything on the stream; a kernel's fault surfaces here.
    pub fn sync(&self) -> Result<(), DriverError> {
        // SAFETY: our stream.
        check("cuStreamSynchronize", unsafe {
            sys::cuStreamSynchronize(self.stream)
        })
    }

    /// Whether the context finishes all its work without an error (a fault leaves it in an
    /// error state that every later call reports).
    pub fn context_healthy(&self) -> bool {
        // SAFETY: our context is current on this thread (see `open`); synchronizing it waits
        // for every stream in it, ours included.
        let status = unsafe { sys::cuCtxSynchronize() };
        status == sys::CUresult::CUDA_SUCCESS
    }

    /// Compiles PTX and loads it, keeping the compiler's log and, where there is one, the cubin.
    ///
    /// With `arch` given and a `ptxas` in the toolchain search order, the PTX is compiled as a
    /// whole program for that arch and the cubin loaded; otherwise (or when that cubin does not
    /// load) the driver compiles it (cuModuleLoadDataEx). Both are whole-program compilations.
    /// The driver's JIT *linker* (cuLink) is not used: it compiles PTX as a separate
    /// compilation unit, and ptxas then ignores `setmaxnreg` (C7504), which changes the code a
    /// Hopper kernel gets.
    pub fn compile(&self, ptx: &str, arch: Option<Arch>) -> Result<Compiled, JitError> {
        let ahead = match arch {
            Some(arch) => Some(whole_program(ptx, arch)?),
            None => None,
        };
        self.compile_with(ptx, ahead.as_ref())
    }

    /// Loads `ahead` (the whole-program cubin ptxas made for this PTX before the worker needed
    /// it), or, without one, has the driver compile `ptx`; a cubin that does not load falls
    /// back to the driver, with a note in the log, as in [`Gpu::compile`].
    pub fn compile_with(&self, ptx: &str, ahead: Option<&Cubin>) -> Result<Compiled, JitError> {
        let start = Instant::now();
        let mut notes = String::new();
        match ahead {
            Some(Cubin::Made {
                bytes,
                log,
                compiler,
            }) => match self.load(bytes) {
                Ok(module) => {
                    return Ok(Compiled {
                        module,
                        cubin: Some(bytes.clone()),
                        log: log.trim().to_string(),
                        compiler: compiler.clone(),
                        millis: start.elapsed().as_secs_f64() * 1e3,
                    });
                }
                Err(e) => {
                    notes = format!(
                        "{compiler}'s cubin did not load ({e}); the driver compiled the PTX\n"
                    );
                }
            },
            Some(Cubin::NoPtxas(why)) => notes = format!("{why}; the driver compiled the PTX\n"),
            None => {}
        }
        const LOG: usize = 1 << 16;
        let mut info = vec![0u8; LOG];
        let mut error = vec![0u8; LOG];
        let mut opts = [
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            sys::CUjit_option::CU_JIT_LOG_VERBOSE,
        ];
        let mut vals: [*mut c_void; 5] = [
            info.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(LOG),
            error.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(LOG),
            std::ptr::without_provenance_mut(1),
        ];
        let text = |buf: &[u8]| {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            String::from_utf8_lossy(&buf[..end]).trim().to_string()
        };
        let src = CString::new(ptx.replace('\0', "")).expect("NULs were removed");
        let mut handle = std::ptr::null_mut();
        // SAFETY: the option arrays and log buffers outlive the call; the image is NUL-terminated.
        let result = check("cuModuleLoadDataEx", unsafe {
            sys::cuModuleLoadDataEx(
                &mut handle,
                src.as_ptr().cast(),
                opts.len() as u32,
                opts.as_mut_ptr(),
                vals.as_mut_ptr(),
            )
        });
        let millis = start.elapsed().as_secs_f64() * 1e3;
        match result {
            Ok(()) => Ok(Compiled {
                module: Module { handle },
                cubin: None,
                log: format!("{notes}{}", text(&info)).trim().to_string(),
                compiler: "driver JIT (cuModuleLoadDataEx)".into(),
                millis,
            }),
            Err(e) => Err(JitError {
                error: e,
                log: format!("{notes}{}\n{}", text(&error), text(&info))
                    .trim()
                    .to_string(),
            }),
        }
    }

    fn load(&self, cubin: &[u8]) -> Result<Module, DriverError> {
        let mut handle = std::ptr::null_mut();
        // SAFETY: the image is a complete cubin from ptxas.
        check("cuModuleLoadData", unsafe {
            sys::cuModuleLoadData(&mut handle, cubin.as_ptr().cast())
        })?;
        Ok(Module { handle })
    }

    pub fn kernel(&self, module: &Module, name: &str) -> Result<Kernel, DriverError> {
        let cname = CString::new(name.replace('\0', "")).expect("NULs were removed");
        let mut handle = std::ptr::null_mut();
        // SAFETY: a live module and a NUL-terminated name.
        check("cuModuleGetFunction", unsafe {
            sys::cuModuleGetFunction(&mut handle, module.handle, cname.as_ptr())
        })?;
        Ok(Kernel { handle })
    }

    /// Address and size of a `.global` variable the module defines.
    pub fn global(&self, module: &Module, name: &str) -> Result<(u64, usize), DriverError> {
        let cname = CString::new(name.replace('\0', "")).expect("NULs were removed");
        let mut ptr = 0;
        let mut bytes = 0usize;
        // SAFETY: a live module, a NUL-terminated name and out-pointers to locals.
        check("cuModuleGetGlobal", unsafe {
            sys::cuModuleGetGlobal_v2(&mut ptr, &mut bytes, module.handle, cname.as_ptr())
        })?;
        Ok((ptr, bytes))
    }

    /// Copies `data` to a raw device address (a module global the caller sized).
    pub fn upload_raw(&self, ptr: u64, data: &[u8]) -> Result<(), DriverError> {
        self.sync()?;
        // SAFETY: the caller got `ptr` from `global` and checked its size against `data`; the
        // host slice lives across the synchronous copy.
        check("cuMemcpyHtoD", unsafe {
            sys::cuMemcpyHtoD_v2(ptr, data.as_ptr().cast(), data.len())
        })
    }

    /// Copies `len` bytes from a raw device address (a module global) to the host.
    pub fn download_raw(&self, ptr: u64, len: usize) -> Result<Vec<u8>, DriverError> {
        self.sync()?;
        let mut out = vec![0u8; len];
        // SAFETY: the caller got `ptr`/`len` from `global`; `out` has `len` bytes.
        check("cuMemcpyDtoH", unsafe {
            sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), ptr, len)
        })?;
        Ok(out)
    }

    pub fn attributes(&self, k: Kernel) -> Result<KernelAttributes, DriverError> {
        use sys::CUfunction_attribute as F;
        let get = |a: F| -> Result<i32, DriverError> {
            let mut v = 0;
            // SAFETY: a live function handle.
            check("cuFuncGetAttribute", unsafe {
                sys::cuFuncGetAttribute(&mut v, a, k.handle)
            })?;
            Ok(v)
        };
        Ok(KernelAttributes {
            registers: get(F::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            static_shared_bytes: get(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            local_bytes: get(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            max_threads_per_block: get(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        })
    }

    /// Lets `k` use `bytes` of dynamic shared memory (needed above 48 KB) and, if asked,
    /// clusters beyond the portable size.
    pub fn prepare(
        &self,
        k: Kernel,
        dynamic_shared: u32,
        non_portable_cluster: bool,
    ) -> Result<(), DriverError> {
        use sys::CUfunction_attribute as F;
        // SAFETY: a live function handle.
        unsafe {
            check(
                "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                sys::cuFuncSetAttribute(
                    k.handle,
                    F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    i32::try_from(dynamic_shared).unwrap_or(i32::MAX),
                ),
            )?;
            if non_portable_cluster {
                check(
                    "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)",
                    sys::cuFuncSetAttribute(
                        k.handle,
                        F::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                        1,
                    ),
                )?;
            }
        }
        Ok(())
    }

    /// Launches `k` on the stream. `params` are the bytes of each parameter, in order.
    pub fn launch(
        &self,
        k: Kernel,
        g: &Geometry,
        params: &[ParamBytes],
    ) -> Result<(), DriverError> {
        let mut ptrs: Vec<*mut c_void> = params
            .iter()
            .map(|p| p.bytes.as_ptr() as *mut c_void)
            .collect();
        let mut attrs: Vec<sys::CUlaunchAttribute> = Vec::new();
        if let Some(c) = g.cluster {
            // SAFETY: zeroed is a valid bit pattern for this plain C struct.
            let mut a: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
            a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            a.value.clusterDim.x = c[0];
            a.value.clusterDim.y = c[1];
            a.value.clusterDim.z = c[2];
            attrs.push(a);
        }
        let cfg = sys::CUlaunchConfig {
            gridDimX: g.grid[0],
            gridDimY: g.grid[1],
            gridDimZ: g.grid[2],
            blockDimX: g.block[0],
            blockDimY: g.block[1],
            blockDimZ: g.block[2],
            sharedMemBytes: g.shared_mem,
            hStream: self.stream,
            attrs: if attrs.is_empty() {
                std::ptr::null_mut()
            } else {
                attrs.as_mut_ptr()
            },
            numAttrs: attrs.len() as u32,
        };
        // SAFETY: one pointer per declared parameter (the binder checked count and sizes), each
        // to at least as many bytes as the parameter; all outlive the call, which copies them.
        check("cuLaunchKernelEx", unsafe {
            sys::cuLaunchKernelEx(&cfg, k.handle, ptrs.as_mut_ptr(), std::ptr::null_mut())
        })
    }

    pub fn event(&self) -> Result<Event, DriverError> {
        let mut handle = std::ptr::null_mut();
        // SAFETY: out-pointer; default flags keep timing enabled.
        check("cuEventCreate", unsafe {
            sys::cuEventCreate(&mut handle, 0)
        })?;
        Ok(Event { handle })
    }

    pub fn record(&self, e: &Event) -> Result<(), DriverError> {
        // SAFETY: live event and stream.
        check("cuEventRecord", unsafe {
            sys::cuEventRecord(e.handle, self.stream)
        })
    }

    /// Milliseconds between two recorded, completed events.
    pub fn elapsed_ms(&self, start: &Event, end: &Event) -> Result<f32, DriverError> {
        let mut ms = 0f32;
        // SAFETY: live events.
        unsafe {
            check("cuEventSynchronize", sys::cuEventSynchronize(end.handle))?;
            check(
                "cuEventElapsedTime",
                sys::cuEventElapsedTime_v2(&mut ms, start.handle, end.handle),
            )?;
        }
        Ok(ms)
    }

    /// Encodes `map` over the tensor at `base` (validated when `map` was built).
    pub fn encode_tensor_map(
        &self,
        map: &super::tensor_map::TensorMapDesc,
        base: u64,
    ) -> Result<[u8; 128], DriverError> {
        let mut out = sys::CUtensorMap { opaque: [0; 16] };
        let rank = u32::try_from(map.dims().len()).expect("rank is at most 5");
        // SAFETY: `out` is a live CUtensorMap; the arrays have `rank` entries (strides
        // rank - 1), as TensorMapDesc guarantees, and outlive the call.
        unsafe {
            check(
                "cuTensorMapEncodeTiled",
                sys::cuTensorMapEncodeTiled(
                    &mut out,
                    map.data_type(),
                    rank,
                    base as *mut c_void,
                    map.dims().as_ptr(),
                    map.strides().as_ptr(),
                    map.box_dims().as_ptr(),
                    map.element_strides().as_ptr(),
                    map.sys_interleave(),
                    map.sys_swizzle(),
                    map.sys_l2_promotion(),
                    map.sys_oob_fill(),
                ),
            )?;
        }
        let mut bytes = [0u8; 128];
        for (chunk, word) in bytes.chunks_exact_mut(8).zip(out.opaque) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        Ok(bytes)
    }

    /// Clocks, temperature and power now (NVML), if available.
    pub fn state(&self) -> Option<GpuState> {
        super::nvml::state(&self.info.pci_bus_id)
    }

    pub fn device(&self) -> i32 {
        self.dev
    }

    /// The context, for the profiler in this module.
    pub(super) fn raw_context(&self) -> sys::CUcontext {
        self.ctx
    }

    /// The stream, for the library wrappers in this module.
    pub(super) fn raw_stream(&self) -> sys::CUstream {
        self.stream
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        self.kept.on.set(false);
        self.kept.release();
        // SAFETY: our stream and the context we created; destroying the context pops it
        // from this thread.
        unsafe {
            let _ = sys::cuStreamDestroy_v2(self.stream);
            let _ = sys::cuCtxDestroy_v2(self.ctx);
        }
    }
}
