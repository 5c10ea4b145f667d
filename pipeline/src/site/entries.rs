//! Who a leaderboard row is: the kinds of entry and what the site knows of each.

use std::collections::{BTreeMap, BTreeSet};

use crate::metrics::Provenance;

/// What a leaderboard row is: a model, a variant of one that a paper studied (an ablation), a
/// kernel that is not a model's (a reference), or one of the engine's own simple kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EntryKind {
    /// Written by a model: reported data, records made by `generate` (they name their model),
    /// or a name the manifest lists under `models`.
    Model,
    /// A model the manifest marks `ablation_of` another: a study of one model's settings, not
    /// a model of its own; shown apart from the models, never ranked among them.
    Ablation,
    /// Hand-written or compiler-made kernels: ceilings and floors for the models, never ranked
    /// among them.
    Reference,
    /// The engine's simple correct kernels (entries named `simt-*`, no target instructions):
    /// they show a plain kernel is graded correct and not on target; listed with the harness
    /// tests, never in a leaderboard or a plot.
    EngineCheck,
}

impl EntryKind {
    /// The word the downloads use.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::Model => "model",
            EntryKind::Ablation => "ablation",
            EntryKind::Reference => "reference",
            EntryKind::EngineCheck => "engine-check",
        }
    }
}

/// The work of one entry on one architecture that is not evaluated yet: `generate --no-eval`
/// kept some of its answers checked, never run. Until every answer is evaluated, none of the
/// pair's records is a rate: the graded ones alone (answers that failed the static check) would
/// read as the model's result, with pending answers counted nowhere and turn limits that never
/// ran shown as if they had.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pending {
    /// Answers checked and kept, never run (stage `not-evaluated`).
    pub unevaluated: usize,
    /// Answers of the same entry and arch that got a verdict (the static check failed them),
    /// held back with the rest.
    pub graded: usize,
    /// The tasks of those answers.
    pub tasks: BTreeSet<String>,
}

/// A submission on the leaderboard: a model of the reported data or an entry of the records.
#[derive(Debug, Clone)]
pub struct EntryInfo {
    pub kind: EntryKind,
    pub name: String,
    pub slug: String,
    pub display_name: String,
    pub organisation: Option<String>,
    pub release_date: Option<String>,
    pub provenances: BTreeSet<Provenance>,
    /// GPUs seen, per (provenance, arch).
    pub gpus: BTreeMap<(Provenance, String), BTreeSet<String>>,
    /// Its work that is not evaluated yet, by arch ([`Pending`]); such work is in no rate.
    pub pending: BTreeMap<String, Pending>,
}
