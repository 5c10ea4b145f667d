//! Target evidence: for each required instruction family, what the SASS holds and what ran, and
//! the paper's status for it. Records carry [`TargetEvidence`] as it is (serde both ways).
//!
//! The rule the leaderboard counts ("correct with arch", [`correct_with_arch`]): the verdict is
//! correct AND every required family has status [`EvidenceStatus::DynamicPresent`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::sass::{self, SassInventory};
use crate::record::Verdict;
pub use crate::record::evidence::{DynamicMethod, EvidenceStatus, FamilyEvidence, TargetEvidence};
use crate::task::Target;

/// Executed counts from one dynamic method.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExecutedCounts {
    /// Per SASS mnemonic (full, as printed: `HGMMA.64x128x16.F32.BF16`); a family's count is
    /// the sum over the mnemonics its patterns match.
    SassOpcodes {
        method: DynamicMethod,
        counts: BTreeMap<String, u64>,
    },
    /// Per PTX family name (`wgmma`, `tma`, `tcgen05`): a family absent from the map was not
    /// measured.
    Families {
        method: DynamicMethod,
        counts: BTreeMap<String, u64>,
    },
}

impl ExecutedCounts {
    pub fn method(&self) -> DynamicMethod {
        match self {
            ExecutedCounts::SassOpcodes { method, .. }
            | ExecutedCounts::Families { method, .. } => *method,
        }
    }

    /// The executed count of `family`, `None` when this method did not measure it.
    fn count(&self, family: &crate::task::TargetFamily) -> Option<u64> {
        match self {
            ExecutedCounts::SassOpcodes { counts, .. } => Some(sass::matching(counts, family).0),
            ExecutedCounts::Families { counts, .. } => counts.get(&family.family).copied(),
        }
    }
}

/// What the static SASS inspection produced, as input to [`assess`].
#[derive(Debug, Clone)]
pub enum StaticSass {
    /// No code to inspect, with the reason (extraction or compilation failed).
    SourceMissing(String),
    /// The inspection could not be made, with the reason.
    InspectionFailed(String),
    Inventory(SassInventory),
}

/// The leaderboard's "correct with arch": a correct verdict and every required family executed.
pub fn correct_with_arch(verdict: Verdict, evidence: &TargetEvidence) -> bool {
    verdict == Verdict::Correct && evidence.all_dynamic_present()
}

/// Combines the static inventory and (optionally) dynamic counts into the target's evidence.
pub fn assess(
    target: &Target,
    sass: &StaticSass,
    dynamic: Option<&ExecutedCounts>,
) -> TargetEvidence {
    let mut notes = Vec::new();
    let mut disassembler = String::new();
    match sass {
        StaticSass::SourceMissing(why) => notes.push(format!("no code to inspect: {why}")),
        StaticSass::InspectionFailed(why) => notes.push(format!("SASS not inspected: {why}")),
        StaticSass::Inventory(inv) => disassembler = inv.disassembler.clone(),
    }
    if let Some(d) = dynamic {
        notes.push(match d.method() {
            DynamicMethod::Ncu => "dynamic: Nsight Compute per-SASS-instruction counts \
                 (threads with a true guard where thread_inst_executed_true was collected, \
                 else warp-level inst_executed)"
                .into(),
            DynamicMethod::SplicedCounters => "dynamic: counters spliced into a copy of the PTX \
                 (thread-level issue of the PTX instruction; SASS presence from the static \
                 inventory)"
                .into(),
        });
    }
    let families: Vec<FamilyEvidence> = target
        .required
        .iter()
        .map(|f| {
            let (status, static_count, static_opcodes, dynamic_count) = match sass {
                StaticSass::SourceMissing(_) => (EvidenceStatus::SourceMissing, 0, vec![], None),
                StaticSass::InspectionFailed(_) => {
                    (EvidenceStatus::InspectionFailed, 0, vec![], None)
                }
                StaticSass::Inventory(inv) => {
                    let (n, ops) = inv.family_count(f);
                    let dyn_n = dynamic.and_then(|d| d.count(f));
                    let status = match (n, dyn_n) {
                        (0, _) => EvidenceStatus::SassAbsent,
                        (_, None) => EvidenceStatus::StaticOnly,
                        (_, Some(0)) => EvidenceStatus::DynamicNotExecuted,
                        (_, Some(_)) => EvidenceStatus::DynamicPresent,
                    };
                    (status, n, ops, dyn_n)
                }
            };
            FamilyEvidence {
                family: f.family.clone(),
                sass_patterns: f.sass.clone(),
                status,
                static_count,
                static_opcodes,
                method: dynamic_count.and(dynamic.map(ExecutedCounts::method)),
                dynamic_count,
            }
        })
        .collect();
    TargetEvidence {
        arch: target.arch,
        status: families
            .iter()
            .map(|f| f.status)
            .min()
            .unwrap_or(EvidenceStatus::SourceMissing),
        families,
        disassembler,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Arch;
    use crate::evidence::sass::parse_listing;
    use crate::task::TargetFamily;

    fn target() -> Target {
        Target {
            arch: Arch::Sm90a,
            required: vec![
                TargetFamily {
                    family: "wgmma".into(),
                    sass: vec!["*GMMA*".into()],
                },
                TargetFamily {
                    family: "tma".into(),
                    sass: vec!["UTMALDG".into(), "UTMASTG".into(), "UTMAREDG".into()],
                },
            ],
            notes: String::new(),
        }
    }

    fn inventory() -> StaticSass {
        StaticSass::Inventory(SassInventory {
            disassembler: "nvdisasm test".into(),
            functions: parse_listing(
                ".section .text.k,\"ax\"\n/*0000*/ HGMMA.64x64x16.F32.BF16 R24, gdesc[UR8], R24, gsb0 ;\n/*0010*/ UTMALDG.2D [UR4], [UR8] ;\n",
            ),
        })
    }

    #[test]
    fn statuses_follow_the_evidence() {
        let t = target();
        let e = assess(&t, &inventory(), None);
        assert_eq!(e.status, EvidenceStatus::StaticOnly);
        assert_eq!(e.families[0].static_count, 1);
        assert!(!correct_with_arch(Verdict::Correct, &e));

        let mut counts = BTreeMap::new();
        counts.insert("HGMMA.64x64x16.F32.BF16".to_string(), 64);
        counts.insert("UTMALDG.2D".to_string(), 0);
        let d = ExecutedCounts::SassOpcodes {
            method: DynamicMethod::Ncu,
            counts,
        };
        let e = assess(&t, &inventory(), Some(&d));
        assert_eq!(e.families[0].status, EvidenceStatus::DynamicPresent);
        assert_eq!(e.families[0].dynamic_count, Some(64));
        assert_eq!(e.families[0].method, Some(DynamicMethod::Ncu));
        assert_eq!(e.families[1].status, EvidenceStatus::DynamicNotExecuted);
        assert_eq!(e.status, EvidenceStatus::DynamicNotExecuted);
        assert!(!correct_with_arch(Verdict::Correct, &e));

        let d = ExecutedCounts::Families {
            method: DynamicMethod::SplicedCounters,
            counts: [("wgmma".to_string(), 128), ("tma".to_string(), 2)].into(),
        };
        let e = assess(&t, &inventory(), Some(&d));
        assert_eq!(e.status, EvidenceStatus::DynamicPresent);
        assert!(correct_with_arch(Verdict::Correct, &e));
        assert!(!correct_with_arch(Verdict::Numerical, &e));

        let back: TargetEvidence =
            serde_json::from_str(&serde_json::to_string(&e).expect("serializes"))
                .expect("deserializes");
        assert_eq!(back, e);
    }

    #[test]
    fn missing_code_and_failed_inspection() {
        let t = target();
        let e = assess(&t, &StaticSass::SourceMissing("ptxas failed".into()), None);
        assert_eq!(e.status, EvidenceStatus::SourceMissing);
        let e = assess(
            &t,
            &StaticSass::InspectionFailed("no nvdisasm".into()),
            None,
        );
        assert_eq!(e.status, EvidenceStatus::InspectionFailed);
        assert_eq!(e.families[1].status, EvidenceStatus::InspectionFailed);
        let empty = StaticSass::Inventory(SassInventory::default());
        let d = ExecutedCounts::Families {
            method: DynamicMethod::SplicedCounters,
            counts: [("wgmma".to_string(), 9)].into(),
        };
        let e = assess(&t, &empty, Some(&d));
        // Executed PTX with no matching SASS is still "SASS absent": the SASS decides.
        assert_eq!(e.families[0].status, EvidenceStatus::SassAbsent);
    }
}
