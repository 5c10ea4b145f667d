//! Dynamic target evidence: the counted copy of the PTX (counters spliced in before every
//! target instruction) runs as one correctness trial of *every* workload, on fresh inputs, and
//! its outputs are checked against the reference like any trial's: the launches whose
//! instructions are counted are launches whose work is checked. The counters are read before
//! and after, so each workload gets its own counts; the record's grade takes the worst.
//!
//! Nothing lets a kernel tell the counted launches from the others: module-scope memory that
//! a kernel writes is refused at the static check (a fresh module would otherwise read as a
//! "first launch"), and the counted trial runs after the workload's other trials, on the same
//! kind of inputs.

use crate::record::Stage;
use std::collections::BTreeMap;

use super::verdict::Stop;
use super::{CountedPtx, Direction, DynamicCounts, Outcome, Request, SiteCount, Verdict};
use crate::candidate::bind::{ResolvedLaunch, ResolvedParam};
use crate::cuda::driver::{Gpu, Kernel, Module};
use crate::cuda::tensor_map::TensorMapDesc;
use crate::evidence::in_bounds::{self, SHAPE_WORDS};
use crate::task::{Task, Workload};

/// The counted copy, compiled and loaded once per evaluation.
pub struct CountedModule<'a> {
    pub counted: &'a CountedPtx,
    module: Module,
    pub kernels: BTreeMap<String, Kernel>,
}

impl std::fmt::Debug for CountedModule<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountedModule")
            .field("symbol", &self.counted.symbol)
            .finish_non_exhaustive()
    }
}

impl<'a> CountedModule<'a> {
    /// Compiles the counted copy and loads the entries the plan launches. A failure here is
    /// our rewrite's, not the candidate's: the caller records it and claims no evidence.
    pub fn load(
        gpu: &Gpu,
        counted: &'a CountedPtx,
        entries: impl Iterator<Item = &'a str>,
        req: &Request,
    ) -> Result<CountedModule<'a>, String> {
        let module = match &counted.cubin {
            Some(c) => gpu.compile_with(&counted.ptx, Some(c)),
            None => gpu.compile(&counted.ptx, Some(req.arch)),
        }
        .map_err(|e| e.to_string())?
        .module;
        let mut kernels = BTreeMap::new();
        for entry in entries {
            if !kernels.contains_key(entry) {
                let k = gpu.kernel(&module, entry).map_err(|e| e.to_string())?;
                kernels.insert(entry.to_string(), k);
            }
        }
        Ok(CountedModule {
            counted,
            module,
            kernels,
        })
    }

    /// The counters now: per site, the other-arithmetic slots and the in-bounds TMA bytes.
    pub fn read(&self, gpu: &Gpu) -> Result<Reading, Stop> {
        let c = self.counted;
        let sites = read_counters(gpu, &self.module, &c.symbol, c.sites.len());
        let work = match &c.work {
            None => Ok(Vec::new()),
            Some(w) => read_counters(gpu, &self.module, &w.symbol, w.functions.len()),
        };
        let bytes = match &c.tma_bytes {
            None => Ok(Vec::new()),
            Some(b) => read_counters(gpu, &self.module, &b.symbol, b.sites.len()),
        };
        Ok(Reading {
            sites: sites.map_err(counting_failed)?,
            work: work.map_err(counting_failed)?,
            bytes: bytes.map_err(counting_failed)?,
        })
    }

    /// Writes the shape table of the in-bounds TMA bytes for one workload's `launches`: each
    /// counted load's slot gets the shape of the tensor map the plan binds to its parameter
    /// (zeros, so nothing is counted, where none is bound).
    pub fn set_shapes(
        &self,
        gpu: &Gpu,
        module: &ptxbench_ptx::Module,
        launches: &[ResolvedLaunch],
    ) -> Result<(), Stop> {
        let Some(b) = &self.counted.tma_bytes else {
            return Ok(());
        };
        let mut table = Vec::with_capacity(8 * SHAPE_WORDS * b.sites.len());
        for &i in &b.sites {
            let site = &self.counted.sites[i];
            let words = site
                .tensor_map_param
                .as_deref()
                .and_then(|p| bound_map(module, launches, &site.function, p))
                .map_or([0; SHAPE_WORDS], |m| in_bounds::shape_words(&m.desc));
            table.extend(words.iter().flat_map(|w| w.to_le_bytes()));
        }
        let (ptr, bytes) = gpu
            .global(&self.module, &b.shape_symbol)
            .map_err(|e| counting_failed(e.to_string()))?;
        if bytes < table.len() {
            return Err(counting_failed(format!(
                "the shape table {} has {bytes} bytes for {}",
                b.shape_symbol,
                table.len()
            )));
        }
        gpu.upload_raw(ptr, &table)
            .map_err(|e| counting_failed(e.to_string()))
    }

    /// The evidence of one workload's counted launches, from the counters read before and
    /// after them.
    pub fn weigh_workload(
        &self,
        task: &Task,
        w: &Workload,
        module: &ptxbench_ptx::Module,
        launches: &[ResolvedLaunch],
        before: &Reading,
        after: &Reading,
    ) -> DynamicCounts {
        let delta = |a: &[u64], b: &[u64]| -> Vec<u64> {
            a.iter().zip(b).map(|(x, y)| y.wrapping_sub(*x)).collect()
        };
        let mut in_bounds = vec![None; self.counted.sites.len()];
        if let Some(b) = &self.counted.tma_bytes {
            for (&site, bytes) in b.sites.iter().zip(delta(&before.bytes, &after.bytes)) {
                in_bounds[site] = Some(bytes);
            }
        }
        let read = Counted {
            counts: delta(&before.sites, &after.sites),
            other_flops: self.counted.work.as_ref().map(|_| {
                delta(&before.work, &after.work)
                    .into_iter()
                    .fold(0u64, u64::saturating_add)
            }),
            in_bounds,
            launches: launches.to_vec(),
        };
        let mut result = empty(&w.name);
        weigh(&mut result, task, w, module, self.counted, &read);
        result
    }
}

/// Evidence that names its workload and nothing else yet.
pub fn empty(workload: &str) -> DynamicCounts {
    DynamicCounts {
        method: "ptx-splice".into(),
        workload: workload.to_string(),
        ..DynamicCounts::default()
    }
}

/// The evidence a record is graded on, from each workload's (is it a performance workload,
/// its evidence): the worst over the performance workloads, or over all of them when none is
/// one. Correctness workloads are counted and recorded too, but do not grade: at their tiny
/// shapes (one row, one key) padding to a tile and the fixed work per tile dominate the task's
/// FLOPs, so an honest tensor-core kernel shows an MMA share in the thousands and a softmax
/// "other" share over 1 there. The performance workloads are the shapes that are timed and
/// reported, so a kernel that changes its path with the shape is graded on those paths.
pub fn graded(per_workload: &[(bool, DynamicCounts)]) -> Option<DynamicCounts> {
    let perf: Vec<DynamicCounts> = per_workload
        .iter()
        .filter(|(p, _)| *p)
        .map(|(_, d)| d.clone())
        .collect();
    if perf.is_empty() {
        let all: Vec<DynamicCounts> = per_workload.iter().map(|(_, d)| d.clone()).collect();
        return worst_of(&all);
    }
    let mut out = worst_of(&perf)?;
    // An error on a correctness workload's counted run is still the result's error.
    if out.error.is_none() {
        out.error = per_workload
            .iter()
            .find_map(|(_, d)| d.error.as_ref().map(|e| format!("{}: {e}", d.workload)));
    }
    Some(out)
}

/// The worst of several workloads' evidence: the worst workload for each share (lowest target
/// shares, highest other-arithmetic share), each family's lowest count (a family counts as
/// executed only if it executed on every workload), and the sites of the workload with the
/// lowest MMA (else TMA) share. An error on any workload is the result's error.
pub fn worst_of(per_workload: &[DynamicCounts]) -> Option<DynamicCounts> {
    let first = per_workload.first()?;
    let min_by = |get: &dyn Fn(&DynamicCounts) -> Option<f64>| {
        per_workload
            .iter()
            .filter_map(|d| get(d).map(|v| (v, d)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
    };
    let all_known =
        |get: &dyn Fn(&DynamicCounts) -> Option<f64>| per_workload.iter().all(|d| get(d).is_some());
    let mut out = first.clone();
    out.workload = per_workload
        .iter()
        .map(|d| d.workload.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    out.counts = first
        .counts
        .iter()
        .map(|(family, _)| {
            let least = per_workload
                .iter()
                .map(|d| {
                    d.counts
                        .iter()
                        .find(|(f, _)| f == family)
                        .map_or(0, |(_, n)| *n)
                })
                .min()
                .unwrap_or(0);
            (family.clone(), least)
        })
        .collect();
    let mma = min_by(&|d| d.mma_flop_share);
    let tma = min_by(&|d| d.tma_byte_share);
    let other = per_workload
        .iter()
        .filter_map(|d| d.other_flop_share.map(|v| (v, d)))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    out.mma_flop_share = mma
        .filter(|_| all_known(&|d| d.mma_flop_share))
        .map(|(v, _)| v);
    out.mma_flops = mma.and_then(|(_, d)| d.mma_flops);
    out.tma_byte_share = tma
        .filter(|_| all_known(&|d| d.tma_byte_share))
        .map(|(v, _)| v);
    out.tma_load_bytes = tma.and_then(|(_, d)| d.tma_load_bytes);
    out.other_flop_share = other
        .filter(|_| all_known(&|d| d.other_flop_share))
        .map(|(v, _)| v);
    out.other_flops = other.and_then(|(_, d)| d.other_flops);
    if let Some((_, d)) = mma.or(tma) {
        out.sites = d.sites.clone();
    }
    out.notes = Vec::new();
    let mut named = |what: &str, d: Option<(f64, &DynamicCounts)>| {
        if let Some((v, d)) = d {
            out.notes
                .push(format!("lowest {what}: {v:.4} on {}", d.workload));
        }
    };
    if per_workload.len() > 1 {
        named("MMA FLOP share", mma);
        named("TMA byte share", tma);
        if let Some((v, d)) = other {
            out.notes.push(format!(
                "highest other-arithmetic share: {v:.4} on {}",
                d.workload
            ));
        }
    }
    for d in per_workload {
        out.notes
            .extend(d.notes.iter().map(|n| format!("{}: {n}", d.workload)));
    }
    out.error = per_workload
        .iter()
        .find_map(|d| d.error.as_ref().map(|e| format!("{}: {e}", d.workload)));
    Some(out)
}

/// The first `n` u64 counters of the module global `symbol` (none read when `n` is 0).
/// The first `n` u64 slots of the module's global array `symbol`.
pub(super) fn read_counters(
    gpu: &Gpu,
    m: &Module,
    symbol: &str,
    n: usize,
) -> Result<Vec<u64>, String> {
    let (ptr, bytes) = gpu.global(m, symbol).map_err(|e| e.to_string())?;
    if bytes < 8 * n {
        return Err(format!(
            "counter array {symbol} has {bytes} bytes for {n} counters"
        ));
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    let raw = gpu.download_raw(ptr, 8 * n).map_err(|e| e.to_string())?;
    Ok(raw
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect())
}

/// The counted copy's counters at one moment.
#[derive(Debug, Clone)]
pub struct Reading {
    /// Per site, in the order of `CountedPtx::sites`.
    sites: Vec<u64>,
    /// Per function of the other-arithmetic counters.
    work: Vec<u64>,
    /// Per slot of the in-bounds TMA bytes.
    bytes: Vec<u64>,
}

fn counting_failed(e: String) -> Stop {
    Stop::new(Outcome::failed(
        Verdict::Other,
        Stage::Counting,
        format!("reading the counted copy's counters: {e}"),
    ))
}

/// What the counted copy's run read back.
struct Counted {
    /// Per site, in the order of `CountedPtx::sites`.
    counts: Vec<u64>,
    /// The other-arithmetic FLOPs, when the copy counts them.
    other_flops: Option<u64>,
    /// Per site, a TMA load's in-bounds bytes, where counted.
    in_bounds: Vec<Option<u64>>,
    /// The launches that ran.
    launches: Vec<ResolvedLaunch>,
}

/// The tensor map bound to `param` of kernel `function`, if the plan binds one.
fn bound_map(
    module: &ptxbench_ptx::Module,
    launches: &[ResolvedLaunch],
    function: &str,
    param: &str,
) -> Option<crate::candidate::bind::ResolvedTensorMap> {
    let f = module.entry(function)?;
    let index = f.params.iter().position(|p| p.name == param)?;
    launches
        .iter()
        .filter(|l| l.entry == function)
        .find_map(|l| match l.params.get(index) {
            Some(ResolvedParam::TensorMap { map, .. }) => Some(map.clone()),
            _ => None,
        })
}

/// Why TMA loads through `map` earn no byte credit, if they do not: only a map over one of
/// the task's inputs, laid over that tensor's own storage (innermost dimension contiguous,
/// each stride the extent of the dimensions inside it, the whole tensor and nothing more: no
/// overlap, no gap), counts. A map over a workspace moves bytes that are not the task's; a map
/// with overlapping strides reads the same bytes as if they were many (integrity v4, class 4).
/// Maps are passed by value only, so the kernel cannot change one after it is checked.
pub fn credit_refusal(
    tensor: &str,
    desc: &TensorMapDesc,
    task: &Task,
    env: &crate::expr::Bindings,
) -> Option<String> {
    let Some(spec) = task.inputs.iter().find(|t| t.name == tensor) else {
        return Some(format!(
            "its tensor map is over `{tensor}`, which is not an input of the task"
        ));
    };
    let element = desc.element().bytes();
    if element != spec.dtype.size_bytes() {
        return Some(format!(
            "its tensor map reads {element}-byte elements of `{tensor}`, whose elements have {} bytes",
            spec.dtype.size_bytes()
        ));
    }
    if desc.element_strides().iter().any(|&e| e != 1) {
        return Some(format!(
            "its tensor map over `{tensor}` steps over elements (element strides {:?}): strided boxes are not credited",
            desc.element_strides()
        ));
    }
    let dims = desc.dims();
    let mut expected = dims.first().copied().unwrap_or(0).saturating_mul(element);
    for (i, (&stride, &dim)) in desc.strides().iter().zip(dims.iter().skip(1)).enumerate() {
        if stride != expected {
            return Some(format!(
                "its tensor map over `{tensor}` has stride {stride} bytes for dimension {} where `{tensor}`'s own storage has {expected} (overlapping or gapped views are not credited)",
                i + 1
            ));
        }
        expected = expected.saturating_mul(dim);
    }
    match task.size_bytes(spec, env) {
        Ok(bytes) if bytes == expected => None,
        Ok(bytes) => Some(format!(
            "its tensor map spans {expected} bytes of `{tensor}`, which has {bytes}"
        )),
        Err(e) => Some(format!("the size of `{tensor}`: {e}")),
    }
}

/// Per-site counts weighed by each site's work: executed MMA FLOPs and TMA load bytes, as
/// shares of the workload's FLOPs and input bytes, and the other arithmetic's FLOPs as a share
/// of the workload's.
fn weigh(
    result: &mut DynamicCounts,
    task: &Task,
    w: &Workload,
    module: &ptxbench_ptx::Module,
    counted: &CountedPtx,
    read: &Counted,
) {
    let (counts, launches) = (&read.counts, &read.launches);
    let env = task.bindings(w);
    let mut per_family: BTreeMap<String, u64> =
        counted.families.iter().map(|f| (f.clone(), 0)).collect();
    let mut mma_flops = 0.0;
    let mut mma_known = true;
    let mut mma_sites = 0;
    let mut load_bytes = 0.0;
    let mut boxed_bytes = 0.0;
    let mut load_known = true;
    for ((site, &count), &in_bounds) in counted.sites.iter().zip(counts).zip(&read.in_bounds) {
        *per_family.entry(site.family.clone()).or_default() += count;
        let executions = count as f64 / site.threads_per_execution.max(1) as f64;
        let map = match (&site.direction, &site.tensor_map_param) {
            (Some(Direction::Load), Some(p)) => bound_map(module, launches, &site.function, p),
            _ => None,
        };
        let refused = map
            .as_ref()
            .and_then(|m| credit_refusal(&m.tensor, &m.desc, task, &env));
        let bytes = map
            .as_ref()
            .filter(|_| refused.is_none())
            .map(|m| m.desc.box_bytes());
        if site.family == "wgmma"
            || site.family == "tcgen05" && site.opcode.starts_with("tcgen05.mma")
        {
            mma_sites += 1;
            match site.flops_per_execution {
                Some(f) => mma_flops += executions * f,
                None if count > 0 => {
                    mma_known = false;
                    result.notes.push(format!(
                        "{} (line {}) executed {count} times; its shape is not in the opcode, so its FLOPs are unknown",
                        site.opcode, site.line
                    ));
                }
                None => {}
            }
        }
        if site.direction == Some(Direction::Load) && count > 0 {
            match (bytes, in_bounds) {
                (None, _) if refused.is_some() => {
                    load_known = false;
                    result.notes.push(format!(
                        "the TMA load at line {} of {} executed {count} times and is not credited: {}",
                        site.line,
                        site.function,
                        refused.as_deref().unwrap_or_default()
                    ));
                }
                (Some(b), Some(read)) => {
                    load_bytes += read as f64;
                    boxed_bytes += executions * b as f64;
                }
                (None, _) => {
                    load_known = false;
                    result.notes.push(format!(
                        "the TMA load at line {} of {} executed {count} times; its tensor map could not be traced to a bound parameter",
                        site.line, site.function
                    ));
                }
                (Some(_), None) => {
                    load_known = false;
                    result.notes.push(format!(
                        "the TMA load at line {} of {} executed {count} times; its mode or coordinates leave its in-bounds bytes uncounted",
                        site.line, site.function
                    ));
                }
            }
        }
        result.sites.push(SiteCount {
            site: site.clone(),
            count,
            bytes_per_execution: bytes,
            in_bounds_bytes: in_bounds,
        });
    }
    if load_known && boxed_bytes > 0.0 && load_bytes < boxed_bytes {
        result.notes.push(format!(
            "TMA loads read {load_bytes:.0} bytes inside their tensors of the {boxed_bytes:.0} their boxes span; the rest was filled without a read and is not counted"
        ));
    }
    result.counts = per_family.into_iter().collect();
    let task_flops = task.flops_of(w).ok().filter(|f| *f > 0.0);
    if mma_known
        && (mma_sites > 0
            || counted
                .families
                .iter()
                .any(|f| f == "wgmma" || f == "tcgen05"))
    {
        result.mma_flops = Some(mma_flops);
        result.mma_flop_share = task_flops.map(|f| mma_flops / f);
    }
    if let Some(other) = read.other_flops {
        let other = other as f64;
        result.other_flops = Some(other);
        result.other_flop_share = task_flops.map(|f| other / f);
    }
    // The compulsory input bytes: the task's byte formula less its outputs (every input for
    // most tasks; for a paged decode only the cache rows of the tokens in use).
    let output_bytes: Option<u64> = task
        .outputs
        .iter()
        .map(|t| task.size_bytes(t, &env).ok())
        .sum();
    let input_bytes: Option<u64> = task
        .bytes_of(w)
        .ok()
        .zip(output_bytes)
        .map(|(all, out)| (all - out as f64).max(0.0) as u64);
    if load_known && counted.families.iter().any(|f| f == "tma") {
        result.tma_load_bytes = Some(load_bytes);
        result.tma_byte_share = input_bytes
            .filter(|b| *b > 0)
            .map(|b| load_bytes / b as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(workload: &str, mma: f64, other: f64, wgmma: u64) -> DynamicCounts {
        DynamicCounts {
            mma_flop_share: Some(mma),
            other_flop_share: Some(other),
            counts: vec![("wgmma".into(), wgmma), ("tma".into(), 5)],
            ..empty(workload)
        }
    }

    #[test]
    fn issue_45_the_grade_takes_the_worst_performance_workload() {
        // A kernel on wgmma at M70 and on mma.sync at M8192: the small shape alone would pass.
        let per = vec![
            (false, counts("M1", 128.0, 0.5, 10)),
            (true, counts("M70", 1.8, 0.0, 40)),
            (true, counts("M8192", 0.0, 1.0, 0)),
        ];
        let g = graded(&per).expect("graded");
        assert_eq!(g.mma_flop_share, Some(0.0));
        assert_eq!(g.other_flop_share, Some(1.0));
        // wgmma did not execute on every performance workload.
        assert_eq!(g.counts[0], ("wgmma".to_string(), 0));
        assert!(g.notes.iter().any(|n| n.contains("M8192")), "{:?}", g.notes);
        assert_eq!(g.workload, "M70, M8192");
    }

    #[test]
    fn correctness_workloads_grade_only_when_no_performance_workload_ran() {
        let tiny = (false, counts("M1", 128.0, 0.54, 10));
        let honest = (true, counts("M8192", 1.0, 0.004, 4000));
        let g = graded(&[tiny.clone(), honest]).expect("graded");
        assert_eq!(g.other_flop_share, Some(0.004));
        let g = graded(&[tiny, (false, counts("M129", 1.98, 0.008, 20))]).expect("graded");
        assert_eq!(g.other_flop_share, Some(0.54));
        assert_eq!(g.mma_flop_share, Some(1.98));
        assert!(graded(&[]).is_none());
    }

    #[test]
    fn a_share_unknown_on_one_workload_is_unknown() {
        let mut unknown = counts("M8192", 1.0, 0.0, 10);
        unknown.other_flop_share = None;
        let g = worst_of(&[counts("M70", 1.0, 0.01, 10), unknown]).expect("worst");
        assert_eq!(g.other_flop_share, None);
        assert_eq!(g.mma_flop_share, Some(1.0));
    }
}
