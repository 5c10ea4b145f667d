//! Small multiples: each plot of an arch page is drawn once per source (the paper's reported
//! data, the records measured here) and GPU, so no plot mixes GPUs or grades, and each holds at
//! most [`MAX_SERIES`] entries (the best by the leaderboard's order); the rest are named under
//! the plot and are in the tables above it. The paper's ablations and the engine's simple
//! kernels are in no plot.

use std::collections::BTreeSet;

use crate::metrics::{OverallMetrics, Provenance, TURN_LIMITS};
use crate::site::context::{Context, EntryKind};

/// The most series one plot draws: past about eight, colours stop being told apart.
pub const MAX_SERIES: usize = 8;

/// One source's plots on one arch and GPU.
#[derive(Debug, Clone)]
pub struct Panel {
    pub arch: String,
    pub source: Provenance,
    /// The GPU the panel's numbers were measured on (`H100`, `NVIDIA H200`), or empty where
    /// none was recorded.
    pub gpu: String,
    /// The entries drawn (at most [`MAX_SERIES`]).
    pub entries: BTreeSet<String>,
    /// The entries of this source left out for room, by display name, in rank order.
    pub left_out: Vec<String>,
}

impl Panel {
    /// Whether a row of `entry` from `source` on `gpu` is drawn in this panel.
    pub fn admits(&self, entry: &str, source: Provenance, gpu: &str) -> bool {
        source == self.source && gpu == self.gpu && self.entries.contains(entry)
    }

    /// A plot's file name stem: `sm_90a-fast-p-reported-h100`,
    /// `sm_90a-fast-p-measured-nvidia-h200` (`sm_90a-fast-p-measured` where no GPU was
    /// recorded).
    pub fn name(&self, plot: &str) -> String {
        if self.gpu.is_empty() {
            format!("{}-{plot}-{}", self.arch, self.source)
        } else {
            format!(
                "{}-{plot}-{}-{}",
                self.arch,
                self.source,
                crate::site::paths::slug(&self.gpu)
            )
        }
    }

    /// A plot's title, naming the source and the GPU.
    pub fn title(&self, what: &str) -> String {
        let gpu = if self.gpu.is_empty() {
            "GPU not recorded".to_string()
        } else {
            self.gpu.clone()
        };
        match self.source {
            Provenance::Reported => format!("{what} · reported by the paper, {gpu}"),
            Provenance::Measured => format!("{what} · measured here, {gpu}"),
        }
    }

    /// What the plot leaves out, in words (empty when nothing).
    pub fn note(&self) -> String {
        if self.left_out.is_empty() {
            return String::new();
        }
        format!(
            "Left out for room (at most {MAX_SERIES} series a plot; their rows are in the tables above): {}.",
            self.left_out.join(", ")
        )
    }
}

/// The panels of `arch`: reported, then measured, each per GPU in name order; a source and GPU
/// with nothing to draw has none. Models come first in leaderboard order (at turn limit 1, over
/// every task), then, in a measured panel, the reference kernels by geometric-mean speedup.
pub fn panels(ctx: &Context<'_>, arch: &str) -> Vec<Panel> {
    let first = TURN_LIMITS[0];
    let mut out = Vec::new();
    let sources = [Provenance::Reported, Provenance::Measured];
    for (source, gpu) in sources.into_iter().flat_map(|source| {
        ctx.metrics
            .overall
            .iter()
            .filter(|o| o.arch == arch && o.provenance == source)
            .map(|o| o.gpu.as_str())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .map(move |gpu| (source, gpu))
    }) {
        let rows = |kind: EntryKind| -> Vec<&OverallMetrics> {
            let mut rows: Vec<&OverallMetrics> = ctx
                .metrics
                .overall
                .iter()
                .filter(|o| o.arch == arch && o.provenance == source && o.turn_limit == first)
                .filter(|o| o.gpu == gpu)
                .filter(|o| ctx.entry(&o.entry).is_some_and(|e| e.kind == kind))
                .collect();
            rows.sort_by(|a, b| {
                let key = |o: &OverallMetrics| {
                    (
                        super::super::pages::leaderboard::primary(o)
                            .0
                            .unwrap_or(-1.0),
                        o.geomean_speedup.unwrap_or(-1.0),
                    )
                };
                let (ka, kb) = (key(a), key(b));
                kb.0.total_cmp(&ka.0)
                    .then(kb.1.total_cmp(&ka.1))
                    .then(a.entry.cmp(&b.entry))
            });
            rows
        };
        let mut ordered = rows(EntryKind::Model);
        if source == Provenance::Measured {
            let mut refs = rows(EntryKind::Reference);
            refs.sort_by(|a, b| {
                b.geomean_speedup
                    .unwrap_or(-1.0)
                    .total_cmp(&a.geomean_speedup.unwrap_or(-1.0))
                    .then(a.entry.cmp(&b.entry))
            });
            ordered.extend(refs);
        }
        if ordered.is_empty() {
            continue;
        }
        let name = |o: &&OverallMetrics| super::display_name(ctx, &o.entry).to_string();
        out.push(Panel {
            arch: arch.to_string(),
            source,
            gpu: gpu.to_string(),
            entries: ordered
                .iter()
                .take(MAX_SERIES)
                .map(|o| o.entry.clone())
                .collect(),
            left_out: ordered.iter().skip(MAX_SERIES).map(name).collect(),
        });
    }
    out
}
