//! Nsight Compute as the dynamic method (the paper's): the command line that profiles one kernel
//! launch with per-SASS-instruction executed counts, and a reader for the CSV of its source page.
//!
//! What it proves: the `inst_executed` of a SASS instruction counts the warps that issued it in
//! the profiled launch, so a count > 0 on an `HGMMA` row means the cubin's `HGMMA` really ran.
//! What it cannot: it sees only the launches it was told to profile (`--launch-skip`,
//! `--launch-count`), and counts the *issue* of predicated instructions even when the predicate
//! was false for every thread (`thread_inst_executed_true` is kept beside it for that).
//!
//! The reader is lenient about what surrounds the table (ncu's `==PROF==` lines, the profiled
//! program's own output, a banner row naming the kernel) and strict about the table itself:
//! a header with `Source` and an executed-count column, then rows of the same width.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::sass::{base_mnemonic, instruction_mnemonic};
use super::status::{DynamicMethod, ExecutedCounts};

/// Which launch of which kernel to profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NcuProfile {
    /// `--kernel-name regex:...` (see [`kernel_regex`]).
    pub kernel_regex: String,
    pub launch_skip: u64,
    pub launch_count: u64,
    /// `--target-processes all`: needed when the kernel runs in a child process, as
    /// `ptxbench eval` does (its worker).
    pub all_processes: bool,
}

/// The metrics the paper's check reads.
pub const METRICS: &str = "inst_executed,thread_inst_executed_true";

impl NcuProfile {
    /// Arguments to `ncu` (not including `ncu` itself) that profile `program` and print the
    /// SASS source page as CSV on stdout: the command line recorded in docs/gpu-machine.md, plus
    /// `--kernel-name-base mangled` (and `--target-processes all` when asked).
    pub fn csv_args(&self, program: &[String]) -> Vec<String> {
        let mut a = self.common_args();
        a.extend(
            ["--page", "source", "--print-source", "sass", "--csv"]
                .iter()
                .map(|s| s.to_string()),
        );
        a.extend(program.iter().cloned());
        a
    }

    /// Arguments that write a report file instead (`-o REPORT -f`), for [`import_args`].
    pub fn report_args(&self, report: &str, program: &[String]) -> Vec<String> {
        let mut a = self.common_args();
        a.extend(["-f", "-o", report].iter().map(|s| s.to_string()));
        a.extend(program.iter().cloned());
        a
    }

    fn common_args(&self) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        if self.all_processes {
            a.extend(["--target-processes".into(), "all".into()]);
        }
        a.extend([
            "--clock-control".into(),
            "none".into(),
            // Match the PTX entry name as written (a C++ kernel's is mangled).
            "--kernel-name-base".into(),
            "mangled".into(),
            "--kernel-name".into(),
            format!("regex:{}", self.kernel_regex),
            "--launch-skip".into(),
            self.launch_skip.to_string(),
            "--launch-count".into(),
            self.launch_count.to_string(),
            "--metrics".into(),
            METRICS.into(),
        ]);
        a
    }
}

/// Arguments that print a saved report's SASS source page as CSV.
pub fn import_args(report: &str) -> Vec<String> {
    [
        "--import",
        report,
        "--page",
        "source",
        "--print-source",
        "sass",
        "--csv",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// A regex matching exactly the given kernel names (`^(a|b)$`, a plain group every regex
/// flavour reads), each name escaped.
pub fn kernel_regex<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let alts: Vec<String> = names
        .into_iter()
        .map(|n| {
            n.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        c.to_string()
                    } else {
                        format!("\\{c}")
                    }
                })
                .collect()
        })
        .collect();
    format!("^({})$", alts.join("|"))
}

/// Why a CSV could not be read as ncu's SASS source page.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NcuCsvError {
    #[error(
        "no SASS source table (a header row with `Source` and `inst_executed` / `Instructions Executed`) in the CSV; was ncu run with --page source --print-source sass --csv --metrics {METRICS}?"
    )]
    NoTable,
    #[error("line {line}: cannot read `{value}` in column `{column}` as a count")]
    BadCount {
        line: usize,
        column: String,
        value: String,
    },
}

/// Executed counts of one profiled kernel launch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NcuKernel {
    /// The kernel the banner row named, if there was one.
    pub kernel: Option<String>,
    /// SASS instruction rows read.
    pub rows: u64,
    /// Warp-level executions (`inst_executed`) per full SASS mnemonic.
    pub executed: BTreeMap<String, u64>,
    /// Whether the table had a `thread_inst_executed_true` column.
    pub thread_column: bool,
    /// Thread-level executions with a true predicate, per full mnemonic, when the column exists.
    pub thread_executed: BTreeMap<String, u64>,
}

impl NcuKernel {
    /// Warp-level executions per base mnemonic.
    pub fn executed_bases(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for (op, n) in &self.executed {
            *out.entry(base_mnemonic(op).to_string()).or_insert(0) += n;
        }
        out
    }
}

/// Every table of one CSV, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NcuSourceReport {
    pub kernels: Vec<NcuKernel>,
}

impl NcuSourceReport {
    /// Whether [`Self::dynamic_counts`] counts threads with a true guard (every table had
    /// `thread_inst_executed_true`) rather than warps.
    pub fn counts_threads(&self) -> bool {
        !self.kernels.is_empty() && self.kernels.iter().all(|k| k.thread_column)
    }

    /// Counts per full mnemonic over all profiled launches, as dynamic evidence: threads that
    /// executed the instruction with a true guard where that column exists (a warp *issues* a
    /// predicated-off `@UP3 UTMALDG` too, so `inst_executed` alone can overstate), else warps.
    pub fn dynamic_counts(&self) -> ExecutedCounts {
        let threads = self.counts_threads();
        let mut counts = BTreeMap::new();
        for k in &self.kernels {
            let per_op = if threads {
                &k.thread_executed
            } else {
                &k.executed
            };
            for (op, n) in per_op {
                let e = counts.entry(op.clone()).or_insert(0u64);
                *e = e.saturating_add(*n);
            }
        }
        ExecutedCounts::SassOpcodes {
            method: DynamicMethod::Ncu,
            counts,
        }
    }
}

/// Splits one CSV line (RFC 4180 quoting: `"a,b"`, `""` inside quotes) with the `csv` crate.
/// ncu interleaves CSV tables of different widths with `==PROF==` lines, so it is read a line
/// at a time.
pub fn split_csv_line(line: &str) -> Vec<String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(line.as_bytes());
    match reader.records().next() {
        Some(Ok(r)) => r.iter().map(str::to_string).collect(),
        _ => vec![String::new()],
    }
}

fn is_warp_count(h: &str) -> bool {
    let h = h.trim().to_ascii_lowercase();
    h == "inst_executed" || h == "instructions executed" || h == "warp instructions executed"
}

fn is_thread_count(h: &str) -> bool {
    let h = h.trim().to_ascii_lowercase();
    h == "thread_inst_executed_true" || h == "predicated-on thread instructions executed"
}

/// A count as ncu prints it: `65536`, `65,536`, `6.5536e+04`; empty, `-` and `n/a` are 0.
pub fn parse_count(s: &str) -> Option<u64> {
    let t: String = s
        .chars()
        .filter(|c| *c != ',' && !c.is_whitespace())
        .collect();
    if t.is_empty() || t == "-" || t.eq_ignore_ascii_case("n/a") {
        return Some(0);
    }
    if let Ok(n) = t.parse::<u64>() {
        return Some(n);
    }
    let f: f64 = t.parse().ok()?;
    (f.is_finite() && f >= 0.0 && f < u64::MAX as f64).then(|| f.round() as u64)
}

struct Table {
    width: usize,
    source: usize,
    warp: usize,
    thread: Option<usize>,
    header: Vec<String>,
}

/// Reads the CSV of `ncu --page source --print-source sass --csv` (one table per profiled
/// launch).
pub fn parse_source_csv(text: &str) -> Result<NcuSourceReport, NcuCsvError> {
    let mut report = NcuSourceReport::default();
    let mut table: Option<Table> = None;
    let mut banner: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with("==") {
            continue;
        }
        let fields = split_csv_line(t);
        // A banner such as `"Kernel Name","gemm_tma",` (ncu 2025.3 ends it with a comma).
        if fields.len() >= 2
            && fields[0].to_ascii_lowercase().contains("name")
            && fields[2..].iter().all(|f| f.trim().is_empty())
        {
            banner = Some(fields[1].trim().to_string());
            table = None;
            continue;
        }
        if let Some(tab) = header_of(&fields) {
            report.kernels.push(NcuKernel {
                kernel: banner.take(),
                thread_column: tab.thread.is_some(),
                ..NcuKernel::default()
            });
            table = Some(tab);
            continue;
        }
        if let Some(tab) = &table
            && fields.len() == tab.width
        {
            let Some(op) = instruction_mnemonic(strip_address(&fields[tab.source])) else {
                continue;
            };
            let count = |col: usize| {
                parse_count(&fields[col]).ok_or_else(|| NcuCsvError::BadCount {
                    line: i + 1,
                    column: tab.header[col].clone(),
                    value: fields[col].clone(),
                })
            };
            let warp = count(tab.warp)?;
            let thread = tab.thread.map(count).transpose()?;
            let k = report
                .kernels
                .last_mut()
                .expect("a kernel is pushed with its table header");
            k.rows += 1;
            let e = k.executed.entry(op.to_string()).or_insert(0);
            *e = e.saturating_add(warp);
            if let Some(n) = thread {
                let e = k.thread_executed.entry(op.to_string()).or_insert(0);
                *e = e.saturating_add(n);
            }
        }
    }
    if report.kernels.is_empty() {
        return Err(NcuCsvError::NoTable);
    }
    Ok(report)
}

fn header_of(fields: &[String]) -> Option<Table> {
    let source = fields.iter().position(|f| f.trim() == "Source")?;
    let warp = fields.iter().position(|f| is_warp_count(f))?;
    Some(Table {
        width: fields.len(),
        source,
        warp,
        thread: fields.iter().position(|f| is_thread_count(f)),
        header: fields.to_vec(),
    })
}

/// Source cells may start with the instruction's `/*ADDR*/` like an nvdisasm listing.
fn strip_address(s: &str) -> &str {
    let t = s.trim();
    match t.strip_prefix("/*").and_then(|r| r.split_once("*/")) {
        Some((_, rest)) => rest,
        None => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> NcuProfile {
        NcuProfile {
            kernel_regex: kernel_regex(["gemm_tma"]),
            launch_skip: 1,
            launch_count: 1,
            all_processes: false,
        }
    }

    #[test]
    fn the_documented_command_line() {
        let args = profile().csv_args(&["./prog".to_string()]);
        assert_eq!(
            args.join(" "),
            "--clock-control none --kernel-name-base mangled --kernel-name regex:^(gemm_tma)$ --launch-skip 1 \
             --launch-count 1 --metrics inst_executed,thread_inst_executed_true --page source \
             --print-source sass --csv ./prog"
        );
        let p = NcuProfile {
            all_processes: true,
            ..profile()
        };
        let args = p.report_args("r", &["a".into()]);
        assert_eq!(&args[..2], &["--target-processes", "all"]);
        assert!(args.ends_with(&["-f".into(), "-o".into(), "r".into(), "a".into()]));
        assert_eq!(import_args("r.ncu-rep")[1], "r.ncu-rep");
    }

    #[test]
    fn regex_escapes_names() {
        assert_eq!(kernel_regex(["a$b", "c.d"]), "^(a\\$b|c\\.d)$");
    }

    #[test]
    fn csv_quoting() {
        assert_eq!(
            split_csv_line(r#""a,b","c""d",,e"#),
            vec!["a,b", "c\"d", "", "e"]
        );
    }

    #[test]
    fn counts_in_the_forms_ncu_prints() {
        assert_eq!(parse_count("65,536"), Some(65536));
        assert_eq!(parse_count("\"12\""), None);
        assert_eq!(parse_count("1.5e3"), Some(1500));
        assert_eq!(parse_count("n/a"), Some(0));
        assert_eq!(parse_count(""), Some(0));
        assert_eq!(parse_count("abc"), None);
    }

    #[test]
    fn reads_a_table_among_noise() {
        let csv = "==PROF== Connected to process 1\n\
some program output\n\
\"Kernel Name\",\"k\",\n\
\"Address\",\"Source\",\"inst_executed\",\"thread_inst_executed_true\"\n\
\"7f0000000000\",\"LDC R1, c[0x0][0x28]\",\"4\",\"128\"\n\
\"7f0000000010\",\"@P0 HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24, gsb0 ;\",\"1,024\",\"32,768\"\n\
\"7f0000000020\",\"HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24, gsb0 ;\",\"1,024\",\"0\"\n\
==PROF== Disconnected\n";
        let r = parse_source_csv(csv).expect("parses");
        assert_eq!(r.kernels.len(), 1);
        let k = &r.kernels[0];
        assert_eq!(k.kernel.as_deref(), Some("k"));
        assert_eq!(k.rows, 3);
        assert_eq!(k.executed.get("HGMMA.64x128x16.F32.BF16"), Some(&2048));
        assert_eq!(
            k.thread_executed.get("HGMMA.64x128x16.F32.BF16"),
            Some(&32768)
        );
        assert_eq!(k.executed_bases().get("LDC"), Some(&4));
        let ExecutedCounts::SassOpcodes { counts, .. } = r.dynamic_counts() else {
            panic!("per-opcode counts");
        };
        // Threads with a true guard, not warps, where the column exists.
        assert_eq!(counts.get("HGMMA.64x128x16.F32.BF16"), Some(&32768));
    }

    #[test]
    fn errors_are_typed() {
        assert_eq!(parse_source_csv("a,b\n1,2\n"), Err(NcuCsvError::NoTable));
        let bad = "\"Address\",\"Source\",\"Instructions Executed\"\n\"0\",\"NOP ;\",\"x\"\n";
        assert!(matches!(
            parse_source_csv(bad),
            Err(NcuCsvError::BadCount { line: 2, .. })
        ));
    }
}
