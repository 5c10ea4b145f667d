//! Composed baselines: where no library has the op (MLA decode, the gated delta rule), the
//! baseline is composed from cuBLASLt's strided-batched products and the harness's own kernels
//! (support.cu), recorded as provider [`PROVIDER`] and never pooled with the speedups over a
//! library's own kernel. A composition is planned on the host by pure functions ([`mla`],
//! [`gdn`]: the buffers, the products' layouts, leading dimensions and batch strides, the tables the kernels
//! read), bound once to a tensor set's device addresses, and timed as a whole: every launch of
//! it lies between the baseline's two events.

pub mod gdn;
pub mod mla;

use crate::cuda::cublaslt::{BatchedGemm, Product};
use crate::cuda::driver::{DeviceBuffer, Geometry, Gpu, Kernel};
use crate::task::Op;

use super::inputs::TensorSet;
use super::support::{Arg, Support, params};

/// The provider a composed baseline's record names (`BaselineInfo::provider`).
pub const PROVIDER: &str = "composed";

/// Which composition an op's baseline is, where its baseline is composed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Composition {
    /// [`mla`]: gather, cuBLASLt scores, softmax, cuBLASLt `P V`, per length bucket.
    MlaDecode,
    /// [`gdn`]: the chunked gated delta rule, its products on cuBLASLt.
    GdnPrefill,
}

impl Composition {
    /// The composition of `op`'s baseline; `None` where a library has the op.
    pub fn of(op: &Op) -> Option<Composition> {
        match op {
            Op::AttentionMlaDecode { .. } => Some(Composition::MlaDecode),
            Op::GdnPrefill => Some(Composition::GdnPrefill),
            _ => None,
        }
    }

    /// What the baseline is, in words (the record's `baseline.label`).
    pub fn label(self) -> &'static str {
        match self {
            Composition::MlaDecode => mla::LABEL,
            Composition::GdnPrefill => gdn::LABEL,
        }
    }
}

/// Bytes an address has behind it in its buffer: what a product or kernel may touch from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    pub ptr: u64,
    pub bytes: u64,
}

impl Region {
    /// The part from `offset` bytes on, or why there is none.
    pub fn at(self, offset: u64) -> Result<Region, String> {
        if offset > self.bytes {
            return Err(format!(
                "offset {offset} past the end of a region of {} bytes",
                self.bytes
            ));
        }
        Ok(Region {
            ptr: self.ptr + offset,
            bytes: self.bytes - offset,
        })
    }
}

/// cuBLASLt's heuristic assumes 256-byte aligned operands unless told otherwise; every
/// operand of a composed product starts at such an address (the plans align their offsets).
pub const OPERAND_ALIGNMENT: u64 = 256;

/// One step of a composition as planned: a harness kernel with its arguments, or a cuBLASLt
/// product on its operands' regions (A, B, C of the row-major [`Product`]). Planning them is
/// pure ([`mla::steps`]); [`Builder::step`] binds them.
#[derive(Debug, Clone)]
pub enum Step {
    Kernel {
        name: &'static str,
        geometry: Geometry,
        args: Vec<Arg>,
    },
    Gemm {
        what: String,
        product: Product,
        operands: [Region; 3],
        alpha: f32,
    },
}

impl Step {
    /// Why the step may not run: a product's operand with fewer bytes behind its address than
    /// the product reaches, or not [`OPERAND_ALIGNMENT`]-aligned.
    pub fn check(&self) -> Result<(), String> {
        let Step::Gemm {
            what,
            product,
            operands,
            ..
        } = self
        else {
            return Ok(());
        };
        for ((name, r), need) in ["A", "B", "C"]
            .into_iter()
            .zip(operands)
            .zip(product.bytes())
        {
            if r.bytes < need {
                return Err(format!(
                    "{what}: {name} needs {need} bytes from its address, its buffer has {}",
                    r.bytes
                ));
            }
            if !r.ptr.is_multiple_of(OPERAND_ALIGNMENT) {
                return Err(format!(
                    "{what}: {name} at {:#x} is not {OPERAND_ALIGNMENT}-byte aligned",
                    r.ptr
                ));
            }
        }
        Ok(())
    }

    /// The step in words, for the record's `baseline.engine`.
    pub fn describe(&self) -> String {
        match self {
            Step::Kernel { name, geometry, .. } => {
                let blocks: u64 = geometry.grid.iter().map(|&g| u64::from(g)).product();
                let threads: u32 = geometry.block.iter().product();
                format!("{name} ({blocks} blocks of {threads})")
            }
            Step::Gemm { what, product, .. } => {
                let (m, n, k) = product.dims();
                format!(
                    "cuBLASLt {what} ({} x [{m} x {k}] [{k} x {n}])",
                    product.batch
                )
            }
        }
    }
}

/// One launch of a composition, bound to its addresses.
#[derive(Debug)]
enum Launch {
    Kernel {
        kernel: Kernel,
        geometry: Geometry,
        args: Vec<Arg>,
    },
    Gemm {
        gemm: usize,
        a: u64,
        b: u64,
        c: u64,
        alpha: f32,
    },
}

/// A composed baseline bound to one tensor set: its launches in order, the products they
/// name, the buffers it owns (the outputs among them).
#[derive(Debug)]
pub struct Composed {
    pub composition: Composition,
    launches: Vec<Launch>,
    /// The products, each with what it computes in words.
    gemms: Vec<(String, BatchedGemm)>,
    outputs: Vec<(String, DeviceBuffer)>,
    /// Intermediates and tables, kept alive with the launches that name them.
    _buffers: Vec<DeviceBuffer>,
    /// How it was planned and its launches, in words.
    pub summary: String,
}

impl Composed {
    /// Enqueues every launch, in order, on the engine's stream.
    pub fn launch(&self, gpu: &Gpu) -> Result<(), String> {
        for l in &self.launches {
            match l {
                Launch::Kernel {
                    kernel,
                    geometry,
                    args,
                } => gpu
                    .launch(*kernel, geometry, &params(args))
                    .map_err(|e| e.to_string())?,
                Launch::Gemm {
                    gemm,
                    a,
                    b,
                    c,
                    alpha,
                } => {
                    let (what, g) = &self.gemms[*gemm];
                    g.launch(gpu, *a, *b, *c, *alpha)
                        .map_err(|e| format!("{what}: {e}"))?;
                }
            }
        }
        Ok(())
    }

    /// Where the composition writes the task output `name`.
    pub fn output(&self, name: &str) -> Option<&DeviceBuffer> {
        self.outputs.iter().find(|(n, _)| n == name).map(|(_, b)| b)
    }

    /// How many products the composition runs.
    pub fn gemms(&self) -> usize {
        self.gemms.len()
    }

    /// Product `i`: what it computes, and its plan (to choose its algorithm).
    pub fn gemm_mut(&mut self, i: usize) -> (&str, &mut BatchedGemm) {
        let (what, g) = &mut self.gemms[i];
        (what.as_str(), g)
    }

    /// Enqueues product `i` alone, with the algorithm chosen now.
    pub fn launch_gemm(&self, gpu: &Gpu, i: usize) -> Result<(), String> {
        for l in &self.launches {
            if let Launch::Gemm {
                gemm,
                a,
                b,
                c,
                alpha,
            } = l
                && *gemm == i
            {
                self.gemms[i]
                    .1
                    .launch(gpu, *a, *b, *c, *alpha)
                    .map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    /// The cuBLASLt version and library file its products run on.
    pub fn library(&self) -> Option<(usize, String)> {
        self.gemms
            .first()
            .map(|(_, g)| (g.version, g.library.clone()))
    }
}

/// Builds a [`Composed`]: buffers it owns (zeroed once), then its [`Step`]s bound in order,
/// each checked first ([`Step::check`]), so that no product reaches past a buffer whatever the
/// plan says.
#[derive(Debug)]
pub struct Builder<'a> {
    gpu: &'a Gpu,
    support: &'a Support,
    launches: Vec<Launch>,
    gemms: Vec<(String, BatchedGemm)>,
    buffers: Vec<DeviceBuffer>,
    outputs: Vec<(String, DeviceBuffer)>,
    words: Vec<String>,
}

impl<'a> Builder<'a> {
    pub fn new(gpu: &'a Gpu, support: &'a Support) -> Builder<'a> {
        Builder {
            gpu,
            support,
            launches: Vec::new(),
            gemms: Vec::new(),
            buffers: Vec::new(),
            outputs: Vec::new(),
            words: Vec::new(),
        }
    }

    /// A zeroed buffer of `bytes`, and its region.
    fn alloc(&self, bytes: u64) -> Result<(DeviceBuffer, Region), String> {
        let n = usize::try_from(bytes).map_err(|e| e.to_string())?;
        let buf = self.gpu.alloc(n).map_err(|e| e.to_string())?;
        self.gpu
            .fill_u8(&buf, 0, 0, buf.bytes())
            .map_err(|e| e.to_string())?;
        let r = Region {
            ptr: buf.ptr(),
            bytes,
        };
        Ok((buf, r))
    }

    /// A zeroed buffer of `bytes` the composition owns.
    pub fn buffer(&mut self, bytes: u64) -> Result<Region, String> {
        let (buf, r) = self.alloc(bytes)?;
        self.buffers.push(buf);
        Ok(r)
    }

    /// A buffer holding `bytes` (a table the kernels read).
    pub fn table(&mut self, bytes: &[u8]) -> Result<Region, String> {
        let (buf, r) = self.alloc(bytes.len() as u64)?;
        self.gpu.upload(&buf, 0, bytes).map_err(|e| e.to_string())?;
        self.buffers.push(buf);
        Ok(r)
    }

    /// The buffer the composition writes the task output `name` to (`bytes`, the task's size).
    pub fn output(&mut self, name: &str, bytes: u64) -> Result<Region, String> {
        let (buf, r) = self.alloc(bytes)?;
        self.outputs.push((name.to_string(), buf));
        Ok(r)
    }

    /// Binds `step`, after [`Step::check`]: a kernel of the harness, or a cuBLASLt plan.
    pub fn step(&mut self, step: Step) -> Result<(), String> {
        step.check()?;
        self.words.push(step.describe());
        match step {
            Step::Kernel {
                name,
                geometry,
                args,
            } => {
                let kernel = self.support.kernel(name)?;
                self.launches.push(Launch::Kernel {
                    kernel,
                    geometry,
                    args,
                });
            }
            Step::Gemm {
                what,
                product,
                operands: [a, b, c],
                alpha,
            } => {
                let gemm =
                    BatchedGemm::new(self.gpu, product).map_err(|e| format!("{what}: {e}"))?;
                self.launches.push(Launch::Gemm {
                    gemm: self.gemms.len(),
                    a: a.ptr,
                    b: b.ptr,
                    c: c.ptr,
                    alpha,
                });
                self.gemms.push((what, gemm));
            }
        }
        Ok(())
    }

    /// The composition, `plan` saying in words how it was planned.
    pub fn finish(self, composition: Composition, plan: String) -> Composed {
        Composed {
            composition,
            summary: format!(
                "{plan}; {} launches: {}",
                self.launches.len(),
                self.words.join(", ")
            ),
            launches: self.launches,
            gemms: self.gemms,
            outputs: self.outputs,
            _buffers: self.buffers,
        }
    }
}

/// A task tensor of `set` as a region: its address and its bytes.
pub fn tensor(set: &TensorSet, name: &str) -> Result<Region, String> {
    let (_, bytes, ..) = set
        .tensors
        .get(name)
        .ok_or_else(|| format!("the task has no tensor {name}"))?;
    let ptr = set
        .ptr(name)
        .ok_or_else(|| format!("the task has no tensor {name}"))?;
    Ok(Region {
        ptr,
        bytes: *bytes as u64,
    })
}

/// `v` as an `int` kernel argument.
pub fn int(v: u64) -> Result<Arg, String> {
    i32::try_from(v)
        .map(Arg::I32)
        .map_err(|_| format!("{v} does not fit an int"))
}

/// `n` rounded up to a multiple of `unit`.
pub fn round_up(n: u64, unit: u64) -> u64 {
    n.div_ceil(unit) * unit
}

/// The smallest count of items of `bytes` each that spans a multiple of
/// [`OPERAND_ALIGNMENT`] bytes: offsets in such steps keep an aligned base aligned.
pub fn alignment_unit(bytes: u64) -> u64 {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 { a } else { gcd(b, a % b) }
    }
    OPERAND_ALIGNMENT / gcd(OPERAND_ALIGNMENT, bytes.max(1))
}

/// The least common multiple of two alignment units (powers of two: the larger).
pub fn lcm_unit(a: u64, b: u64) -> u64 {
    a.max(b)
}

/// Checks for the steps a composition plans, shared by its tests: every product's operands
/// in bounds and aligned, every kernel one of the harness's, and, where NVRTC is installed,
/// every kernel's arguments the sizes and kinds of the parameters its PTX declares.
#[cfg(test)]
pub(super) fn check_steps(steps: &[Step]) {
    use crate::engine::support::{KERNELS, SOURCE, nvrtc_here};
    for s in steps {
        s.check().unwrap_or_else(|e| panic!("{e}"));
        if let Step::Kernel { name, .. } = s {
            assert!(KERNELS.contains(name), "{name} is not a harness kernel");
        }
    }
    if !nvrtc_here("check_steps: kernel signatures") {
        return;
    }
    let out = crate::cuda::nvrtc::compile_for(SOURCE, "support.cu", "compute_90")
        .expect("support.cu compiles");
    let module = ptxbench_ptx::parse(&out.ptx).expect("NVRTC's PTX parses");
    for s in steps {
        let Step::Kernel { name, args, .. } = s else {
            continue;
        };
        let entry = module.entry(name).expect("an entry");
        let declared: Vec<(u64, bool)> = entry
            .params
            .iter()
            .map(|p| (p.size_bytes(), matches!(p.ty, ptxbench_ptx::ParamType::F32)))
            .collect();
        let given: Vec<(u64, bool)> = args
            .iter()
            .map(|a| match a {
                Arg::Ptr(_) | Arg::U64(_) => (8, false),
                Arg::I32(_) => (4, false),
                Arg::F32(_) => (4, true),
            })
            .collect();
        assert_eq!(given, declared, "{name}: (bytes, float) of each argument");
    }
}

/// Regions at distinct, aligned, far apart addresses with `bytes` behind each, as the tests
/// bind a plan to them.
#[cfg(test)]
pub(super) fn fake_regions<const N: usize>(bytes: [u64; N]) -> [Region; N] {
    let mut at = 0u64;
    bytes.map(|b| {
        at += 1 << 40;
        Region { ptr: at, bytes: b }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ops_without_a_library_have_a_composition_and_no_other_does() {
        let suite = crate::task::Suite::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks"),
        )
        .expect("the suite loads");
        let mut composed = Vec::new();
        for t in &suite.tasks {
            let c = Composition::of(&t.op);
            assert_eq!(
                c.is_some(),
                t.baseline.library == PROVIDER,
                "{}: composition {c:?}, baseline library {}",
                t.id,
                t.baseline.library
            );
            if let Some(c) = c {
                composed.push((t.id.to_string(), c));
            }
        }
        assert!(
            composed.contains(&(
                "mla_paged_decode_h16_ckv512_kpe64_ps1".to_string(),
                Composition::MlaDecode
            )),
            "{composed:?}"
        );
        assert!(
            composed.contains(&(
                "gdn_prefill_qk8_v16_d128_k_last".to_string(),
                Composition::GdnPrefill
            )),
            "{composed:?}"
        );
    }

    #[test]
    fn alignment_units_keep_offsets_on_256_bytes() {
        // A KV row of 576 bf16 is 1152 bytes: two rows are 9 x 256.
        assert_eq!(alignment_unit(1152), 2);
        assert_eq!(alignment_unit(4), 64);
        assert_eq!(alignment_unit(2 * 16 * 576), 1);
        assert_eq!(alignment_unit(2 * 3 * 48), 8);
        for bytes in [1u64, 2, 6, 96, 1152, 4096, 18432] {
            assert_eq!(
                alignment_unit(bytes) * bytes % OPERAND_ALIGNMENT,
                0,
                "{bytes}"
            );
        }
        assert_eq!(round_up(65, 64), 128);
        assert_eq!(round_up(64, 64), 64);
        let r = Region {
            ptr: 0x1000,
            bytes: 100,
        };
        assert_eq!(
            r.at(40),
            Ok(Region {
                ptr: 0x1028,
                bytes: 60
            })
        );
        assert!(r.at(101).is_err());
    }
}
