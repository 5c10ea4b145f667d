//! SASS inventory of a cubin: `nvdisasm -c` run on it, read into per-function opcode counts.
//!
//! Guarantees: [`parse_listing`] is a pure function of the listing text and never panics; a
//! missing disassembler is its own error ([`SassError::NoDisassembler`]), never an empty
//! inventory, so "SASS absent" is only ever said about code that was actually disassembled.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::arch::Arch;
use crate::sandbox::Limits;
use crate::task::{Target, TargetFamily, Task};
use crate::toolchain::{self, Tool, ToolError};

/// How long nvdisasm may take on one cubin.
pub const TIME_LIMIT: Duration = Duration::from_secs(120);

/// Why a cubin could not be inventoried.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SassError {
    /// No nvdisasm in the tool search order: the static SASS check cannot be made here.
    #[error("no SASS disassembler: {0}")]
    NoDisassembler(ToolError),
    /// nvdisasm was found but could not be run or did not finish.
    #[error("running nvdisasm: {0}")]
    Run(ToolError),
    /// nvdisasm ran and refused the cubin.
    #[error("nvdisasm failed on the cubin ({status}): {stderr}")]
    Failed { status: String, stderr: String },
    /// Writing the cubin where nvdisasm can read it failed.
    #[error("writing the cubin to a temporary file: {0}")]
    Io(String),
    /// The listing named no function with code.
    #[error("nvdisasm printed no function with instructions")]
    NoCode,
}

impl SassError {
    /// Whether the error means "no tool here" rather than "the tool failed on this input".
    pub fn is_tool_missing(&self) -> bool {
        matches!(self, SassError::NoDisassembler(_))
    }
}

/// Static opcode counts of one function of a cubin.
///
/// `opcodes` is keyed by the full mnemonic as printed (`HGMMA.64x64x16.F32.BF16`), `bases` by
/// the mnemonic up to its first dot (`HGMMA`); both count each instruction once.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SassFunction {
    pub name: String,
    pub instructions: u64,
    pub opcodes: BTreeMap<String, u64>,
    pub bases: BTreeMap<String, u64>,
}

/// The SASS of a whole cubin, functions in listing order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SassInventory {
    /// The disassembler's version line, e.g. `Cuda compilation tools, release 13.0, V13.0.88`.
    pub disassembler: String,
    pub functions: Vec<SassFunction>,
}

impl SassInventory {
    /// Base-mnemonic counts summed over all functions.
    pub fn bases(&self) -> BTreeMap<String, u64> {
        sum_maps(self.functions.iter().map(|f| &f.bases))
    }

    /// Full-mnemonic counts summed over all functions.
    pub fn opcodes(&self) -> BTreeMap<String, u64> {
        sum_maps(self.functions.iter().map(|f| &f.opcodes))
    }

    /// Static instructions proving `family`, and the full mnemonics that matched.
    pub fn family_count(&self, family: &TargetFamily) -> (u64, Vec<String>) {
        matching(&self.opcodes(), family)
    }
}

fn sum_maps<'a>(maps: impl Iterator<Item = &'a BTreeMap<String, u64>>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for m in maps {
        for (k, n) in m {
            *out.entry(k.clone()).or_insert(0) += n;
        }
    }
    out
}

/// Sums the counts of the full mnemonics in `counts` that prove `family`.
pub fn matching(counts: &BTreeMap<String, u64>, family: &TargetFamily) -> (u64, Vec<String>) {
    let mut total = 0u64;
    let mut names = Vec::new();
    for (op, n) in counts {
        if proves(family, op) {
            total = total.saturating_add(*n);
            names.push(op.clone());
        }
    }
    (total, names)
}

/// Whether a SASS mnemonic proves `family`: a pattern matches its base (`*GMMA*` ~ `HGMMA`,
/// `UTC*` ~ `UTCHMMA`) or, for patterns written with modifiers, the full mnemonic.
pub fn proves(family: &TargetFamily, mnemonic: &str) -> bool {
    family.matches(base_mnemonic(mnemonic)) || family.matches(mnemonic)
}

/// The mnemonic up to its first dot: `HGMMA.64x128x16.F32.BF16` -> `HGMMA`.
pub fn base_mnemonic(mnemonic: &str) -> &str {
    mnemonic.split('.').next().unwrap_or(mnemonic)
}

/// The mnemonic of one SASS instruction text (`@!P0 BRA ...;`, `HGMMA.64x64x16.F32.BF16 R24,
/// ...`, `ERRBAR;`), with the guard predicate, braces and `;` removed; `None` for an empty text.
pub fn instruction_mnemonic(text: &str) -> Option<&str> {
    let mut words = text
        .split(|c: char| c.is_whitespace() || c == '{' || c == '}')
        .filter(|w| !w.is_empty());
    let mut first = words.next()?;
    if first.starts_with('@') {
        first = words.next()?;
    }
    let op = first.trim_end_matches(';');
    (!op.is_empty()).then_some(op)
}

/// Reads an `nvdisasm -c` listing: functions start at `.section .text.NAME`, instructions are
/// the lines that begin with an `/*ADDR*/` comment.
pub fn parse_listing(text: &str) -> Vec<SassFunction> {
    let mut out: Vec<SassFunction> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix(".section") {
            let name = rest.trim().split(',').next().unwrap_or("").trim();
            if let Some(f) = name.strip_prefix(".text.") {
                out.push(SassFunction {
                    name: f.to_string(),
                    ..SassFunction::default()
                });
            }
            continue;
        }
        let Some(body) = t.strip_prefix("/*") else {
            continue;
        };
        let Some((addr, insn)) = body.split_once("*/") else {
            continue;
        };
        if addr.is_empty() || !addr.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        // The listing may end an instruction with its encoding in a trailing comment.
        let insn = insn.split("/*").next().unwrap_or("");
        let Some(op) = instruction_mnemonic(insn) else {
            continue;
        };
        if out.is_empty() {
            out.push(SassFunction {
                name: "(unnamed)".into(),
                ..SassFunction::default()
            });
        }
        let f = out.last_mut().expect("a function was pushed above");
        f.instructions += 1;
        *f.opcodes.entry(op.to_string()).or_insert(0) += 1;
        *f.bases.entry(base_mnemonic(op).to_string()).or_insert(0) += 1;
    }
    out.retain(|f| f.instructions > 0);
    out
}

/// Disassembles `cubin` with the nvdisasm found in the tool search order.
pub fn disassemble(cubin: &[u8]) -> Result<SassInventory, SassError> {
    let path = toolchain::locate(Tool::Nvdisasm).map_err(SassError::NoDisassembler)?;
    disassemble_with(&path, cubin)
}

/// Disassembles `cubin` with the nvdisasm at `path`.
pub fn disassemble_with(path: &Path, cubin: &[u8]) -> Result<SassInventory, SassError> {
    let io = |e: std::io::Error| SassError::Io(e.to_string());
    let dir = crate::scratch::ScratchDir::new().map_err(io)?;
    let file = dir.path().join("kernel.cubin");
    std::fs::write(&file, cubin).map_err(io)?;
    let limits = Limits {
        wall: TIME_LIMIT,
        memory: 8 << 30,
    };
    let out = toolchain::run(
        path,
        &[OsStr::new("-c"), file.as_os_str()],
        limits,
        Some(dir.path()),
    )
    .map_err(SassError::Run)?;
    if !out.status.success() {
        let stderr = out
            .stderr
            .replace(&file.display().to_string(), "kernel.cubin")
            .trim()
            .to_string();
        return Err(SassError::Failed {
            status: out.status.to_string(),
            stderr,
        });
    }
    let functions = parse_listing(&String::from_utf8_lossy(&out.stdout));
    if functions.is_empty() {
        return Err(SassError::NoCode);
    }
    Ok(SassInventory {
        disassembler: toolchain::version(path).map_err(SassError::Run)?,
        functions,
    })
}

/// One required family's static count in one cubin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FamilySass {
    pub family: String,
    pub sass_patterns: Vec<String>,
    pub count: u64,
    /// The full mnemonics that matched, sorted.
    pub opcodes: Vec<String>,
}

/// The SASS part of `ptxbench check` for one compiled architecture.
#[derive(Debug, Clone, Serialize)]
pub struct SassSummary {
    pub arch: Arch,
    /// The inventory's facts, or why there is none.
    pub result: Result<SassFacts, String>,
}

/// What the static SASS check found in one cubin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SassFacts {
    pub disassembler: String,
    pub functions: Vec<String>,
    pub instructions: u64,
    /// Base-mnemonic counts over the whole cubin.
    pub bases: BTreeMap<String, u64>,
    /// The task's required families on this arch (empty when the task has no target for it).
    pub required: Vec<FamilySass>,
}

/// Counts `target`'s families in `inv`.
pub fn required_families(inv: &SassInventory, target: Option<&Target>) -> Vec<FamilySass> {
    let opcodes = inv.opcodes();
    target
        .map(|t| {
            t.required
                .iter()
                .map(|f| {
                    let (count, opcodes) = matching(&opcodes, f);
                    FamilySass {
                        family: f.family.clone(),
                        sass_patterns: f.sass.clone(),
                        count,
                        opcodes,
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The facts of an inventory against `task`'s target for `arch`.
pub fn facts(inv: &SassInventory, task: &Task, arch: Arch) -> SassFacts {
    SassFacts {
        disassembler: inv.disassembler.clone(),
        functions: inv.functions.iter().map(|f| f.name.clone()).collect(),
        instructions: inv.functions.iter().map(|f| f.instructions).sum(),
        bases: inv.bases(),
        required: required_families(inv, task.target(arch)),
    }
}

/// Terminal lines for one summary: the required families' static counts, then the instruction
/// total.
pub fn render_summary(s: &SassSummary) -> Vec<String> {
    match &s.result {
        Err(e) => vec![format!("sass {}: not inspected ({e})", s.arch)],
        Ok(f) => {
            let mut out = vec![format!(
                "sass {} ({}): {} instructions in {}",
                s.arch,
                f.disassembler,
                f.instructions,
                f.functions.join(", ")
            )];
            for q in &f.required {
                out.push(if q.count > 0 {
                    format!(
                        "  required {}: {} in SASS ({})",
                        q.family,
                        q.count,
                        q.opcodes.join(", ")
                    )
                } else {
                    format!(
                        "  required {}: SASS ABSENT (no {})",
                        q.family,
                        q.sass_patterns.join(" / ")
                    )
                });
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = "\t.target\tsm_90a\n\
//--------------------- .text.k    --------------------------\n\
\t.section\t.text.k,\"ax\",@progbits\n\
k:\n\
.text.k:\n\
        /*0000*/                   LDC R1, c[0x0][0x28] ;\n\
        /*0040*/               @P0 BRA `(.L_x_1) ;\n\
.L_x_1:\n\
        /*0160*/                   ERRBAR;\n\
        /*0570*/                   HGMMA.64x64x16.F32.BF16 R24, gdesc[UR8], R24, UP0, gsb0 ;\n\
        /*05c0*/                   HGMMA.64x64x16.F32.BF16 R24, gdesc[UR8], R24, gsb0 ;\n\
        /*0d90*/                   UTMALDG.2D [UR4], [UR8] ;   /* 0x0000000804007fb4 */\n\
\t.section\t.text.f,\"ax\",@progbits\n\
        /*0000*/              @!UP0 UTCHMMA gdesc[UR4], gdesc[UR6], tmem[UR10], tmem[UR8], idesc[UR9], !UPT ;\n\
        /*0010*/                   { LDTM.x8 R4, tmem[UR5] ; }\n";

    fn fam(name: &str, pats: &[&str]) -> TargetFamily {
        TargetFamily {
            family: name.into(),
            sass: pats.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn reads_functions_and_mnemonics() {
        let fs = parse_listing(LISTING);
        assert_eq!(fs.len(), 2);
        assert_eq!(fs[0].name, "k");
        assert_eq!(fs[0].instructions, 6);
        assert_eq!(fs[0].opcodes.get("HGMMA.64x64x16.F32.BF16"), Some(&2));
        assert_eq!(fs[0].bases.get("HGMMA"), Some(&2));
        assert_eq!(fs[0].bases.get("ERRBAR"), Some(&1));
        assert_eq!(fs[0].bases.get("BRA"), Some(&1));
        assert_eq!(fs[0].bases.get("UTMALDG"), Some(&1));
        assert_eq!(fs[1].name, "f");
        assert_eq!(fs[1].bases.get("UTCHMMA"), Some(&1));
        assert_eq!(fs[1].opcodes.get("LDTM.x8"), Some(&1));
    }

    #[test]
    fn families_match_on_the_base_mnemonic() {
        let inv = SassInventory {
            disassembler: "test".into(),
            functions: parse_listing(LISTING),
        };
        let (n, ops) = inv.family_count(&fam("wgmma", &["*GMMA*"]));
        assert_eq!((n, ops), (2, vec!["HGMMA.64x64x16.F32.BF16".to_string()]));
        let tma = fam("tma", &["UTMALDG", "UTMASTG", "UTMAREDG"]);
        assert_eq!(inv.family_count(&tma).0, 1);
        let tc = fam("tcgen05", &["UTC*", "LDTM", "STTM"]);
        assert_eq!(inv.family_count(&tc).0, 2);
        assert_eq!(inv.family_count(&fam("x", &["HMMA"])).0, 0);
        // A pattern with modifiers is matched against the full mnemonic.
        assert_eq!(inv.family_count(&fam("x", &["LDTM.x8"])).0, 1);
    }

    #[test]
    fn odd_lines_are_ignored() {
        assert!(parse_listing("").is_empty());
        assert!(parse_listing("/*zz*/ FOO ;\n/**/ BAR;\n/*0010*/ \n").is_empty());
        assert_eq!(instruction_mnemonic("@!P0 BRA `(.L_x_2) ;"), Some("BRA"));
        assert_eq!(instruction_mnemonic("  ;  "), None);
        assert_eq!(instruction_mnemonic("@P0"), None);
    }
}
