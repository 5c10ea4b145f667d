//! A probe of each CTA's elapsed cycles, to measure what the counted copy's increments cost a
//! CTA (`ptxbench site-cost`). Every thread of an entry reads `%clock64` as its first
//! instruction and again at each `ret` or `exit` of the entry (under the same guard), and folds
//! both into its CTA's slot: the earliest start (`red.global.min.u64`) and the latest end
//! (`red.global.max.u64`). A CTA's cycles are its slot's end minus its start, on the clock of
//! the SM it ran on. A harness tool: never applied to a kernel that is graded.

use super::splice::header_end;

/// The arrays of the CTAs' earliest start and latest end, one slot per CTA (linear block index).
pub const START_SYMBOL: &str = "ptxbench_cta_start";
pub const END_SYMBOL: &str = "ptxbench_cta_end";
/// Slots in each array: CTAs with a larger linear index are not measured.
pub const SLOTS: usize = 1 << 16;

/// `ptx` with the probe in every entry.
pub fn probe(ptx: &str) -> Result<String, String> {
    let module = ptxbench_ptx::parse(ptx).map_err(|e| format!("the PTX does not parse: {e}"))?;
    let header = header_end(ptx).ok_or("no .target or .address_size line to declare after")?;
    let mut inserts: Vec<(usize, String)> = vec![(
        header,
        format!(
            "\n.visible .global .align 8 .u64 {START_SYMBOL}[{SLOTS}];\n.visible .global .align 8 .u64 {END_SYMBOL}[{SLOTS}];"
        ),
    )];
    let mut entries = 0;
    for f in module.entries() {
        let body = f
            .body
            .as_ref()
            .ok_or_else(|| format!("entry {} has no body span", f.name))?;
        inserts.push((
            body.start,
            "\n.reg .u64 %ptxbench_t<4>;\n.reg .u32 %ptxbench_i<5>;\n.reg .pred %ptxbench_q;\nmov.u64 %ptxbench_t0, %clock64;\n".into(),
        ));
        let mut exits = 0;
        for i in &f.instructions {
            let op = i.opcode.split('.').next().unwrap_or("");
            if op != "ret" && op != "exit" {
                continue;
            }
            let guard = i
                .predicate
                .as_ref()
                .map_or_else(String::new, |p| format!("@{p} "));
            inserts.push((i.start, at_exit(&guard)));
            exits += 1;
        }
        if exits == 0 {
            return Err(format!("entry {} has no ret or exit to probe", f.name));
        }
        entries += 1;
    }
    if entries == 0 {
        return Err("no entry to probe".into());
    }
    inserts.sort_by_key(|(at, _)| *at);
    let mut out = String::with_capacity(ptx.len() + inserts.len() * 512);
    let mut from = 0;
    for (at, text) in inserts {
        out.push_str(&ptx[from..at]);
        out.push_str(&text);
        from = at;
    }
    out.push_str(&ptx[from..]);
    Ok(out)
}

/// The probe's end, each instruction under `guard` (the exit's own, or none).
fn at_exit(guard: &str) -> String {
    let lines = [
        "mov.u64 %ptxbench_t1, %clock64;".to_string(),
        "mov.u32 %ptxbench_i0, %ctaid.x;".into(),
        "mov.u32 %ptxbench_i1, %ctaid.y;".into(),
        "mov.u32 %ptxbench_i2, %ctaid.z;".into(),
        "mov.u32 %ptxbench_i3, %nctaid.y;".into(),
        "mad.lo.u32 %ptxbench_i2, %ptxbench_i2, %ptxbench_i3, %ptxbench_i1;".into(),
        "mov.u32 %ptxbench_i3, %nctaid.x;".into(),
        "mad.lo.u32 %ptxbench_i0, %ptxbench_i2, %ptxbench_i3, %ptxbench_i0;".into(),
        format!("setp.lt.u32 %ptxbench_q, %ptxbench_i0, {SLOTS};"),
        "mul.wide.u32 %ptxbench_t2, %ptxbench_i0, 8;".into(),
        format!("mov.u64 %ptxbench_t3, {START_SYMBOL};"),
        "add.u64 %ptxbench_t3, %ptxbench_t3, %ptxbench_t2;".into(),
    ];
    let mut s = String::from("\n");
    for l in lines {
        s.push_str(&format!("{guard}{l}\n"));
    }
    // The slot's writes only where the CTA has one: the exit's guard and the slot bound both
    // hold (a guard of its own cannot combine predicates, so the bound is taken into `q`).
    if !guard.is_empty() {
        let p = guard.trim_start_matches('@').trim();
        let (negated, name) = p.strip_prefix('!').map_or((false, p), |n| (true, n));
        let not = if negated { "!" } else { "" };
        s.push_str(&format!(
            "and.pred %ptxbench_q, %ptxbench_q, {not}{name};\n"
        ));
    }
    s.push_str("@%ptxbench_q red.global.min.u64 [%ptxbench_t3], %ptxbench_t0;\n");
    s.push_str(&format!(
        "@%ptxbench_q mov.u64 %ptxbench_t3, {END_SYMBOL};\n@%ptxbench_q add.u64 %ptxbench_t3, %ptxbench_t3, %ptxbench_t2;\n@%ptxbench_q red.global.max.u64 [%ptxbench_t3], %ptxbench_t1;\n"
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = ".version 8.0\n.target sm_90a\n.address_size 64\n\n.visible .entry k(.param .u64 p)\n{\n  .reg .pred %p<2>;\n  .reg .u32 %r<2>;\n  mov.u32 %r1, %tid.x;\n  setp.eq.u32 %p1, %r1, 0;\n  @%p1 ret;\n  @!%p1 bra $L;\n$L:\n  ret;\n}\n";

    #[test]
    fn every_exit_of_every_entry_is_probed_under_its_guard() {
        let out = probe(KERNEL).expect("probes");
        let parsed = ptxbench_ptx::parse(&out).expect("the probed copy parses");
        assert_eq!(parsed.entries().count(), 1);
        assert!(out.contains(".visible .global .align 8 .u64 ptxbench_cta_start[65536];"));
        // The start at the body's top, once.
        assert_eq!(out.matches("mov.u64 %ptxbench_t0, %clock64;").count(), 1);
        // Two exits, each with its reads and its two writes.
        assert_eq!(out.matches("red.global.min.u64").count(), 2);
        assert_eq!(out.matches("red.global.max.u64").count(), 2);
        // The guarded exit's probe runs under its guard, and its writes under guard and bound.
        assert!(out.contains("@%p1 mov.u64 %ptxbench_t1, %clock64;"));
        assert!(out.contains("and.pred %ptxbench_q, %ptxbench_q, %p1;"));
        // The original instructions are all there, in order.
        let instructions: Vec<String> = ptxbench_ptx::parse(KERNEL)
            .expect("parses")
            .entries()
            .flat_map(|f| f.instructions.iter().map(|i| i.opcode.clone()))
            .collect();
        let probed: Vec<String> = parsed
            .entries()
            .flat_map(|f| f.instructions.iter().map(|i| i.opcode.clone()))
            .filter(|op| {
                !op.starts_with("red.")
                    && !op.starts_with("mad.")
                    && op != "mul.wide.u32"
                    && op != "and.pred"
                    && op != "add.u64"
                    && op != "setp.lt.u32"
            })
            .filter(|op| op != "mov.u64" && op != "mov.u32")
            .collect();
        let kept: Vec<String> = instructions
            .into_iter()
            .filter(|op| op != "mov.u32")
            .collect();
        assert_eq!(probed, kept);
    }

    #[test]
    fn an_entry_without_an_exit_is_refused() {
        let ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n  bar.sync 0;\n}\n";
        let why = probe(ptx).expect_err("refused");
        assert!(why.contains("no ret or exit"), "{why}");
    }
}
