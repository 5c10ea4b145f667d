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
//!   `dQ = dS K` accumulated in fp32 and converted to bf16.
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
        match self {
            SdpaPass::Forward => &["Q", "K", "V", "O", "LSE"],
            SdpaPass::Backward => &["Q", "K", "V", "O", "dO", "LSE", "dQ", "dK", "dV"],
        }
    }
}

/// A planned cuDNN SDPA for one shape; bind it to tensors, then launch as often as needed.
pub struct Sdpa {
    api: &'static Api,
    pass: SdpaPass,
    // Field order: descriptors drop before the handle they were made on.
    plan: Desc,
    _graph: Desc,
    _builder: Builder,
    handle: Handle,
    /// Uids of the tensors in [`SdpaPass::tensors`] order.
    io_uids: Vec<i64>,
    /// Uids of the by-value scalars and where their values live.
    scalar_uids: Vec<(i64, Box<f32>)>,
    /// Uids of the graph's fp32 intermediates that live in memory (backward: Delta and the
    /// fp32 dQ accumulator), with their buffers.
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
            .field("pass", &self.pass)
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

impl Sdpa {
    /// Builds the graph for `pass` at `shape` and picks an engine.
    pub fn new(gpu: &Gpu, pass: SdpaPass, shape: SdpaShape) -> Result<Sdpa, DnnError> {
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
        let (io_uids, internal_dims) = match pass {
            SdpaPass::Forward => forward_graph(&mut b, shape)?,
            SdpaPass::Backward => backward_graph(&mut b, shape)?,
        };
        let graph = b.graph(&handle)?;
        let (plan, engine) = choose_plan(api, &handle, &graph, pass)?;
        let ws = plan.get_i64(A::CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)?;
        let workspace = gpu.alloc(usize::try_from(ws).unwrap_or(0))?;
        let mut internal = Vec::new();
        for (uid, bytes) in internal_dims {
            internal.push((uid, gpu.alloc(bytes)?));
        }
        let scale = 1.0 / (shape.d as f32).sqrt();
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
            pass,
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

    pub fn pass(&self) -> SdpaPass {
        self.pass
    }

    /// Binds device pointers, in [`SdpaPass::tensors`] order.
    pub fn bind(&self, pointers: &[u64]) -> Result<BoundSdpa, DnnError> {
        assert_eq!(pointers.len(), self.io_uids.len(), "one pointer per tensor");
        let mut uids: Vec<i64> = self.io_uids.clone();
        let mut ptrs: Vec<*mut c_void> = pointers.iter().map(|&p| p as *mut c_void).collect();
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

/// Forward: returns the io uids (Q, K, V, O, LSE) and the internal buffers (none).
type GraphIo = (Vec<i64>, Vec<(i64, usize)>);

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
    let max = g.virt(stats_dims, Dt::CUDNN_DATA_FLOAT)?;
    g.reduction(sys::cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_MAX, x, max)?;
    let sub = g.pw(Pw::CUDNN_POINTWISE_SUB, &[x, max], ss)?;
    let exp = g.pw(Pw::CUDNN_POINTWISE_EXP, &[sub], ss)?;
    let sum = g.virt(stats_dims, Dt::CUDNN_DATA_FLOAT)?;
    g.reduction(
        sys::cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_ADD,
        exp,
        sum,
    )?;
    let log = g.pw(Pw::CUDNN_POINTWISE_LOG, &[sum], stats_dims)?;
    g.pointwise(
        Pw::CUDNN_POINTWISE_ADD,
        Dt::CUDNN_DATA_FLOAT,
        &[max, log],
        lse,
        None,
    )?;
    // P in the io type: the second matmul's A operand.
    let p = g.virt(ss, bf16)?;
    g.pointwise(
        Pw::CUDNN_POINTWISE_DIV,
        Dt::CUDNN_DATA_FLOAT,
        &[exp, sum],
        p,
        None,
    )?;
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
        vec![(delta.uid, n(stats_dims)), (dq_accum.uid, n(qkv))],
    ))
}

/// Heuristics mode A, then the fallback list; the first configuration whose plan finalizes.
fn choose_plan(
    api: &'static Api,
    handle: &Handle,
    graph: &Desc,
    pass: SdpaPass,
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
        graph: match pass {
            SdpaPass::Forward => "forward",
            SdpaPass::Backward => "backward",
        },
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
    }
}
