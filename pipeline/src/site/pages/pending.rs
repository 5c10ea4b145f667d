//! Work that is not evaluated yet ([`Pending`](crate::site::context::Pending)): the table the
//! overview, the arch pages and an entry's page show instead of rates, and the one sentence
//! that says how to evaluate it.

use super::Link;
use crate::site::context::Context;
use crate::site::paths;

/// How the pages say what a pending row is and how to finish it.
pub const PENDING_STATEMENT: &str = "Answers that ptxbench generate --no-eval checked and kept but never ran. Until every answer of an entry on an architecture is evaluated, none of its records is a rate: those that failed the static check alone would read as the model's result. The same ptxbench generate command without --no-eval, on a GPU machine with the generation's folder and store, evaluates the kept answers in their trajectories (no new request) and goes on with the repair turns.";

/// The pending table of a page: its element id and its rows (never empty).
#[derive(Debug, Clone)]
pub struct PendingView {
    pub id: String,
    pub statement: &'static str,
    pub rows: Vec<PendingRow>,
}

impl PendingView {
    /// The table of [`rows`], or `None` when there is nothing pending.
    pub fn of(
        ctx: &Context<'_>,
        arch: Option<&str>,
        entry: Option<&str>,
        from: &str,
        id: &str,
    ) -> Option<PendingView> {
        let rows = rows(ctx, arch, entry, from);
        (!rows.is_empty()).then(|| PendingView {
            id: id.to_string(),
            statement: PENDING_STATEMENT,
            rows,
        })
    }
}

/// One (entry, arch) pair with work not evaluated yet.
#[derive(Debug, Clone)]
pub struct PendingRow {
    pub entry: Link,
    pub arch: String,
    pub tasks: String,
    /// Answers kept, never run.
    pub unevaluated: String,
    /// Answers that failed the static check, held back with the rest.
    pub graded: String,
}

/// The pending pairs on `arch` (every arch when `None`) of `entry` (every entry when
/// `None`), in entry then arch order, linked from page `from`.
pub fn rows(
    ctx: &Context<'_>,
    arch: Option<&str>,
    entry: Option<&str>,
    from: &str,
) -> Vec<PendingRow> {
    let mut out = Vec::new();
    for e in ctx.entries.values() {
        if entry.is_some_and(|n| n != e.name) {
            continue;
        }
        for (a, p) in &e.pending {
            if arch.is_some_and(|x| x != a) {
                continue;
            }
            out.push(PendingRow {
                entry: Link {
                    text: e.display_name.clone(),
                    href: paths::link(from, &paths::entry(&e.slug)),
                },
                arch: a.clone(),
                tasks: p.tasks.iter().cloned().collect::<Vec<_>>().join(", "),
                unevaluated: p.unevaluated.to_string(),
                graded: p.graded.to_string(),
            });
        }
    }
    out
}
