//! The GEMM baseline: cuBLASLt, in process, on the engine's stream.
//!
//! `C[M,N] = scale * A[M,K] @ B[N,K]^T` with row-major A, B, C is, in cuBLASLt's column-major
//! terms, `C^T[N,M] = op(B)[N,K] @ A^T[K,M]` with `op = T` on B: the "TN" layout that fp8 on
//! Hopper requires. The heuristic's first [`ALGORITHMS`] algorithms are offered, with a 32 MiB
//! workspace; the engine times them once per workload and keeps the fastest
//! ([`Gemm::choose`]), so the baseline is the library at its best, not its heuristic's guess.

use std::ffi::c_void;

use cudarc::cublaslt::{result, sys};

use super::driver::{DeviceBuffer, DriverError, Gpu};
use super::library::{self, CudaLibrary, LibraryNotFound};

#[derive(Debug, thiserror::Error)]
pub enum BlasError {
    #[error(transparent)]
    LibraryMissing(#[from] LibraryNotFound),
    #[error("cuBLASLt {call} failed: {status}")]
    Call { call: &'static str, status: String },
    #[error(transparent)]
    Driver(#[from] DriverError),
}

fn call<T>(name: &'static str, r: Result<T, result::CublasError>) -> Result<T, BlasError> {
    r.map_err(|e| BlasError::Call {
        call: name,
        status: format!("{:?}", e.0),
    })
}

/// Input element type of the GEMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GemmInput {
    Bf16,
    /// fp8 e4m3 with per-tensor fp32 scales (device pointers) applied to A and B.
    E4m3 {
        scale_a: u64,
        scale_b: u64,
    },
    /// fp32 in and out, fp32 arithmetic (`CUBLAS_COMPUTE_32F`: no TF32, no reduced
    /// precision): the harness's GEMM reference.
    F32,
}

/// A planned cuBLASLt GEMM for one shape; launch it as often as needed.
#[derive(Debug)]
pub struct Gemm {
    plan: Planned,
    /// cuBLASLt's version number (e.g. 130000).
    pub version: usize,
    pub library: String,
}

/// What every planned cuBLASLt matmul holds: its handle, descriptor, the three layouts (A, B
/// and C/D, in cuBLASLt's order), the heuristic's algorithms and the one chosen, and its
/// workspace. Whatever was made is freed on drop, also when planning failed halfway.
#[derive(Debug)]
struct Planned {
    handle: sys::cublasLtHandle_t,
    desc: sys::cublasLtMatmulDesc_t,
    layouts: [sys::cublasLtMatrixLayout_t; 3],
    /// The heuristic's algorithms, best guess first.
    algos: Vec<sys::cublasLtMatmulAlgo_t>,
    /// The one [`Planned::launch`] runs.
    chosen: usize,
    workspace: DeviceBuffer,
}

impl Planned {
    /// A handle, a workspace and an fp32-compute matmul descriptor; layouts and algorithms
    /// are the caller's to set.
    fn new(gpu: &Gpu) -> Result<Planned, BlasError> {
        let workspace = gpu.alloc(WORKSPACE)?;
        let handle = call("create", result::create_handle())?;
        let mut plan = Planned {
            handle,
            desc: std::ptr::null_mut(),
            layouts: [std::ptr::null_mut(); 3],
            algos: Vec::new(),
            chosen: 0,
            workspace,
        };
        plan.desc = call(
            "matmul desc",
            result::create_matmul_desc(
                sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                sys::cudaDataType::CUDA_R_32F,
            ),
        )?;
        Ok(plan)
    }

    /// Sets a descriptor attribute of `size` bytes at `v`.
    fn set(
        &self,
        attr: sys::cublasLtMatmulDescAttributes_t,
        v: *const c_void,
        size: usize,
    ) -> Result<(), BlasError> {
        // SAFETY: `v` points to `size` bytes of the attribute's type (the callers' values).
        call("set attribute", unsafe {
            result::set_matmul_desc_attribute(self.desc, attr, v, size)
        })
    }

    /// Sets the transpose of cuBLASLt's A and B (`true`: `CUBLAS_OP_T`).
    fn transpose(&self, a: bool, b: bool) -> Result<(), BlasError> {
        // cublasOperation_t values (an int32 attribute): CUBLAS_OP_N = 0, CUBLAS_OP_T = 1.
        for (attr, t) in [
            (
                sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
                a,
            ),
            (
                sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSB,
                b,
            ),
        ] {
            let op = i32::from(t);
            self.set(attr, (&raw const op).cast(), std::mem::size_of_val(&op))?;
        }
        Ok(())
    }

    /// Asks the heuristic for algorithms over the layouts set.
    fn choose_algorithms(&mut self) -> Result<(), BlasError> {
        self.algos = heuristic(self.handle, self.desc, self.layouts)?;
        Ok(())
    }

    fn choose(&mut self, index: usize) {
        self.chosen = index.min(self.algos.len().saturating_sub(1));
    }

    /// Enqueues `D = alpha * op(A) op(B)` (cuBLASLt's A and B) on the engine's stream, D in
    /// place of C.
    fn launch(&self, gpu: &Gpu, a: u64, b: u64, c: u64, alpha: f32) -> Result<(), BlasError> {
        let beta = 0.0f32;
        // SAFETY: the descriptors were made for this plan; the callers pass addresses with the
        // plan's extent behind them; scalars live across the call.
        call("matmul", unsafe {
            result::matmul(
                self.handle,
                self.desc,
                (&raw const alpha).cast(),
                (&raw const beta).cast(),
                a as *const c_void,
                self.layouts[0],
                b as *const c_void,
                self.layouts[1],
                c as *const c_void,
                self.layouts[2],
                c as *mut c_void,
                self.layouts[2],
                &self.algos[self.chosen],
                self.workspace.ptr() as *mut c_void,
                self.workspace.bytes(),
                gpu.raw_stream().cast(),
            )
        })
    }
}

impl Drop for Planned {
    fn drop(&mut self) {
        // SAFETY: each made in `new` or by the planning callers (null where it was not),
        // destroyed once.
        unsafe {
            for l in self.layouts {
                if !l.is_null() {
                    let _ = result::destroy_matrix_layout(l);
                }
            }
            if !self.desc.is_null() {
                let _ = result::destroy_matmul_desc(self.desc);
            }
            let _ = result::destroy_handle(self.handle);
        }
    }
}

/// cuBLASLt's version number and the library's path.
fn version_and_path(lib: &library::LocatedLibrary) -> (usize, String) {
    // SAFETY: a plain query.
    let version = unsafe { sys::cublasLtGetVersion() };
    (version, lib.path.display().to_string())
}

const WORKSPACE: usize = 32 << 20;

/// How many of the heuristic's algorithms are offered to be timed.
pub const ALGORITHMS: usize = 8;

/// The heuristic's algorithms for a planned matmul (up to [`ALGORITHMS`], best guess first),
/// each allowed the [`WORKSPACE`]; an error when it has none.
fn heuristic(
    handle: sys::cublasLtHandle_t,
    desc: sys::cublasLtMatmulDesc_t,
    [la, lb, lc]: [sys::cublasLtMatrixLayout_t; 3],
) -> Result<Vec<sys::cublasLtMatmulAlgo_t>, BlasError> {
    let pref = call("preference", result::create_matmul_pref())?;
    let ws = WORKSPACE;
    // SAFETY: attribute value is a usize as documented.
    let set = call("preference attribute", unsafe {
        result::set_matmul_pref_attribute(
            pref,
            sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
            (&raw const ws).cast(),
            std::mem::size_of_val(&ws),
        )
    });
    if let Err(e) = set {
        // SAFETY: created above, destroyed once.
        let _ = unsafe { result::destroy_matmul_pref(pref) };
        return Err(e);
    }
    // SAFETY: zeroed results are plain data that the call overwrites.
    let mut results: Vec<sys::cublasLtMatmulHeuristicResult_t> =
        vec![unsafe { std::mem::zeroed() }; ALGORITHMS];
    let mut returned = 0i32;
    // SAFETY: all descriptors were created by the caller; `results` holds ALGORITHMS entries.
    let status = unsafe {
        sys::cublasLtMatmulAlgoGetHeuristic(
            handle,
            desc,
            la,
            lb,
            lc,
            lc,
            pref,
            ALGORITHMS as i32,
            results.as_mut_ptr(),
            &mut returned,
        )
    };
    // SAFETY: created above, destroyed once.
    let _ = unsafe { result::destroy_matmul_pref(pref) };
    call("heuristic", status.result())?;
    let algos: Vec<sys::cublasLtMatmulAlgo_t> = results
        .iter()
        .take(usize::try_from(returned).unwrap_or(0))
        .filter(|r| r.state == sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS)
        .map(|r| r.algo)
        .collect();
    if algos.is_empty() {
        return Err(BlasError::Call {
            call: "heuristic",
            status: "no algorithm for this shape".into(),
        });
    }
    Ok(algos)
}

impl Gemm {
    pub fn new(gpu: &Gpu, input: GemmInput, m: u64, n: u64, k: u64) -> Result<Gemm, BlasError> {
        let lib = library::load(CudaLibrary::CublasLt)?;
        let (in_type, out_type) = match input {
            GemmInput::Bf16 => (
                sys::cudaDataType::CUDA_R_16BF,
                sys::cudaDataType::CUDA_R_16BF,
            ),
            GemmInput::E4m3 { .. } => (
                sys::cudaDataType::CUDA_R_8F_E4M3,
                sys::cudaDataType::CUDA_R_16BF,
            ),
            GemmInput::F32 => (sys::cudaDataType::CUDA_R_32F, sys::cudaDataType::CUDA_R_32F),
        };
        let k_i = i64::try_from(k).unwrap_or(i64::MAX);
        let n_i = i64::try_from(n).unwrap_or(i64::MAX);
        // From here on, Drop frees what was made, whatever fails.
        let mut plan = Planned::new(gpu)?;
        plan.transpose(true, false)?;
        if let GemmInput::E4m3 { scale_a, scale_b } = input {
            // cuBLASLt's "A" is our B and its "B" is our A (see the module doc).
            plan.set(
                sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                (&raw const scale_b).cast(),
                8,
            )?;
            plan.set(
                sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                (&raw const scale_a).cast(),
                8,
            )?;
        }
        // A' = B stored [K, N] column-major (ld K), B' = A stored [K, M] (ld K), C' [N, M] (ld N).
        plan.layouts[0] = call("layout", result::create_matrix_layout(in_type, k, n, k_i))?;
        plan.layouts[1] = call("layout", result::create_matrix_layout(in_type, k, m, k_i))?;
        plan.layouts[2] = call("layout", result::create_matrix_layout(out_type, n, m, n_i))?;
        plan.choose_algorithms()?;
        let (version, library) = version_and_path(&lib);
        Ok(Gemm {
            plan,
            version,
            library,
        })
    }

    /// How many algorithms the heuristic offered.
    pub fn algorithms(&self) -> usize {
        self.plan.algos.len()
    }

    /// Makes [`Gemm::launch`] run the heuristic's algorithm `index` (0: its first choice).
    pub fn choose(&mut self, index: usize) {
        self.plan.choose(index);
    }

    pub fn chosen(&self) -> usize {
        self.plan.chosen
    }

    /// Enqueues `C = A @ B^T` on the engine's stream.
    pub fn launch(&self, gpu: &Gpu, a: u64, b: u64, c: u64) -> Result<(), BlasError> {
        self.launch_scaled(gpu, a, b, c, 1.0)
    }

    /// Enqueues `C = alpha * A @ B^T` on the engine's stream. The device pointers are sized
    /// for the shape this plan was made for (the engine allocates them from the task's shapes).
    pub fn launch_scaled(
        &self,
        gpu: &Gpu,
        a: u64,
        b: u64,
        c: u64,
        alpha: f32,
    ) -> Result<(), BlasError> {
        // cuBLASLt's A is our B (see the module doc).
        self.plan.launch(gpu, b, a, c, alpha)
    }
}

/// The element type of a [`Product`]'s matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Elem {
    Bf16,
    F32,
}

impl Elem {
    pub fn bytes(self) -> u64 {
        match self {
            Elem::Bf16 => 2,
            Elem::F32 => 4,
        }
    }

    fn cuda(self) -> sys::cudaDataType {
        match self {
            Elem::Bf16 => sys::cudaDataType::CUDA_R_16BF,
            Elem::F32 => sys::cudaDataType::CUDA_R_32F,
        }
    }
}

/// A batch of row-major matrices in memory: `rows` x `cols` each, `ld` elements from a row to
/// the next (at least `cols`), `batch_stride` elements from a matrix to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RowMajor {
    pub elem: Elem,
    pub rows: u64,
    pub cols: u64,
    pub ld: u64,
    pub batch_stride: u64,
}

impl RowMajor {
    /// Matrices stored densely one after the other (`ld = cols`, `rows * cols` apart).
    pub fn dense(elem: Elem, rows: u64, cols: u64) -> RowMajor {
        RowMajor {
            elem,
            rows,
            cols,
            ld: cols,
            batch_stride: rows * cols,
        }
    }

    /// Elements from the first element of the batch to one past the last it touches.
    pub fn extent(&self, batch: u64) -> u64 {
        if self.rows == 0 || self.cols == 0 || batch == 0 {
            return 0;
        }
        (batch - 1) * self.batch_stride + (self.rows - 1) * self.ld + self.cols
    }
}

/// A strided-batched matrix product on row-major matrices: for each of `batch` matrices,
/// `C = alpha * op(A) op(B)`, where `op(X)` is `X`, or `X^T` when `X`'s flag is set. A and B
/// share an element type (bf16 or fp32), accumulation is fp32 (`CUBLAS_COMPUTE_32F`), and C is
/// fp32, or bf16 from bf16 inputs. Build one with [`Product::new`], which checks the shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Product {
    pub a: RowMajor,
    pub a_t: bool,
    pub b: RowMajor,
    pub b_t: bool,
    pub c: RowMajor,
    pub batch: u64,
}

/// One operand as cuBLASLt is given it: a column-major matrix (`rows` x `cols`, `ld` elements
/// from a column to the next), repeated `batch_stride` elements apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColMajor {
    pub elem: Elem,
    pub rows: u64,
    pub cols: u64,
    pub ld: u64,
    pub batch_stride: u64,
}

/// A [`Product`] in cuBLASLt's column-major terms: `D = alpha * op(A) op(B)` with `op(A)`
/// `m x k` and `op(B)` `k x n`. A row-major matrix is the column-major matrix of its transpose
/// with the same leading dimension, so `C = op(A) op(B)` is `C^T = op(B)^T op(A)^T`: cuBLASLt's
/// A is the product's B (transposed when B's flag is set) and its B is the product's A.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Matmul {
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub trans_a: bool,
    pub trans_b: bool,
    pub a: ColMajor,
    pub b: ColMajor,
    pub c: ColMajor,
    pub batch: u64,
}

impl Product {
    /// The product, or why its shapes, leading dimensions, strides or types do not fit.
    pub fn new(
        (a, a_t): (RowMajor, bool),
        (b, b_t): (RowMajor, bool),
        c: RowMajor,
        batch: u64,
    ) -> Result<Product, String> {
        let p = Product {
            a,
            a_t,
            b,
            b_t,
            c,
            batch,
        };
        p.check()?;
        Ok(p)
    }

    /// `(M, N, K)`: `op(A)` is `M x K`, `op(B)` is `K x N`.
    pub fn dims(&self) -> (u64, u64, u64) {
        let (m, k) = if self.a_t {
            (self.a.cols, self.a.rows)
        } else {
            (self.a.rows, self.a.cols)
        };
        let n = if self.b_t { self.b.rows } else { self.b.cols };
        (m, n, k)
    }

    fn check(&self) -> Result<(), String> {
        let (m, n, k) = self.dims();
        let kb = if self.b_t { self.b.cols } else { self.b.rows };
        if k != kb {
            return Err(format!("op(A) has {k} columns but op(B) has {kb} rows"));
        }
        if (self.c.rows, self.c.cols) != (m, n) {
            return Err(format!(
                "C is {} x {} but op(A) op(B) is {m} x {n}",
                self.c.rows, self.c.cols
            ));
        }
        if m == 0 || n == 0 || k == 0 || self.batch == 0 {
            return Err(format!(
                "an empty product ({m} x {n} x {k}, batch {})",
                self.batch
            ));
        }
        for (name, x) in [("A", &self.a), ("B", &self.b), ("C", &self.c)] {
            if x.ld < x.cols {
                return Err(format!(
                    "{name}'s leading dimension {} is below its {} columns",
                    x.ld, x.cols
                ));
            }
            if i64::try_from(x.extent(self.batch)).is_err() {
                return Err(format!("{name} spans more elements than an int64 counts"));
            }
        }
        if self.batch > 1 && self.c.batch_stride < self.c.extent(1) {
            return Err(format!(
                "C's matrices overlap: {} elements apart, each spans {}",
                self.c.batch_stride,
                self.c.extent(1)
            ));
        }
        if i32::try_from(self.batch).is_err() {
            return Err(format!("a batch of {} does not fit an int32", self.batch));
        }
        if self.a.elem != self.b.elem {
            return Err("A and B differ in element type".into());
        }
        if self.a.elem == Elem::F32 && self.c.elem != Elem::F32 {
            return Err("fp32 inputs need an fp32 C".into());
        }
        Ok(())
    }

    /// The same product in cuBLASLt's terms (see [`Matmul`]).
    pub fn matmul(&self) -> Matmul {
        let (m, n, k) = self.dims();
        let col = |x: &RowMajor| ColMajor {
            elem: x.elem,
            rows: x.cols,
            cols: x.rows,
            ld: x.ld,
            batch_stride: x.batch_stride,
        };
        Matmul {
            m: n,
            n: m,
            k,
            trans_a: self.b_t,
            trans_b: self.a_t,
            a: col(&self.b),
            b: col(&self.a),
            c: col(&self.c),
            batch: self.batch,
        }
    }

    /// Bytes from the first element of each operand's batch to one past its last: what a
    /// buffer must hold past the pointer it is given as that operand.
    pub fn bytes(&self) -> [u64; 3] {
        [&self.a, &self.b, &self.c].map(|x| x.extent(self.batch) * x.elem.bytes())
    }
}

/// A planned cuBLASLt [`Product`], strided-batched; launch it as often as needed.
#[derive(Debug)]
pub struct BatchedGemm {
    plan: Planned,
    pub product: Product,
    /// cuBLASLt's version number (e.g. 130000).
    pub version: usize,
    pub library: String,
}

/// A cuBLASLt layout for `x`, batched.
fn batched_layout(x: &ColMajor, batch: u64) -> Result<sys::cublasLtMatrixLayout_t, BlasError> {
    let ld = i64::try_from(x.ld).unwrap_or(i64::MAX);
    let layout = call(
        "layout",
        result::create_matrix_layout(x.elem.cuda(), x.rows, x.cols, ld),
    )?;
    let count = i32::try_from(batch).unwrap_or(i32::MAX);
    let stride = i64::try_from(x.batch_stride).unwrap_or(i64::MAX);
    // SAFETY: the layout was created above; BATCH_COUNT is an int32 and
    // STRIDED_BATCH_OFFSET an int64, as documented.
    let set = unsafe {
        result::set_matrix_layout_attribute(
            layout,
            sys::cublasLtMatrixLayoutAttribute_t::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
            (&raw const count).cast(),
            std::mem::size_of_val(&count),
        )
        .and_then(|()| {
            result::set_matrix_layout_attribute(
                layout,
                sys::cublasLtMatrixLayoutAttribute_t::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                (&raw const stride).cast(),
                std::mem::size_of_val(&stride),
            )
        })
    };
    if let Err(e) = set {
        // SAFETY: created above, destroyed once.
        let _ = unsafe { result::destroy_matrix_layout(layout) };
        return Err(BlasError::Call {
            call: "layout attribute",
            status: format!("{:?}", e.0),
        });
    }
    Ok(layout)
}

impl BatchedGemm {
    pub fn new(gpu: &Gpu, product: Product) -> Result<BatchedGemm, BlasError> {
        let lib = library::load(CudaLibrary::CublasLt)?;
        let mm = product.matmul();
        // From here on, Drop frees what was made, whatever fails.
        let mut plan = Planned::new(gpu)?;
        plan.transpose(mm.trans_a, mm.trans_b)?;
        for (i, x) in [&mm.a, &mm.b, &mm.c].into_iter().enumerate() {
            plan.layouts[i] = batched_layout(x, mm.batch)?;
        }
        plan.choose_algorithms()?;
        let (version, library) = version_and_path(&lib);
        Ok(BatchedGemm {
            plan,
            product,
            version,
            library,
        })
    }

    /// How many algorithms the heuristic offered.
    pub fn algorithms(&self) -> usize {
        self.plan.algos.len()
    }

    /// Makes [`BatchedGemm::launch`] run the heuristic's algorithm `index` (0: its first choice).
    pub fn choose(&mut self, index: usize) {
        self.plan.choose(index);
    }

    pub fn chosen(&self) -> usize {
        self.plan.chosen
    }

    /// Enqueues `C = alpha * op(A) op(B)` on the engine's stream, A, B and C the device
    /// addresses of the product's row-major matrices (each the first of its batch). The caller
    /// gives addresses with at least [`Product::bytes`] behind them.
    pub fn launch(&self, gpu: &Gpu, a: u64, b: u64, c: u64, alpha: f32) -> Result<(), BlasError> {
        // The product's matmul puts B first in cuBLASLt's order (see `Product::matmul`).
        self.plan.launch(gpu, b, a, c, alpha)
    }
}

/// What cuBLASLt computes for a [`Matmul`], written out on the host over fp32 values: every
/// element of `D` is an fp64 sum, rounded to fp32. The tests run the products the composed
/// baselines plan through it, and the harness's host drivers do the same in C++.
#[cfg(test)]
pub fn emulate(mm: &Matmul, a: &[f32], b: &[f32], c: &mut [f32], alpha: f32) {
    let at = |x: &ColMajor, t: bool, batch: u64, i: u64, j: u64, v: &[f32]| -> f64 {
        let (r, c) = if t { (j, i) } else { (i, j) };
        f64::from(v[(batch * x.batch_stride + c * x.ld + r) as usize])
    };
    for batch in 0..mm.batch {
        for i in 0..mm.m {
            for j in 0..mm.n {
                let sum: f64 = (0..mm.k)
                    .map(|l| {
                        at(&mm.a, mm.trans_a, batch, i, l, a)
                            * at(&mm.b, mm.trans_b, batch, l, j, b)
                    })
                    .sum();
                c[(batch * mm.c.batch_stride + j * mm.c.ld + i) as usize] =
                    (f64::from(alpha) * sum) as f32;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Row-major `op(A) op(B)` written plainly, per batch.
    fn naive(p: &Product, a: &[f32], b: &[f32]) -> Vec<Vec<f32>> {
        let (m, n, k) = p.dims();
        let get = |x: &RowMajor, t: bool, batch: u64, i: u64, j: u64, v: &[f32]| -> f64 {
            let (r, c) = if t { (j, i) } else { (i, j) };
            f64::from(v[(batch * x.batch_stride + r * x.ld + c) as usize])
        };
        (0..p.batch)
            .map(|batch| {
                (0..m * n)
                    .map(|e| {
                        let (i, j) = (e / n, e % n);
                        (0..k)
                            .map(|l| {
                                get(&p.a, p.a_t, batch, i, l, a) * get(&p.b, p.b_t, batch, l, j, b)
                            })
                            .sum::<f64>() as f32
                    })
                    .collect()
            })
            .collect()
    }

    fn values(n: u64, seed: u64) -> Vec<f32> {
        (0..n)
            .map(|i| (((i * 7919 + seed * 104_729) % 97) as f32 - 48.0) / 16.0)
            .collect()
    }

    /// cuBLASLt's column-major view of a row-major product computes that product: every
    /// combination of transposes, with padded leading dimensions and gapped batches.
    #[test]
    fn the_column_major_view_computes_the_row_major_product() {
        for (a_t, b_t) in [(false, false), (false, true), (true, false), (true, true)] {
            let (m, n, k, batch) = (3u64, 5u64, 4u64, 2u64);
            let a_shape = if a_t { (k, m) } else { (m, k) };
            let b_shape = if b_t { (n, k) } else { (k, n) };
            let padded = |rows: u64, cols: u64| RowMajor {
                elem: Elem::F32,
                rows,
                cols,
                ld: cols + 3,
                batch_stride: rows * (cols + 3) + 5,
            };
            let p = Product::new(
                (padded(a_shape.0, a_shape.1), a_t),
                (padded(b_shape.0, b_shape.1), b_t),
                padded(m, n),
                batch,
            )
            .expect("fits");
            let [ab, bb, cb] = p.bytes().map(|x| x / 4);
            let (a, b) = (values(ab, 1), values(bb, 2));
            let mut c = vec![f32::NAN; cb as usize];
            // cuBLASLt's A is the product's B, its B the product's A.
            emulate(&p.matmul(), &b, &a, &mut c, 1.0);
            for (batch, want) in naive(&p, &a, &b).iter().enumerate() {
                for (e, w) in want.iter().enumerate() {
                    let (i, j) = (e as u64 / n, e as u64 % n);
                    let got = c[(batch as u64 * p.c.batch_stride + i * p.c.ld + j) as usize];
                    assert_eq!(got, *w, "a_t {a_t} b_t {b_t}: batch {batch} C[{i}][{j}]");
                }
            }
        }
    }

    #[test]
    fn products_that_do_not_fit_are_refused_with_the_reason() {
        let d = |r, c| RowMajor::dense(Elem::Bf16, r, c);
        let err = |r: Result<Product, String>| r.expect_err("refused");
        assert!(
            err(Product::new((d(4, 8), false), (d(4, 8), false), d(4, 8), 1)).contains("columns")
        );
        assert!(
            err(Product::new((d(4, 8), false), (d(6, 8), true), d(4, 5), 1)).contains("C is 4 x 5")
        );
        let mut narrow = d(4, 8);
        narrow.ld = 7;
        assert!(
            err(Product::new((narrow, false), (d(6, 8), true), d(4, 6), 1)).contains("leading")
        );
        let mut overlapping = d(4, 6);
        overlapping.batch_stride = 10;
        assert!(
            err(Product::new(
                (d(4, 8), false),
                (d(6, 8), true),
                overlapping,
                2
            ))
            .contains("overlap")
        );
        let f32_in = RowMajor::dense(Elem::F32, 4, 8);
        assert!(
            err(Product::new((f32_in, false), (d(6, 8), true), d(4, 6), 1))
                .contains("element type")
        );
        let ok = Product::new(
            (d(4, 8), false),
            (d(6, 8), true),
            RowMajor::dense(Elem::F32, 4, 6),
            3,
        )
        .expect("fits");
        assert_eq!(ok.dims(), (4, 6, 8));
        assert_eq!(ok.bytes(), [3 * 32 * 2, 3 * 48 * 2, 3 * 24 * 4]);
        let mm = ok.matmul();
        assert_eq!(
            (mm.m, mm.n, mm.k, mm.trans_a, mm.trans_b),
            (6, 4, 8, true, false)
        );
        assert_eq!((mm.a.rows, mm.a.cols, mm.a.ld), (8, 6, 8));
        assert_eq!(
            (mm.c.rows, mm.c.cols, mm.c.ld, mm.c.batch_stride),
            (6, 4, 6, 24)
        );
    }
}
