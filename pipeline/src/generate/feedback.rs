//! The repair turn's user message, built from what the static check and the engine found.
//!
//! It says the verdict and where evaluation stopped, the compiler log, a numerical-mismatch
//! summary per workload and output, what is known about the target instructions (executed at
//! run time: not measured yet; present in the PTX: from the static check), and the speedup
//! against the library. Long logs are cut to their tail: the end of a compiler log is where the
//! error is. The same outcome always gives the same text.

use std::fmt::Write as _;

use crate::check::CheckReport;
use crate::engine::{Outcome, Verdict};

/// The most characters of a log quoted back.
const LOG_TAIL: usize = 4000;

/// The feedback message for the turn that produced `outcome`.
pub fn build(report: &CheckReport, outcome: &Outcome, finish_reason: Option<&str>) -> String {
    crate::secrets::mask_host_paths(&build_text(report, outcome, finish_reason))
}

fn build_text(report: &CheckReport, outcome: &Outcome, finish_reason: Option<&str>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Your answer was evaluated on task {} for {}.",
        report.task, report.arch
    );
    let _ = writeln!(
        s,
        "Result: {} (evaluation stopped at stage `{}`).",
        outcome.verdict.as_str(),
        outcome.stage
    );
    if finish_reason == Some("length") {
        s.push_str(
            "Your reply was cut off at the token limit: answer more briefly and close every code block.\n",
        );
    }
    if !outcome.message.trim().is_empty() {
        let _ = writeln!(
            s,
            "\nWhat went wrong:\n```text\n{}\n```",
            tail(outcome.message.trim())
        );
    }
    let log = match (&report.nvrtc, outcome.jit_log.trim()) {
        (_, jit) if !jit.is_empty() => jit.to_string(),
        (Some(n), _) if !n.log.trim().is_empty() => n.log.trim().to_string(),
        _ => String::new(),
    };
    if !log.is_empty() {
        let _ = writeln!(s, "\nCompiler log:\n```text\n{}\n```", tail(&log));
    }
    let mut mismatches = Vec::new();
    for w in &outcome.workloads {
        for t in w.trials.iter().filter(|t| !t.passed) {
            for o in t.outputs.iter().filter(|o| !o.passed) {
                let c = &o.comparison;
                mismatches.push(format!(
                    "- workload {} (seed {}), output {}: {}; {} of {} elements outside tolerance ({}), first at index {}, max abs error {:.3e}, relative L2 error {:.3e}, {} non-finite",
                    w.workload,
                    t.seed,
                    o.output,
                    o.failure.as_deref().unwrap_or("outside tolerance"),
                    c.violations,
                    c.elements,
                    o.tolerance,
                    c.first_violation.map_or("-".to_string(), |i| i.to_string()),
                    c.max_abs_error,
                    c.relative_l2,
                    c.non_finite
                ));
            }
            if t.guard_bytes_changed > 0 {
                mismatches.push(format!(
                    "- workload {}: {} bytes written outside the output tensors",
                    w.workload, t.guard_bytes_changed
                ));
            }
            if t.input_bytes_changed > 0 {
                mismatches.push(format!(
                    "- workload {}: {} bytes of the inputs were modified",
                    w.workload, t.input_bytes_changed
                ));
            }
        }
        if let Some(tm) = &w.timing
            && !tm.recheck_passed
        {
            mismatches.push(format!(
                "- workload {}: the outputs of the timed launches were wrong (work skipped or cached across launches?)",
                w.workload
            ));
        }
    }
    if !mismatches.is_empty() {
        let shown = mismatches.len().min(12);
        let _ = writeln!(
            s,
            "\nNumerical mismatches:\n{}",
            mismatches[..shown].join("\n")
        );
        if mismatches.len() > shown {
            let _ = writeln!(s, "- ... and {} more", mismatches.len() - shown);
        }
    }
    match &outcome.dynamic {
        Some(d) if d.error.is_none() && !d.counts.is_empty() => {
            let counts: Vec<String> = d
                .counts
                .iter()
                .map(|(f, n)| format!("{f} {}", if *n > 0 { "executed" } else { "NOT executed" }))
                .collect();
            let _ = writeln!(
                s,
                "\nTarget instructions executed at run time (workload {}): {}.",
                d.workload,
                counts.join(", ")
            );
        }
        _ => s.push_str(
            "\nTarget instructions executed at run time: not measured (this evaluation recorded no executed-instruction evidence).\n",
        ),
    }
    let missing: Vec<&str> = report
        .required
        .iter()
        .filter(|r| r.count == 0)
        .map(|r| r.family.as_str())
        .collect();
    if !report.required.is_empty() {
        if missing.is_empty() {
            s.push_str("Target instructions in your PTX: every required family is present.\n");
        } else {
            let _ = writeln!(
                s,
                "Target instructions in your PTX: missing {} (required for {}).",
                missing.join(", "),
                report.arch
            );
        }
    }
    let speedups: Vec<String> = outcome
        .workloads
        .iter()
        .filter_map(|w| {
            let t = w.timing.as_ref()?;
            Some(format!(
                "- workload {}: yours {:.4} ms, library {} ms, speedup {}",
                w.workload,
                t.candidate.median_ms,
                t.baseline
                    .as_ref()
                    .map_or("-".to_string(), |b| format!("{:.4}", b.median_ms)),
                t.speedup.map_or("-".to_string(), |x| format!("{x:.3}"))
            ))
        })
        .collect();
    match outcome.min_speedup {
        Some(m) => {
            let _ = writeln!(
                s,
                "Speedup over the library: {m:.3} (the smallest over the performance workloads).\n{}",
                speedups.join("\n")
            );
        }
        None if outcome.verdict == Verdict::Correct => {
            s.push_str("Speedup over the library: not measured.\n");
        }
        None => {
            s.push_str("Speedup over the library: not measured (the kernel is not correct yet).\n")
        }
    }
    s.push_str(if outcome.verdict == Verdict::Correct {
        "\nThe kernel is correct but slower than the library. Make it faster"
    } else {
        "\nFix the kernel"
    });
    s.push_str(
        " and answer again with the whole kernel in one ```ptx or ```cuda block and the whole launch plan in one ```yaml block.\n",
    );
    s
}

fn tail(text: &str) -> String {
    let n = text.chars().count();
    if n <= LOG_TAIL {
        return text.to_string();
    }
    let kept: String = text.chars().skip(n - LOG_TAIL).collect();
    format!("[... {} characters cut ...]\n{kept}", n - LOG_TAIL)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Arch;

    #[test]
    fn feedback_names_the_verdict_the_log_and_what_is_not_measured() {
        let suite = crate::task::Suite::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks"),
        )
        .expect("the committed suite loads");
        let task = suite.get("gemm_n4096_k4096").expect("a GEMM task");
        let report = crate::check::extraction_failed(task, Arch::Sm90a, "no kernel".into());
        let mut o = Outcome::failed(
            Verdict::Compilation,
            crate::record::Stage::Jit,
            "ptxas failed",
        );
        o.jit_log = "line 3: error: unknown instruction".into();
        let f = build(&report, &o, Some("length"));
        assert!(f.contains("Result: compilation"), "{f}");
        assert!(f.contains("unknown instruction"), "{f}");
        assert!(f.contains("executed at run time: not measured"), "{f}");
        assert!(f.contains("cut off at the token limit"), "{f}");
        assert_eq!(f, build(&report, &o, Some("length")));
    }
}
