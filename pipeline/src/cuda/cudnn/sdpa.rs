//! The SDPA plan: the shapes, the graph kinds and the tensors each binds, and [`Sdpa`] itself:
//! built once per shape (graph, engine, workspace, internal buffers), bound to device
//! tensors, launched as often as needed.

use std::ffi::c_void;

use cudarc::cudnn::sys;
use sys::cudnnBackendAttributeName_t as A;
use sys::cudnnBackendAttributeType_t as T;
use sys::cudnnBackendDescriptorType_t as D;

use super::backward::backward_graph;
use super::builder::{Builder, Scalar};
use super::forward::forward_graph;
use super::forward_fp8::forward_fp8_graph;
use super::graph::{GraphIo, SdpaKind, SdpaPass, SdpaShape};
use super::paged_decode::{PagedDecodeShape, paged_decode_graph};
use super::plan::{Plan, candidate_plans};
use super::prefill::{PrefillShape, prefill_graph};
use super::{Api, Desc, DnnError, Handle, api};
use crate::cuda::driver::{DeviceBuffer, Gpu};

/// A planned cuDNN SDPA for one shape; bind it to tensors, then launch as often as needed.
pub struct Sdpa {
    api: &'static Api,
    kind: SdpaKind,
    // Field order: descriptors drop before the handle they were made on.
    /// The finalized plans of the heuristic's configurations, best guess first.
    plans: Vec<Plan>,
    /// The plan [`Sdpa::launch`] runs (the heuristic's first until [`Sdpa::choose`]).
    chosen: std::cell::Cell<usize>,
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
    /// Sized for the plan that needs most.
    workspace: DeviceBuffer,
    /// cuDNN's version, e.g. "9.14.0", and its number, e.g. 91400.
    pub version: String,
    pub version_number: usize,
    /// The library file that ran.
    pub library: String,
}

impl std::fmt::Debug for Sdpa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sdpa")
            .field("kind", &self.kind)
            .field("version", &self.version)
            .field("library", &self.library)
            .field("engine", &self.engine())
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

    /// Builds the causal GQA prefill graph (bf16, packed queries with ragged offsets, keys
    /// packed or paged, padding and bottom-right causal masks from the sequence lengths, scale
    /// 1/sqrt(d), packed LSE) and picks an engine. Needs cuDNN >= 9.6 (ragged tensors with
    /// fewer KV heads than query heads). Tensors: [`SdpaKind::Prefill`]'s or
    /// [`SdpaKind::PagedPrefill`]'s [`SdpaKind::tensors`].
    pub fn prefill(gpu: &Gpu, shape: PrefillShape) -> Result<Sdpa, DnnError> {
        let kind = if shape.paged.is_some() {
            SdpaKind::PagedPrefill
        } else {
            SdpaKind::Prefill
        };
        shape.validate().map_err(|why| DnnError::Shape {
            graph: kind.graph_name(),
            why,
        })?;
        require_version(kind, 90600, "9.6.0 or newer", |_| true)?;
        Sdpa::build(gpu, kind, shape.d, |b| prefill_graph(b, shape))
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
        let plans = candidate_plans(api, &handle, &graph, kind)?;
        let ws = plans.iter().map(|p| p.workspace).max().unwrap_or(0);
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
            plans,
            chosen: std::cell::Cell::new(0),
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
        })
    }

    /// How many engine configurations were planned (the heuristic's, in its order).
    pub fn configurations(&self) -> usize {
        self.plans.len()
    }

    /// Makes configuration `i` (of [`Sdpa::configurations`]) the one that runs.
    pub fn choose(&self, i: usize) {
        assert!(i < self.plans.len(), "configuration {i} was not planned");
        self.chosen.set(i);
    }

    /// Which configuration runs.
    pub fn chosen(&self) -> usize {
        self.chosen.get()
    }

    /// The engine that runs, in words (global index, heuristic mode, knobs, workspace).
    pub fn engine(&self) -> String {
        let p = &self.plans[self.chosen.get()];
        format!("{}, workspace {} bytes", p.words, p.workspace)
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
        // SAFETY: every plan and the variant pack were finalized for this handle; the pointers
        // in the pack are device allocations sized for the planned shape (the workspace for the
        // plan that needs most), and the host scalars live in `self`.
        self.api.check("cudnnBackendExecute", unsafe {
            (self.api.execute)(
                self.handle.raw,
                self.plans[self.chosen.get()].desc.raw,
                bound.pack.raw,
            )
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
