//! Target evidence around an evaluation: the counted copy of the PTX a worker runs once, and
//! the target evidence assembled afterwards from the cubin (static SASS) and the counts.

use std::collections::BTreeMap;

use super::{CountedPtx, Outcome};
use crate::arch::Arch;
use crate::evidence::sass::disassemble;
use crate::evidence::splice::{splice, splice_counting_work};
use crate::evidence::status::{DynamicMethod, ExecutedCounts, StaticSass, TargetEvidence, assess};
use crate::task::Task;

/// The counted copy for `task` on `arch`, or why there is none (the evaluation runs anyway).
pub fn counted_copy(task: &Task, arch: Arch, ptx: &str) -> Result<Option<CountedPtx>, String> {
    let Some(target) = task.target(arch) else {
        return Ok(None);
    };
    let families: Vec<ptxbench_ptx::Family> = target
        .required
        .iter()
        .filter_map(|f| f.family.parse().ok())
        .collect();
    if families.is_empty() {
        return Ok(None);
    }
    // Where an MMA family is required, "on target" also bounds the arithmetic done elsewhere.
    let mma = families.iter().any(|f| {
        matches!(
            f,
            ptxbench_ptx::Family::Wgmma | ptxbench_ptx::Family::Tcgen05
        )
    });
    let s = if mma {
        splice_counting_work(ptx, &families)
    } else {
        splice(ptx, &families)
    }
    .map_err(|e| e.to_string())?;
    Ok(Some(CountedPtx {
        ptx: s.ptx,
        symbol: s.counter_symbol,
        families: s
            .families_in_order
            .iter()
            .map(|f| f.as_str().to_string())
            .collect(),
        sites: s.site_info,
        work: s.work,
        tma_bytes: s.tma_bytes,
        cubin: None,
    }))
}

/// The target evidence of an outcome: SASS of its cubin plus the spliced counts, if any.
pub fn evidence_of(task: &Task, arch: Arch, outcome: &Outcome) -> Option<TargetEvidence> {
    let target = task.target(arch)?;
    let sass = match &outcome.cubin {
        None => StaticSass::SourceMissing(format!(
            "no cubin ({} at stage {})",
            outcome.verdict.as_str(),
            outcome.stage
        )),
        Some(cubin) => match disassemble(cubin) {
            Ok(inv) => StaticSass::Inventory(inv),
            Err(e) => StaticSass::InspectionFailed(e.to_string()),
        },
    };
    let dynamic = outcome
        .dynamic
        .as_ref()
        .filter(|d| d.error.is_none())
        .map(|d| ExecutedCounts::Families {
            method: DynamicMethod::SplicedCounters,
            counts: d.counts.iter().cloned().collect::<BTreeMap<_, _>>(),
        });
    let mut ev = assess(target, &sass, dynamic.as_ref());
    if let Some(err) = outcome.dynamic.as_ref().and_then(|d| d.error.clone()) {
        ev.notes
            .push(format!("the counted copy did not run: {err}"));
    }
    Some(ev)
}
