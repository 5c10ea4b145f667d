//! The attention baseline: cuDNN scaled-dot-product attention (SDPA), forward with softmax
//! statistics (LSE) and backward, built natively through cuDNN's backend graph API.
//!
//! The graphs are the ones cudnn-frontend's composite SDPA nodes lower to (the form cuDNN's
//! fused flash-attention engines recognise), written here directly against the backend API:
//!
//! - forward: `S = Q @ K^T` (fp32), `S *= scale`, optional causal mask (row/column indices,
//!   `row >= col`, `-inf` elsewhere), `M = max_j S`, `E = exp(S - M)`, `Z = sum_j E`,
//!   `Stats = M + log Z` (the LSE, fp32 `[B,H,S,1]`), `P = E / Z` (bf16), `O = P @ V`;
//! - backward: `Delta = sum_d dO * O` (fp32, a cuDNN-visible buffer), `P = exp(scale * Q K^T
//!   (masked) - Stats)`, `dV = P^T dO`, `dS = P * (dO V^T - Delta) * scale`, `dK = dS^T Q`,
//!   `dQ = dS K` accumulated in fp32 and converted to bf16;
//! - paged decode ([`Sdpa::paged_decode`], cuDNN >= 9.5): K^T and V gathered from page
//!   containers by paged-cache-load operations (page table + seq_len_kv), one query per
//!   sequence, grouped-query heads (Hq a multiple of Hkv), `S = Q K^T` with M/N overridden by
//!   seq_len_q/seq_len_kv, `* scale`, the padding mask (`row < seq_len_q && col < seq_len_kv`,
//!   else -inf), softmax with stats, `O = P V` with M/K overridden;
//! - fp8 forward ([`Sdpa::forward_fp8`]): the frontend's sdpa_fp8 pattern, e4m3 Q/K/V/O with
//!   per-tensor descales (see [`SdpaKind::tensors`] for what is bound and what is internal).
//!
//! Every graph's outputs are checked against the harness's fp32 reference once per timed
//! workload (`engine::baseline::check_baseline`, recorded as the timing's `baseline_check`).
//!
//! Q, K, V, O, dO, dQ, dK, dV are bf16 `[B,H,S,D]` row-major; the LSE is fp32 `[B,H,S]`. K (and
//! V in the backward pass) enter the graph as transposed views, as the backend expects.
//!
//! Engine choice: the execution plans of heuristics mode A's configurations (the fallback
//! list's when none of A's finalizes) are all kept, and the baseline times them once per
//! workload and runs the fastest (`engine::baseline`). The library is loaded through
//! [`library`] (explicit search order) and every entry point is resolved from that very file,
//! so the recorded path is the library that ran; cudarc supplies only the header types.
//!
//! Here: the loaded entry points, descriptors and handle, and the error type. `builder` makes
//! tensors and operations, one file per graph (`forward`, `backward`, `paged_decode`,
//! `forward_fp8`) wires them, `plan` finalizes the engine configurations, and `sdpa` holds the
//! public plan type.

use std::ffi::{CStr, c_void};

use cudarc::cudnn::sys;
use sys::cudnnBackendAttributeName_t as A;
use sys::cudnnBackendAttributeType_t as T;
use sys::cudnnBackendDescriptorType_t as D;

use super::driver::DriverError;
use super::library::{self, CudaLibrary, LibraryNotFound};

mod backward;
mod builder;
mod forward;
mod forward_fp8;
mod graph;
mod paged_decode;
mod plan;
mod prefill;
mod sdpa;

pub use graph::{SdpaKind, SdpaPass, SdpaShape};
pub use paged_decode::PagedDecodeShape;
pub use prefill::{PagedKv, PrefillShape};
pub use sdpa::{BoundSdpa, Sdpa};

#[derive(Debug, thiserror::Error)]
pub enum DnnError {
    #[error(transparent)]
    LibraryMissing(#[from] LibraryNotFound),
    #[error("cuDNN library {path} lacks the entry point {symbol} (cuDNN 9 is required)")]
    Symbol { path: String, symbol: &'static str },
    #[error("cuDNN {call} failed: {status}{detail}")]
    Call {
        call: String,
        status: String,
        detail: String,
    },
    #[error("cuDNN found no engine for the SDPA {graph} graph: {tried}")]
    NoEngine { graph: &'static str, tried: String },
    #[error("SDPA {graph} graph: invalid shape: {why}")]
    Shape { graph: &'static str, why: String },
    #[error("SDPA {graph} graph needs cuDNN {needs}; the loaded library ({path}) is {have}")]
    Version {
        graph: &'static str,
        needs: &'static str,
        have: String,
        path: String,
    },
    #[error(transparent)]
    Driver(#[from] DriverError),
}

type CreateFn = unsafe extern "C" fn(*mut sys::cudnnHandle_t) -> sys::cudnnStatus_t;
type DestroyFn = unsafe extern "C" fn(sys::cudnnHandle_t) -> sys::cudnnStatus_t;
type SetStreamFn =
    unsafe extern "C" fn(sys::cudnnHandle_t, sys::cudaStream_t) -> sys::cudnnStatus_t;
type VersionFn = unsafe extern "C" fn() -> usize;
type ErrorStringFn = unsafe extern "C" fn(sys::cudnnStatus_t) -> *const std::ffi::c_char;
type LastErrorFn = unsafe extern "C" fn(*mut std::ffi::c_char, usize);
type CreateDescFn = unsafe extern "C" fn(
    sys::cudnnBackendDescriptorType_t,
    *mut sys::cudnnBackendDescriptor_t,
) -> sys::cudnnStatus_t;
type DescFn = unsafe extern "C" fn(sys::cudnnBackendDescriptor_t) -> sys::cudnnStatus_t;
type SetAttrFn = unsafe extern "C" fn(
    sys::cudnnBackendDescriptor_t,
    sys::cudnnBackendAttributeName_t,
    sys::cudnnBackendAttributeType_t,
    i64,
    *const c_void,
) -> sys::cudnnStatus_t;
type GetAttrFn = unsafe extern "C" fn(
    sys::cudnnBackendDescriptor_t,
    sys::cudnnBackendAttributeName_t,
    sys::cudnnBackendAttributeType_t,
    i64,
    *mut i64,
    *mut c_void,
) -> sys::cudnnStatus_t;
type ExecuteFn = unsafe extern "C" fn(
    sys::cudnnHandle_t,
    sys::cudnnBackendDescriptor_t,
    sys::cudnnBackendDescriptor_t,
) -> sys::cudnnStatus_t;

/// The cuDNN entry points used here, resolved from the loaded library file.
struct Api {
    create: CreateFn,
    destroy: DestroyFn,
    set_stream: SetStreamFn,
    version: VersionFn,
    error_string: ErrorStringFn,
    last_error: Option<LastErrorFn>,
    create_desc: CreateDescFn,
    destroy_desc: DescFn,
    finalize: DescFn,
    set_attr: SetAttrFn,
    get_attr: GetAttrFn,
    execute: ExecuteFn,
    path: String,
}

fn api() -> Result<&'static Api, DnnError> {
    static API: std::sync::OnceLock<Api> = std::sync::OnceLock::new();
    if let Some(a) = API.get() {
        return Ok(a);
    }
    // cuDNN's runtime-compiled engines open NVRTC by name: have ours loaded (best effort; the
    // engines that need it fail to finalize without it and the next configuration is tried).
    let _ = library::load(CudaLibrary::Nvrtc);
    let lib = library::load(CudaLibrary::Cudnn)?;
    let path = lib.path.display().to_string();
    let get = |symbol: &'static str| {
        library::symbol(CudaLibrary::Cudnn, symbol).ok_or_else(|| DnnError::Symbol {
            path: path.clone(),
            symbol,
        })
    };
    // SAFETY: each address is the named cuDNN 9 entry point, cast to the signature its header
    // declares.
    let a = unsafe {
        Api {
            create: std::mem::transmute::<*const c_void, CreateFn>(get("cudnnCreate")?),
            destroy: std::mem::transmute::<*const c_void, DestroyFn>(get("cudnnDestroy")?),
            set_stream: std::mem::transmute::<*const c_void, SetStreamFn>(get("cudnnSetStream")?),
            version: std::mem::transmute::<*const c_void, VersionFn>(get("cudnnGetVersion")?),
            error_string: std::mem::transmute::<*const c_void, ErrorStringFn>(get(
                "cudnnGetErrorString",
            )?),
            last_error: get("cudnnGetLastErrorString")
                .ok()
                .map(|p| std::mem::transmute::<*const c_void, LastErrorFn>(p)),
            create_desc: std::mem::transmute::<*const c_void, CreateDescFn>(get(
                "cudnnBackendCreateDescriptor",
            )?),
            destroy_desc: std::mem::transmute::<*const c_void, DescFn>(get(
                "cudnnBackendDestroyDescriptor",
            )?),
            finalize: std::mem::transmute::<*const c_void, DescFn>(get("cudnnBackendFinalize")?),
            set_attr: std::mem::transmute::<*const c_void, SetAttrFn>(get(
                "cudnnBackendSetAttribute",
            )?),
            get_attr: std::mem::transmute::<*const c_void, GetAttrFn>(get(
                "cudnnBackendGetAttribute",
            )?),
            execute: std::mem::transmute::<*const c_void, ExecuteFn>(get("cudnnBackendExecute")?),
            path: path.clone(),
        }
    };
    Ok(API.get_or_init(|| a))
}

impl Api {
    fn check(&self, call: impl Into<String>, s: sys::cudnnStatus_t) -> Result<(), DnnError> {
        if s == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS {
            return Ok(());
        }
        // SAFETY: cuDNN returns a static string for any status.
        let status = unsafe {
            let p = (self.error_string)(s);
            if p.is_null() {
                format!("{s:?}")
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        let mut detail = String::new();
        if let Some(f) = self.last_error {
            let mut buf = vec![0 as std::ffi::c_char; 1024];
            // SAFETY: cuDNN writes at most `len` bytes, NUL-terminated.
            unsafe { f(buf.as_mut_ptr(), buf.len()) };
            // SAFETY: NUL-terminated by cuDNN (and by the zeroed buffer).
            let msg = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
            let msg = msg.trim();
            if !msg.is_empty() {
                detail = format!(" ({msg})");
            }
        }
        Err(DnnError::Call {
            call: call.into(),
            status,
            detail,
        })
    }

    /// cuDNN's version as "major.minor.patch" (cudnnGetVersion gives e.g. 91400).
    fn version_text(&self) -> (usize, String) {
        // SAFETY: a plain query.
        let v = unsafe { (self.version)() };
        (v, format!("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100))
    }
}

/// A backend descriptor, destroyed on drop.
struct Desc {
    raw: sys::cudnnBackendDescriptor_t,
    api: &'static Api,
}

impl Desc {
    fn new(api: &'static Api, ty: D) -> Result<Desc, DnnError> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        api.check(format!("create {ty:?}"), unsafe {
            (api.create_desc)(ty, &mut raw)
        })?;
        Ok(Desc { raw, api })
    }

    fn set<V>(&self, name: A, ty: T, values: &[V]) -> Result<(), DnnError> {
        // SAFETY: `values` holds `len` elements of the attribute's declared type.
        self.api.check(format!("set {name:?}"), unsafe {
            (self.api.set_attr)(
                self.raw,
                name,
                ty,
                values.len() as i64,
                values.as_ptr().cast(),
            )
        })
    }

    fn set_desc(&self, name: A, others: &[&Desc]) -> Result<(), DnnError> {
        let raws: Vec<sys::cudnnBackendDescriptor_t> = others.iter().map(|d| d.raw).collect();
        self.set(name, T::CUDNN_TYPE_BACKEND_DESCRIPTOR, &raws)
    }

    fn finalize(&self, what: &str) -> Result<(), DnnError> {
        // SAFETY: a descriptor created by `new`.
        self.api.check(format!("finalize {what}"), unsafe {
            (self.api.finalize)(self.raw)
        })
    }

    fn get_i64(&self, name: A) -> Result<i64, DnnError> {
        let mut v = 0i64;
        let mut n = 0i64;
        // SAFETY: one int64 out-value.
        self.api.check(format!("get {name:?}"), unsafe {
            (self.api.get_attr)(
                self.raw,
                name,
                T::CUDNN_TYPE_INT64,
                1,
                &mut n,
                (&raw mut v).cast(),
            )
        })?;
        Ok(v)
    }
}

impl Drop for Desc {
    fn drop(&mut self) {
        // SAFETY: created by `new`, destroyed once.
        let _ = unsafe { (self.api.destroy_desc)(self.raw) };
    }
}

/// A cuDNN handle bound to the engine's stream.
struct Handle {
    raw: sys::cudnnHandle_t,
    api: &'static Api,
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: created by cudnnCreate, destroyed once.
        let _ = unsafe { (self.api.destroy)(self.raw) };
    }
}
