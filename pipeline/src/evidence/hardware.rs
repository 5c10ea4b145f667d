//! The GPU's own counters on the binary that is timed, against the counted copy's counts.
//!
//! The counted copy is another binary run on other launches; a kernel that could tell it from
//! the timed one (by timing its own sites) could do the target work only there. So, with the
//! switch on (`PTXBENCH_HARDWARE_COUNTERS=cupti`), a few timed launches chosen at random from OS
//! entropy are run under CUPTI's range profiler (`cuda::profiler`) and their counters read:
//! the tensor pipe's wgmma instructions, the bytes TMA loaded, and the instructions of the
//! FMA, ALU, FP64, FP16 and XU pipes. This module chooses the metrics among those the device
//! offers, turns their values into the quantities the counted copy measures, and says whether
//! the two agree.
//!
//! The arithmetic:
//! - **wgmma**: each execution of a `wgmma.mma_async` by a warpgroup issues one tensor-pipe
//!   instruction in each of its 4 warps, so the counted copy expects
//!   `sum over wgmma sites of threads / 32` warp instructions. Both are exact counts: they must
//!   agree within [`MMA_TOLERANCE`].
//! - **TMA bytes**: the copy credits the in-bounds bytes of each load; the hardware counts the
//!   bytes the TMA unit read. They agree within [`TMA_TOLERANCE`] (the hardware reads whole
//!   sectors).
//! - **other arithmetic**: the hardware counts warp instructions per pipe, of every kind
//!   (address arithmetic and what ptxas expands a PTX instruction into included); as FLOPs, at
//!   most 32 threads x 2 for the FMA pipe and 32 x 1 for the others. That bound may exceed the
//!   copy's count by [`OTHER_FACTOR`] plus [`OTHER_SLACK`] of the task's FLOPs; a kernel that
//!   does its math on ordinary cores when timed exceeds it by orders of magnitude.
//!
//! A launch whose counts disagree costs the evaluation "correct on target": the launches that
//! were timed did not do the work the counted ones did.

use crate::record::DynamicCounts;
pub use crate::record::hardware::{Agreement, HardwareCheck, HardwareCounts, MetricPlan, Quantity};

/// Relative tolerance between hardware and counted wgmma instructions.
pub const MMA_TOLERANCE: f64 = 0.01;
/// Relative tolerance between hardware and counted TMA load bytes.
pub const TMA_TOLERANCE: f64 = 0.10;
/// How many times the counted other-arithmetic FLOPs the hardware's bound may reach...
pub const OTHER_FACTOR: f64 = 4.0;
/// ... plus this share of the task's FLOPs.
pub const OTHER_SLACK: f64 = 0.05;

/// The environment switch, and its one value that turns the measurement on.
pub const SWITCH: &str = "PTXBENCH_HARDWARE_COUNTERS";

/// Whether the measurement is switched on in this process.
pub fn switched_on() -> bool {
    std::env::var(SWITCH).is_ok_and(|v| v == "cupti")
}

/// Base metric names, most specific first, for each quantity (the first one the device offers
/// is used; the rollup `.sum` is appended).
const WGMMA: &[&str] = &["sm__inst_executed_pipe_tensor_op_gmma"];
const TMA_BYTES: &[&str] = &[
    "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld",
    "smsp__l1tex_tma_ld_bytes",
    "l1tex__tma_ld_bytes",
];
/// Arithmetic pipes, disjoint (`fma` is the logical pipe over `fmaheavy` and `fmalite`, so
/// neither of those is added to it), with each one's FLOPs per thread instruction at most.
const PIPES: &[(&str, u32)] = &[
    ("sm__inst_executed_pipe_fma", 2),
    ("sm__inst_executed_pipe_alu", 1),
    ("sm__inst_executed_pipe_fp64", 2),
    ("sm__inst_executed_pipe_fp16", 2),
    ("sm__inst_executed_pipe_xu", 1),
];

impl MetricPlan {
    /// Chooses among `offered` (base names, as the device lists its counters).
    pub fn choose(offered: &[String]) -> MetricPlan {
        let has = |n: &str| offered.iter().any(|o| o == n);
        let mut plan = MetricPlan::default();
        let mut first =
            |names: &[&str], q: Quantity, what: &str| match names.iter().find(|n| has(n)) {
                Some(n) => plan.metrics.push((format!("{n}.sum"), q)),
                None => plan
                    .missing
                    .push(format!("{what} (none of {})", names.join(", "))),
            };
        first(WGMMA, Quantity::WgmmaInstructions, "wgmma instructions");
        first(TMA_BYTES, Quantity::TmaLoadBytes, "TMA load bytes");
        let mut pipes = 0;
        for (name, flops) in PIPES {
            if has(name) {
                pipes += 1;
                plan.metrics.push((
                    format!("{name}.sum"),
                    Quantity::PipeInstructions {
                        flops_per_thread: *flops,
                    },
                ));
            }
        }
        if pipes == 0 {
            plan.missing
                .push("arithmetic pipe instructions (no fma or alu pipe metric)".into());
        }
        plan
    }

    pub fn names(&self) -> Vec<String> {
        self.metrics.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The metrics split into groups that each fit one pass where all of them do not (the
    /// H200 needs two passes for all six): the tensor-pipe and TMA metrics, then the arithmetic
    /// pipes. Indices into `metrics`.
    pub fn groups(&self) -> Vec<Vec<usize>> {
        let (pipes, rest): (Vec<usize>, Vec<usize>) = (0..self.metrics.len())
            .partition(|&i| matches!(self.metrics[i].1, Quantity::PipeInstructions { .. }));
        [rest, pipes]
            .into_iter()
            .filter(|g| !g.is_empty())
            .collect()
    }

    /// The quantities from one launch's values (in the order of `metrics`).
    pub fn read(&self, launch: u32, values: &[f64]) -> HardwareCounts {
        let mut c = HardwareCounts {
            launch,
            // Only what was measured: a metric of another group reads NaN, which JSON cannot
            // hold (it would be written as null and the record would not read back).
            values: self
                .metrics
                .iter()
                .zip(values)
                .filter(|(_, v)| v.is_finite())
                .map(|((n, _), v)| (n.clone(), *v))
                .collect(),
            ..HardwareCounts::default()
        };
        let mut other = None;
        // A metric this launch's group did not collect reads NaN: not measured.
        for ((_, q), v) in self.metrics.iter().zip(values).filter(|(_, v)| !v.is_nan()) {
            match q {
                Quantity::WgmmaInstructions => c.wgmma_instructions = Some(*v),
                Quantity::TmaLoadBytes => c.tma_load_bytes = Some(*v),
                Quantity::PipeInstructions { flops_per_thread } => {
                    *other.get_or_insert(0.0) += v * 32.0 * f64::from(*flops_per_thread);
                }
            }
        }
        c.other_flops_bound = other;
        c
    }
}

/// The wgmma warp instructions the counted copy's sites stand for (threads / 32).
pub fn counted_wgmma_instructions(d: &DynamicCounts) -> f64 {
    d.sites
        .iter()
        .filter(|s| s.site.family == "wgmma" && s.site.opcode.starts_with("wgmma.mma_async"))
        .map(|s| s.count as f64 / 32.0)
        .sum()
}

/// The bytes the counted copy's TMA loads span (executions x box bytes, in bounds or not: the
/// GPU's load-bytes counter counts a whole box, out-of-bounds fill included), and whether every
/// executed load's box is known (a load through an uncredited map has none).
pub fn counted_tma_box_bytes(d: &DynamicCounts) -> (f64, bool) {
    let mut bytes = 0.0;
    let mut complete = true;
    for s in d.sites.iter().filter(|s| {
        s.site.direction == Some(crate::record::outcome::Direction::Load) && s.count > 0
    }) {
        match s.bytes_per_execution {
            Some(b) => {
                bytes += s.count as f64 / s.site.threads_per_execution.max(1) as f64 * b as f64
            }
            None => complete = false,
        }
    }
    (bytes, complete)
}

/// Compares one launch's hardware counts with the counted copy's for the same workload.
/// `task_flops` is the workload's FLOPs. Quantities either side did not measure are skipped.
pub fn compare(hw: &HardwareCounts, counted: &DynamicCounts, task_flops: f64) -> Vec<Agreement> {
    let mut out = Vec::new();
    let mut exact = |quantity: &str, hardware: f64, counted: f64, tol: f64| {
        let (lo, hi) = (counted * (1.0 - tol), counted * (1.0 + tol));
        out.push(Agreement {
            quantity: quantity.into(),
            hardware,
            counted,
            lo,
            hi,
            agrees: hardware >= lo.floor() && hardware <= hi.ceil(),
        });
    };
    if let Some(h) = hw.wgmma_instructions {
        exact(
            "wgmma instructions",
            h,
            counted_wgmma_instructions(counted),
            MMA_TOLERANCE,
        );
    }
    let (boxes, complete) = counted_tma_box_bytes(counted);
    if let Some(h) = hw.tma_load_bytes
        && (boxes > 0.0 || counted.tma_load_bytes.is_some())
    {
        if complete {
            exact("TMA load bytes (whole boxes)", h, boxes, TMA_TOLERANCE);
        } else {
            // Some executed load's box is unknown: the known boxes are a lower bound.
            let lo = boxes * (1.0 - TMA_TOLERANCE);
            out.push(Agreement {
                quantity: "TMA load bytes (whole boxes, a lower bound)".into(),
                hardware: h,
                counted: boxes,
                lo,
                hi: f64::MAX,
                agrees: h >= lo.floor(),
            });
        }
    }
    if let (Some(h), Some(c)) = (hw.other_flops_bound, counted.other_flops) {
        let hi = OTHER_FACTOR * c + OTHER_SLACK * task_flops;
        out.push(Agreement {
            quantity: "other arithmetic FLOPs (hardware: an upper bound)".into(),
            hardware: h,
            counted: c,
            lo: 0.0,
            hi,
            agrees: h <= hi,
        });
    }
    out
}

impl HardwareCheck {
    /// Whether some measured launch disagrees with the counted copy.
    pub fn disagrees(&self) -> bool {
        self.agreements.iter().flatten().any(|a| !a.agrees)
    }

    /// Fills `agreements` from `launches` against the workload's counted copy.
    pub fn compare_with(&mut self, counted: &DynamicCounts, task_flops: f64) {
        self.agreements = self
            .launches
            .iter()
            .map(|l| compare(l, counted, task_flops))
            .collect();
    }

    /// The disagreements, in words, for the record's notes.
    pub fn describe_disagreements(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (l, agreements) in self.launches.iter().zip(&self.agreements) {
            for a in agreements.iter().filter(|a| !a.agrees) {
                out.push(format!(
                    "timed launch {}: {} read {:.4e} by the GPU's counters, the counted copy {:.4e} (agreeing range {:.4e} to {:.4e})",
                    l.launch, a.quantity, a.hardware, a.counted, a.lo, a.hi
                ));
            }
        }
        out
    }
}

/// Which timed pairs are measured: `k` distinct indices below `n` (the pairs every workload
/// runs whatever its stop rule decides), drawn from `draw` (OS entropy in the harness).
pub fn choose_launches(k: usize, n: u32, mut draw: impl FnMut() -> u64) -> Vec<u32> {
    // A partial Fisher-Yates shuffle: the first `k` of a uniform permutation of 0..n.
    let mut all: Vec<u32> = (0..n).collect();
    let k = k.min(all.len());
    for i in 0..k {
        let j = i + (draw() % (all.len() - i) as u64) as usize;
        all.swap(i, j);
    }
    all.truncate(k);
    all.sort_unstable();
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{CountedSite, SiteCount};

    fn offered(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn site(family: &str, opcode: &str, count: u64) -> SiteCount {
        SiteCount {
            site: CountedSite {
                family: family.into(),
                opcode: opcode.into(),
                function: "k".into(),
                line: 1,
                threads_per_execution: 128,
                flops_per_execution: None,
                direction: None,
                tensor_map_param: None,
            },
            count,
            bytes_per_execution: None,
            in_bounds_bytes: None,
        }
    }

    /// A TMA load site executed `executions` times (by one thread each) with `box_bytes` boxes.
    fn load(executions: u64, box_bytes: Option<u64>) -> SiteCount {
        let mut s = site(
            "tma",
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
            executions,
        );
        s.site.threads_per_execution = 1;
        s.site.direction = Some(crate::record::outcome::Direction::Load);
        s.bytes_per_execution = box_bytes;
        s
    }

    /// A counted copy that ran `wgmma_execs` warpgroup executions of one wgmma site, loaded
    /// boxes spanning `tma` bytes (64 loads; 87% of it inside the tensors, the credited
    /// bytes) and did `other` FLOPs of other arithmetic.
    fn counted(wgmma_execs: u64, tma: f64, other: f64) -> DynamicCounts {
        DynamicCounts {
            sites: vec![
                site(
                    "wgmma",
                    "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
                    wgmma_execs * 128,
                ),
                site("wgmma", "wgmma.fence.sync.aligned", wgmma_execs * 128),
                load(64, Some((tma / 64.0) as u64)),
            ],
            tma_load_bytes: Some(0.87 * tma),
            other_flops: Some(other),
            ..DynamicCounts::default()
        }
    }

    #[test]
    fn the_plan_takes_offered_metrics_and_names_the_missing() {
        let plan = MetricPlan::choose(&offered(&[
            "sm__inst_executed_pipe_tensor_op_gmma",
            "sm__inst_executed_pipe_fma",
            "sm__inst_executed_pipe_fmaheavy",
            "sm__inst_executed_pipe_alu",
        ]));
        assert_eq!(
            plan.names(),
            [
                "sm__inst_executed_pipe_tensor_op_gmma.sum",
                "sm__inst_executed_pipe_fma.sum",
                "sm__inst_executed_pipe_alu.sum"
            ]
        );
        assert_eq!(plan.missing.len(), 1);
        assert!(plan.missing[0].starts_with("TMA load bytes"));
        let none = MetricPlan::choose(&[]);
        assert!(none.metrics.is_empty());
        assert_eq!(none.missing.len(), 3);
    }

    #[test]
    fn groups_split_the_pipes_from_the_rest_and_nan_is_not_measured() {
        let plan = MetricPlan::choose(&offered(&[
            "sm__inst_executed_pipe_tensor_op_gmma",
            "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld",
            "sm__inst_executed_pipe_fma",
            "sm__inst_executed_pipe_alu",
        ]));
        assert_eq!(plan.groups(), vec![vec![0, 1], vec![2, 3]]);
        let c = plan.read(1, &[400.0, 1e6, f64::NAN, f64::NAN]);
        assert_eq!(c.wgmma_instructions, Some(400.0));
        assert_eq!(c.other_flops_bound, None);
        let c = plan.read(2, &[f64::NAN, f64::NAN, 1.0, 1.0]);
        assert_eq!((c.wgmma_instructions, c.tma_load_bytes), (None, None));
        assert_eq!(c.other_flops_bound, Some(96.0));
        // Only what the launch read is compared.
        let d = counted(1, 1.0, 1.0);
        assert_eq!(compare(&c, &d, 1e6).len(), 1);
        // And only what it read is kept: the check reads back from JSON (a NaN would be
        // written as null, and the worker's whole outcome would not read back).
        assert_eq!(c.values.len(), 2);
        let check = HardwareCheck {
            launches: vec![plan.read(1, &[400.0, 1e6, f64::NAN, f64::NAN]), c],
            ..HardwareCheck::default()
        };
        let json = serde_json::to_vec(&check).expect("serialises");
        let back: HardwareCheck = serde_json::from_slice(&json).expect("reads back");
        assert_eq!(back, check);
    }

    #[test]
    fn values_become_quantities() {
        let plan = MetricPlan::choose(&offered(&[
            "sm__inst_executed_pipe_tensor_op_gmma",
            "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld",
            "sm__inst_executed_pipe_fma",
            "sm__inst_executed_pipe_alu",
        ]));
        let c = plan.read(7, &[400.0, 1e6, 10.0, 5.0]);
        assert_eq!(c.launch, 7);
        assert_eq!(c.wgmma_instructions, Some(400.0));
        assert_eq!(c.tma_load_bytes, Some(1e6));
        // 10 FMA-pipe warp instructions: 10 x 32 threads x 2; 5 ALU ones: 5 x 32.
        assert_eq!(c.other_flops_bound, Some(640.0 + 160.0));
        assert_eq!(c.values.len(), 4);
    }

    #[test]
    fn an_honest_launch_agrees_and_a_switching_one_does_not() {
        // 1000 warpgroup executions: 4000 warp instructions expected.
        let d = counted(1000, 1e6, 1e5);
        assert_eq!(counted_wgmma_instructions(&d), 4000.0);
        let task_flops = 1e8;
        let honest = HardwareCounts {
            wgmma_instructions: Some(4000.0),
            tma_load_bytes: Some(1.03e6),
            other_flops_bound: Some(3e5),
            ..HardwareCounts::default()
        };
        let a = compare(&honest, &d, task_flops);
        assert_eq!(a.len(), 3);
        assert!(a.iter().all(|a| a.agrees), "{a:?}");
        // Timed, it skips the wgmma and does the math with FMAs: every quantity moves.
        let switched = HardwareCounts {
            wgmma_instructions: Some(4.0),
            tma_load_bytes: Some(0.0),
            other_flops_bound: Some(task_flops),
            ..HardwareCounts::default()
        };
        let a = compare(&switched, &d, task_flops);
        assert!(a.iter().all(|a| !a.agrees), "{a:?}");
        // One wgmma instruction too many or too few beyond 1% disagrees.
        let off = HardwareCounts {
            wgmma_instructions: Some(4000.0 * 1.02),
            ..HardwareCounts::default()
        };
        assert!(!compare(&off, &d, task_flops)[0].agrees);
        // The other-arithmetic bound: 4 x counted + 5% of the task's FLOPs.
        let edge = HardwareCounts {
            other_flops_bound: Some(4.0 * 1e5 + 0.05 * task_flops),
            ..HardwareCounts::default()
        };
        assert!(compare(&edge, &d, task_flops)[0].agrees);
        let over = HardwareCounts {
            other_flops_bound: Some(4.0 * 1e5 + 0.05 * task_flops + 1.0),
            ..HardwareCounts::default()
        };
        assert!(!compare(&over, &d, task_flops)[0].agrees);
    }

    #[test]
    fn tma_bytes_are_compared_as_whole_boxes() {
        // As an H100 read zoo-ignored-wgmma's loads: every box counted whole (out-of-bounds
        // fill included), 52,559,872 of its 60,817,408 bytes inside the tensors.
        let boxes = 60_817_408.0;
        let mut d = counted(10, boxes, 0.0);
        d.tma_load_bytes = Some(52_559_872.0);
        assert_eq!(counted_tma_box_bytes(&d), (boxes, true));
        let read = HardwareCounts {
            tma_load_bytes: Some(boxes),
            ..HardwareCounts::default()
        };
        let a = compare(&read, &d, 1e9);
        assert_eq!(a.len(), 1);
        assert!(a[0].agrees, "{a:?}");
        // Loads that did not run moved nothing: a switching kernel is still caught.
        let skipped = HardwareCounts {
            tma_load_bytes: Some(0.5 * boxes),
            ..HardwareCounts::default()
        };
        assert!(!compare(&skipped, &d, 1e9)[0].agrees);
        // A load whose box is unknown (an uncredited map): the known boxes bound from below.
        d.sites.push(load(7, None));
        assert_eq!(counted_tma_box_bytes(&d), (boxes, false));
        let more = HardwareCounts {
            tma_load_bytes: Some(2.0 * boxes),
            ..HardwareCounts::default()
        };
        let a = compare(&more, &d, 1e9);
        assert!(
            a[0].agrees && a[0].quantity.contains("lower bound"),
            "{a:?}"
        );
        assert!(!compare(&skipped, &d, 1e9)[0].agrees);
        // And the check still reads back from JSON (no infinite bound).
        let check = HardwareCheck {
            launches: vec![more.clone()],
            agreements: vec![a],
            ..HardwareCheck::default()
        };
        let back: HardwareCheck =
            serde_json::from_slice(&serde_json::to_vec(&check).expect("json")).expect("reads");
        assert_eq!(back, check);
    }

    #[test]
    fn the_check_reports_disagreements_per_launch() {
        let d = counted(10, 100.0, 0.0);
        let mut check = HardwareCheck {
            launches: vec![
                HardwareCounts {
                    launch: 3,
                    wgmma_instructions: Some(40.0),
                    ..HardwareCounts::default()
                },
                HardwareCounts {
                    launch: 9,
                    wgmma_instructions: Some(0.0),
                    ..HardwareCounts::default()
                },
            ],
            ..HardwareCheck::default()
        };
        check.compare_with(&d, 1e6);
        assert!(check.disagrees());
        let words = check.describe_disagreements();
        assert_eq!(words.len(), 1);
        assert!(words[0].starts_with("timed launch 9: wgmma instructions"));
    }

    #[test]
    fn measured_launches_are_distinct_and_in_range() {
        let mut x = 0u64;
        let chosen = choose_launches(3, 5, || {
            x = x.wrapping_add(3);
            x
        });
        // 3 % 5 = 3 swaps places 0 and 3; 6 % 4 = 2 swaps 1 and 3; 9 % 3 = 0 keeps 2: [3, 0, 2].
        assert_eq!(chosen, vec![0, 2, 3]);
        // Never more than there are, and a constant draw still ends.
        assert_eq!(choose_launches(9, 2, || 1), vec![0, 1]);
        assert!(choose_launches(1, 0, || 1).is_empty());
    }
}
