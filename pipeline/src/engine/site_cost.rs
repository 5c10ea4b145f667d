//! What the counted copy's increments cost a CTA (`ptxbench site-cost`, issue 61): the same
//! kernel, on one workload's inputs, as variants that each carry the CTA clock probe
//! ([`crate::evidence::cta_clock`]): the kernel alone, then with the counters spliced before the
//! sites of one target family, of all of them, and the counted copy as the engine runs it
//! (target sites, in-bounds TMA bytes and the other-arithmetic counters). Each variant is
//! launched `launches` times, the variants taking turns; each launch gives every CTA's cycles
//! (its latest end minus its earliest start on its SM's clock), and a variant's figure is the
//! median over launches of the median CTA. The cycles each variant adds to the kernel alone,
//! over the instrumented site executions a CTA makes (read from the variant's own counters), are
//! the cycles per site execution.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::counting::read_counters;
use super::inputs::{allocate, fill_inputs};
use super::launch::run_plan;
use super::support::Support;
use crate::arch::Arch;
use crate::candidate::bind;
use crate::candidate::plan::LaunchPlan;
use crate::cuda::driver::{Gpu, Kernel};
use crate::evidence::cta_clock::{END_SYMBOL, SLOTS, START_SYMBOL, probe};
use crate::evidence::sites::CountedSite;
use crate::task::Task;
use ptxbench_ptx::Family;

/// One variant's figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VariantCost {
    pub variant: String,
    /// CTAs measured per launch.
    pub ctas: usize,
    /// Median over launches of the median CTA's cycles.
    pub cycles: f64,
    /// Each launch's median CTA cycles, in launch order.
    pub per_launch: Vec<f64>,
    /// Instrumented site executions per CTA, by family (an execution: a thread's, a
    /// warpgroup's for wgmma, as the counters weigh them).
    pub executions_per_cta: BTreeMap<String, f64>,
    /// Counter increments (threads) per CTA, all sites.
    pub increments_per_cta: f64,
    /// Cycles added to the kernel alone per instrumented site execution (none for the kernel
    /// alone, or where it made none).
    pub cycles_per_execution: Option<f64>,
}

/// A variant: its name, its probed PTX, and the counted sites it instruments.
struct Variant {
    name: String,
    ptx: String,
    symbol: Option<String>,
    sites: Vec<CountedSite>,
}

/// The variants for `task` on `arch`: the kernel alone, each required family's sites, all of
/// them, and the counted copy the engine runs.
fn variants(task: &Task, arch: Arch, ptx: &str) -> Result<Vec<Variant>, String> {
    let families: Vec<Family> = task
        .target(arch)
        .map(|t| {
            t.required
                .iter()
                .filter_map(|f| f.family.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let mut out = vec![Variant {
        name: "kernel alone".into(),
        ptx: probe(ptx)?,
        symbol: None,
        sites: Vec::new(),
    }];
    let spliced = |name: String, fams: &[Family]| -> Result<Variant, String> {
        let s = crate::evidence::splice(ptx, fams).map_err(|e| e.to_string())?;
        Ok(Variant {
            name,
            ptx: probe(&s.ptx)?,
            symbol: Some(s.counter_symbol),
            sites: s.site_info,
        })
    };
    for f in &families {
        out.push(spliced(
            format!("{} sites", f.as_str()),
            std::slice::from_ref(f),
        )?);
    }
    if families.len() > 1 {
        out.push(spliced("all target sites".into(), &families)?);
    }
    if let Some(c) = super::target_evidence::counted_copy(task, arch, ptx)? {
        out.push(Variant {
            name: "counted copy (as evaluated)".into(),
            ptx: probe(&c.ptx)?,
            symbol: Some(c.symbol),
            sites: c.sites,
        });
    }
    Ok(out)
}

fn shown(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The median of `v` (the pipeline's one quantile).
fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    crate::record::stats::quantile(&v, 0.5)
}

/// Measures every variant of `ptx` (with `plan`) on `workload`, `launches` times each.
#[allow(clippy::too_many_arguments)]
pub fn measure(
    gpu: &Gpu,
    support: &Support,
    task: &Task,
    arch: Arch,
    ptx: &str,
    plan: &str,
    workload: &str,
    seed: u64,
    launches: u32,
) -> Result<Vec<VariantCost>, String> {
    let w = task.require_workload(workload)?;
    let plan = LaunchPlan::parse(plan, task).map_err(shown)?;
    let module = ptxbench_ptx::parse(ptx).map_err(shown)?;
    let resolved = bind::resolve(&plan, &module, task, w, arch).map_err(|p| {
        p.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    let env = task.bindings(w);
    let set = allocate(gpu, task, &plan, &env).map_err(|s| s.0.message)?;
    fill_inputs(gpu, support, task, w, &set, seed).map_err(|s| s.0.message)?;
    let mut loaded = Vec::new();
    for v in variants(task, arch, ptx)? {
        let compiled = gpu
            .compile(&v.ptx, Some(arch))
            .map_err(|e| format!("{}: {}\n{}", v.name, e.error, e.log))?;
        let mut kernels: BTreeMap<String, Kernel> = BTreeMap::new();
        for l in &plan.launches {
            if !kernels.contains_key(&l.entry) {
                let k = gpu.kernel(&compiled.module, &l.entry).map_err(shown)?;
                kernels.insert(l.entry.clone(), k);
            }
        }
        loaded.push((v, compiled.module, kernels, Vec::new(), 0usize));
    }
    let unset = vec![0xffu8; 8 * SLOTS];
    let zero = vec![0u8; 8 * SLOTS];
    for round in 0..launches.max(1) {
        for (v, m, kernels, per_launch, ctas) in &mut loaded {
            let (start, _) = gpu.global(m, START_SYMBOL).map_err(shown)?;
            let (end, _) = gpu.global(m, END_SYMBOL).map_err(shown)?;
            gpu.upload_raw(start, &unset).map_err(shown)?;
            gpu.upload_raw(end, &zero).map_err(shown)?;
            // The counters count one launch: zeroed before the first.
            if round == 0
                && let Some(symbol) = &v.symbol
            {
                let (ptr, bytes) = gpu.global(m, symbol).map_err(shown)?;
                gpu.upload_raw(ptr, &vec![0u8; bytes]).map_err(shown)?;
            }
            run_plan(gpu, kernels, &resolved, &set).map_err(|s| s.0.message)?;
            let starts = read_counters(gpu, m, START_SYMBOL, SLOTS)?;
            let ends = read_counters(gpu, m, END_SYMBOL, SLOTS)?;
            let cycles: Vec<f64> = starts
                .iter()
                .zip(&ends)
                .filter(|(s, e)| **s != u64::MAX && **e >= **s)
                .map(|(s, e)| (e - s) as f64)
                .collect();
            if cycles.is_empty() {
                return Err(format!("{}: no CTA wrote its cycles", v.name));
            }
            *ctas = cycles.len();
            per_launch.push(median(cycles));
        }
    }
    let mut out = Vec::new();
    let mut alone = None;
    for (v, m, _, per_launch, ctas) in loaded {
        let cycles = median(per_launch.clone());
        let mut executions_per_cta = BTreeMap::new();
        let mut increments = 0.0;
        if let Some(symbol) = &v.symbol {
            // The first launch's counts (the counters were zeroed before it only).
            let counts = read_counters(gpu, &m, symbol, v.sites.len())?;
            let launched = per_launch.len().max(1) as f64;
            for (site, count) in v.sites.iter().zip(counts) {
                let per_launch = count as f64 / launched;
                increments += per_launch / ctas as f64;
                *executions_per_cta.entry(site.family.clone()).or_insert(0.0) +=
                    per_launch / site.threads_per_execution.max(1) as f64 / ctas as f64;
            }
        }
        let executions: f64 = executions_per_cta.values().sum();
        let cycles_per_execution = match alone {
            Some(base) if executions > 0.0 => Some((cycles - base) / executions),
            _ => None,
        };
        if v.symbol.is_none() {
            alone = Some(cycles);
        }
        out.push(VariantCost {
            variant: v.name,
            ctas,
            cycles,
            per_launch,
            executions_per_cta,
            increments_per_cta: increments,
            cycles_per_execution,
        });
    }
    Ok(out)
}
