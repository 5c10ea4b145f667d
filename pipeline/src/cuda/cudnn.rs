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
//! Engine choice: heuristics mode A (then the fallback list), the first engine configuration
//! whose execution plan finalizes. The library is loaded through [`library`] (explicit search
//! order) and every entry point is resolved from that very file, so the recorded path is the
//! library that ran; cudarc supplies only the header types.

use std::ffi::{CStr, c_void};

use cudarc::cudnn::sys;
use sys::cudnnBackendAttributeName_t as A;
use sys::cudnnBackendAttributeType_t as T;
use sys::cudnnBackendDescriptorType_t as D;
use sys::cudnnDataType_t as Dt;
use sys::cudnnPointwiseMode_t as Pw;

use super::driver::{DeviceBuffer, DriverError, Gpu};
use super::library::{self, CudaLibrary, LibraryNotFound};

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

/// A tensor of the graph: its descriptor's index and its unique id.
#[derive(Debug, Clone, Copy)]
struct Tensor {
    index: usize,
    uid: i64,
}

/// Host scalars passed by value (their addresses go into the variant pack).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scalar {
    Scale,
    One,
    NegInf,
}

/// Builds one operation graph: tensors, then operations on them.
struct Builder {
    api: &'static Api,
    tensors: Vec<Desc>,
    ops: Vec<Desc>,
    next_uid: i64,
    scalars: Vec<(Scalar, Tensor)>,
}

fn row_major(dims: [i64; 4]) -> [i64; 4] {
    [dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1]
}

impl Builder {
    fn new(api: &'static Api) -> Builder {
        Builder {
            api,
            tensors: Vec::new(),
            ops: Vec::new(),
            next_uid: 1,
            scalars: Vec::new(),
        }
    }

    fn tensor_desc(
        &mut self,
        dims: [i64; 4],
        strides: [i64; 4],
        dtype: Dt,
        is_virtual: bool,
        by_value: bool,
    ) -> Result<Tensor, DnnError> {
        let uid = self.next_uid;
        self.next_uid += 1;
        let d = Desc::new(self.api, D::CUDNN_BACKEND_TENSOR_DESCRIPTOR)?;
        d.set(
            A::CUDNN_ATTR_TENSOR_DATA_TYPE,
            T::CUDNN_TYPE_DATA_TYPE,
            &[dtype],
        )?;
        d.set(A::CUDNN_ATTR_TENSOR_DIMENSIONS, T::CUDNN_TYPE_INT64, &dims)?;
        d.set(A::CUDNN_ATTR_TENSOR_STRIDES, T::CUDNN_TYPE_INT64, &strides)?;
        d.set(A::CUDNN_ATTR_TENSOR_UNIQUE_ID, T::CUDNN_TYPE_INT64, &[uid])?;
        d.set(
            A::CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
            T::CUDNN_TYPE_INT64,
            &[16i64],
        )?;
        d.set(
            A::CUDNN_ATTR_TENSOR_IS_VIRTUAL,
            T::CUDNN_TYPE_BOOLEAN,
            &[is_virtual],
        )?;
        if by_value {
            d.set(
                A::CUDNN_ATTR_TENSOR_IS_BY_VALUE,
                T::CUDNN_TYPE_BOOLEAN,
                &[true],
            )?;
        }
        d.finalize("tensor")?;
        self.tensors.push(d);
        Ok(Tensor {
            index: self.tensors.len() - 1,
            uid,
        })
    }

    /// A tensor in memory (an input or output of the graph).
    fn io(&mut self, dims: [i64; 4], strides: [i64; 4], dtype: Dt) -> Result<Tensor, DnnError> {
        self.tensor_desc(dims, strides, dtype, false, false)
    }

    /// An intermediate that never reaches memory, row-major.
    fn virt(&mut self, dims: [i64; 4], dtype: Dt) -> Result<Tensor, DnnError> {
        self.tensor_desc(dims, row_major(dims), dtype, true, false)
    }

    /// A by-value fp32 scalar, one descriptor per kind however often it is used.
    fn scalar(&mut self, which: Scalar) -> Result<Tensor, DnnError> {
        if let Some(&(_, t)) = self.scalars.iter().find(|(s, _)| *s == which) {
            return Ok(t);
        }
        let t = self.tensor_desc([1; 4], [1; 4], Dt::CUDNN_DATA_FLOAT, false, true)?;
        self.scalars.push((which, t));
        Ok(t)
    }

    fn t(&self, t: Tensor) -> &Desc {
        &self.tensors[t.index]
    }

    /// A pointwise operation `y = mode(x[, b[, t]])` computed in `math`.
    fn pointwise(
        &mut self,
        mode: Pw,
        math: Dt,
        inputs: &[Tensor],
        y: Tensor,
        axis: Option<i64>,
    ) -> Result<(), DnnError> {
        let pw = Desc::new(self.api, D::CUDNN_BACKEND_POINTWISE_DESCRIPTOR)?;
        pw.set(
            A::CUDNN_ATTR_POINTWISE_MODE,
            T::CUDNN_TYPE_POINTWISE_MODE,
            &[mode],
        )?;
        pw.set(
            A::CUDNN_ATTR_POINTWISE_MATH_PREC,
            T::CUDNN_TYPE_DATA_TYPE,
            &[math],
        )?;
        if let Some(axis) = axis {
            pw.set(A::CUDNN_ATTR_POINTWISE_AXIS, T::CUDNN_TYPE_INT64, &[axis])?;
        }
        pw.finalize("pointwise descriptor")?;
        let op = Desc::new(self.api, D::CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR)?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, &[&pw])?;
        op.set_desc(
            A::CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
            &[self.t(inputs[0])],
        )?;
        if let Some(&b) = inputs.get(1) {
            op.set_desc(A::CUDNN_ATTR_OPERATION_POINTWISE_BDESC, &[self.t(b)])?;
        }
        if let Some(&t) = inputs.get(2) {
            op.set_desc(A::CUDNN_ATTR_OPERATION_POINTWISE_TDESC, &[self.t(t)])?;
        }
        op.set_desc(A::CUDNN_ATTR_OPERATION_POINTWISE_YDESC, &[self.t(y)])?;
        op.set(
            A::CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1,
            T::CUDNN_TYPE_FLOAT,
            &[1.0f32],
        )?;
        if inputs.len() >= 2 {
            op.set(
                A::CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2,
                T::CUDNN_TYPE_FLOAT,
                &[1.0f32],
            )?;
        }
        op.finalize(&format!("pointwise {mode:?}"))?;
        self.ops.push(op);
        Ok(())
    }

    /// A pointwise operation into a new fp32 virtual tensor of shape `dims`.
    fn pw(&mut self, mode: Pw, inputs: &[Tensor], dims: [i64; 4]) -> Result<Tensor, DnnError> {
        let y = self.virt(dims, Dt::CUDNN_DATA_FLOAT)?;
        self.pointwise(mode, Dt::CUDNN_DATA_FLOAT, inputs, y, None)?;
        Ok(y)
    }

    fn reduction(
        &mut self,
        op_kind: sys::cudnnReduceTensorOp_t,
        x: Tensor,
        y: Tensor,
    ) -> Result<(), DnnError> {
        let r = Desc::new(self.api, D::CUDNN_BACKEND_REDUCTION_DESCRIPTOR)?;
        r.set(
            A::CUDNN_ATTR_REDUCTION_OPERATOR,
            T::CUDNN_TYPE_REDUCTION_OPERATOR_TYPE,
            &[op_kind],
        )?;
        r.set(
            A::CUDNN_ATTR_REDUCTION_COMP_TYPE,
            T::CUDNN_TYPE_DATA_TYPE,
            &[Dt::CUDNN_DATA_FLOAT],
        )?;
        r.finalize("reduction descriptor")?;
        let op = Desc::new(self.api, D::CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR)?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_REDUCTION_XDESC, &[self.t(x)])?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_REDUCTION_YDESC, &[self.t(y)])?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_REDUCTION_DESC, &[&r])?;
        op.finalize("reduction")?;
        self.ops.push(op);
        Ok(())
    }

    fn matmul(&mut self, a: Tensor, b: Tensor, c: Tensor) -> Result<(), DnnError> {
        self.matmul_overridden(a, b, c, [None; 3])
    }

    /// A matmul whose per-batch M, N and K extents may be overridden by int32 `[B,1,1,1]`
    /// tensors (the actual sequence lengths of a padded or paged problem).
    fn matmul_overridden(
        &mut self,
        a: Tensor,
        b: Tensor,
        c: Tensor,
        mnk: [Option<Tensor>; 3],
    ) -> Result<(), DnnError> {
        let m = Desc::new(self.api, D::CUDNN_BACKEND_MATMUL_DESCRIPTOR)?;
        m.set(
            A::CUDNN_ATTR_MATMUL_COMP_TYPE,
            T::CUDNN_TYPE_DATA_TYPE,
            &[Dt::CUDNN_DATA_FLOAT],
        )?;
        m.finalize("matmul descriptor")?;
        let op = Desc::new(self.api, D::CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR)?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_MATMUL_ADESC, &[self.t(a)])?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_MATMUL_BDESC, &[self.t(b)])?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_MATMUL_CDESC, &[self.t(c)])?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_MATMUL_DESC, &[&m])?;
        let names = [
            A::CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC,
            A::CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC,
            A::CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC,
        ];
        for (name, t) in names.into_iter().zip(mnk) {
            if let Some(t) = t {
                op.set_desc(name, &[self.t(t)])?;
            }
        }
        op.finalize("matmul")?;
        self.ops.push(op);
        Ok(())
    }

    fn reshape(&mut self, x: Tensor, y: Tensor) -> Result<(), DnnError> {
        let op = Desc::new(self.api, D::CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR)?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_RESHAPE_XDESC, &[self.t(x)])?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_RESHAPE_YDESC, &[self.t(y)])?;
        op.finalize("reshape")?;
        self.ops.push(op);
        Ok(())
    }

    /// Gathers a paged K or V cache into the dense virtual tensor `y` (`[B,H,D,S]` K^T-strided
    /// for K, `[B,H,S,D]` for V): `container` `[num_pages,H,block_size,D]`, `page_table` int32
    /// `[B,1,pages_per_seq,1]`, `seq_len` int32 `[B,1,1,1]` (cuDNN >= 9.5).
    fn paged_cache_load(
        &mut self,
        container: Tensor,
        seq_len: Tensor,
        page_table: Tensor,
        y: Tensor,
    ) -> Result<(), DnnError> {
        let op = Desc::new(
            self.api,
            D::CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR,
        )?;
        op.set_desc(
            A::CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_CONTAINER_DESC,
            &[self.t(container)],
        )?;
        op.set_desc(
            A::CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_PAGE_TABLE_DESC,
            &[self.t(page_table)],
        )?;
        op.set_desc(
            A::CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_SEQUENCE_DESC,
            &[self.t(seq_len)],
        )?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_YDESC, &[self.t(y)])?;
        op.finalize("paged cache load")?;
        self.ops.push(op);
        Ok(())
    }

    /// The padding mask on scores `s` `[B,H,Sq,Skv]` (the frontend's `padding_mask` score
    /// modifier): keep (i, j) when `i < seq_len_q[b]` and `j < seq_len_kv[b]`, else -inf.
    fn padding_mask(
        &mut self,
        s: Tensor,
        dims: [i64; 4],
        seq_len_q: Tensor,
        seq_len_kv: Tensor,
    ) -> Result<Tensor, DnnError> {
        let i32t = Dt::CUDNN_DATA_INT32;
        let boolean = Dt::CUDNN_DATA_BOOLEAN;
        let row = self.virt(dims, i32t)?;
        self.pointwise(Pw::CUDNN_POINTWISE_GEN_INDEX, i32t, &[s], row, Some(2))?;
        let col = self.virt(dims, i32t)?;
        self.pointwise(Pw::CUDNN_POINTWISE_GEN_INDEX, i32t, &[s], col, Some(3))?;
        let row_in = self.virt(dims, boolean)?;
        self.pointwise(
            Pw::CUDNN_POINTWISE_CMP_LT,
            boolean,
            &[row, seq_len_q],
            row_in,
            None,
        )?;
        let col_in = self.virt(dims, boolean)?;
        self.pointwise(
            Pw::CUDNN_POINTWISE_CMP_LT,
            boolean,
            &[col, seq_len_kv],
            col_in,
            None,
        )?;
        let keep = self.virt(dims, boolean)?;
        self.pointwise(
            Pw::CUDNN_POINTWISE_LOGICAL_AND,
            boolean,
            &[row_in, col_in],
            keep,
            None,
        )?;
        self.keep_or_neg_inf(s, keep, dims)
    }

    /// `s` where `keep`, else -inf: the select both masks end with.
    fn keep_or_neg_inf(
        &mut self,
        s: Tensor,
        keep: Tensor,
        dims: [i64; 4],
    ) -> Result<Tensor, DnnError> {
        let neg_inf = self.scalar(Scalar::NegInf)?;
        let out = self.virt(dims, Dt::CUDNN_DATA_FLOAT)?;
        self.pointwise(
            Pw::CUDNN_POINTWISE_BINARY_SELECT,
            Dt::CUDNN_DATA_FLOAT,
            &[s, neg_inf, keep],
            out,
            None,
        )?;
        Ok(out)
    }

    /// The causal (top-left) mask on scores `s` `[B,H,Sq,Skv]`: keep key j for query i when
    /// i >= j, else -inf.
    fn causal_mask(&mut self, s: Tensor, dims: [i64; 4]) -> Result<Tensor, DnnError> {
        let row = self.virt(dims, Dt::CUDNN_DATA_INT32)?;
        self.pointwise(
            Pw::CUDNN_POINTWISE_GEN_INDEX,
            Dt::CUDNN_DATA_FLOAT,
            &[s],
            row,
            Some(2),
        )?;
        let col = self.virt(dims, Dt::CUDNN_DATA_INT32)?;
        self.pointwise(
            Pw::CUDNN_POINTWISE_GEN_INDEX,
            Dt::CUDNN_DATA_FLOAT,
            &[s],
            col,
            Some(3),
        )?;
        let keep = self.virt(dims, Dt::CUDNN_DATA_BOOLEAN)?;
        self.pointwise(
            Pw::CUDNN_POINTWISE_CMP_GE,
            Dt::CUDNN_DATA_BOOLEAN,
            &[row, col],
            keep,
            None,
        )?;
        self.keep_or_neg_inf(s, keep, dims)
    }

    /// Softmax over the key axis with statistics, as the frontend's softmax node lowers it:
    /// `M = max x`, `E = exp(x - M)`, `Z = sum E`, `stats = M + log Z` (written to `stats`),
    /// returns `P = E / Z` as a virtual tensor of type `p_type`.
    fn softmax_with_stats(
        &mut self,
        x: Tensor,
        dims: [i64; 4],
        stats: Tensor,
        p_type: Dt,
    ) -> Result<Tensor, DnnError> {
        let f32t = Dt::CUDNN_DATA_FLOAT;
        let stats_dims = [dims[0], dims[1], dims[2], 1];
        let max = self.virt(stats_dims, f32t)?;
        self.reduction(sys::cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_MAX, x, max)?;
        let sub = self.pw(Pw::CUDNN_POINTWISE_SUB, &[x, max], dims)?;
        let exp = self.pw(Pw::CUDNN_POINTWISE_EXP, &[sub], dims)?;
        let sum = self.virt(stats_dims, f32t)?;
        self.reduction(
            sys::cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_ADD,
            exp,
            sum,
        )?;
        let log = self.pw(Pw::CUDNN_POINTWISE_LOG, &[sum], stats_dims)?;
        self.pointwise(Pw::CUDNN_POINTWISE_ADD, f32t, &[max, log], stats, None)?;
        let p = self.virt(dims, p_type)?;
        self.pointwise(Pw::CUDNN_POINTWISE_DIV, f32t, &[exp, sum], p, None)?;
        Ok(p)
    }

    /// Finalizes the operation graph on `handle`.
    fn graph(&self, handle: &Handle) -> Result<Desc, DnnError> {
        let g = Desc::new(self.api, D::CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)?;
        g.set(
            A::CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
            T::CUDNN_TYPE_HANDLE,
            &[handle.raw],
        )?;
        let ops: Vec<&Desc> = self.ops.iter().collect();
        g.set_desc(A::CUDNN_ATTR_OPERATIONGRAPH_OPS, &ops)?;
        g.finalize("operation graph")?;
        Ok(g)
    }
}

/// Shape of one SDPA problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SdpaShape {
    pub b: i64,
    pub h: i64,
    pub s: i64,
    pub d: i64,
    pub causal: bool,
}

/// Forward or backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SdpaPass {
    /// Inputs Q, K, V; outputs O, LSE.
    Forward,
    /// Inputs Q, K, V, O, dO, LSE; outputs dQ, dK, dV.
    Backward,
}

impl SdpaPass {
    /// The names of the tensors [`Sdpa::bind`] takes, in order.
    pub fn tensors(self) -> &'static [&'static str] {
        SdpaKind::from(self).tensors()
    }
}

/// Shape of one paged, grouped-query decode step (one query token per sequence).
///
/// K and V live in page containers `[num_pages, h_kv, block_size, d]` (row-major); sequence
/// `b` reads its pages through row `b` of a page table `[b, 1, max_pages_per_seq, 1]`, and its
/// first `seq_len_kv[b]` keys count (the rest are masked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PagedDecodeShape {
    pub b: i64,
    pub h_q: i64,
    pub h_kv: i64,
    pub d: i64,
    pub num_pages: i64,
    pub max_pages_per_seq: i64,
    /// Tokens per page (1 for the suite's decode task).
    pub block_size: i64,
}

impl PagedDecodeShape {
    /// The padded key length the graph is planned for: `max_pages_per_seq * block_size`.
    pub fn max_seq_len_kv(&self) -> i64 {
        self.max_pages_per_seq * self.block_size
    }

    /// Checks what cuDNN's paged SDPA needs of the shape.
    pub fn validate(&self) -> Result<(), String> {
        let named = [
            ("b", self.b),
            ("h_q", self.h_q),
            ("h_kv", self.h_kv),
            ("d", self.d),
            ("num_pages", self.num_pages),
            ("max_pages_per_seq", self.max_pages_per_seq),
            ("block_size", self.block_size),
        ];
        if let Some((n, v)) = named.iter().find(|(_, v)| *v <= 0) {
            return Err(format!("{n} = {v} must be positive"));
        }
        if self.h_q % self.h_kv != 0 {
            return Err(format!(
                "h_q = {} is not a multiple of h_kv = {} (grouped-query attention)",
                self.h_q, self.h_kv
            ));
        }
        head_dim_ok(self.d)
    }

    fn q_dims(&self) -> [i64; 4] {
        [self.b, self.h_q, 1, self.d]
    }

    fn container_dims(&self) -> [i64; 4] {
        [self.num_pages, self.h_kv, self.block_size, self.d]
    }

    fn page_table_dims(&self) -> ([i64; 4], [i64; 4]) {
        let p = self.max_pages_per_seq;
        ([self.b, 1, p, 1], [p, p, 1, 1])
    }

    /// The gathered K^T `[B,Hkv,D,S]` (dims, strides) and V `[B,Hkv,S,D]`, as the frontend
    /// lays them out.
    fn gathered_kv(&self) -> (Layout, Layout) {
        let (b, h, d, s) = (self.b, self.h_kv, self.d, self.max_seq_len_kv());
        (
            ([b, h, d, s], [h * d * s, d * s, 1, d]),
            ([b, h, s, d], [h * s * d, s * d, d, 1]),
        )
    }
}

/// A tensor's dims and strides.
type Layout = ([i64; 4], [i64; 4]);

fn head_dim_ok(d: i64) -> Result<(), String> {
    if d % 16 != 0 || d > 256 {
        return Err(format!(
            "head dimension d = {d} must be a multiple of 16 and at most 256"
        ));
    }
    Ok(())
}

impl SdpaShape {
    fn validate(&self) -> Result<(), String> {
        let named = [("b", self.b), ("h", self.h), ("s", self.s), ("d", self.d)];
        if let Some((n, v)) = named.iter().find(|(_, v)| *v <= 0) {
            return Err(format!("{n} = {v} must be positive"));
        }
        head_dim_ok(self.d)
    }
}

/// Which SDPA graph a plan holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SdpaKind {
    /// bf16 forward with LSE ([`Sdpa::new`] with [`SdpaPass::Forward`]).
    Forward,
    /// bf16 backward ([`Sdpa::new`] with [`SdpaPass::Backward`]).
    Backward,
    /// bf16 paged grouped-query decode with LSE ([`Sdpa::paged_decode`]).
    PagedDecode,
    /// fp8 (e4m3) forward with LSE ([`Sdpa::forward_fp8`]).
    ForwardFp8,
}

impl From<SdpaPass> for SdpaKind {
    fn from(p: SdpaPass) -> SdpaKind {
        match p {
            SdpaPass::Forward => SdpaKind::Forward,
            SdpaPass::Backward => SdpaKind::Backward,
        }
    }
}

impl SdpaKind {
    /// The names of the tensors [`Sdpa::bind`] takes, in order. Where a name is the task's
    /// tensor name the engine can look it up directly; the rest are derived buffers the
    /// engine provides:
    ///
    /// - `Forward`: Q, K, V bf16 `[B,H,S,D]`; O bf16 `[B,H,S,D]`, LSE f32 `[B,H,S]`.
    /// - `Backward`: Q, K, V, O, dO bf16, LSE f32; dQ, dK, dV bf16.
    /// - `PagedDecode`: q bf16 `[B,Hq,D]`; k_cache, v_cache bf16 `[num_pages,block_size(=1),
    ///   Hkv,D]` (read as `[num_pages,Hkv,block_size,D]`, the same bytes when block_size is
    ///   1); page_table_k, page_table_v int32 `[B,max_pages_per_seq]` (may be one buffer,
    ///   unused slots any valid page, e.g. 0); seq_len_kv int32 `[B]`; output bf16
    ///   `[B,Hq,D]`, lse f32 `[B,Hq]`. seq_len_q (all 1) is an internal buffer.
    /// - `ForwardFp8`: Q, K, V e4m3 `[B,H,S,D]`; descale_q, descale_k, descale_v f32 `[1]`;
    ///   O e4m3 `[B,H,S,D]`, LSE f32 `[B,H,S]`. descale_s, scale_s, scale_o (1.0) and the
    ///   amax_s, amax_o outputs are internal buffers.
    pub fn tensors(self) -> &'static [&'static str] {
        match self {
            SdpaKind::Forward => &["Q", "K", "V", "O", "LSE"],
            SdpaKind::Backward => &["Q", "K", "V", "O", "dO", "LSE", "dQ", "dK", "dV"],
            SdpaKind::PagedDecode => &[
                "q",
                "k_cache",
                "v_cache",
                "page_table_k",
                "page_table_v",
                "seq_len_kv",
                "output",
                "lse",
            ],
            SdpaKind::ForwardFp8 => &[
                "Q",
                "K",
                "V",
                "descale_q",
                "descale_k",
                "descale_v",
                "O",
                "LSE",
            ],
        }
    }

    /// Which of [`SdpaKind::tensors`] the graph writes.
    pub fn outputs(self) -> &'static [&'static str] {
        match self {
            SdpaKind::Forward | SdpaKind::ForwardFp8 => &["O", "LSE"],
            SdpaKind::Backward => &["dQ", "dK", "dV"],
            SdpaKind::PagedDecode => &["output", "lse"],
        }
    }

    /// Words for a baseline label, e.g. "fp8 forward with LSE".
    pub fn label(self) -> &'static str {
        match self {
            SdpaKind::Forward => "forward with LSE",
            SdpaKind::Backward => "backward",
            SdpaKind::PagedDecode => "paged GQA decode with LSE",
            SdpaKind::ForwardFp8 => "fp8 forward with LSE",
        }
    }

    fn graph_name(self) -> &'static str {
        match self {
            SdpaKind::Forward => "forward",
            SdpaKind::Backward => "backward",
            SdpaKind::PagedDecode => "paged decode",
            SdpaKind::ForwardFp8 => "fp8 forward",
        }
    }
}

/// A planned cuDNN SDPA for one shape; bind it to tensors, then launch as often as needed.
pub struct Sdpa {
    api: &'static Api,
    kind: SdpaKind,
    // Field order: descriptors drop before the handle they were made on.
    plan: Desc,
    _graph: Desc,
    _builder: Builder,
    handle: Handle,
    /// Uids of the tensors in [`SdpaKind::tensors`] order.
    io_uids: Vec<i64>,
    /// Uids of the by-value scalars and where their values live.
    scalar_uids: Vec<(i64, Box<f32>)>,
    /// Uids of the graph's tensors that live in memory the engine does not see (backward:
    /// Delta and the fp32 dQ accumulator; paged decode: seq_len_q; fp8: the unit scales and
    /// the amax outputs), with their buffers.
    internal: Vec<(i64, DeviceBuffer)>,
    workspace: DeviceBuffer,
    /// cuDNN's version, e.g. "9.14.0", and its number, e.g. 91400.
    pub version: String,
    pub version_number: usize,
    /// The library file that ran.
    pub library: String,
    /// The engine chosen, in words (global index, heuristic mode, knobs).
    pub engine: String,
}

impl std::fmt::Debug for Sdpa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sdpa")
            .field("kind", &self.kind)
            .field("version", &self.version)
            .field("library", &self.library)
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}

/// An [`Sdpa`] bound to one set of device tensors.
pub struct BoundSdpa {
    pack: Desc,
}

impl std::fmt::Debug for BoundSdpa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundSdpa").finish_non_exhaustive()
    }
}

/// A tensor of the graph kept in a buffer of the plan's own: its uid, its size, and the
/// 32-bit word it is filled with once (None: scratch or an output nobody reads).
struct InternalTensor {
    uid: i64,
    bytes: usize,
    fill: Option<u32>,
}

/// What a graph builder returns: the io uids in [`SdpaKind::tensors`] order and the internal
/// tensors.
type GraphIo = (Vec<i64>, Vec<InternalTensor>);

impl Sdpa {
    /// Builds the bf16 graph for `pass` at `shape` and picks an engine.
    pub fn new(gpu: &Gpu, pass: SdpaPass, shape: SdpaShape) -> Result<Sdpa, DnnError> {
        let kind = SdpaKind::from(pass);
        Sdpa::build(gpu, kind, shape.d, |b| match pass {
            SdpaPass::Forward => forward_graph(b, shape),
            SdpaPass::Backward => backward_graph(b, shape),
        })
    }

    /// Builds the paged grouped-query decode graph (bf16, one query per sequence, padding
    /// mask from `seq_len_kv`, scale 1/sqrt(d), LSE) and picks an engine. Needs cuDNN >= 9.5.
    /// Tensors: [`SdpaKind::PagedDecode`]'s [`SdpaKind::tensors`].
    pub fn paged_decode(gpu: &Gpu, shape: PagedDecodeShape) -> Result<Sdpa, DnnError> {
        let kind = SdpaKind::PagedDecode;
        shape.validate().map_err(|why| DnnError::Shape {
            graph: kind.graph_name(),
            why,
        })?;
        require_version(kind, 90500, "9.5.0 or newer", |_| true)?;
        Sdpa::build(gpu, kind, shape.d, |b| paged_decode_graph(b, shape))
    }

    /// Builds the fp8 (e4m3) forward graph with LSE, the frontend's sdpa_fp8 pattern with
    /// descale_s = scale_s = scale_o = 1 kept internal, and picks an engine. Needs cuDNN >= 9.1
    /// (not 9.10.0) and a Hopper or newer GPU. Tensors: [`SdpaKind::ForwardFp8`]'s
    /// [`SdpaKind::tensors`].
    pub fn forward_fp8(gpu: &Gpu, shape: SdpaShape) -> Result<Sdpa, DnnError> {
        let kind = SdpaKind::ForwardFp8;
        shape.validate().map_err(|why| DnnError::Shape {
            graph: kind.graph_name(),
            why,
        })?;
        require_version(kind, 90100, "9.1.0 or newer, but not 9.10.0", |v| {
            v != 91000
        })?;
        Sdpa::build(gpu, kind, shape.d, |b| forward_fp8_graph(b, shape))
    }

    fn build(
        gpu: &Gpu,
        kind: SdpaKind,
        d: i64,
        graph_fn: impl FnOnce(&mut Builder) -> Result<GraphIo, DnnError>,
    ) -> Result<Sdpa, DnnError> {
        let api = api()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the engine's context is current on this thread.
        api.check("cudnnCreate", unsafe { (api.create)(&mut raw) })?;
        let handle = Handle { raw, api };
        // SAFETY: the engine's stream outlives this plan (both belong to `gpu`'s owner).
        api.check("cudnnSetStream", unsafe {
            (api.set_stream)(handle.raw, gpu.raw_stream().cast())
        })?;
        let (version_number, version) = api.version_text();
        let mut b = Builder::new(api);
        let (io_uids, internal_tensors) = graph_fn(&mut b)?;
        debug_assert_eq!(io_uids.len(), kind.tensors().len());
        let graph = b.graph(&handle)?;
        let (plan, engine) = choose_plan(api, &handle, &graph, kind)?;
        let ws = plan.get_i64(A::CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)?;
        let workspace = gpu.alloc(usize::try_from(ws).unwrap_or(0))?;
        let mut internal = Vec::new();
        for t in &internal_tensors {
            let buf = gpu.alloc(t.bytes)?;
            if let Some(word) = t.fill {
                gpu.fill_u32(&buf, 0, word, t.bytes / 4)?;
            }
            internal.push((t.uid, buf));
        }
        if internal_tensors.iter().any(|t| t.fill.is_some()) {
            gpu.sync()?;
        }
        let scale = 1.0 / (d as f32).sqrt();
        let scalar_uids = b
            .scalars
            .iter()
            .map(|&(s, t)| {
                let v = match s {
                    Scalar::Scale => scale,
                    Scalar::One => 1.0,
                    Scalar::NegInf => f32::NEG_INFINITY,
                };
                (t.uid, Box::new(v))
            })
            .collect();
        Ok(Sdpa {
            api,
            kind,
            plan,
            _graph: graph,
            _builder: b,
            handle,
            io_uids,
            scalar_uids,
            internal,
            workspace,
            version,
            version_number,
            library: api.path.clone(),
            engine: format!("{engine}, workspace {ws} bytes"),
        })
    }

    /// Forward for every forward graph (bf16, paged decode, fp8), Backward for the backward.
    pub fn pass(&self) -> SdpaPass {
        match self.kind {
            SdpaKind::Backward => SdpaPass::Backward,
            _ => SdpaPass::Forward,
        }
    }

    /// Which graph this plan holds.
    pub fn kind(&self) -> SdpaKind {
        self.kind
    }

    /// The names of the tensors [`Sdpa::bind`] takes, in order.
    pub fn tensors(&self) -> &'static [&'static str] {
        self.kind.tensors()
    }

    /// Binds device pointers, in [`SdpaKind::tensors`] order.
    pub fn bind(&self, pointers: &[u64]) -> Result<BoundSdpa, DnnError> {
        assert_eq!(pointers.len(), self.io_uids.len(), "one pointer per tensor");
        let mut uids: Vec<i64> = self.io_uids.clone();
        let mut ptrs: Vec<*mut c_void> = pointers.iter().map(|&p| p as *mut c_void).collect();
        // One buffer may serve two tensors (paged decode's K and V page tables): cuDNN takes
        // a pointer per uid, so repeats are fine.
        for (uid, v) in &self.scalar_uids {
            uids.push(*uid);
            ptrs.push((&raw const **v).cast_mut().cast());
        }
        for (uid, buf) in &self.internal {
            uids.push(*uid);
            ptrs.push(buf.ptr() as *mut c_void);
        }
        let pack = Desc::new(self.api, D::CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)?;
        pack.set(
            A::CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
            T::CUDNN_TYPE_INT64,
            &uids,
        )?;
        pack.set(
            A::CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
            T::CUDNN_TYPE_VOID_PTR,
            &ptrs,
        )?;
        let ws = self.workspace.ptr() as *mut c_void;
        pack.set(
            A::CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
            T::CUDNN_TYPE_VOID_PTR,
            &[ws],
        )?;
        pack.finalize("variant pack")?;
        Ok(BoundSdpa { pack })
    }

    /// Enqueues one execution on the engine's stream.
    pub fn launch(&self, bound: &BoundSdpa) -> Result<(), DnnError> {
        // SAFETY: plan and variant pack were finalized for this handle; the pointers in the
        // pack are device allocations sized for the planned shape, and the host scalars live
        // in `self`.
        self.api.check("cudnnBackendExecute", unsafe {
            (self.api.execute)(self.handle.raw, self.plan.raw, bound.pack.raw)
        })
    }
}

/// Forward: the io uids (Q, K, V, O, LSE), no internal tensors.
fn forward_graph(g: &mut Builder, sh: SdpaShape) -> Result<GraphIo, DnnError> {
    let (b, h, s, d) = (sh.b, sh.h, sh.s, sh.d);
    let bf16 = Dt::CUDNN_DATA_BFLOAT16;
    let qkv = [b, h, s, d];
    let q = g.io(qkv, row_major(qkv), bf16)?;
    // K [B,H,S,D] row-major seen as K^T [B,H,D,S].
    let kt = g.io([b, h, d, s], [h * s * d, s * d, 1, d], bf16)?;
    let v = g.io(qkv, row_major(qkv), bf16)?;
    let o = g.io(qkv, row_major(qkv), bf16)?;
    let stats_dims = [b, h, s, 1];
    let lse = g.io(stats_dims, row_major(stats_dims), Dt::CUDNN_DATA_FLOAT)?;
    let ss = [b, h, s, s];

    let scores = g.virt(ss, Dt::CUDNN_DATA_FLOAT)?;
    g.matmul(q, kt, scores)?;
    let scale = g.scalar(Scalar::Scale)?;
    let mut x = g.pw(Pw::CUDNN_POINTWISE_MUL, &[scores, scale], ss)?;
    if sh.causal {
        x = g.causal_mask(x, ss)?;
    }
    // P in the io type: the second matmul's A operand.
    let p = g.softmax_with_stats(x, ss, lse, bf16)?;
    g.matmul(p, v, o)?;
    Ok((vec![q.uid, kt.uid, v.uid, o.uid, lse.uid], Vec::new()))
}

fn backward_graph(g: &mut Builder, sh: SdpaShape) -> Result<GraphIo, DnnError> {
    let (b, h, s, d) = (sh.b, sh.h, sh.s, sh.d);
    let bf16 = Dt::CUDNN_DATA_BFLOAT16;
    let f32t = Dt::CUDNN_DATA_FLOAT;
    let qkv = [b, h, s, d];
    let t_dims = [b, h, d, s];
    let t_strides = [h * s * d, s * d, 1, d];
    let q = g.io(qkv, row_major(qkv), bf16)?;
    let kt = g.io(t_dims, t_strides, bf16)?;
    let vt = g.io(t_dims, t_strides, bf16)?;
    let o = g.io(qkv, row_major(qkv), bf16)?;
    let d_o = g.io(qkv, row_major(qkv), bf16)?;
    let stats_dims = [b, h, s, 1];
    let lse = g.io(stats_dims, row_major(stats_dims), f32t)?;
    let dq = g.io(qkv, row_major(qkv), bf16)?;
    let dk = g.io(qkv, row_major(qkv), bf16)?;
    let dv = g.io(qkv, row_major(qkv), bf16)?;
    let ss = [b, h, s, s];
    let ss_t_strides = [h * s * s, s * s, 1, s];

    // Delta = sum_d dO * O, kept in memory (fp32 [B,H,S,1]).
    let prod = g.pw(Pw::CUDNN_POINTWISE_MUL, &[d_o, o], qkv)?;
    let dsum = g.virt(stats_dims, f32t)?;
    g.reduction(
        sys::cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_ADD,
        prod,
        dsum,
    )?;
    let one = g.scalar(Scalar::One)?;
    let delta = g.io(stats_dims, row_major(stats_dims), f32t)?;
    g.pointwise(Pw::CUDNN_POINTWISE_MUL, f32t, &[dsum, one], delta, None)?;

    // P = exp(scale * Q K^T (masked) - LSE).
    let scores = g.virt(ss, f32t)?;
    g.matmul(q, kt, scores)?;
    let scale = g.scalar(Scalar::Scale)?;
    let mut x = g.pw(Pw::CUDNN_POINTWISE_MUL, &[scores, scale], ss)?;
    if sh.causal {
        x = g.causal_mask(x, ss)?;
    }
    let shifted = g.pw(Pw::CUDNN_POINTWISE_SUB, &[x, lse], ss)?;
    let p = g.pw(Pw::CUDNN_POINTWISE_EXP, &[shifted], ss)?;

    // dV = P^T dO.
    let pt = g.tensor_desc([b, h, s, s], ss_t_strides, bf16, true, false)?;
    g.reshape(p, pt)?;
    g.matmul(pt, d_o, dv)?;

    // dS = P * (dO V^T - Delta) * scale.
    let dp = g.virt(ss, f32t)?;
    g.matmul(d_o, vt, dp)?;
    let dp_sub = g.pw(Pw::CUDNN_POINTWISE_SUB, &[dp, delta], ss)?;
    let ds_raw = g.pw(Pw::CUDNN_POINTWISE_MUL, &[dp_sub, p], ss)?;
    let ds = g.pw(Pw::CUDNN_POINTWISE_MUL, &[ds_raw, scale], ss)?;

    // dK = dS^T Q.
    let dst = g.tensor_desc([b, h, s, s], ss_t_strides, bf16, true, false)?;
    g.reshape(ds, dst)?;
    g.matmul(dst, q, dk)?;

    // dQ = dS K, accumulated in fp32 in memory, then converted.
    let k = g.tensor_desc(qkv, row_major(qkv), bf16, true, false)?;
    g.reshape(kt, k)?;
    let dq_accum = g.io(qkv, row_major(qkv), f32t)?;
    g.matmul(ds, k, dq_accum)?;
    g.pointwise(Pw::CUDNN_POINTWISE_IDENTITY, f32t, &[dq_accum], dq, None)?;

    let n = |dims: [i64; 4]| dims.iter().product::<i64>() as usize * 4;
    Ok((
        vec![
            q.uid, kt.uid, vt.uid, o.uid, d_o.uid, lse.uid, dq.uid, dk.uid, dv.uid,
        ],
        vec![
            InternalTensor {
                uid: delta.uid,
                bytes: n(stats_dims),
                fill: None,
            },
            InternalTensor {
                uid: dq_accum.uid,
                bytes: n(qkv),
                fill: None,
            },
        ],
    ))
}

/// Paged grouped-query decode, as the frontend's composite SDPA node lowers it with paged K/V
/// caches and a padding mask: io uids in [`SdpaKind::PagedDecode`] order; seq_len_q (all 1)
/// internal.
fn paged_decode_graph(g: &mut Builder, sh: PagedDecodeShape) -> Result<GraphIo, DnnError> {
    let bf16 = Dt::CUDNN_DATA_BFLOAT16;
    let f32t = Dt::CUDNN_DATA_FLOAT;
    let i32t = Dt::CUDNN_DATA_INT32;
    let (b, h_q) = (sh.b, sh.h_q);
    let s_kv = sh.max_seq_len_kv();
    let q_dims = sh.q_dims();
    let q = g.io(q_dims, row_major(q_dims), bf16)?;
    let c_dims = sh.container_dims();
    let k_container = g.io(c_dims, row_major(c_dims), bf16)?;
    let v_container = g.io(c_dims, row_major(c_dims), bf16)?;
    let (pt_dims, pt_strides) = sh.page_table_dims();
    let page_table_k = g.io(pt_dims, pt_strides, i32t)?;
    let page_table_v = g.io(pt_dims, pt_strides, i32t)?;
    let per_seq = [b, 1, 1, 1];
    let seq_len_kv = g.io(per_seq, [1; 4], i32t)?;
    let o = g.io(q_dims, row_major(q_dims), bf16)?;
    let stats_dims = [b, h_q, 1, 1];
    let lse = g.io(stats_dims, row_major(stats_dims), f32t)?;
    let seq_len_q = g.io(per_seq, [1; 4], i32t)?;

    // K^T gathered from its pages.
    let ((kt_dims, kt_strides), (v_dims, v_strides)) = sh.gathered_kv();
    let kt = g.tensor_desc(kt_dims, kt_strides, bf16, true, false)?;
    g.paged_cache_load(k_container, seq_len_kv, page_table_k, kt)?;

    // S = Q K^T (the K heads broadcast over their query-head groups), scaled, padded.
    let ss = [b, h_q, 1, s_kv];
    let scores = g.virt(ss, f32t)?;
    g.matmul_overridden(q, kt, scores, [Some(seq_len_q), Some(seq_len_kv), None])?;
    let scale = g.scalar(Scalar::Scale)?;
    let x = g.pw(Pw::CUDNN_POINTWISE_MUL, &[scores, scale], ss)?;
    let x = g.padding_mask(x, ss, seq_len_q, seq_len_kv)?;
    let p = g.softmax_with_stats(x, ss, lse, bf16)?;

    // O = P V, V gathered from its pages.
    let v = g.tensor_desc(v_dims, v_strides, bf16, true, false)?;
    g.paged_cache_load(v_container, seq_len_kv, page_table_v, v)?;
    g.matmul_overridden(p, v, o, [Some(seq_len_q), None, Some(seq_len_kv)])?;

    Ok((
        vec![
            q.uid,
            k_container.uid,
            v_container.uid,
            page_table_k.uid,
            page_table_v.uid,
            seq_len_kv.uid,
            o.uid,
            lse.uid,
        ],
        vec![InternalTensor {
            uid: seq_len_q.uid,
            bytes: b as usize * 4,
            fill: Some(1),
        }],
    ))
}

/// The fp32 word 1.0.
const ONE_F32_BITS: u32 = 0x3f80_0000;

/// fp8 forward, the frontend's sdpa_fp8 forward pattern: `S = Q K^T` (fp32), `* attn_scale`,
/// `* descale_q`, `* descale_k`, optional causal mask, softmax with stats (LSE), `amax_s =
/// amax(P)`, `P8 = e4m3(P * scale_s)`, `O32 = P8 V` (fp32), `* descale_s`, `* descale_v`,
/// `O = e4m3(. * scale_o)`, `amax_o = amax(. before scale_o)`. io uids in
/// [`SdpaKind::ForwardFp8`] order; descale_s, scale_s, scale_o (1.0) and amax_s, amax_o
/// internal.
fn forward_fp8_graph(g: &mut Builder, sh: SdpaShape) -> Result<GraphIo, DnnError> {
    let (b, h, s, d) = (sh.b, sh.h, sh.s, sh.d);
    let e4m3 = Dt::CUDNN_DATA_FP8_E4M3;
    let f32t = Dt::CUDNN_DATA_FLOAT;
    let qkv = [b, h, s, d];
    let q = g.io(qkv, row_major(qkv), e4m3)?;
    let kt = g.io([b, h, d, s], [h * s * d, s * d, 1, d], e4m3)?;
    let v = g.io(qkv, row_major(qkv), e4m3)?;
    let unit = |g: &mut Builder| g.io([1; 4], [1; 4], f32t);
    let descale_q = unit(g)?;
    let descale_k = unit(g)?;
    let descale_v = unit(g)?;
    let o = g.io(qkv, row_major(qkv), e4m3)?;
    let stats_dims = [b, h, s, 1];
    let lse = g.io(stats_dims, row_major(stats_dims), f32t)?;
    let descale_s = unit(g)?;
    let scale_s = unit(g)?;
    let scale_o = unit(g)?;
    let amax_s = unit(g)?;
    let amax_o = unit(g)?;
    let ss = [b, h, s, s];

    // bmm1 and its scales, in the frontend's order: attn_scale, descale_q, descale_k.
    let scores = g.virt(ss, f32t)?;
    g.matmul(q, kt, scores)?;
    let scale = g.scalar(Scalar::Scale)?;
    let x = g.pw(Pw::CUDNN_POINTWISE_MUL, &[scores, scale], ss)?;
    let x = g.pw(Pw::CUDNN_POINTWISE_MUL, &[x, descale_q], ss)?;
    let mut x = g.pw(Pw::CUDNN_POINTWISE_MUL, &[x, descale_k], ss)?;
    if sh.causal {
        x = g.causal_mask(x, ss)?;
    }
    let p = g.softmax_with_stats(x, ss, lse, f32t)?;
    g.reduction(
        sys::cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_AMAX,
        p,
        amax_s,
    )?;
    // P * scale_s in the io type: bmm2's A operand.
    let p8 = g.virt(ss, e4m3)?;
    g.pointwise(Pw::CUDNN_POINTWISE_MUL, f32t, &[p, scale_s], p8, None)?;

    // bmm2 as the frontend's matmul_fp8: matmul, descale_a, descale_b, scale_c, amax_c.
    let o32 = g.virt(qkv, f32t)?;
    g.matmul(p8, v, o32)?;
    let y = g.pw(Pw::CUDNN_POINTWISE_MUL, &[o32, descale_s], qkv)?;
    let y = g.pw(Pw::CUDNN_POINTWISE_MUL, &[y, descale_v], qkv)?;
    g.pointwise(Pw::CUDNN_POINTWISE_MUL, f32t, &[y, scale_o], o, None)?;
    g.reduction(
        sys::cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_AMAX,
        y,
        amax_o,
    )?;

    let scalar = |t: Tensor, fill: Option<u32>| InternalTensor {
        uid: t.uid,
        bytes: 4,
        fill,
    };
    Ok((
        vec![
            q.uid,
            kt.uid,
            v.uid,
            descale_q.uid,
            descale_k.uid,
            descale_v.uid,
            o.uid,
            lse.uid,
        ],
        vec![
            // scale_s = descale_s = 1 as upstream pins them (FA3's cuDNN benchmark). 448 (P's
            // largest value at e4m3's largest) was tried on the H200 and did not bring the
            // large-L outputs within the task's tolerance (artifacts/evidence/suite-v2-h200).
            scalar(descale_s, Some(ONE_F32_BITS)),
            scalar(scale_s, Some(ONE_F32_BITS)),
            scalar(scale_o, Some(ONE_F32_BITS)),
            scalar(amax_s, None),
            scalar(amax_o, None),
        ],
    ))
}

/// Refuses a graph the loaded cuDNN cannot build, before building it.
fn require_version(
    kind: SdpaKind,
    min: usize,
    needs: &'static str,
    also: impl Fn(usize) -> bool,
) -> Result<(), DnnError> {
    let api = api()?;
    let (v, text) = api.version_text();
    if v < min || !also(v) {
        return Err(DnnError::Version {
            graph: kind.graph_name(),
            needs,
            have: text,
            path: api.path.clone(),
        });
    }
    Ok(())
}

/// Heuristics mode A, then the fallback list; the first configuration whose plan finalizes.
fn choose_plan(
    api: &'static Api,
    handle: &Handle,
    graph: &Desc,
    kind: SdpaKind,
) -> Result<(Desc, String), DnnError> {
    let mut tried = Vec::new();
    for (mode, mode_name) in [
        (sys::cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_A, "A"),
        (
            sys::cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_FALLBACK,
            "fallback",
        ),
    ] {
        let configs = match heuristic_configs(api, graph, mode) {
            Ok(c) => c,
            Err(e) => {
                tried.push(format!("heuristics {mode_name}: {e}"));
                continue;
            }
        };
        if configs.is_empty() {
            tried.push(format!("heuristics {mode_name}: no configurations"));
        }
        for (i, cfg) in configs.iter().enumerate() {
            let attempt = (|| -> Result<Desc, DnnError> {
                let plan = Desc::new(api, D::CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)?;
                plan.set(
                    A::CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                    T::CUDNN_TYPE_HANDLE,
                    &[handle.raw],
                )?;
                plan.set_desc(A::CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, &[cfg])?;
                plan.finalize("execution plan")?;
                Ok(plan)
            })();
            match attempt {
                Ok(plan) => {
                    let index = engine_index(api, cfg).map_or_else(
                        |e| format!("engine index unknown ({e})"),
                        |g| format!("engine {g}"),
                    );
                    let json = plan_json(api, &plan).unwrap_or_default();
                    let mut words = format!(
                        "{index} (heuristics mode {mode_name}, configuration {} of {})",
                        i + 1,
                        configs.len()
                    );
                    if !json.is_empty() {
                        words.push_str(&format!(", plan {json}"));
                    }
                    return Ok((plan, words));
                }
                Err(e) => tried.push(format!("mode {mode_name} configuration {}: {e}", i + 1)),
            }
        }
    }
    Err(DnnError::NoEngine {
        graph: kind.graph_name(),
        tried: tried.join("; "),
    })
}

fn heuristic_configs(
    api: &'static Api,
    graph: &Desc,
    mode: sys::cudnnBackendHeurMode_t,
) -> Result<Vec<Desc>, DnnError> {
    let heur = Desc::new(api, D::CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR)?;
    heur.set_desc(A::CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, &[graph])?;
    heur.set(
        A::CUDNN_ATTR_ENGINEHEUR_MODE,
        T::CUDNN_TYPE_HEUR_MODE,
        &[mode],
    )?;
    heur.finalize("engine heuristics")?;
    let mut count = 0i64;
    // SAFETY: a count query with no output array.
    api.check("get heuristic result count", unsafe {
        (api.get_attr)(
            heur.raw,
            A::CUDNN_ATTR_ENGINEHEUR_RESULTS,
            T::CUDNN_TYPE_BACKEND_DESCRIPTOR,
            0,
            &mut count,
            std::ptr::null_mut(),
        )
    })?;
    let count = count.clamp(0, 64);
    let configs: Vec<Desc> = (0..count)
        .map(|_| Desc::new(api, D::CUDNN_BACKEND_ENGINECFG_DESCRIPTOR))
        .collect::<Result<_, _>>()?;
    let mut raws: Vec<sys::cudnnBackendDescriptor_t> = configs.iter().map(|c| c.raw).collect();
    let mut got = 0i64;
    // SAFETY: `raws` holds `count` engine-config descriptors for cuDNN to fill.
    api.check("get heuristic results", unsafe {
        (api.get_attr)(
            heur.raw,
            A::CUDNN_ATTR_ENGINEHEUR_RESULTS,
            T::CUDNN_TYPE_BACKEND_DESCRIPTOR,
            count,
            &mut got,
            raws.as_mut_ptr().cast(),
        )
    })?;
    let mut configs = configs;
    configs.truncate(usize::try_from(got.clamp(0, count)).unwrap_or(0));
    Ok(configs)
}

fn engine_index(api: &'static Api, cfg: &Desc) -> Result<i64, DnnError> {
    let engine = Desc::new(api, D::CUDNN_BACKEND_ENGINE_DESCRIPTOR)?;
    let mut n = 0i64;
    let mut raw = engine.raw;
    // SAFETY: one descriptor out-value, created above for cuDNN to fill.
    api.check("get engine", unsafe {
        (api.get_attr)(
            cfg.raw,
            A::CUDNN_ATTR_ENGINECFG_ENGINE,
            T::CUDNN_TYPE_BACKEND_DESCRIPTOR,
            1,
            &mut n,
            (&raw mut raw).cast(),
        )
    })?;
    engine.get_i64(A::CUDNN_ATTR_ENGINE_GLOBAL_INDEX)
}

/// The plan's own JSON description (engine name and knob choices), when cuDNN gives one.
fn plan_json(api: &'static Api, plan: &Desc) -> Option<String> {
    let get = |buf: &mut [u8], n: &mut i64| {
        // SAFETY: a character array of `buf.len()` bytes (none for the size query) for cuDNN
        // to fill.
        unsafe {
            (api.get_attr)(
                plan.raw,
                A::CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                T::CUDNN_TYPE_CHAR,
                buf.len() as i64,
                n,
                if buf.is_empty() {
                    std::ptr::null_mut()
                } else {
                    buf.as_mut_ptr().cast()
                },
            )
        }
    };
    let mut n = 0i64;
    if get(&mut [], &mut n) != sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS || n <= 0 {
        return None;
    }
    let mut buf = vec![0u8; usize::try_from(n).ok()?.min(1 << 16) + 1];
    if get(&mut buf, &mut n) != sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS {
        return None;
    }
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    let text = String::from_utf8_lossy(&buf[..end]).trim().to_string();
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_strides() {
        assert_eq!(row_major([2, 3, 5, 7]), [105, 35, 7, 1]);
    }

    #[test]
    fn pass_tensor_order() {
        assert_eq!(SdpaPass::Forward.tensors(), ["Q", "K", "V", "O", "LSE"]);
        assert_eq!(SdpaPass::Backward.tensors().len(), 9);
        assert_eq!(
            SdpaKind::PagedDecode.tensors(),
            [
                "q",
                "k_cache",
                "v_cache",
                "page_table_k",
                "page_table_v",
                "seq_len_kv",
                "output",
                "lse"
            ]
        );
        assert_eq!(
            SdpaKind::ForwardFp8.tensors(),
            [
                "Q",
                "K",
                "V",
                "descale_q",
                "descale_k",
                "descale_v",
                "O",
                "LSE"
            ]
        );
        for kind in [
            SdpaKind::Forward,
            SdpaKind::Backward,
            SdpaKind::PagedDecode,
            SdpaKind::ForwardFp8,
        ] {
            let all = kind.tensors();
            assert!(kind.outputs().iter().all(|o| all.contains(o)), "{kind:?}");
            // Outputs come last, as the engine allocates them after binding the inputs.
            let tail = &all[all.len() - kind.outputs().len()..];
            assert_eq!(tail, kind.outputs(), "{kind:?}");
        }
        assert_eq!(SdpaKind::from(SdpaPass::Backward), SdpaKind::Backward);
    }

    fn decode_shape() -> PagedDecodeShape {
        PagedDecodeShape {
            b: 4,
            h_q: 32,
            h_kv: 8,
            d: 128,
            num_pages: 1000,
            max_pages_per_seq: 300,
            block_size: 1,
        }
    }

    #[test]
    fn paged_decode_layouts() {
        let sh = decode_shape();
        assert_eq!(sh.max_seq_len_kv(), 300);
        assert_eq!(sh.q_dims(), [4, 32, 1, 128]);
        // The container is the task's k_cache [pages, 1, Hkv, D] read as [pages, Hkv, 1, D].
        assert_eq!(sh.container_dims(), [1000, 8, 1, 128]);
        assert_eq!(row_major(sh.container_dims()), [1024, 128, 128, 1]);
        assert_eq!(sh.page_table_dims(), ([4, 1, 300, 1], [300, 300, 1, 1]));
        let ((kt_dims, kt_strides), (v_dims, v_strides)) = sh.gathered_kv();
        assert_eq!(kt_dims, [4, 8, 128, 300]);
        assert_eq!(kt_strides, [8 * 128 * 300, 128 * 300, 1, 128]);
        assert_eq!(v_dims, [4, 8, 300, 128]);
        assert_eq!(v_strides, row_major(v_dims));
        let paged = PagedDecodeShape {
            block_size: 16,
            max_pages_per_seq: 20,
            ..sh
        };
        assert_eq!(paged.max_seq_len_kv(), 320);
    }

    #[test]
    fn paged_decode_validation() {
        assert_eq!(decode_shape().validate(), Ok(()));
        let gqa = PagedDecodeShape {
            h_kv: 6,
            ..decode_shape()
        };
        assert!(
            gqa.validate()
                .expect_err("h_q % h_kv")
                .contains("multiple of h_kv")
        );
        let zero = PagedDecodeShape {
            num_pages: 0,
            ..decode_shape()
        };
        assert!(zero.validate().expect_err("no pages").contains("num_pages"));
        let d = PagedDecodeShape {
            d: 72,
            ..decode_shape()
        };
        assert!(d.validate().expect_err("d = 72").contains("head dimension"));
    }

    #[test]
    fn fp8_shape_validation() {
        let sh = SdpaShape {
            b: 4,
            h: 48,
            s: 2048,
            d: 128,
            causal: true,
        };
        assert_eq!(sh.validate(), Ok(()));
        assert!(SdpaShape { d: 512, ..sh }.validate().is_err());
        assert!(SdpaShape { s: 0, ..sh }.validate().is_err());
    }

    #[test]
    fn unit_scale_word() {
        assert_eq!(f32::from_bits(ONE_F32_BITS), 1.0);
    }
}
