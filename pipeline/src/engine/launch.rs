//! Launching a plan: parameters encoded for one tensor set (pointers, scalars, tensor maps by
//! value or by address), then the plan's launches in order on the stream.

use crate::record::Stage;
use std::collections::BTreeMap;

use super::Outcome;
use super::Verdict;
use super::inputs::TensorSet;
use super::verdict::Stop;
use crate::candidate::bind::{ResolvedLaunch, ResolvedParam, ResolvedTensorMap};
use crate::cuda::driver::{DeviceBuffer, DriverError, Geometry, Gpu, Kernel, ParamBytes};

/// Encoded parameters for every launch of the plan over `set` (tensor maps included).
pub fn encode_params(
    gpu: &Gpu,
    launches: &[ResolvedLaunch],
    set: &TensorSet,
    keep: &mut Vec<DeviceBuffer>,
) -> Result<Vec<Vec<ParamBytes>>, DriverError> {
    let mut all = Vec::new();
    for l in launches {
        let mut params = Vec::new();
        for p in &l.params {
            params.push(match p {
                ResolvedParam::Tensor { name, .. } | ResolvedParam::Workspace { name, .. } => {
                    ParamBytes::new(&set.ptr(name).unwrap_or(0).to_le_bytes())
                }
                ResolvedParam::Scalar { bytes, .. } => ParamBytes::new(bytes),
                ResolvedParam::Null { bytes } => {
                    ParamBytes::new(&vec![0u8; (*bytes).min(128) as usize])
                }
                ResolvedParam::TensorMap { by_value, map } => {
                    let encoded = encode_map(gpu, map, set)?;
                    if *by_value {
                        ParamBytes::new(&encoded)
                    } else {
                        let buf = gpu.alloc(128)?;
                        gpu.upload(&buf, 0, &encoded)?;
                        let p = ParamBytes::new(&buf.ptr().to_le_bytes());
                        keep.push(buf);
                        p
                    }
                }
            });
        }
        all.push(params);
    }
    Ok(all)
}

fn encode_map(gpu: &Gpu, m: &ResolvedTensorMap, set: &TensorSet) -> Result<[u8; 128], DriverError> {
    gpu.encode_tensor_map(&m.desc, set.ptr(&m.tensor).unwrap_or(0))
}

/// Launches the plan once over `set`, in order, on the stream (no sync).
pub fn run_plan(
    gpu: &Gpu,
    kernels: &BTreeMap<String, Kernel>,
    launches: &[ResolvedLaunch],
    set: &TensorSet,
) -> Result<(), Stop> {
    let mut keep = Vec::new();
    let params = encode_params(gpu, launches, set, &mut keep).map_err(|e| {
        Stop::new(Outcome::failed(
            Verdict::Runtime,
            Stage::Launch,
            format!("encoding a tensor map: {e}"),
        ))
    })?;
    launch_encoded(gpu, kernels, launches, &params)?;
    // Tensor maps passed by pointer must outlive the launches.
    gpu.sync()?;
    drop(keep);
    Ok(())
}

/// Launches already-encoded parameters (timing reuses them).
pub fn launch_encoded(
    gpu: &Gpu,
    kernels: &BTreeMap<String, Kernel>,
    launches: &[ResolvedLaunch],
    params: &[Vec<ParamBytes>],
) -> Result<(), Stop> {
    for (l, p) in launches.iter().zip(params) {
        let k = kernels[&l.entry];
        gpu.prepare(k, l.shared_mem, l.non_portable_cluster)
            .map_err(|e| {
                Stop::new(Outcome::failed(
                    Verdict::Runtime,
                    Stage::Launch,
                    e.to_string(),
                ))
            })?;
        let g = Geometry {
            grid: l.grid,
            block: l.block,
            shared_mem: l.shared_mem,
            cluster: l.cluster,
        };
        gpu.launch(k, &g, p).map_err(|e| {
            Stop::new(Outcome::failed(
                Verdict::Runtime,
                Stage::Launch,
                format!("launching {}: {e}", l.entry),
            ))
        })?;
    }
    Ok(())
}
