//! The static check of a candidate: everything that can be known without running it.
//!
//! Extraction, CUDA C++ to PTX (NVRTC), PTX parsing, safety screening, plan validation, the
//! plan bound to the PTX entries and evaluated for every workload against the arch's limits,
//! the instruction inventory against the task's required families, and, where ptxas is
//! installed, the compile result for each architecture. Missing target families are warnings,
//! as the paper's lint: a correct kernel is never failed for them here.

use crate::record::Stage;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::arch::Arch;
use crate::candidate::bind::{self, ResolvedLaunch, ResolvedParam};
use crate::candidate::plan::{LaunchPlan, PlanProblem};
use crate::candidate::{Candidate, KernelLang};
use crate::digest::Digest;
use crate::sandbox::nvrtc;
use crate::task::Task;
use crate::toolchain::ptxas;

/// What to check beyond the PTX itself.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// The architecture the candidate is for.
    pub arch: Arch,
    /// Architectures to compile for with ptxas (if found).
    pub compile_for: Vec<Arch>,
}

/// The failure classes of the static stage (the paper's verdict classes, where they apply).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// No usable kernel or plan block in the response.
    Extraction,
    /// The code does not compile (NVRTC, PTX syntax, ptxas for the target arch) or is refused.
    Compilation,
    /// The launch plan is invalid or does not bind to the PTX.
    Launch,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Failure {
    pub class: FailureClass,
    pub reasons: Vec<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct NvrtcSummary {
    pub version: String,
    pub options: Vec<String>,
    pub log: String,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct RequiredFamily {
    pub family: String,
    pub count: usize,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct WorkloadLaunches {
    pub workload: String,
    pub launches: Vec<ResolvedLaunch>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct PtxasRun {
    pub arch: Arch,
    /// ptxas's result, or why it could not run.
    pub result: Result<ptxas::PtxasResult, String>,
}

/// Everything the static check found.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CheckReport {
    pub task: String,
    pub task_digest: Digest,
    pub arch: Arch,
    pub failure: Option<Failure>,
    pub lang: Option<KernelLang>,
    pub notes: Vec<String>,
    pub nvrtc: Option<NvrtcSummary>,
    pub ptx_digest: Option<Digest>,
    pub entries: Vec<String>,
    pub families: BTreeMap<String, usize>,
    pub required: Vec<RequiredFamily>,
    pub warnings: Vec<String>,
    pub workloads: Vec<WorkloadLaunches>,
    pub ptxas: Vec<PtxasRun>,
    /// SASS inventory of each cubin ptxas made, where nvdisasm is installed.
    pub sass: Vec<crate::evidence::SassSummary>,
    /// The PTX that was checked (from the candidate or NVRTC).
    #[serde(skip)]
    pub ptx: Option<String>,
    /// Why the harness could not check the candidate (a full or unwritable temp folder, a
    /// sandbox that could not start): no verdict on the candidate; `check` exits 3 and a run
    /// grades it again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub harness: Vec<String>,
}

/// What a tool prints when the harness's own folder failed it (not the candidate's code).
const HARNESS_IO: [&str; 3] = [
    "No space left on device",
    "Read-only file system",
    "Disk quota exceeded",
];

impl CheckReport {
    pub fn ok(&self) -> bool {
        self.failure.is_none() && self.harness.is_empty()
    }

    fn fail(&mut self, class: FailureClass, reasons: Vec<String>) {
        match &mut self.failure {
            Some(f) if f.class == class => f.reasons.extend(reasons),
            Some(_) => {}
            None => self.failure = Some(Failure { class, reasons }),
        }
    }
}

/// Checks a candidate that failed extraction: the report says so and nothing else.
pub fn extraction_failed(task: &Task, arch: Arch, reason: String) -> CheckReport {
    let mut r = empty_report(task, arch);
    r.fail(FailureClass::Extraction, vec![reason]);
    r
}

fn empty_report(task: &Task, arch: Arch) -> CheckReport {
    CheckReport {
        task: task.id.to_string(),
        task_digest: task.digest(),
        arch,
        failure: None,
        lang: None,
        notes: Vec::new(),
        nvrtc: None,
        ptx_digest: None,
        entries: Vec::new(),
        families: BTreeMap::new(),
        required: Vec::new(),
        warnings: Vec::new(),
        workloads: Vec::new(),
        ptxas: Vec::new(),
        sass: Vec::new(),
        ptx: None,
        harness: Vec::new(),
    }
}

fn plan_reasons(problems: Vec<PlanProblem>) -> Vec<String> {
    problems.into_iter().map(|p| p.to_string()).collect()
}

/// Runs the whole static check.
pub fn check(candidate: &Candidate, task: &Task, opts: &CheckOptions) -> CheckReport {
    let arch = opts.arch;
    let mut r = empty_report(task, arch);
    r.lang = Some(candidate.lang);
    r.notes = candidate.notes.clone();
    if task.target(arch).is_none() {
        r.fail(
            FailureClass::Launch,
            vec![format!("task {} has no target for {arch}", task.id)],
        );
        return r;
    }

    // 1. The PTX.
    let ptx = match candidate.lang {
        KernelLang::Ptx => candidate.kernel.clone(),
        KernelLang::Cuda => match nvrtc::compile(&candidate.kernel, "kernel.cu", arch) {
            Ok(out) => {
                r.nvrtc = Some(NvrtcSummary {
                    version: format!("{}.{}", out.nvrtc_version.0, out.nvrtc_version.1),
                    options: out.options,
                    log: out.log,
                });
                out.ptx
            }
            Err(e @ nvrtc::CompileError::LibraryMissing(_)) => {
                r.warnings
                    .push(format!("cannot compile CUDA C++ here: {e}"));
                return r;
            }
            Err(e @ nvrtc::CompileError::Harness(_)) => {
                r.harness.push(format!("NVRTC could not run: {e}"));
                return r;
            }
            Err(nvrtc::CompileError::Source(e)) => {
                r.fail(FailureClass::Compilation, vec![e]);
                return r;
            }
        },
    };
    r.ptx_digest = Some(Digest::of(ptx.as_bytes()));
    let module = match ptxbench_ptx::parse(&ptx) {
        Ok(m) => m,
        Err(e) => {
            r.fail(
                FailureClass::Compilation,
                vec![format!("PTX does not parse: {e}")],
            );
            r.ptx = Some(ptx);
            return r;
        }
    };
    r.entries = module.entries().map(|e| e.name.clone()).collect();
    let unsafe_code: Vec<String> = ptxbench_ptx::safety_issues(&module)
        .iter()
        .map(|s| format!("refused: {}", s.message))
        .collect();
    if !unsafe_code.is_empty() {
        r.fail(FailureClass::Compilation, unsafe_code);
    }

    // 2. Instruction inventory against the required families.
    let inv = ptxbench_ptx::inventory(&module);
    r.families = inv
        .by_family
        .iter()
        .map(|(f, n)| (f.as_str().to_string(), *n))
        .collect();
    if let Some(target) = task.target(arch) {
        for req in &target.required {
            let count = r.families.get(&req.family).copied().unwrap_or(0);
            if count == 0 {
                r.warnings.push(format!(
                    "no `{}` instruction in the PTX: the kernel cannot count as using {arch} (needs SASS {})",
                    req.family,
                    req.sass.join(" / ")
                ));
            }
            r.required.push(RequiredFamily {
                family: req.family.clone(),
                count,
            });
        }
    }

    // 3. The plan, bound to the PTX and evaluated per workload.
    match LaunchPlan::parse_from(&candidate.plan, task, &candidate.plan_source) {
        Err(e) => r.fail(FailureClass::Launch, plan_reasons(e.problems)),
        Ok(plan) => {
            let problems = bind::check_module(&plan, &module, arch);
            if problems.is_empty() {
                for w in &task.workloads {
                    match bind::resolve(&plan, &module, task, w, arch) {
                        Ok(launches) => r.workloads.push(WorkloadLaunches {
                            workload: w.name.clone(),
                            launches,
                        }),
                        Err(p) => r.fail(FailureClass::Launch, plan_reasons(p)),
                    }
                }
            } else {
                r.fail(FailureClass::Launch, plan_reasons(problems));
            }
        }
    }

    // 4. ptxas, for each architecture asked (the target arch decides compilation failure).
    for &a in &opts.compile_for {
        let run = match ptxas::compile(&ptx, a) {
            // ptxas failed on the harness's folder (full, read-only): no verdict on the code.
            Ok(res) if !res.ok && HARNESS_IO.iter().any(|m| res.log.contains(m)) => {
                let why = format!(
                    "ptxas -arch={a} could not write in the temp folder: {}",
                    crate::secrets::mask_host_paths(res.log.trim())
                );
                if a == arch {
                    r.harness.push(why.clone());
                } else {
                    r.warnings.push(why.clone());
                }
                Err(why)
            }
            Err(e @ crate::toolchain::ToolError::Spawn { .. }) => {
                let why = format!("ptxas -arch={a} could not run: {e}");
                if a == arch {
                    r.harness.push(why.clone());
                } else {
                    r.warnings.push(why.clone());
                }
                Err(why)
            }
            Ok(res) => {
                if a == arch && !res.ok {
                    let msg = format!("ptxas -arch={a} failed:\n{}", res.log.trim());
                    r.fail(FailureClass::Compilation, vec![msg]);
                }
                Ok(res)
            }
            Err(e @ crate::toolchain::ToolError::NotFound { .. }) => {
                r.warnings.push(format!("ptxas not run for {a}: {e}"));
                Err(e.to_string())
            }
            // ptxas started but gave no result (killed at its limit): the check cannot say
            // the code compiles, so for the target arch it fails, naming the step.
            Err(e) => {
                if a == arch {
                    r.fail(
                        FailureClass::Compilation,
                        vec![format!("ptxas -arch={a} did not finish: {e}")],
                    );
                } else {
                    r.warnings
                        .push(format!("ptxas -arch={a} did not finish: {e}"));
                }
                Err(e.to_string())
            }
        };
        if let Some(cubin) = run.as_ref().ok().and_then(|res| res.cubin.as_ref()) {
            use crate::evidence::sass;
            match sass::disassemble(cubin) {
                Ok(inv) => r.sass.push(sass::SassSummary {
                    arch: a,
                    result: Ok(sass::facts(&inv, task, a)),
                }),
                Err(e) if e.is_tool_missing() => {}
                Err(e) => r.sass.push(sass::SassSummary {
                    arch: a,
                    result: Err(e.to_string()),
                }),
            }
        }
        r.ptxas.push(PtxasRun {
            arch: a,
            result: run,
        });
    }
    r.ptx = Some(ptx);
    r
}

/// A readable report for the terminal.
pub fn render_text(r: &CheckReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "task {} ({}), arch {}",
        r.task,
        r.task_digest.short(12),
        r.arch
    );
    if let Some(lang) = r.lang {
        let _ = writeln!(s, "kernel: {lang}");
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    if let Some(n) = &r.nvrtc {
        let _ = writeln!(s, "nvrtc {} {}", n.version, n.options.join(" "));
        if !n.log.is_empty() {
            let _ = writeln!(s, "nvrtc log:\n{}", n.log);
        }
    }
    if let Some(d) = r.ptx_digest {
        let _ = writeln!(s, "ptx: blake3 {d}");
    }
    if !r.entries.is_empty() {
        let _ = writeln!(s, "entries: {}", r.entries.join(", "));
    }
    if !r.families.is_empty() {
        let fams: Vec<String> = r.families.iter().map(|(f, n)| format!("{f}={n}")).collect();
        let _ = writeln!(s, "instruction families: {}", fams.join(" "));
    }
    for q in &r.required {
        let _ = writeln!(
            s,
            "required {}: {}",
            q.family,
            if q.count > 0 {
                format!("present ({} in PTX)", q.count)
            } else {
                "ABSENT".into()
            }
        );
    }
    for w in &r.workloads {
        for (i, l) in w.launches.iter().enumerate() {
            let _ = write!(
                s,
                "workload {}: launch {i} {} grid {:?} block {:?} smem {}",
                w.workload, l.entry, l.grid, l.block, l.shared_mem
            );
            if let Some(c) = l.cluster {
                let _ = write!(s, " cluster {c:?}");
            }
            let params: Vec<String> = l.params.iter().map(describe_param).collect();
            let _ = writeln!(s, " ({})", params.join(", "));
        }
    }
    for p in &r.ptxas {
        match &p.result {
            Ok(res) => {
                let _ = writeln!(
                    s,
                    "ptxas {} ({}): {}",
                    p.arch,
                    res.version,
                    if res.ok { "ok" } else { "FAILED" }
                );
                for f in &res.resources {
                    let _ = writeln!(
                        s,
                        "  {}: {} registers, {} B shared, {} B spill stores, {} B spill loads",
                        f.function,
                        f.registers,
                        f.shared_bytes,
                        f.spill_store_bytes,
                        f.spill_load_bytes
                    );
                }
            }
            Err(e) => {
                let _ = writeln!(s, "ptxas {}: not run ({e})", p.arch);
            }
        }
    }
    for line in r
        .sass
        .iter()
        .flat_map(crate::evidence::sass::render_summary)
    {
        let _ = writeln!(s, "{line}");
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    if !r.harness.is_empty() {
        let _ = writeln!(
            s,
            "result: not checked (the harness failed, not the candidate)"
        );
        for h in &r.harness {
            let _ = writeln!(s, "  - {h}");
        }
        return s;
    }
    match &r.failure {
        None => {
            let _ = writeln!(s, "result: ok");
        }
        Some(f) => {
            let _ = writeln!(s, "result: {:?} failure", f.class);
            for reason in &f.reasons {
                let _ = writeln!(s, "  - {reason}");
            }
        }
    }
    s
}

fn describe_param(p: &ResolvedParam) -> String {
    match p {
        ResolvedParam::Tensor { name, .. } => format!("&{name}"),
        ResolvedParam::Workspace { name, bytes, .. } => format!("&{name}[{bytes} B]"),
        ResolvedParam::Scalar { ty, value, .. } => format!("{value}:{}", ty.as_str()),
        ResolvedParam::TensorMap { by_value, map } => format!(
            "tmap({} dims {:?} box {:?} {}{})",
            map.tensor,
            map.desc.dims(),
            map.desc.box_dims(),
            map.desc.swizzle(),
            if *by_value { "" } else { ", via pointer" }
        ),
        ResolvedParam::Null { .. } => "null".into(),
    }
}

/// The static stage's failure as an engine outcome: the candidate's failure (extraction,
/// compilation, or a plan that cannot launch: the paper's runtime class), or the harness's
/// when it could not produce PTX at all (NVRTC missing).
pub fn static_outcome(report: &CheckReport) -> Option<crate::engine::Outcome> {
    use crate::engine::{Outcome, Verdict};
    if !report.harness.is_empty() {
        return Some(Outcome::failed(
            Verdict::Other,
            Stage::Static,
            crate::secrets::mask_host_paths(&format!(
                "the harness could not check it: {}",
                report.harness.join("; ")
            )),
        ));
    }
    let Some(f) = report.failure.as_ref() else {
        return report.ptx.is_none().then(|| {
            Outcome::failed(
                Verdict::Other,
                Stage::Static,
                format!("no PTX to run: {}", report.warnings.join("; ")),
            )
        });
    };
    let verdict = match f.class {
        FailureClass::Extraction => Verdict::Extraction,
        FailureClass::Compilation => Verdict::Compilation,
        FailureClass::Launch => Verdict::Runtime,
    };
    Some(Outcome::failed(
        verdict,
        Stage::Static,
        f.reasons.join("\n"),
    ))
}
