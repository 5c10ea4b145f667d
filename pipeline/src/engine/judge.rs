//! The correctness judgement: one output against its reference under the output's tolerance,
//! and a whole trial (outputs, guard bytes, inputs left alone). The verdict logic
//! ([`judge_comparison`], [`describe_failure`]) is pure and unit-tested; the comparisons
//! themselves run on the GPU (support.cu).

use std::collections::BTreeMap;

use super::Comparison;
use super::inputs::{GUARD, GUARD_BYTE, TensorSet, f32_bytes};
use super::reference::Reference;
use super::support::Support;
use super::verdict::Stop;
use super::{OutputCheck, Trial};
use crate::cuda::driver::{DeviceBuffer, Gpu};
use crate::task::{Task, TensorSpec, Tolerance};

pub fn describe_failure(t: &Trial) -> String {
    let mut parts: Vec<String> = t.outputs.iter().filter_map(|o| o.failure.clone()).collect();
    if t.guard_bytes_changed > 0 {
        parts.push(format!(
            "{} guard bytes around the tensors were overwritten (writes out of bounds)",
            t.guard_bytes_changed
        ));
    }
    if t.input_bytes_changed > 0 {
        parts.push(format!(
            "{} bytes of the inputs were modified",
            t.input_bytes_changed
        ));
    }
    parts.join("; ")
}

/// Compares one output (fp32 copy at `got`, `numel` values) with its reference under the
/// output's tolerance.
pub fn check_output(
    gpu: &Gpu,
    support: &Support,
    scratch: &DeviceBuffer,
    t: &TensorSpec,
    got: u64,
    numel: u64,
    reference: &DeviceBuffer,
) -> Result<OutputCheck, Stop> {
    let tol = t.tolerance.clone().unwrap_or(Tolerance::Allclose {
        rtol: 0.0,
        atol: 0.0,
    });
    let (rtol, atol) = match tol {
        Tolerance::Allclose { rtol, atol }
        | Tolerance::AllcloseFraction { rtol, atol, .. }
        | Tolerance::AllcloseRelnorm { rtol, atol, .. } => (rtol, atol),
        Tolerance::Relnorm { .. } => (f64::INFINITY, f64::INFINITY),
    };
    let c = support.compare(gpu, scratch, got, reference.ptr(), numel, rtol, atol)?;
    Ok(judge_comparison(&t.name, &tol, c))
}

/// Compares an output stored at `ptr` (the tensor's first element, in the spec's dtype) with
/// its fp32 reference: converts it to fp32, then [`check_output`].
pub fn check_stored(
    gpu: &Gpu,
    support: &Support,
    scratch: &DeviceBuffer,
    spec: &TensorSpec,
    ptr: u64,
    numel: u64,
    reference: &DeviceBuffer,
) -> Result<OutputCheck, Stop> {
    let got = gpu.alloc(f32_bytes(numel)?)?;
    support.to_f32(gpu, ptr, spec.dtype, got.ptr(), numel)?;
    check_output(gpu, support, scratch, spec, got.ptr(), numel, reference)
}

/// The verdict on one output from its comparison with the reference: non-finite values
/// (unwritten or overflowed) and an all-zero output first, then the tolerance.
pub fn judge_comparison(name: &str, tol: &Tolerance, c: Comparison) -> OutputCheck {
    let failure = if c.non_finite > 0 {
        Some(format!(
            "{}: {} of {} values are NaN or infinite (unwritten or overflowed)",
            name, c.non_finite, c.elements
        ))
    } else if c.non_zero == 0 && c.reference_non_zero > 0 {
        Some(format!("{}: every value is zero", name))
    } else {
        match *tol {
            Tolerance::Allclose { rtol, atol } | Tolerance::AllcloseRelnorm { rtol, atol, .. }
                if c.violations > 0 =>
            {
                Some(format!(
                    "{}: {} of {} values outside atol {atol} + rtol {rtol} (first at index {}, max |error| {:.3e}, relative L2 error {:.3e})",
                    name,
                    c.violations,
                    c.elements,
                    c.first_violation.unwrap_or(0),
                    c.max_abs_error,
                    c.relative_l2
                ))
            }
            Tolerance::AllcloseFraction {
                rtol,
                atol,
                min_match,
            } if (c.violations as f64) > (1.0 - min_match) * c.elements as f64 => Some(format!(
                "{}: {} of {} values outside atol {atol} + rtol {rtol}, more than the {:.2}% allowed (first at index {}, max |error| {:.3e}, relative L2 error {:.3e})",
                name,
                c.violations,
                c.elements,
                (1.0 - min_match) * 100.0,
                c.first_violation.unwrap_or(0),
                c.max_abs_error,
                c.relative_l2
            )),
            Tolerance::Relnorm { max } | Tolerance::AllcloseRelnorm { max, .. }
                if c.relative_l2.is_nan() || c.relative_l2 > max =>
            {
                Some(format!(
                    "{}: relative L2 error {:.3e} exceeds {max} (max |error| {:.3e})",
                    name, c.relative_l2, c.max_abs_error
                ))
            }
            _ => None,
        }
    };
    OutputCheck {
        output: name.to_string(),
        tolerance: match tol {
            Tolerance::Allclose { rtol, atol } => format!("allclose rtol {rtol} atol {atol}"),
            Tolerance::AllcloseRelnorm { rtol, atol, max } => {
                format!("allclose rtol {rtol} atol {atol}, relnorm max {max}")
            }
            Tolerance::AllcloseFraction {
                rtol,
                atol,
                min_match,
            } => format!("allclose rtol {rtol} atol {atol} on {min_match} of the values"),
            Tolerance::Relnorm { max } => format!("relnorm {max}"),
        },
        passed: failure.is_none(),
        failure,
        comparison: c,
    }
}

/// Compares every output of `set` with `reference` and checks guards and inputs.
#[allow(clippy::too_many_arguments)]
pub fn check_trial(
    gpu: &Gpu,
    support: &Support,
    scratch: &DeviceBuffer,
    task: &Task,
    set: &TensorSet,
    reference: &Reference,
    snapshot: &BTreeMap<String, DeviceBuffer>,
    seed: u64,
) -> Result<Trial, Stop> {
    let mut outputs = Vec::new();
    for t in &task.outputs {
        outputs.push(check_stored(
            gpu,
            support,
            scratch,
            t,
            set.ptr(&t.name).expect("allocated"),
            set.numel(&t.name),
            &reference.outputs[&t.name],
        )?);
    }
    let mut guard_bytes_changed = 0;
    for (buf, bytes, ..) in set.tensors.values() {
        guard_bytes_changed +=
            support.count_not(gpu, scratch, buf.ptr(), GUARD as u64, GUARD_BYTE)?;
        guard_bytes_changed += support.count_not(
            gpu,
            scratch,
            buf.ptr() + (GUARD + bytes) as u64,
            (buf.bytes() - GUARD - bytes) as u64,
            GUARD_BYTE,
        )?;
    }
    let mut input_bytes_changed = 0;
    for (name, copy) in snapshot {
        let (buf, bytes, ..) = &set.tensors[name];
        let g = GUARD as u64;
        input_bytes_changed +=
            support.count_diff(gpu, scratch, buf.ptr() + g, copy.ptr() + g, *bytes as u64)?;
    }
    let passed =
        outputs.iter().all(|o| o.passed) && guard_bytes_changed == 0 && input_bytes_changed == 0;
    Ok(Trial {
        seed,
        outputs,
        guard_bytes_changed,
        input_bytes_changed,
        passed,
        counted: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comparison(elements: u64) -> Comparison {
        Comparison {
            elements,
            non_zero: elements,
            reference_non_zero: elements,
            max_abs_error: 1e-3,
            relative_l2: 1e-3,
            ..Comparison::default()
        }
    }

    const ALLCLOSE: Tolerance = Tolerance::Allclose {
        rtol: 1e-2,
        atol: 1e-2,
    };

    #[test]
    fn issue_45_allclose_with_a_norm_bound_needs_both() {
        let both = Tolerance::AllcloseRelnorm {
            rtol: 0.02,
            atol: 0.02,
            max: 0.008,
        };
        // An e4m3 P V product: every element inside the elementwise rule, the norm 2.4x over.
        let downgraded = Comparison {
            relative_l2: 0.019,
            ..comparison(100)
        };
        let c = judge_comparison("O", &both, downgraded);
        assert!(!c.passed);
        let why = c.failure.unwrap_or_default();
        assert!(
            why.contains("relative L2 error 1.900e-2 exceeds 0.008"),
            "{why}"
        );
        assert_eq!(
            c.tolerance,
            "allclose rtol 0.02 atol 0.02, relnorm max 0.008"
        );
        // An honest bf16 kernel passes; one element outside the elementwise rule fails.
        assert!(judge_comparison("O", &both, comparison(100)).passed);
        let outlier = Comparison {
            violations: 1,
            ..comparison(100)
        };
        let c = judge_comparison("O", &both, outlier);
        assert!(
            c.failure
                .unwrap_or_default()
                .contains("1 of 100 values outside")
        );
    }

    #[test]
    fn a_close_output_passes() {
        let c = judge_comparison("C", &ALLCLOSE, comparison(100));
        assert!(c.passed, "{:?}", c.failure);
        assert_eq!(c.tolerance, "allclose rtol 0.01 atol 0.01");
    }

    #[test]
    fn unwritten_values_fail_before_the_tolerance_is_looked_at() {
        let mut c = comparison(100);
        c.non_finite = 3;
        let o = judge_comparison("C", &Tolerance::Relnorm { max: 1.0 }, c);
        assert!(!o.passed);
        assert!(
            o.failure
                .expect("failure")
                .contains("3 of 100 values are NaN")
        );
    }

    #[test]
    fn an_all_zero_output_fails_unless_the_reference_is_zero() {
        let mut c = comparison(100);
        c.non_zero = 0;
        assert!(!judge_comparison("C", &ALLCLOSE, c.clone()).passed);
        c.reference_non_zero = 0;
        assert!(judge_comparison("C", &ALLCLOSE, c).passed);
    }

    #[test]
    fn tolerances_judge_their_own_metric() {
        let mut c = comparison(100);
        c.violations = 1;
        c.first_violation = Some(42);
        let o = judge_comparison("C", &ALLCLOSE, c.clone());
        assert!(o.failure.expect("failure").contains("first at index 42"));
        // A norm tolerance ignores elementwise violations but not the norm.
        assert!(judge_comparison("C", &Tolerance::Relnorm { max: 5e-3 }, c.clone()).passed);
        c.relative_l2 = 6e-3;
        assert!(!judge_comparison("C", &Tolerance::Relnorm { max: 5e-3 }, c.clone()).passed);
        c.relative_l2 = f64::NAN;
        assert!(!judge_comparison("C", &Tolerance::Relnorm { max: 5e-3 }, c).passed);
    }

    #[test]
    fn a_fraction_tolerance_allows_its_share_of_violations_and_no_more() {
        let tol = Tolerance::AllcloseFraction {
            rtol: 0.125,
            atol: 0.01,
            min_match: 0.995,
        };
        let mut c = comparison(10_000);
        c.violations = 50;
        assert!(judge_comparison("O", &tol, c.clone()).passed);
        c.violations = 51;
        let o = judge_comparison("O", &tol, c.clone());
        assert!(!o.passed);
        assert!(o.failure.expect("failure").contains("51 of 10000"));
        // Non-finite values fail however few.
        c.violations = 0;
        c.non_finite = 1;
        assert!(!judge_comparison("O", &tol, c).passed);
    }

    #[test]
    fn a_failed_trial_says_every_reason() {
        let t = Trial {
            seed: 1,
            outputs: vec![judge_comparison(
                "C",
                &ALLCLOSE,
                Comparison {
                    non_finite: 1,
                    ..comparison(4)
                },
            )],
            guard_bytes_changed: 8,
            input_bytes_changed: 2,
            passed: false,
            counted: false,
        };
        let why = describe_failure(&t);
        assert!(
            why.contains("NaN")
                && why.contains("8 guard bytes")
                && why.contains("2 bytes of the inputs"),
            "{why}"
        );
    }
}
