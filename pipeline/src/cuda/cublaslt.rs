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
    handle: sys::cublasLtHandle_t,
    desc: sys::cublasLtMatmulDesc_t,
    layouts: [sys::cublasLtMatrixLayout_t; 3],
    /// The heuristic's algorithms, best guess first.
    algos: Vec<sys::cublasLtMatmulAlgo_t>,
    /// The one [`Gemm::launch`] runs.
    chosen: usize,
    workspace: DeviceBuffer,
    /// cuBLASLt's version number (e.g. 130000).
    pub version: usize,
    pub library: String,
}

const WORKSPACE: usize = 32 << 20;

/// How many of the heuristic's algorithms are offered to be timed.
pub const ALGORITHMS: usize = 8;

impl Gemm {
    pub fn new(gpu: &Gpu, input: GemmInput, m: u64, n: u64, k: u64) -> Result<Gemm, BlasError> {
        let lib = library::load(CudaLibrary::CublasLt)?;
        let workspace = gpu.alloc(WORKSPACE)?;
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
        let handle = call("create", result::create_handle())?;
        let desc = call(
            "matmul desc",
            result::create_matmul_desc(
                sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                sys::cudaDataType::CUDA_R_32F,
            ),
        )?;
        let set = |attr: sys::cublasLtMatmulDescAttributes_t, v: *const c_void, size: usize| {
            // SAFETY: `v` points to `size` bytes of the attribute's type.
            call("set attribute", unsafe {
                result::set_matmul_desc_attribute(desc, attr, v, size)
            })
        };
        // cublasOperation_t values (an int32 attribute): CUBLAS_OP_N = 0, CUBLAS_OP_T = 1.
        let trans_t: i32 = 1;
        let trans_n: i32 = 0;
        set(
            sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
            (&raw const trans_t).cast(),
            std::mem::size_of_val(&trans_t),
        )?;
        set(
            sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSB,
            (&raw const trans_n).cast(),
            std::mem::size_of_val(&trans_n),
        )?;
        if let GemmInput::E4m3 { scale_a, scale_b } = input {
            // cuBLASLt's "A" is our B and its "B" is our A (see the module doc).
            set(
                sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                (&raw const scale_b).cast(),
                8,
            )?;
            set(
                sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                (&raw const scale_a).cast(),
                8,
            )?;
        }
        // A' = B stored [K, N] column-major (ld K), B' = A stored [K, M] (ld K), C' [N, M] (ld N).
        let la = call("layout", result::create_matrix_layout(in_type, k, n, k_i))?;
        let lb = call("layout", result::create_matrix_layout(in_type, k, m, k_i))?;
        let lc = call("layout", result::create_matrix_layout(out_type, n, m, n_i))?;
        let pref = call("preference", result::create_matmul_pref())?;
        let ws = WORKSPACE;
        // SAFETY: attribute value is a usize as documented.
        call("preference attribute", unsafe {
            result::set_matmul_pref_attribute(
                pref,
                sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                (&raw const ws).cast(),
                std::mem::size_of_val(&ws),
            )
        })?;
        // SAFETY: zeroed results are plain data that the call overwrites.
        let mut results: Vec<sys::cublasLtMatmulHeuristicResult_t> =
            vec![unsafe { std::mem::zeroed() }; ALGORITHMS];
        let mut returned = 0i32;
        // SAFETY: all descriptors were created above; `results` holds ALGORITHMS entries.
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
        // SAFETY: a plain query.
        let version = unsafe { sys::cublasLtGetVersion() };
        Ok(Gemm {
            handle,
            desc,
            layouts: [la, lb, lc],
            algos,
            chosen: 0,
            workspace,
            version,
            library: lib.path.display().to_string(),
        })
    }

    /// How many algorithms the heuristic offered.
    pub fn algorithms(&self) -> usize {
        self.algos.len()
    }

    /// Makes [`Gemm::launch`] run the heuristic's algorithm `index` (0: its first choice).
    pub fn choose(&mut self, index: usize) {
        self.chosen = index.min(self.algos.len() - 1);
    }

    pub fn chosen(&self) -> usize {
        self.chosen
    }

    /// Enqueues `C = A @ B^T` on the engine's stream.
    pub fn launch(&self, gpu: &Gpu, a: u64, b: u64, c: u64) -> Result<(), BlasError> {
        self.launch_scaled(gpu, a, b, c, 1.0)
    }

    /// Enqueues `C = alpha * A @ B^T` on the engine's stream.
    pub fn launch_scaled(
        &self,
        gpu: &Gpu,
        a: u64,
        b: u64,
        c: u64,
        alpha: f32,
    ) -> Result<(), BlasError> {
        let beta = 0.0f32;
        // SAFETY: device pointers sized for the shape this plan was made for (the engine
        // allocates them from the task's shapes); scalars live across the call.
        call("matmul", unsafe {
            result::matmul(
                self.handle,
                self.desc,
                (&raw const alpha).cast(),
                (&raw const beta).cast(),
                b as *const c_void,
                self.layouts[0],
                a as *const c_void,
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

impl Drop for Gemm {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        unsafe {
            for l in self.layouts {
                let _ = result::destroy_matrix_layout(l);
            }
            let _ = result::destroy_matmul_desc(self.desc);
            let _ = result::destroy_handle(self.handle);
        }
    }
}
