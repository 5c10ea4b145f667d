//! PTXBench's own GPU code (support.cu): seeded inputs, fp32 references and comparisons,
//! compiled with NVRTC for the device in hand and loaded once per worker.

use crate::cuda::cublaslt::{Gemm, GemmInput};
use crate::cuda::driver::{DeviceBuffer, DriverError, Geometry, Gpu, Kernel, Module, ParamBytes};
use crate::cuda::nvrtc;
use crate::record::Comparison;
use crate::task::{DType, Distribution};

/// The source, compiled at run time (its hash is part of every record's environment).
pub const SOURCE: &str = include_str!("support.cu");

#[derive(Debug, thiserror::Error)]
pub enum SupportError {
    #[error("compiling the harness's support code: {0}")]
    Compile(String),
    #[error(transparent)]
    Driver(#[from] DriverError),
}

/// Scalar kernel arguments.
#[derive(Debug, Clone, Copy)]
pub enum Arg {
    Ptr(u64),
    U64(u64),
    I32(i32),
    F32(f32),
}

/// The bytes of each argument, as [`Gpu::launch`] takes them.
pub(super) fn params(args: &[Arg]) -> Vec<ParamBytes> {
    args.iter()
        .map(|a| match *a {
            Arg::Ptr(v) | Arg::U64(v) => ParamBytes::new(&v.to_le_bytes()),
            Arg::I32(v) => ParamBytes::new(&v.to_le_bytes()),
            Arg::F32(v) => ParamBytes::new(&v.to_le_bytes()),
        })
        .collect()
}

/// The loaded support module.
#[derive(Debug)]
pub struct Support {
    _module: Module,
    kernels: std::collections::BTreeMap<&'static str, Kernel>,
    /// The fp32 GEMM reference's cuBLASLt plans, one per shape (M, N, K), made on first use.
    /// `None`: cuBLASLt could not plan it, and the SIMT kernel computes it.
    ref_gemms: std::cell::RefCell<std::collections::BTreeMap<(i32, i32, i32), Option<Gemm>>>,
    /// NVRTC version and options used.
    pub compiler: String,
}

/// Every kernel of [`SOURCE`] the engine launches.
pub(super) const KERNELS: &[&str] = &[
    "fill_bf16",
    "fill_f16",
    "fill_f32",
    "fill_e4m3",
    "fill_e5m2",
    "bf16_to_f32",
    "f16_to_f32",
    "f32_to_f32",
    "e4m3_to_f32",
    "e5m2_to_f32",
    "f32_to_bf16",
    "ref_gemm_abt",
    "ref_attn_fwd",
    "ref_attn_delta",
    "ref_attn_bwd_dq",
    "ref_attn_bwd_dkdv",
    "ref_paged_decode",
    "ref_prefill",
    "ref_mla_decode",
    "ref_gdn_prefill",
    "amax_bf16_rounded",
    "quantize_e4m3",
    "scale_by",
    "csr_to_table",
    "mla_pack_q",
    "mla_gather_kv",
    "mla_softmax",
    "mla_unpack",
    "gdn_pack",
    "gdn_wy",
    "gdn_recurrence",
    "gdn_output",
    "compare",
    "count_diff",
    "count_not",
];

/// A grid-stride launch shape for `n` elements.
pub(super) fn stride_geometry(n: u64) -> Geometry {
    let blocks = n.div_ceil(256).clamp(1, 132 * 32);
    Geometry {
        grid: [u32::try_from(blocks).unwrap_or(1), 1, 1],
        block: [256, 1, 1],
        shared_mem: 0,
        cluster: None,
    }
}

/// One warp per row.
pub(super) fn warp_geometry(rows: u64) -> Geometry {
    Geometry {
        grid: [u32::try_from(rows.div_ceil(8)).unwrap_or(u32::MAX), 1, 1],
        block: [256, 1, 1],
        shared_mem: 0,
        cluster: None,
    }
}

/// The harness's PTX for one compute capability, and what compiled it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HarnessPtx {
    pub ptx: String,
    /// NVRTC's version and options (a record's `harness_compiler`).
    pub compiler: String,
}

impl HarnessPtx {
    /// [`SOURCE`] compiled by NVRTC for `compute_{major}{minor}` (about half a second of CPU).
    pub fn compile((major, minor): (i32, i32)) -> Result<HarnessPtx, SupportError> {
        let out = nvrtc::compile_for(SOURCE, "support.cu", &format!("compute_{major}{minor}"))
            .map_err(|e| SupportError::Compile(e.to_string()))?;
        Ok(HarnessPtx {
            compiler: format!(
                "nvrtc {}.{} {}",
                out.nvrtc_version.0,
                out.nvrtc_version.1,
                out.options.join(" ")
            ),
            ptx: out.ptx,
        })
    }

    /// The same, shared through `dir` by the workers of one parent: read when an earlier
    /// worker left it there, else compiled and left there (written under another name, then
    /// renamed, so no reader sees half of it). The file is named by the capability and the
    /// source's hash; one that does not parse is compiled over. Workers write it before any
    /// candidate runs, and a candidate's code runs only on the GPU.
    pub fn shared(cc: (i32, i32), dir: &std::path::Path) -> Result<HarnessPtx, SupportError> {
        let hash = blake3::hash(SOURCE.as_bytes()).to_hex();
        let name = format!("support-{}{}-{}.json", cc.0, cc.1, &hash[..16]);
        let path = dir.join(&name);
        if let Some(h) = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<HarnessPtx>(&b).ok())
        {
            return Ok(h);
        }
        let h = HarnessPtx::compile(cc)?;
        // Sharing is only a saving: a folder that cannot be written costs the next worker a
        // compile, nothing else.
        if let Ok(json) = serde_json::to_vec(&h) {
            let _ = crate::destination::write_atomic(&path, &json);
        }
        Ok(h)
    }
}

impl Support {
    /// Loads the harness on `gpu`, compiling its PTX with NVRTC.
    pub fn load(gpu: &Gpu) -> Result<Support, SupportError> {
        Support::load_sharing(gpu, None)
    }

    /// The same, the PTX shared through `harness` when given ([`HarnessPtx::shared`]).
    pub fn load_sharing(
        gpu: &Gpu,
        harness: Option<&std::path::Path>,
    ) -> Result<Support, SupportError> {
        let cc = gpu.info.compute_capability;
        let out = match harness {
            Some(dir) => HarnessPtx::shared(cc, dir)?,
            None => HarnessPtx::compile(cc)?,
        };
        let module = gpu
            .compile(&out.ptx, None)
            .map_err(|e| SupportError::Compile(e.to_string()))?
            .module;
        let mut kernels = std::collections::BTreeMap::new();
        for k in KERNELS {
            kernels.insert(*k, gpu.kernel(&module, k)?);
        }
        Ok(Support {
            _module: module,
            kernels,
            ref_gemms: std::cell::RefCell::default(),
            compiler: out.compiler,
        })
    }

    /// The loaded kernel `name` (one of the harness's entries).
    pub(super) fn kernel(&self, name: &str) -> Result<Kernel, String> {
        self.kernels
            .get(name)
            .copied()
            .ok_or_else(|| format!("the harness has no kernel {name}"))
    }

    fn run(
        &self,
        gpu: &Gpu,
        name: &'static str,
        g: Geometry,
        args: &[Arg],
    ) -> Result<(), DriverError> {
        let k = self.kernels[name];
        gpu.launch(k, &g, &params(args))
    }

    /// Fills `n` elements of `dtype` at `ptr` from `dist` with `seed`.
    pub fn fill(
        &self,
        gpu: &Gpu,
        ptr: u64,
        dtype: DType,
        n: u64,
        seed: u64,
        dist: &Distribution,
    ) -> Result<(), DriverError> {
        let (kind, p0, p1, p2) = match *dist {
            Distribution::Randn { std } => (0, std, 0.0, 0.0),
            Distribution::Spiky {
                std,
                spike_std,
                spike_prob,
            } => (1, std, spike_std, spike_prob),
            Distribution::Uniform { lo, hi } => (2, lo, hi, 0.0),
        };
        let name = match dtype {
            DType::Bf16 => "fill_bf16",
            DType::F16 => "fill_f16",
            DType::F32 => "fill_f32",
            DType::E4m3 => "fill_e4m3",
            DType::E5m2 => "fill_e5m2",
            DType::I32 => "fill_f32", // no integer task inputs exist; never reached by the suite
        };
        self.run(
            gpu,
            name,
            stride_geometry(n),
            &[
                Arg::Ptr(ptr),
                Arg::U64(n),
                Arg::U64(seed),
                Arg::I32(kind),
                Arg::F32(p0 as f32),
                Arg::F32(p1 as f32),
                Arg::F32(p2 as f32),
            ],
        )
    }

    /// Converts `n` elements of `dtype` at `src` to fp32 at `dst`.
    pub fn to_f32(
        &self,
        gpu: &Gpu,
        src: u64,
        dtype: DType,
        dst: u64,
        n: u64,
    ) -> Result<(), DriverError> {
        let name = match dtype {
            DType::Bf16 => "bf16_to_f32",
            DType::F16 => "f16_to_f32",
            DType::F32 | DType::I32 => "f32_to_f32",
            DType::E4m3 => "e4m3_to_f32",
            DType::E5m2 => "e5m2_to_f32",
        };
        self.run(
            gpu,
            name,
            stride_geometry(n),
            &[Arg::Ptr(src), Arg::Ptr(dst), Arg::U64(n)],
        )
    }

    /// Quantizes `n` fp32 values at `src` to e4m3 at `dst` with the per-tensor scale 448/amax
    /// (values rounded to bf16 first), and writes the descale amax/448 (f32) to `descale`.
    /// `amax` is 4 bytes of device scratch.
    pub fn quantize_e4m3(
        &self,
        gpu: &Gpu,
        src: u64,
        n: u64,
        dst: u64,
        descale: u64,
        amax: &DeviceBuffer,
    ) -> Result<(), DriverError> {
        gpu.fill_u8(amax, 0, 0, 4)?;
        self.run(
            gpu,
            "amax_bf16_rounded",
            stride_geometry(n),
            &[Arg::Ptr(src), Arg::U64(n), Arg::Ptr(amax.ptr())],
        )?;
        self.run(
            gpu,
            "quantize_e4m3",
            stride_geometry(n),
            &[
                Arg::Ptr(src),
                Arg::U64(n),
                Arg::Ptr(amax.ptr()),
                Arg::Ptr(dst),
                Arg::Ptr(descale),
            ],
        )
    }

    /// `x[i] *= *s` for `n` fp32 values, `s` an f32 on the device.
    pub fn scale_by(&self, gpu: &Gpu, x: u64, n: u64, s: u64) -> Result<(), DriverError> {
        self.run(
            gpu,
            "scale_by",
            stride_geometry(n),
            &[Arg::Ptr(x), Arg::U64(n), Arg::Ptr(s)],
        )
    }

    /// The dense page table `[b, maxp]` and sequence lengths `[b]` of a CSR table.
    #[allow(clippy::too_many_arguments)]
    pub fn csr_to_table(
        &self,
        gpu: &Gpu,
        indptr: u64,
        indices: u64,
        b: i32,
        maxp: i32,
        table: u64,
        seq_len: u64,
    ) -> Result<(), DriverError> {
        let n = u64::try_from(b).unwrap_or(0) * u64::try_from(maxp).unwrap_or(0);
        self.run(
            gpu,
            "csr_to_table",
            stride_geometry(n),
            &[
                Arg::Ptr(indptr),
                Arg::Ptr(indices),
                Arg::I32(b),
                Arg::I32(maxp),
                Arg::Ptr(table),
                Arg::Ptr(seq_len),
            ],
        )
    }

    /// Paged GQA decode in fp32 (page size 1): `out`, `lse` from `q [b,h,d]` and the caches
    /// `[pages, hkv, d]` through the CSR table.
    #[allow(clippy::too_many_arguments)]
    pub fn paged_decode(
        &self,
        gpu: &Gpu,
        [q, k, v, indptr, indices]: [u64; 5],
        [out, lse]: [u64; 2],
        b: i32,
        h: i32,
        hkv: i32,
        d: i32,
    ) -> Result<(), DriverError> {
        let scale = 1.0 / (d as f32).sqrt();
        self.run(
            gpu,
            "ref_paged_decode",
            warp_geometry(u64::try_from(b).unwrap_or(0) * u64::try_from(h).unwrap_or(0)),
            &[
                Arg::Ptr(q),
                Arg::Ptr(k),
                Arg::Ptr(v),
                Arg::Ptr(indptr),
                Arg::Ptr(indices),
                Arg::Ptr(out),
                Arg::Ptr(lse),
                Arg::I32(b),
                Arg::I32(h),
                Arg::I32(hkv),
                Arg::I32(d),
                Arg::F32(scale),
            ],
        )
    }

    /// GQA prefill in fp32 over packed sequences: `out [tq,h,d]`, `lse [tq,h]` from
    /// `q [tq,h,d]` and keys ragged (`k, v [tk,hkv,d]`) or paged (`[pages,1,hkv,d]` through
    /// `kv_indices`, page size 1), the sequences given by the indptrs.
    #[allow(clippy::too_many_arguments)]
    pub fn prefill(
        &self,
        gpu: &Gpu,
        [q, k, v, qo_indptr, kv_indptr, kv_indices]: [u64; 6],
        [out, lse]: [u64; 2],
        (b, tq, h, hkv, d): (i32, i32, i32, i32, i32),
        paged: bool,
        causal: bool,
    ) -> Result<(), DriverError> {
        let scale = 1.0 / (d as f32).sqrt();
        self.run(
            gpu,
            "ref_prefill",
            warp_geometry(u64::try_from(tq).unwrap_or(0) * u64::try_from(h).unwrap_or(0)),
            &[
                Arg::Ptr(q),
                Arg::Ptr(k),
                Arg::Ptr(v),
                Arg::Ptr(qo_indptr),
                Arg::Ptr(kv_indptr),
                Arg::Ptr(kv_indices),
                Arg::Ptr(out),
                Arg::Ptr(lse),
                Arg::I32(b),
                Arg::I32(tq),
                Arg::I32(h),
                Arg::I32(hkv),
                Arg::I32(d),
                Arg::I32(i32::from(paged)),
                Arg::I32(i32::from(causal)),
                Arg::F32(scale),
            ],
        )
    }

    /// MLA decode in fp32 (page size 1): `out [b,h,dc]`, `lse [b,h]` from `q_nope [b,h,dc]`,
    /// `q_pe [b,h,dp]` and the latent caches `ckv [pages,dc]`, `kpe [pages,dp]` through the CSR
    /// table; every head reads the one latent KV head, the values are the `ckv` rows.
    pub fn mla_decode(
        &self,
        gpu: &Gpu,
        [q_nope, q_pe, ckv, kpe, indptr, indices]: [u64; 6],
        [out, lse]: [u64; 2],
        (b, h, dc, dp): (i32, i32, i32, i32),
        scale: f32,
    ) -> Result<(), DriverError> {
        self.run(
            gpu,
            "ref_mla_decode",
            warp_geometry(u64::try_from(b).unwrap_or(0) * u64::try_from(h).unwrap_or(0)),
            &[
                Arg::Ptr(q_nope),
                Arg::Ptr(q_pe),
                Arg::Ptr(ckv),
                Arg::Ptr(kpe),
                Arg::Ptr(indptr),
                Arg::Ptr(indices),
                Arg::Ptr(out),
                Arg::Ptr(lse),
                Arg::I32(b),
                Arg::I32(h),
                Arg::I32(dc),
                Arg::I32(dp),
                Arg::F32(scale),
            ],
        )
    }

    /// GDN prefill in fp32 (k-last state): `out [t,hv,d]` and `new_state [n,hv,d,d]` from
    /// `q, k [t,hqk,d]`, `v [t,hv,d]`, the initial `state [n,hv,d,d]`, the gate parameters
    /// `a_log, dt_bias [hv]`, `a, b [t,hv]` and `cu_seqlens [n+1]`; one block of `d` threads per
    /// (sequence, value head), a thread per state column.
    pub fn gdn_prefill(
        &self,
        gpu: &Gpu,
        [q, k, v, state, a_log, a, dt_bias, b, cu_seqlens]: [u64; 9],
        [out, new_state]: [u64; 2],
        (n, hqk, hv, d): (i32, i32, i32, i32),
        scale: f32,
    ) -> Result<(), DriverError> {
        let blocks = u64::try_from(n).unwrap_or(0) * u64::try_from(hv).unwrap_or(0);
        self.run(
            gpu,
            "ref_gdn_prefill",
            Geometry {
                grid: [u32::try_from(blocks).unwrap_or(u32::MAX), 1, 1],
                block: [u32::try_from(d).unwrap_or(0), 1, 1],
                shared_mem: 0,
                cluster: None,
            },
            &[
                Arg::Ptr(q),
                Arg::Ptr(k),
                Arg::Ptr(v),
                Arg::Ptr(state),
                Arg::Ptr(a_log),
                Arg::Ptr(a),
                Arg::Ptr(dt_bias),
                Arg::Ptr(b),
                Arg::Ptr(cu_seqlens),
                Arg::Ptr(out),
                Arg::Ptr(new_state),
                Arg::I32(n),
                Arg::I32(hqk),
                Arg::I32(hv),
                Arg::I32(d),
                Arg::F32(scale),
            ],
        )
    }

    pub fn f32_to_bf16(&self, gpu: &Gpu, src: u64, dst: u64, n: u64) -> Result<(), DriverError> {
        self.run(
            gpu,
            "f32_to_bf16",
            stride_geometry(n),
            &[Arg::Ptr(src), Arg::Ptr(dst), Arg::U64(n)],
        )
    }

    /// `C = scale * A @ B^T` in fp32: for large shapes cuBLASLt with fp32 arithmetic
    /// (`CUBLAS_COMPUTE_32F`, no TF32), planned once per shape; for small ones, and where
    /// cuBLASLt cannot plan the shape, the SIMT kernel.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm(
        &self,
        gpu: &Gpu,
        a: u64,
        b: u64,
        c: u64,
        m: i32,
        n: i32,
        k: i32,
        scale: f32,
    ) -> Result<(), DriverError> {
        // A new shape costs cuBLASLt a plan and loading its kernel in this fresh context (tens
        // of ms); below this many FLOPs the SIMT kernel is done sooner.
        const SIMT_BELOW_FLOPS: f64 = 1e11;
        if 2.0 * f64::from(m) * f64::from(n) * f64::from(k) >= SIMT_BELOW_FLOPS
            && self.gemm_cublaslt(gpu, a, b, c, (m, n, k), scale)
        {
            return Ok(());
        }
        self.gemm_simt(gpu, a, b, c, (m, n, k), scale)
    }

    /// The cuBLASLt part of [`Support::gemm`]; false where cuBLASLt cannot do the shape.
    fn gemm_cublaslt(
        &self,
        gpu: &Gpu,
        a: u64,
        b: u64,
        c: u64,
        (m, n, k): (i32, i32, i32),
        scale: f32,
    ) -> bool {
        let mut plans = self.ref_gemms.borrow_mut();
        let plan = plans.entry((m, n, k)).or_insert_with(|| {
            let dim = |v: i32| u64::try_from(v).unwrap_or(0);
            Gemm::new(gpu, GemmInput::F32, dim(m), dim(n), dim(k)).ok()
        });
        plan.as_ref()
            .is_some_and(|p| p.launch_scaled(gpu, a, b, c, scale).is_ok())
    }

    /// Loads cuBLASLt and runs one small fp32 reference GEMM, so that a worker pays the
    /// library's start-up before its request comes (a spare does it while another evaluation
    /// runs). A failure here is met again, and reported, where the library is used.
    pub fn warm_up(&self, gpu: &Gpu) {
        const N: i32 = 512;
        let bytes = (N * N * 4) as usize;
        if let (Ok(a), Ok(c)) = (gpu.alloc(bytes), gpu.alloc(bytes)) {
            let _ = gpu.fill_u32(&a, 0, 0, bytes / 4);
            let _ = self.gemm_cublaslt(gpu, a.ptr(), a.ptr(), c.ptr(), (N, N, N), 1.0);
            let _ = gpu.sync();
        }
    }

    /// The SIMT kernel of [`Support::gemm`] (one fp32 FMA chain per output, K in order).
    fn gemm_simt(
        &self,
        gpu: &Gpu,
        a: u64,
        b: u64,
        c: u64,
        (m, n, k): (i32, i32, i32),
        scale: f32,
    ) -> Result<(), DriverError> {
        let g = Geometry {
            grid: [
                u32::try_from(n).unwrap_or(0).div_ceil(16),
                u32::try_from(m).unwrap_or(0).div_ceil(16),
                1,
            ],
            block: [16, 16, 1],
            shared_mem: 0,
            cluster: None,
        };
        self.run(
            gpu,
            "ref_gemm_abt",
            g,
            &[
                Arg::Ptr(a),
                Arg::Ptr(b),
                Arg::Ptr(c),
                Arg::I32(m),
                Arg::I32(n),
                Arg::I32(k),
                Arg::F32(scale),
            ],
        )
    }

    /// Attention forward in fp32: O and LSE from Q, K, V ([BH, S, D]).
    #[allow(clippy::too_many_arguments)]
    pub fn attention_fwd(
        &self,
        gpu: &Gpu,
        q: u64,
        k: u64,
        v: u64,
        o: u64,
        lse: u64,
        bh: i32,
        s: i32,
        d: i32,
        causal: bool,
    ) -> Result<(), DriverError> {
        let scale = 1.0 / (d as f32).sqrt();
        self.run(
            gpu,
            "ref_attn_fwd",
            warp_geometry(u64::try_from(bh).unwrap_or(0) * u64::try_from(s).unwrap_or(0)),
            &[
                Arg::Ptr(q),
                Arg::Ptr(k),
                Arg::Ptr(v),
                Arg::Ptr(o),
                Arg::Ptr(lse),
                Arg::I32(bh),
                Arg::I32(s),
                Arg::I32(d),
                Arg::I32(i32::from(causal)),
                Arg::F32(scale),
            ],
        )
    }

    /// Attention backward in fp32: dQ, dK, dV from Q, K, V, O, dO, LSE; `delta` is scratch of
    /// BH*S floats.
    #[allow(clippy::too_many_arguments)]
    pub fn attention_bwd(
        &self,
        gpu: &Gpu,
        [q, k, v, o, d_o, lse]: [u64; 6],
        [dq, dk, dv]: [u64; 3],
        delta: u64,
        bh: i32,
        s: i32,
        d: i32,
        causal: bool,
    ) -> Result<(), DriverError> {
        let rows = u64::try_from(bh).unwrap_or(0) * u64::try_from(s).unwrap_or(0);
        let scale = 1.0 / (d as f32).sqrt();
        let c = i32::from(causal);
        self.run(
            gpu,
            "ref_attn_delta",
            warp_geometry(rows),
            &[
                Arg::Ptr(o),
                Arg::Ptr(d_o),
                Arg::Ptr(delta),
                Arg::I32(bh * s),
                Arg::I32(d),
            ],
        )?;
        self.run(
            gpu,
            "ref_attn_bwd_dq",
            warp_geometry(rows),
            &[
                Arg::Ptr(q),
                Arg::Ptr(k),
                Arg::Ptr(v),
                Arg::Ptr(d_o),
                Arg::Ptr(lse),
                Arg::Ptr(delta),
                Arg::Ptr(dq),
                Arg::I32(bh),
                Arg::I32(s),
                Arg::I32(d),
                Arg::I32(c),
                Arg::F32(scale),
            ],
        )?;
        self.run(
            gpu,
            "ref_attn_bwd_dkdv",
            warp_geometry(rows),
            &[
                Arg::Ptr(q),
                Arg::Ptr(k),
                Arg::Ptr(v),
                Arg::Ptr(d_o),
                Arg::Ptr(lse),
                Arg::Ptr(delta),
                Arg::Ptr(dk),
                Arg::Ptr(dv),
                Arg::I32(bh),
                Arg::I32(s),
                Arg::I32(d),
                Arg::I32(c),
                Arg::F32(scale),
            ],
        )
    }

    /// Compares `n` fp32 values at `out` with `reference` (both device pointers).
    #[allow(clippy::too_many_arguments)]
    pub fn compare(
        &self,
        gpu: &Gpu,
        scratch: &DeviceBuffer,
        out: u64,
        reference: u64,
        n: u64,
        rtol: f64,
        atol: f64,
    ) -> Result<Comparison, DriverError> {
        // scratch: 3 doubles then 5 u64 counters (64 bytes); counts[3] starts at MAX (min).
        let mut init = vec![0u8; 64];
        init[48..56].copy_from_slice(&u64::MAX.to_le_bytes());
        gpu.upload(scratch, 0, &init)?;
        self.run(
            gpu,
            "compare",
            stride_geometry(n),
            &[
                Arg::Ptr(out),
                Arg::Ptr(reference),
                Arg::U64(n),
                Arg::F32(rtol as f32),
                Arg::F32(atol as f32),
                Arg::Ptr(scratch.ptr()),
                Arg::Ptr(scratch.ptr() + 24),
            ],
        )?;
        let raw = gpu.download(scratch, 0, 64)?;
        let f = |i: usize| f64::from_le_bytes(raw[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        let u =
            |i: usize| u64::from_le_bytes(raw[24 + i * 8..32 + i * 8].try_into().expect("8 bytes"));
        let (se, sr) = (f(0), f(1));
        Ok(Comparison {
            elements: n,
            violations: u(0),
            non_finite: u(1),
            non_zero: u(2),
            first_violation: (u(3) != u64::MAX && u(3) > 0).then(|| u(3) - 1),
            reference_non_zero: u(4),
            max_abs_error: f(2),
            relative_l2: if sr > 0.0 {
                (se / sr).sqrt()
            } else if se > 0.0 {
                f64::INFINITY
            } else {
                0.0
            },
        })
    }

    /// Bytes that differ between two device ranges.
    pub fn count_diff(
        &self,
        gpu: &Gpu,
        scratch: &DeviceBuffer,
        a: u64,
        b: u64,
        n: u64,
    ) -> Result<u64, DriverError> {
        gpu.upload(scratch, 0, &[0u8; 8])?;
        self.run(
            gpu,
            "count_diff",
            stride_geometry(n),
            &[
                Arg::Ptr(a),
                Arg::Ptr(b),
                Arg::U64(n),
                Arg::Ptr(scratch.ptr()),
            ],
        )?;
        let raw = gpu.download(scratch, 0, 8)?;
        Ok(u64::from_le_bytes(raw[..8].try_into().expect("8 bytes")))
    }

    /// Bytes in a device range that are not `value`.
    pub fn count_not(
        &self,
        gpu: &Gpu,
        scratch: &DeviceBuffer,
        a: u64,
        n: u64,
        value: u8,
    ) -> Result<u64, DriverError> {
        gpu.upload(scratch, 0, &[0u8; 8])?;
        self.run(
            gpu,
            "count_not",
            stride_geometry(n),
            &[
                Arg::Ptr(a),
                Arg::U64(n),
                Arg::I32(i32::from(value)),
                Arg::Ptr(scratch.ptr()),
            ],
        )?;
        let raw = gpu.download(scratch, 0, 8)?;
        Ok(u64::from_le_bytes(raw[..8].try_into().expect("8 bytes")))
    }
}

/// Whether NVRTC is installed; a test without it is skipped, unless the tools are required
/// (PTXBENCH_REQUIRE_CUDA_TOOLS=1), where it fails.
#[cfg(test)]
pub(super) fn nvrtc_here(test: &str) -> bool {
    if crate::cuda::library::locate(crate::cuda::CudaLibrary::Nvrtc).is_ok() {
        return true;
    }
    assert!(
        std::env::var_os("PTXBENCH_REQUIRE_CUDA_TOOLS").is_none_or(|v| v != "1"),
        "NVRTC required but missing"
    );
    eprintln!("SKIP {test}: NVRTC not installed");
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The support code must compile with NVRTC (no libc headers, no INFINITY macro); where
    /// NVRTC is installed this checks it for every architecture we run on.
    #[test]
    fn support_code_compiles_with_nvrtc() {
        if !nvrtc_here("support_code_compiles_with_nvrtc") {
            return;
        }
        for arch in ["compute_90", "compute_100"] {
            let out = nvrtc::compile_for(SOURCE, "support.cu", arch).expect("support.cu compiles");
            let m = ptxbench_ptx::parse(&out.ptx).expect("NVRTC's PTX parses");
            for k in KERNELS {
                assert!(m.entry(k).is_some(), "{arch}: entry {k} missing");
            }
        }
    }

    /// Workers of one parent share the harness's PTX through a folder: the first compiles it
    /// and leaves it, the next read it; a damaged file is compiled over.
    #[test]
    fn workers_share_the_harness_ptx_through_a_folder() {
        if !nvrtc_here("workers_share_the_harness_ptx_through_a_folder") {
            return;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let first = HarnessPtx::shared((9, 0), dir.path()).expect("compiles");
        assert_eq!(first, HarnessPtx::compile((9, 0)).expect("compiles"));
        let files: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").path())
            .collect();
        assert_eq!(files.len(), 1, "one file, no temporary left: {files:?}");
        // The next worker reads what is there (a marked copy shows it did not compile).
        let marked = HarnessPtx {
            compiler: "left by an earlier worker".into(),
            ..first.clone()
        };
        std::fs::write(&files[0], serde_json::to_vec(&marked).expect("json")).expect("write");
        assert_eq!(
            HarnessPtx::shared((9, 0), dir.path()).expect("read"),
            marked
        );
        // Another capability is another file.
        let blackwell = HarnessPtx::shared((10, 0), dir.path()).expect("compiles");
        assert!(
            blackwell.ptx.contains(".target sm_100"),
            "{}",
            &blackwell.ptx[..200]
        );
        // A damaged file is compiled over, and repaired.
        std::fs::write(&files[0], b"{\"ptx\": ").expect("write");
        assert_eq!(
            HarnessPtx::shared((9, 0), dir.path()).expect("compiles"),
            first
        );
        let back: HarnessPtx =
            serde_json::from_slice(&std::fs::read(&files[0]).expect("read")).expect("parses");
        assert_eq!(back, first);
    }
}
