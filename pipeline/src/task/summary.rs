//! A plain-text summary of a task for the terminal (`ptxbench tasks show`): every field a
//! person checks before trusting a result, one block per concept, ending in a newline.

use std::fmt::Write as _;

use super::model::{Task, TensorSpec};

/// The task as readable text: header, axes, tensors, semantics, judging, workloads, targets.
pub fn describe(task: &Task) -> String {
    let mut s = String::new();
    // Writing into a String cannot fail.
    let _ = write_summary(&mut s, task);
    s
}

fn write_summary(s: &mut String, t: &Task) -> std::fmt::Result {
    writeln!(s, "{}  ({})", t.id, t.family)?;
    writeln!(s, "{}", t.title)?;
    if !t.source.as_os_str().is_empty() {
        writeln!(s, "file: {}", t.source.display())?;
    }
    writeln!(s)?;
    for line in t.description.lines() {
        writeln!(s, "{}", format!("  {line}").trim_end())?;
    }
    writeln!(s, "\naxes:")?;
    for a in &t.axes {
        let kind = match a.value {
            Some(v) => format!("= {v}"),
            None => "var".to_string(),
        };
        writeln!(s, "  {:<8} {:<10} {}", a.name, kind, a.description)?;
    }
    let tensor = |s: &mut String, x: &TensorSpec, extra: String| {
        writeln!(
            s,
            "  {:<8} {:<5} [{}]{}",
            x.name,
            x.dtype,
            x.shape.join(", "),
            extra
        )
    };
    writeln!(s, "inputs (parameter order):")?;
    for x in &t.inputs {
        let extra = if t.op.derived_inputs().contains(&x.name.as_str()) {
            format!("  {}", t.op.derived_how())
        } else {
            match &x.distribution {
                Some(d) => format!("  drawn {d}"),
                None => String::new(),
            }
        };
        tensor(s, x, extra)?;
    }
    writeln!(s, "outputs:")?;
    for x in &t.outputs {
        let extra = match &x.tolerance {
            Some(tol) => format!("  {tol}"),
            None => String::new(),
        };
        tensor(s, x, extra)?;
    }
    writeln!(
        s,
        "\nop: {}",
        serde_json::to_string(&t.op).unwrap_or_default()
    )?;
    writeln!(s, "reference:")?;
    for line in t.reference.lines() {
        writeln!(s, "  {line}")?;
    }
    writeln!(s, "inputs drawn from: {}", t.distribution)?;
    writeln!(
        s,
        "baseline: {} ({})",
        t.baseline.library, t.baseline.operation
    )?;
    writeln!(s, "flops: {}    bytes: {}", t.flops, t.bytes)?;
    writeln!(s, "\nworkloads:")?;
    for w in &t.workloads {
        let axes: Vec<String> = w.axes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let rate = match (t.flops_of(w), t.bytes_of(w)) {
            (Ok(f), Ok(b)) => format!("{:.3} GFLOP, {:.1} MB", f / 1e9, b / 1e6),
            _ => String::new(),
        };
        let row = format!(
            "  {:<14} {:<11} {:<28} {:<28} {}",
            w.name,
            w.kind,
            axes.join(" "),
            rate,
            w.uuid.as_deref().unwrap_or("")
        );
        writeln!(s, "{}", row.trim_end())?;
    }
    writeln!(s, "\ntargets:")?;
    for target in &t.targets {
        let families: Vec<String> = target
            .required
            .iter()
            .map(|f| format!("{} ({})", f.family, f.sass.join(" | ")))
            .collect();
        writeln!(s, "  {}: {}", target.arch, families.join(", "))?;
        if !target.notes.is_empty() {
            writeln!(s, "    {}", target.notes)?;
        }
    }
    Ok(())
}
