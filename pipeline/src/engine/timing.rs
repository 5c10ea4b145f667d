//! Timing protocol: candidate and library baseline in pairs, in one process, on one stream.
//!
//! Before every timed pair the inputs are redrawn from a fresh seed (outside the timed window;
//! attention backward redraws dO and keeps Q, K, V and the O, LSE derived from them), so no
//! two timed launches see the same input contents and no output cache, keyed on contents or
//! on pointers, can pay. Outputs are poisoned and L2 is flushed before each launch; candidate
//! and baseline run on the same inputs, each bracketed by CUDA events. The outputs of
//! `checked_launches` timed launches, chosen uniformly among all of them by reservoir sampling
//! from OS entropy (so never announced and not known in advance), are kept and checked after
//! the loop against the reference for exactly those launches' inputs; a mismatch is a
//! numerical verdict at stage `timing`.
//!
//! The library cannot be timed on what the candidate left behind: after every candidate
//! launch (outside the timed window) its inputs are compared byte for byte with a copy taken
//! when they were drawn, and a change is a numerical verdict at stage `timing`, whichever
//! launch made it; the library then runs on its own tensors, whose inputs are copied from
//! that verified copy after the candidate finished. So neither side's data depends on the
//! other's launch, and the order within a pair favours neither: each starts from a flushed L2,
//! poisoned outputs and inputs equal to the drawn ones.
//!
//! A warm-up of pairs runs until both a count and a GPU time are reached, so clocks are
//! steady; SM clocks and clock-event reasons are sampled during the loop. The speedup is the
//! median of per-pair ratios with a 95% bootstrap interval ([`super::estimate`]); the loop
//! stops when the interval is tight enough, the time budget is spent, or the pair limit is
//! reached, and says which. The workload's speed of light ([`super::floor`]) is recorded
//! with the candidate's fraction of it.

use crate::record::Stage;
use std::collections::BTreeMap;

use super::baseline::{Baseline, Planned, baseline_for, check_baseline};
use super::conditions::Conditions;
use super::estimate::{StopRule, paired_speedup};
use super::inputs::{TensorSet, allocate, fill_inputs, refresh_inputs, seed_for, snapshot_inputs};
use super::judge::check_stored;
use super::launch::{encode_params, launch_encoded};
use super::reference::compute_reference;
use super::support::Support;
use super::verdict::Stop;
use super::{BaselineInfo, ClockSamples, Outcome, PeakClass, Request, Stats, Timing, Verdict};
use crate::candidate::bind::ResolvedLaunch;
use crate::candidate::plan::LaunchPlan;
use crate::cuda::driver::{DeviceBuffer, Gpu, Kernel};
use crate::cuda::profiler::{Profiler, ProfilerError};
use crate::engine::estimate::SplitMix;
use crate::evidence::hardware::{self, HardwareCheck, MetricPlan};
use crate::expr::Bindings;
use crate::task::{Op, Task, Workload};

/// NVML clock-event reasons that mean the clock was held down (power cap, slowdowns, thermal,
/// power brake), as opposed to idle or an application clock setting.
const THROTTLE_REASONS: u64 = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

/// A kept timed launch: its index, the seed of its inputs, and copies of its outputs.
struct Kept {
    launch: u32,
    seed: u64,
    outputs: Vec<(String, DeviceBuffer)>,
}

/// Reservoir sampling of `k` timed launches, uniform over however many there turn out to be.
struct Reservoir {
    rng: SplitMix,
    k: usize,
    kept: Vec<Kept>,
}

impl Reservoir {
    fn new(k: usize) -> Result<Reservoir, Stop> {
        let seed = crate::entropy::draw_u64().map_err(|e| {
            Stop::new(Outcome::failed(
                Verdict::Other,
                Stage::Timing,
                e.to_string(),
            ))
        })?;
        Ok(Reservoir {
            rng: SplitMix::new(seed),
            k,
            kept: Vec::new(),
        })
    }

    /// The slot launch `n` (0-based) goes to, if it is kept.
    fn slot_for(&mut self, n: u32) -> Option<usize> {
        if self.k == 0 {
            return None;
        }
        if (n as usize) < self.k {
            return Some(n as usize);
        }
        let j = self.rng.below(n as usize + 1);
        (j < self.k).then_some(j)
    }
}

/// Buffers for copies of the candidate's outputs in `set`.
fn output_copies(
    gpu: &Gpu,
    task: &Task,
    set: &TensorSet,
) -> Result<Vec<(String, DeviceBuffer)>, Stop> {
    let mut outputs = Vec::new();
    for t in &task.outputs {
        let (buf, ..) = &set.tensors[&t.name];
        outputs.push((t.name.clone(), gpu.alloc(buf.bytes())?));
    }
    Ok(outputs)
}

fn sample_clocks(gpu: &Gpu, into: &mut Vec<(u32, u64)>) {
    if let Some(s) = gpu.state() {
        into.push((s.sm_clock_mhz, s.clock_event_reasons));
    }
}

fn clock_summary(samples: &[(u32, u64)]) -> Option<ClockSamples> {
    let min = samples.iter().map(|s| s.0).min()?;
    let max = samples.iter().map(|s| s.0).max()?;
    let reasons = samples.iter().fold(0, |acc, s| acc | s.1);
    Some(ClockSamples {
        samples: u32::try_from(samples.len()).unwrap_or(u32::MAX),
        sm_mhz_min: min,
        sm_mhz_max: max,
        reasons_seen: reasons,
        moved: f64::from(max - min) > 0.01 * f64::from(max) || reasons & THROTTLE_REASONS != 0,
    })
}

/// The floor of `w` on this GPU, if the peak table knows it.
fn floor_of(gpu: &Gpu, task: &Task, w: &Workload) -> Option<super::Floor> {
    let peaks = super::floor::peaks_for(&gpu.info.name)?;
    let class = match task.op {
        Op::GemmFp8 { .. } => PeakClass::Fp8,
        _ => PeakClass::Half,
    };
    let flops = task.flops_of(w).ok()?;
    let bytes = task.bytes_of(w).ok()?;
    let clock_mhz = gpu.info.sm_clock_khz as f64 / 1e3;
    Some(super::Floor::new(peaks, class, clock_mhz, flops, bytes))
}

/// What a timed pair runs on: the candidate's launches over one tensor set, the baseline
/// bound to the same set, the launch conditions and the events.
struct Bench<'a> {
    gpu: &'a Gpu,
    support: &'a Support,
    scratch: &'a DeviceBuffer,
    task: &'a Task,
    set: &'a TensorSet,
    /// The inputs as drawn for the current pair (copied after every redraw).
    drawn: &'a BTreeMap<String, DeviceBuffer>,
    /// The library's own tensors.
    library_set: &'a TensorSet,
    kernels: &'a BTreeMap<String, Kernel>,
    launches: &'a [ResolvedLaunch],
    encoded: &'a [Vec<crate::cuda::driver::ParamBytes>],
    baseline: Option<&'a Baseline>,
    conditions: &'a Conditions,
    events: &'a [crate::cuda::driver::Event; 4],
}

impl Bench<'_> {
    /// One pair: candidate, then (if any) baseline, on the inputs now in the set. Returns the
    /// two times; `keep` gets copies of the candidate's outputs taken between the two.
    fn pair(
        &self,
        salt: u32,
        keep: Option<&[(String, DeviceBuffer)]>,
    ) -> Result<(f64, Option<f64>), Stop> {
        let Bench {
            gpu,
            task,
            set,
            baseline,
            conditions,
            events,
            ..
        } = *self;
        conditions.before_launch(gpu, task, set, salt)?;
        self.launch_candidate()?;
        if let Some(copies) = keep {
            for (name, copy) in copies {
                let (buf, ..) = &set.tensors[name];
                gpu.copy(copy, buf)?;
            }
        }
        self.verify_inputs()?;
        if let Some(b) = baseline {
            conditions.flush_l2(gpu, salt ^ 0x5a5a_5a5a)?;
            gpu.record(&events[2])?;
            b.launch(gpu)?;
            gpu.record(&events[3])?;
        }
        let c = f64::from(gpu.elapsed_ms(&events[0], &events[1])?);
        let b = match baseline {
            Some(_) => Some(f64::from(gpu.elapsed_ms(&events[2], &events[3])?)),
            None => None,
        };
        Ok((c, b))
    }

    /// The candidate's launches, between the first two events.
    fn launch_candidate(&self) -> Result<(), Stop> {
        let gpu = self.gpu;
        gpu.record(&self.events[0])?;
        launch_encoded(gpu, self.kernels, self.launches, self.encoded)?;
        gpu.record(&self.events[1])?;
        Ok(())
    }

    /// The candidate's inputs as drawn, or a verdict; then the library's copy of them.
    fn verify_inputs(&self) -> Result<(), Stop> {
        let Bench {
            gpu,
            support,
            scratch,
            set,
            drawn,
            library_set,
            baseline,
            ..
        } = *self;
        for (name, copy) in drawn {
            let (buf, ..) = &set.tensors[name];
            let changed =
                support.count_diff(gpu, scratch, buf.ptr(), copy.ptr(), buf.bytes() as u64)?;
            if changed > 0 {
                return Err(Stop::new(Outcome::failed(
                    Verdict::Numerical,
                    Stage::Timing,
                    format!(
                        "a timed launch changed {changed} bytes of the input {name} (inputs must be left as they are; the library is never timed on what a candidate left behind)"
                    ),
                )));
            }
            if baseline.is_some() {
                gpu.copy(&library_set.tensors[name].0, copy)?;
            }
        }
        Ok(())
    }

    /// One candidate launch under the same conditions as a timed one, inside the profiler's
    /// range: its counter values and its own time (not a pair's: the profiler adds its cost).
    /// Its outputs are copied into `keep` for the check after the loop.
    fn measured(
        &self,
        salt: u32,
        profiler: &mut Profiler,
        group: usize,
        keep: &[(String, DeviceBuffer)],
    ) -> Result<Result<(Vec<f64>, f64), ProfilerError>, Stop> {
        let Bench {
            gpu,
            task,
            set,
            conditions,
            events,
            ..
        } = *self;
        conditions.before_launch(gpu, task, set, salt)?;
        let values = profiler.measure(group, || -> Result<(), Stop> {
            self.launch_candidate()?;
            gpu.sync()?;
            Ok(())
        })?;
        let values = match values {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        let ms = f64::from(gpu.elapsed_ms(&events[0], &events[1])?);
        for (name, copy) in keep {
            gpu.copy(copy, &set.tensors[name].0)?;
        }
        self.verify_inputs()?;
        Ok(Ok((values, ms)))
    }
}

/// The hardware measurement of one workload's timed launches (switched on by
/// [`hardware::SWITCH`]): the profiler, the launches it measures, what it read, and the
/// measured launches' outputs, checked after the loop like the reservoir's.
struct Measurement {
    /// One profiler on the context, with one configuration per metric group that fits a pass
    /// (see [`MetricPlan::groups`]); `groups` holds each group's indices into the plan, and
    /// measured launch `i` uses group `i % groups`. `None` once the profiler has failed.
    profiler: Option<Profiler>,
    groups: Vec<Vec<usize>>,
    measured: usize,
    launches: Vec<u32>,
    check: HardwareCheck,
    kept: Vec<Kept>,
}

/// How many timed launches of a workload the counters read.
const MEASURED_LAUNCHES: usize = 2;

impl Measurement {
    /// `None` unless switched on. The launches are drawn from OS entropy among the first
    /// `min_pairs` iterations, which every workload runs.
    fn start(gpu: &Gpu, min_pairs: usize) -> Result<Option<Measurement>, Stop> {
        if !hardware::switched_on() {
            return Ok(None);
        }
        let mut entropy_failed = None;
        let launches = hardware::choose_launches(
            MEASURED_LAUNCHES,
            u32::try_from(min_pairs).unwrap_or(u32::MAX),
            || {
                crate::entropy::draw_u64().unwrap_or_else(|e| {
                    entropy_failed = Some(e.to_string());
                    0
                })
            },
        );
        if let Some(why) = entropy_failed {
            return Err(Stop::new(Outcome::failed(
                Verdict::Other,
                Stage::Timing,
                why,
            )));
        }
        let mut check = HardwareCheck {
            method: "cupti-range-profiler".into(),
            ..HardwareCheck::default()
        };
        let made = crate::cuda::profiler::base_metrics(gpu)
            .map(|offered| MetricPlan::choose(&offered))
            .and_then(|plan| {
                check.plan = plan;
                let names = check.plan.names();
                let all: Vec<usize> = (0..names.len()).collect();
                match Profiler::new(gpu, std::slice::from_ref(&names)) {
                    Ok(p) => Ok((p, vec![all])),
                    Err(ProfilerError::Passes { .. }) => {
                        let groups = check.plan.groups();
                        let named: Vec<Vec<String>> = groups
                            .iter()
                            .map(|g| g.iter().map(|&i| names[i].clone()).collect())
                            .collect();
                        Profiler::new(gpu, &named).map(|p| (p, groups))
                    }
                    Err(e) => Err(e),
                }
            });
        let (profiler, groups) = match made {
            Ok(made) if !check.plan.metrics.is_empty() => (Some(made.0), made.1),
            Ok(_) => {
                check.error = Some("the device offers none of the metrics".into());
                (None, Vec::new())
            }
            Err(e) => {
                check.error = Some(e.to_string());
                (None, Vec::new())
            }
        };
        Ok(Some(Measurement {
            profiler,
            groups,
            measured: 0,
            launches,
            check,
            kept: Vec::new(),
        }))
    }
}

#[allow(clippy::too_many_arguments)]
pub fn time_workload(
    gpu: &Gpu,
    support: &Support,
    scratch: &DeviceBuffer,
    task: &Task,
    plan: &LaunchPlan,
    w: &Workload,
    env: &Bindings,
    kernels: &BTreeMap<String, Kernel>,
    launches: &[ResolvedLaunch],
    req: &Request,
    warmed: &mut bool,
) -> Result<(Timing, Option<BaselineInfo>), Stop> {
    let p = &req.protocol;
    let stream = format!("timing:{}", w.name);
    let set = allocate(gpu, task, plan, env)?;
    fill_inputs(gpu, support, task, w, &set, seed_for(req.seed, &stream, 0))?;
    let reference = compute_reference(gpu, support, task, env, &set)?;
    let mut keep_maps = Vec::new();
    let encoded = encode_params(gpu, launches, &set, &mut keep_maps).map_err(|e| {
        Stop::new(Outcome::failed(
            Verdict::Runtime,
            Stage::Launch,
            format!("encoding a tensor map: {e}"),
        ))
    })?;
    // The inputs as drawn (refreshed before every pair), and the library's own tensors.
    let drawn = snapshot_inputs(gpu, task, &set)?;
    let library_set = allocate(gpu, task, plan, env)?;
    copy_inputs(gpu, task, &drawn, &library_set)?;
    let mut planned = Planned::default();
    let (baseline, info) = match baseline_for(gpu, support, task, env, &library_set, &mut planned)?
    {
        Some((b, i)) => (Some(b), Some(i)),
        None => (None, None),
    };
    // The baseline's own outputs against the reference, once per workload.
    let baseline_check = match &baseline {
        Some(b) => check_baseline(gpu, support, scratch, task, &library_set, &reference, b)?,
        None => Vec::new(),
    };
    drop(reference);
    let conditions = Conditions::new(gpu)?;
    let events = [gpu.event()?, gpu.event()?, gpu.event()?, gpu.event()?];
    let bench = Bench {
        gpu,
        support,
        scratch,
        task,
        set: &set,
        drawn: &drawn,
        library_set: &library_set,
        kernels,
        launches,
        encoded: &encoded,
        baseline: baseline.as_ref(),
        conditions: &conditions,
        events: &events,
    };

    // Warm-up: before the evaluation's first timed workload, at least `warmup` pairs and
    // `warmup_ms` of wall time with the GPU kept busy; later workloads find it warm and run
    // one pair (their first launch, untimed).
    let started = std::time::Instant::now();
    let (min_pairs, min_ms) = if *warmed {
        (1, 0.0)
    } else {
        (p.warmup.max(1), p.warmup_ms)
    };
    let mut warm_pairs = 0u32;
    while warm_pairs < min_pairs || started.elapsed().as_secs_f64() * 1e3 < min_ms {
        bench.pair(warm_pairs, None)?;
        warm_pairs += 1;
    }
    *warmed = true;

    let rule = StopRule {
        min_pairs: p.min_iterations.max(2) as usize,
        max_pairs: p.iterations.max(2) as usize,
        target: p.target_half_width,
        budget_ms: p.max_timing_seconds * 1e3,
        min_pairs_on_budget: 3,
    };
    let mut reservoir = Reservoir::new(p.checked_launches as usize)?;
    let mut measurement = Measurement::start(gpu, rule.min_pairs)?;
    let mut clocks = Vec::new();
    let state_before = gpu.state();
    sample_clocks(gpu, &mut clocks);
    let mut cand = Vec::new();
    let mut base = Vec::new();
    let mut spent = 0.0f64;
    let estimate_seed = seed_for(req.seed, &format!("bootstrap:{}", w.name), 0);
    let mut stop_reason = None;
    for n in 0u32.. {
        let seed = seed_for(req.seed, &stream, n + 1);
        refresh_inputs(gpu, support, task, &set, seed)?;
        copy_from_set(gpu, task, &set, &drawn)?;
        if let Some(m) = measurement.as_mut()
            && m.launches.contains(&n)
            && let Some(profiler) = m.profiler.as_mut()
        {
            let outputs = output_copies(gpu, task, &set)?;
            let slot = m.measured % m.groups.len();
            m.measured += 1;
            match bench.measured(n, profiler, slot, &outputs)? {
                Ok((values, ms)) => {
                    if values.iter().all(|v| !v.is_finite()) {
                        // Said, not hidden: the launch is kept, with nothing compared.
                        let names: Vec<&str> = m.groups[slot]
                            .iter()
                            .map(|&i| m.check.plan.metrics[i].0.as_str())
                            .collect();
                        let why = format!(
                            "timed launch {n}: the profiler returned no finite value for {}",
                            names.join(", ")
                        );
                        m.check.error = Some(match m.check.error.take() {
                            Some(e) => format!("{e}; {why}"),
                            None => why,
                        });
                    }
                    let mut all = vec![f64::NAN; m.check.plan.metrics.len()];
                    for (&i, v) in m.groups[slot].iter().zip(values) {
                        all[i] = v;
                    }
                    m.check.launches.push(m.check.plan.read(n, &all));
                    m.check.measured_ms.push(ms);
                    m.kept.push(Kept {
                        launch: n,
                        seed,
                        outputs,
                    });
                }
                Err(e) => {
                    m.check.error = Some(e.to_string());
                    m.profiler = None;
                }
            }
            continue;
        }
        let slot = reservoir.slot_for(n);
        let copies = match slot {
            Some(s) if s < reservoir.kept.len() => {
                reservoir.kept[s].launch = n;
                reservoir.kept[s].seed = seed;
                Some(s)
            }
            Some(_) => {
                let outputs = output_copies(gpu, task, &set)?;
                reservoir.kept.push(Kept {
                    launch: n,
                    seed,
                    outputs,
                });
                Some(reservoir.kept.len() - 1)
            }
            None => None,
        };
        let keep = copies.map(|s| reservoir.kept[s].outputs.as_slice());
        let (c, b) = bench.pair(n, keep)?;
        cand.push(c);
        spent += c;
        if let Some(b) = b {
            base.push(b);
            spent += b;
        }
        if n % 10 == 9 {
            sample_clocks(gpu, &mut clocks);
        }
        let pairs = cand.len();
        let check_now = pairs >= rule.min_pairs && pairs % 5 == 0;
        let estimate = if check_now && baseline.is_some() {
            paired_speedup(&cand, &base, estimate_seed)
        } else {
            None
        };
        let decided = if check_now || pairs >= rule.max_pairs || spent >= rule.budget_ms {
            rule.decide(pairs, spent, estimate.as_ref())
        } else {
            None
        };
        if let Some(reason) = decided {
            stop_reason = Some(reason);
            break;
        }
    }
    gpu.sync()?;
    sample_clocks(gpu, &mut clocks);
    let state_after = gpu.state();
    drop(keep_maps);
    let (measured_kept, hardware) = match measurement {
        Some(mut m) => {
            m.profiler = None;
            (m.kept, Some(m.check))
        }
        None => (Vec::new(), None),
    };

    // The kept launches, each against the reference for its own inputs.
    let mut checked: Vec<u32> = reservoir.kept.iter().map(|k| k.launch).collect();
    checked.sort_unstable();
    let mut recheck_passed = true;
    let mut failure: Option<String> = None;
    for k in reservoir.kept.iter().chain(&measured_kept) {
        refresh_inputs(gpu, support, task, &set, k.seed)?;
        let reference = compute_reference(gpu, support, task, env, &set)?;
        for (name, copy) in &k.outputs {
            let spec = task
                .outputs
                .iter()
                .find(|t| &t.name == name)
                .expect("kept outputs are task outputs");
            // The copy has the buffer's layout: guard bytes, then the tensor.
            let o = check_stored(
                gpu,
                support,
                scratch,
                spec,
                copy.ptr() + super::inputs::GUARD as u64,
                set.numel(name),
                &reference.outputs[name],
            )?;
            if !o.passed {
                recheck_passed = false;
                failure.get_or_insert_with(|| {
                    format!(
                        "timed launch {} of {}: {}",
                        k.launch,
                        cand.len(),
                        o.failure.clone().unwrap_or_default()
                    )
                });
            }
        }
    }
    if let Some(why) = failure {
        return Err(Stop::new(Outcome::failed(
            Verdict::Numerical,
            Stage::Timing,
            format!(
                "workload {}: the output of a timed launch does not match the reference for its inputs (work skipped or cached across launches?): {why}",
                w.name
            ),
        )));
    }

    let candidate = Stats::from_samples(&cand).ok_or_else(|| {
        Stop::new(Outcome::failed(
            Verdict::Other,
            Stage::Timing,
            "no finite candidate timing",
        ))
    })?;
    let baseline_stats = Stats::from_samples(&base);
    dump_pairs(task, w, req.seed, &cand, &base);
    let estimate = paired_speedup(&cand, &base, estimate_seed);
    let between = super::between_runs::for_task(&gpu.info.name, &task.op);
    let interval =
        estimate.map(|e| super::between_runs::widen(e.estimate, e.lo, e.hi, between.as_ref()));
    let flops = task.flops_of(w).unwrap_or(0.0);
    let tflops = |ms: f64| flops / (ms * 1e-3) / 1e12;
    let floor = floor_of(gpu, task, w);
    Ok((
        Timing {
            speedup: estimate.map(|e| e.estimate),
            speedup_ci95: interval,
            speedup_ci95_within: estimate.map(|e| [e.lo, e.hi]),
            between_runs: estimate.and(between),
            stop_reason,
            candidate_tflops: tflops(candidate.median_ms),
            baseline_tflops: baseline_stats.as_ref().map(|b| tflops(b.median_ms)),
            floor_fraction: floor.as_ref().map(|f| f.fraction(candidate.median_ms)),
            floor,
            candidate,
            baseline: baseline_stats,
            baseline_check,
            checked_launches: checked,
            recheck_passed,
            clocks: clock_summary(&clocks),
            state_before,
            state_after,
            hardware,
        },
        info,
    ))
}

/// A diagnostic for the repeatability benchmark: with `PTXBENCH_PAIRS_OUT=DIR`, a timed
/// workload's raw pairs (milliseconds, in the order they ran) are appended as one JSON line to
/// `DIR/pairs-<worker pid>.jsonl`, with the task, workload and the request's seed (which its
/// record names), so that other estimators can be tried on the same samples offline. The record
/// keeps only their summary. Nothing is written without the variable.
fn dump_pairs(task: &Task, w: &Workload, seed: u64, cand: &[f64], base: &[f64]) {
    use std::io::Write as _;
    let Some(dir) = std::env::var_os("PTXBENCH_PAIRS_OUT") else {
        return;
    };
    let line = serde_json::json!({
        "task": task.id,
        "workload": w.name,
        "seed": seed,
        "candidate_ms": cand,
        "baseline_ms": base,
    });
    let path = std::path::Path::new(&dir).join(format!("pairs-{}.jsonl", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| writeln!(f, "{line}"));
    if let Err(e) = written {
        eprintln!("warning: PTXBENCH_PAIRS_OUT: {}: {e}", path.display());
    }
}

/// Copies the drawn inputs into `to`'s input tensors.
fn copy_inputs(
    gpu: &Gpu,
    task: &Task,
    drawn: &BTreeMap<String, DeviceBuffer>,
    to: &TensorSet,
) -> Result<(), Stop> {
    for t in &task.inputs {
        gpu.copy(&to.tensors[&t.name].0, &drawn[&t.name])?;
    }
    Ok(())
}

/// Takes the set's inputs as drawn into `drawn`.
fn copy_from_set(
    gpu: &Gpu,
    task: &Task,
    set: &TensorSet,
    drawn: &BTreeMap<String, DeviceBuffer>,
) -> Result<(), Stop> {
    for t in &task.inputs {
        gpu.copy(&drawn[&t.name], &set.tensors[&t.name].0)?;
    }
    Ok(())
}
