//! The metric tables several pages share: the leaderboard (one row per entry, source, GPU and
//! turn limit, over all tasks) and the per-task table (one row per entry, task, source, GPU and
//! turn limit). Rows carry `data-*` keys for the page script's filters. An entry measured on
//! two GPUs has a row for each, and ranks are counted among the rows of one GPU.

use super::{Cell, Link, badge, format};
use crate::metrics::{FAST_P, OverallMetrics, PASS_K, Provenance, TaskMetrics};
use crate::site::context::{Context, EntryKind};
use crate::site::paths;

/// The turn limit the filters select when a page loads (single-shot: every source has it).
pub const DEFAULT_TURN: &str = "1";

#[derive(Debug, Clone)]
pub struct LeaderboardView {
    /// The table's element id (unique on its page).
    pub id: String,
    /// What the table holds (its `<caption>`).
    pub caption: String,
    pub rows: Vec<LeaderboardRow>,
    pub turn_default: &'static str,
    /// Whether the rows carry rank numbers (the arch leaderboards; not an entry's own rows).
    pub ranked: bool,
    /// Whether the table holds rows of more than one GPU (ranks then count per GPU, and the
    /// rank column's header says so).
    pub several_gpus: bool,
    /// Set where reported and measured rows of different GPUs share the table.
    pub gpu_note: String,
    /// Set where a row's tasks include one whose baseline is composed: its speedups are left
    /// out of the speedup columns, and the note says which tasks and why.
    pub composed_note: String,
    /// The primary column's header and its hover text: the rows' own grade.
    pub primary_header: &'static str,
    pub primary_title: &'static str,
    /// The hover text of the "Min over workloads" column: over which workloads, by source.
    pub min_title: &'static str,
}

/// The primary column of a table of measured rows.
const ON_TARGET_HEADER: (&str, &str) = (
    "Correct on target",
    "the primary metric: correct, target instructions executed, at least 90% of the FLOPs on the target MMA and at most 10% in other arithmetic (macro average over tasks)",
);
/// The primary column of a table of reported rows (the paper has no MMA share).
const WITH_ARCH_HEADER: (&str, &str) = (
    "Correct with arch (paper's grade)",
    "the paper's grade: correct and the target instructions shown to execute; no MMA share reported, so an upper bound of correct on target",
);
const MIN_MEASURED: &str = "best over tasks and trajectories of the smallest speedup over the task's performance workloads (2 to 5 here), with its 95% interval; links to that task";
const MIN_REPORTED: &str = "best over tasks and trajectories of the speedup at the paper's one headline workload per task (the paper reports no other); links to that task";

#[derive(Debug, Clone)]
pub struct LeaderboardRow {
    /// 1-based rank among the rows of its turn limit; empty where the table is not ranked.
    pub rank: String,
    pub entry: Link,
    pub provenance: &'static str,
    pub gpu: String,
    pub turn_limit: String,
    /// Lowercase text the name filter matches.
    pub text: String,
    /// The primary metric ([`PRIMARY_METRIC`]).
    pub primary: Cell,
    pub tasks: Cell,
    pub trajectories: Cell,
    pub correctness: Cell,
    pub correct_with_arch: Cell,
    pub mma_share: Cell,
    pub pass: Vec<Cell>,
    pub fast: Cell,
    pub geomean: Cell,
    pub best: Cell,
    pub min: Cell,
    pub peak: Cell,
}

/// The primary metric, as the pages state it.
pub const PRIMARY_METRIC: &str = "correct on target";

/// How the pages declare the primary metric.
pub const PRIMARY_STATEMENT: &str = "Models measured here are ranked by one primary metric, correct on target: per task, the share of trajectories that are correct, whose target instructions (e.g. wgmma, TMA) were shown to execute, and that ran at least 90% of the task's FLOPs on the target MMA instructions; averaged over the entry's tasks, at each turn limit. The paper's data has no MMA share, so its models are in a table of their own (its GPUs), ranked by the paper's own grade, correct with arch, which a token wgmma can pass: an upper bound of correct on target. Ties: correctness, then the geometric-mean speedup. Tables open at turn limit 1 (single-shot); the plots and the speedup matrix are at turn limit 8, the paper's largest.";

/// Marks a primary value that falls back to the paper's grade (reported data).
pub const FALLBACK_MARK: &str = "‡";

/// The primary metric of a row and whether it is the fallback: measured rows use the stricter
/// correct-on-target rate; reported rows (the paper's data has no MMA share) and measured
/// rows without the share use correct with arch, the paper's grade.
pub fn primary(o: &OverallMetrics) -> (Option<f64>, bool) {
    match o.correct_on_target_rate {
        Some(r) => (Some(r), false),
        None => (o.correct_with_arch_rate, o.correct_with_arch_rate.is_some()),
    }
}

/// Rate of a correct-with-arch value: measured data without evidence says "not measured".
fn cwa_cell(p: Provenance, rate: Option<f64>) -> Cell {
    match rate {
        Some(r) => Cell::percent(Some(r)),
        None if p == Provenance::Measured => Cell::not_measured(),
        None => Cell::percent(None),
    }
}

/// A share that reported data never has.
fn measured_only(p: Provenance, x: Option<f64>) -> Cell {
    match (p, x) {
        (Provenance::Reported, None) => Cell {
            text: "not reported".into(),
            ..Cell::default()
        },
        (Provenance::Measured, None) => Cell::not_measured(),
        _ => Cell::percent(x),
    }
}

fn peak_cell(p: Provenance, x: Option<f64>) -> Cell {
    match (p, x) {
        (Provenance::Reported, None) => Cell {
            text: "not reported".into(),
            ..Cell::default()
        },
        _ => Cell::percent(x),
    }
}

/// A speedup with its 95% interval, where there is one.
fn speedup_ci(x: Option<f64>, ci: Option<[f64; 2]>) -> Cell {
    let c = Cell::speedup(x);
    match (x, ci) {
        (Some(_), Some(ci)) => c.with_note(format::interval(ci)),
        _ => c,
    }
}

/// Index of p = 1.0 in [`FAST_P`].
fn fast_one() -> usize {
    FAST_P.iter().position(|p| *p == 1.0).unwrap_or(0)
}

/// Leaderboard order: by turn limit, then GPU (a rank never compares rows of two GPUs), then
/// [`by_metric`].
fn rank(a: &OverallMetrics, b: &OverallMetrics) -> std::cmp::Ordering {
    a.turn_limit
        .cmp(&b.turn_limit)
        .then(a.gpu.cmp(&b.gpu))
        .then(by_metric(a, b))
}

/// By the primary metric, then correctness, then the geometric-mean speedup, then name, source
/// and GPU (a total order, so pages are stable).
fn by_metric(a: &OverallMetrics, b: &OverallMetrics) -> std::cmp::Ordering {
    let speed = |o: &OverallMetrics| o.geomean_speedup.unwrap_or(-1.0);
    let first = |o: &OverallMetrics| primary(o).0.unwrap_or(-1.0);
    first(b)
        .total_cmp(&first(a))
        .then(b.correctness_rate.total_cmp(&a.correctness_rate))
        .then(speed(b).total_cmp(&speed(a)))
        .then(a.entry.cmp(&b.entry))
        .then(a.provenance.cmp(&b.provenance))
        .then(a.gpu.cmp(&b.gpu))
}

/// Which tasks a leaderboard's rows aggregate over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The paper's five core definitions ([`crate::metrics::core_set`]): rows compare.
    Core,
    /// Every task the entry attempted.
    Full,
}

impl Scope {
    fn rows<'m>(self, ctx: &'m Context<'_>) -> &'m [OverallMetrics] {
        match self {
            Scope::Core => &ctx.core_overall,
            Scope::Full => &ctx.metrics.overall,
        }
    }
}

/// The rows of `arch` whose entry is of `kind`, over the tasks of `scope`, in leaderboard
/// order ([`rank`]: per turn limit, each GPU's rows together).
pub fn ranked<'m>(
    ctx: &'m Context<'_>,
    arch: &str,
    kind: EntryKind,
    scope: Scope,
) -> Vec<&'m OverallMetrics> {
    let mut ranked: Vec<&OverallMetrics> = scope
        .rows(ctx)
        .iter()
        .filter(|o| o.arch == arch && ctx.entry(&o.entry).is_some_and(|e| e.kind == kind))
        .collect();
    ranked.sort_by(|a, b| rank(a, b));
    ranked
}

/// The GPUs of `rows`, sorted, without the empty name of rows that recorded none.
fn gpus_of(rows: &[&OverallMetrics]) -> std::collections::BTreeSet<String> {
    rows.iter()
        .filter(|o| !o.gpu.is_empty())
        .map(|o| o.gpu.clone())
        .collect()
}

/// The note a table needs where reported and measured rows come from different GPUs.
fn gpu_note(rows: &[&OverallMetrics]) -> String {
    let mut by_prov: std::collections::BTreeMap<Provenance, std::collections::BTreeSet<String>> =
        Default::default();
    for o in rows {
        if !o.gpu.is_empty() {
            by_prov
                .entry(o.provenance)
                .or_default()
                .insert(o.gpu.clone());
        }
    }
    let join = |p: Provenance| {
        by_prov
            .get(&p)
            .map(|s| s.iter().cloned().collect::<Vec<_>>().join(", "))
            .unwrap_or_default()
    };
    let (rep, mea) = (join(Provenance::Reported), join(Provenance::Measured));
    if rep.is_empty() || mea.is_empty() || rep == mea {
        return String::new();
    }
    format!(
        "GPUs differ in this table: reported rows were measured by the paper on {rep}, measured rows here on {mea}. Each speedup is against the library on its own GPU, so speedups compare across them; times and TFLOP/s do not."
    )
}

/// The note a table needs where its rows leave tasks with a composed baseline out of their
/// speedup columns: which tasks, and why.
fn composed_note(ctx: &Context<'_>, arch: &str, rows: &[&OverallMetrics]) -> String {
    if rows.iter().all(|o| o.composed_tasks == 0) {
        return String::new();
    }
    let entries: std::collections::BTreeSet<(&str, Provenance)> = rows
        .iter()
        .map(|o| (o.entry.as_str(), o.provenance))
        .collect();
    let tasks: std::collections::BTreeSet<&str> = ctx
        .metrics
        .tasks
        .iter()
        .filter(|t| {
            t.composed_baseline
                && t.arch == arch
                && entries.contains(&(t.entry.as_str(), t.provenance))
        })
        .map(|t| t.task.as_str())
        .collect();
    format!(
        "No library has {}: their baseline is composed of cuBLASLt products and harness kernels (see Methodology, Baselines), so their speedups are shown on their task rows and left out of this table's speedup columns (geomean, min over workloads, fast1.0, best workload). Tasks solved, the rates and the MMA share count them.",
        tasks.into_iter().collect::<Vec<_>>().join(", ")
    )
}

impl LeaderboardView {
    /// The leaderboard of the entries of `kind` on `arch` over the tasks of `scope`, as seen
    /// from page `from`.
    pub fn new(
        ctx: &Context<'_>,
        arch: &str,
        kind: EntryKind,
        scope: Scope,
        source: Option<Provenance>,
        from: &str,
        id: &str,
    ) -> LeaderboardView {
        let mut ranked = ranked(ctx, arch, kind, scope);
        ranked.retain(|o| source.is_none_or(|p| o.provenance == p));
        // A reference kernel has one attempt, so its rows at every turn limit are the same:
        // one row, under no turn limit.
        let one_attempt = kind == EntryKind::Reference;
        if one_attempt {
            ranked.retain(|o| o.turn_limit == crate::metrics::TURN_LIMITS[0]);
        }
        let core = ctx.core_tasks.len();
        let reported_only =
            !ranked.is_empty() && ranked.iter().all(|o| o.provenance == Provenance::Reported);
        // Ranks count within a turn limit and a GPU.
        let mut at_limit: std::collections::BTreeMap<(u32, &str), usize> = Default::default();
        let rows = ranked
            .iter()
            .map(|o| {
                let n = at_limit.entry((o.turn_limit, o.gpu.as_str())).or_default();
                *n += 1;
                let mut r = row(ctx, o, from);
                // The paper's ablations run over different task sets: listed, never ranked.
                if kind != EntryKind::Ablation {
                    r.rank = n.to_string();
                }
                if one_attempt {
                    r.turn_limit = String::new();
                }
                if reported_only {
                    // The column is the paper's grade itself: nothing to mark.
                    r.primary.text = r
                        .primary
                        .text
                        .replace(&format!("\u{a0}{FALLBACK_MARK}"), "");
                }
                if scope == Scope::Core && (o.tasks as usize) < core {
                    r.tasks = r.tasks.with_note(format!("{} of {core} core", o.tasks));
                }
                r
            })
            .collect();
        let reported = source == Some(Provenance::Reported) || reported_only;
        let (primary_header, primary_title) = if reported {
            WITH_ARCH_HEADER
        } else {
            ON_TARGET_HEADER
        };
        let metric = primary_header.to_lowercase();
        let on = source_words(&ranked, source);
        let caption = match (kind, scope) {
            (EntryKind::Model, Scope::Core) => format!(
                "Models on {arch}{on}, over the {core} core tasks, ranked by {metric} (per turn limit)"
            ),
            (EntryKind::Model, Scope::Full) => format!(
                "Models on {arch}{on}, over every task each attempted (full suite), ranked by {metric} (per turn limit); rows over different task sets do not compare"
            ),
            (EntryKind::Ablation, _) => format!(
                "The paper's ablations on {arch}{on} (variants of one model's settings, not models of their own): not ranked among the models"
            ),
            (EntryKind::Reference | EntryKind::EngineCheck, _) => format!(
                "Reference kernels on {arch}{on} (hand-written, compiler-made; one attempt each, so no turn limit) over every task each ran: not ranked among the models"
            ),
        };
        LeaderboardView {
            id: id.to_string(),
            caption,
            gpu_note: gpu_note(&ranked),
            several_gpus: several_gpus(&ranked),
            composed_note: composed_note(ctx, arch, &ranked),
            rows,
            turn_default: DEFAULT_TURN,
            ranked: true,
            primary_header,
            primary_title,
            min_title: if reported { MIN_REPORTED } else { MIN_MEASURED },
        }
    }

    /// One entry's rows on `arch` (its page).
    pub fn for_entry(
        ctx: &Context<'_>,
        entry: &str,
        arch: &str,
        from: &str,
        id: &str,
    ) -> LeaderboardView {
        let one_attempt = ctx
            .entry(entry)
            .is_some_and(|e| e.kind == EntryKind::Reference);
        let mine: Vec<&OverallMetrics> = ctx
            .metrics
            .overall
            .iter()
            .filter(|o| o.arch == arch && o.entry == entry)
            .filter(|o| !one_attempt || o.turn_limit == crate::metrics::TURN_LIMITS[0])
            .collect();
        let reported = mine.iter().all(|o| o.provenance == Provenance::Reported);
        let (primary_header, primary_title) = if reported {
            WITH_ARCH_HEADER
        } else {
            ON_TARGET_HEADER
        };
        LeaderboardView {
            id: id.to_string(),
            caption: format!("Over all its tasks on {arch}, per source, GPU and turn limit"),
            gpu_note: gpu_note(&mine),
            several_gpus: several_gpus(&mine),
            composed_note: composed_note(ctx, arch, &mine),
            rows: mine
                .iter()
                .map(|o| {
                    let mut r = row(ctx, o, from);
                    if one_attempt {
                        r.turn_limit = String::new();
                    }
                    r
                })
                .collect(),
            turn_default: "all",
            ranked: false,
            primary_header,
            primary_title,
            min_title: if reported { MIN_REPORTED } else { MIN_MEASURED },
        }
    }
}

/// The scope of the models' default table on `arch`: the core tasks, unless no model has a
/// result on one there.
pub fn default_scope(ctx: &Context<'_>, arch: &str) -> Scope {
    if ranked(ctx, arch, EntryKind::Model, Scope::Core).is_empty() {
        Scope::Full
    } else {
        Scope::Core
    }
}

/// The tables of an arch page and of the overview: the models' over the core tasks (see
/// [`default_scope`]), one per source (their grades and GPUs differ), then the paper's
/// ablations and the references' (each left out when empty).
pub fn tables(ctx: &Context<'_>, arch: &str, from: &str) -> Vec<LeaderboardView> {
    let scope = default_scope(ctx, arch);
    let tables = [
        (EntryKind::Model, scope, Some(Provenance::Measured), "lb"),
        (
            EntryKind::Model,
            scope,
            Some(Provenance::Reported),
            "lb-paper",
        ),
        (EntryKind::Ablation, Scope::Full, None, "ablation"),
        (EntryKind::Reference, Scope::Full, None, "ref"),
    ];
    tables
        .into_iter()
        .map(|(kind, scope, source, id)| {
            LeaderboardView::new(
                ctx,
                arch,
                kind,
                scope,
                source,
                from,
                &format!("{id}-{arch}"),
            )
        })
        .filter(|t| !t.rows.is_empty())
        .collect()
}

/// Whether `rows` come from more than one GPU.
fn several_gpus(rows: &[&OverallMetrics]) -> bool {
    rows.iter().any(|o| o.gpu != rows[0].gpu)
}

/// How a caption names a table's source and GPUs: ` as the paper reports them (H100)`; rows of
/// several GPUs: ` measured here (NVIDIA H100 80GB HBM3 and NVIDIA H200, ranked per GPU)`.
fn source_words(rows: &[&OverallMetrics], source: Option<Provenance>) -> String {
    let several = several_gpus(rows);
    let gpus = gpus_of(rows).into_iter().collect::<Vec<_>>();
    let gpus = if several && gpus.len() > 1 {
        let (last, first) = gpus.split_last().expect("more than one");
        format!("{} and {last}, ranked per GPU", first.join(", "))
    } else {
        gpus.join(", ")
    };
    let gpus = if gpus.is_empty() {
        String::new()
    } else {
        format!(" ({gpus})")
    };
    match source {
        Some(Provenance::Reported) => format!(", as the paper reports them{gpus}"),
        Some(Provenance::Measured) => format!(", measured here{gpus}"),
        None => gpus,
    }
}

/// The models' tables of `arch` over the full suite (the arch page's second view), one per
/// source like the core tables (their grades and GPUs differ); an empty one is left out.
pub fn full_suite_tables(ctx: &Context<'_>, arch: &str, from: &str) -> Vec<LeaderboardView> {
    [
        (Provenance::Measured, "lb-full"),
        (Provenance::Reported, "lb-full-paper"),
    ]
    .into_iter()
    .map(|(source, id)| {
        LeaderboardView::new(
            ctx,
            arch,
            EntryKind::Model,
            Scope::Full,
            Some(source),
            from,
            &format!("{id}-{arch}"),
        )
    })
    .filter(|t| !t.rows.is_empty())
    .collect()
}

/// The anchor of the full-suite models table on an arch page.
pub const FULL_SUITE_ANCHOR: &str = "full-suite";

/// How the pages name the core tasks and why they are the default view of `arch`.
pub fn core_statement(ctx: &Context<'_>, arch: &str) -> String {
    if default_scope(ctx, arch) == Scope::Full {
        return format!(
            "No model has a result on one of the paper's core definitions on {arch}, so the models' table is over every task each attempted."
        );
    }
    format!(
        "The models' table is over a common task set, the paper's {} core definitions present here ({}): every model of the paper was run on them, on both architectures, at its headline shapes, so the rows compare. A row over fewer of them says so under its task count.",
        ctx.core_tasks.len(),
        ctx.core_tasks.join(", ")
    )
}

/// The one-line leader statement of `arch`: the first model at turn limit
/// [`DEFAULT_TURN`] by the primary metric over the rows of every GPU, its source and the GPU
/// of its row; and the best measured model when the leader is reported. Empty when there is
/// no model.
pub fn leader_statement(ctx: &Context<'_>, arch: &str) -> String {
    let scope = default_scope(ctx, arch);
    let mut single: Vec<&OverallMetrics> = ranked(ctx, arch, EntryKind::Model, scope)
        .into_iter()
        .filter(|o| o.turn_limit.to_string() == DEFAULT_TURN)
        .collect();
    single.sort_by(|a, b| by_metric(a, b));
    let Some(lead) = single.first() else {
        return String::new();
    };
    let describe = |o: &OverallMetrics| {
        let name = ctx
            .entry(&o.entry)
            .map_or_else(|| o.entry.clone(), |e| e.display_name.clone());
        let (v, fallback) = primary(o);
        let metric = if fallback {
            "correct with arch (the paper's grade; no MMA share reported)".to_string()
        } else {
            PRIMARY_METRIC.to_string()
        };
        let gpu = if o.gpu.is_empty() {
            "GPU not recorded".to_string()
        } else {
            o.gpu.clone()
        };
        let over = match scope {
            Scope::Core => format!("{} core tasks", o.tasks),
            Scope::Full => format!("{} tasks", o.tasks),
        };
        format!(
            "{name}, {} {metric} over {over}, single-shot ({}, {gpu})",
            format::opt_percent(v),
            o.provenance
        )
    };
    let mut s = format!("Leader on {arch}: {}.", describe(lead));
    if lead.provenance == Provenance::Reported
        && let Some(m) = single.iter().find(|o| o.provenance == Provenance::Measured)
    {
        s.push_str(&format!(" Best measured here: {}.", describe(m)));
    }
    s
}

fn entry_link(ctx: &Context<'_>, name: &str, from: &str) -> Link {
    match ctx.entry(name) {
        Some(e) => Link {
            text: e.display_name.clone(),
            href: paths::link(from, &paths::entry(&e.slug)),
        },
        None => Link {
            text: name.to_string(),
            href: String::new(),
        },
    }
}

/// The page of `entry`'s rows of `task` on `arch` and `gpu`, from `from`; empty for an
/// unknown entry.
pub fn entry_task_href(
    ctx: &Context<'_>,
    entry: &str,
    (arch, gpu): (&str, &str),
    task: &str,
    from: &str,
) -> String {
    ctx.entry(entry).map_or_else(String::new, |e| {
        paths::link(from, &paths::entry_task(&e.slug, arch, gpu, task))
    })
}

fn row(ctx: &Context<'_>, o: &OverallMetrics, from: &str) -> LeaderboardRow {
    let entry = entry_link(ctx, &o.entry, from);
    let tasks_href = ctx.entry(&o.entry).map_or_else(String::new, |e| {
        paths::link(from, &format!("{}#tasks-{}", paths::entry(&e.slug), o.arch))
    });
    let (p, fallback) = primary(o);
    let mut primary_cell = Cell::percent(p);
    if fallback {
        primary_cell
            .text
            .push_str(&format!("\u{a0}{FALLBACK_MARK}"));
    }
    let mut min = speedup_ci(o.min_speedup, o.min_speedup_ci95);
    if let Some(t) = &o.min_speedup_task {
        min = min.linked(entry_task_href(ctx, &o.entry, (&o.arch, &o.gpu), t, from));
    }
    let mut geomean = Cell::speedup(o.geomean_speedup);
    let mut fast = Cell::percent(Some(o.fast[fast_one()]));
    if o.composed_tasks > 0 {
        let library = o.tasks.saturating_sub(o.composed_tasks);
        geomean = geomean.with_note(format!(
            "over {library} of {} tasks: {} with a composed baseline apart",
            o.tasks, o.composed_tasks
        ));
        if library == 0 {
            fast = Cell::percent(None);
        }
    }
    LeaderboardRow {
        rank: String::new(),
        text: entry.text.to_lowercase(),
        entry,
        provenance: badge(o.provenance),
        gpu: o.gpu.clone(),
        turn_limit: o.turn_limit.to_string(),
        primary: primary_cell,
        tasks: Cell {
            text: format!("{}/{}", o.tasks_solved, o.tasks),
            v: o.tasks_solved.to_string(),
            ..Cell::default()
        }
        .linked(tasks_href),
        trajectories: Cell::count(o.trajectories),
        correctness: Cell::percent(Some(o.correctness_rate)),
        correct_with_arch: cwa_cell(o.provenance, o.correct_with_arch_rate),
        mma_share: measured_only(o.provenance, o.mma_flop_share),
        pass: o
            .pass_at
            .iter()
            .skip(1)
            .map(|p| Cell::percent(*p))
            .collect(),
        fast,
        geomean,
        best: Cell::speedup(o.best_speedup),
        min,
        peak: peak_cell(o.provenance, o.peak_fraction),
    }
}

/// A task row's speedup, marked where it is over a composed baseline (never pooled with the
/// speedups over a library).
fn composed_mark(t: &TaskMetrics, cell: Cell) -> Cell {
    if !t.composed_baseline || cell.text == format::opt_speedup(None) {
        return cell;
    }
    let note = if cell.note.is_empty() {
        "over the composed baseline".to_string()
    } else {
        format!("{}; over the composed baseline", cell.note)
    };
    cell.with_note(note)
}

/// Column headers of the pass@k and fast_p columns a per-task table shows: pass@1 and fast0.0
/// are left out, as both equal the Correct column (the downloads keep them).
pub fn pass_headers() -> Vec<String> {
    PASS_K[1..].iter().map(|k| format!("pass@{k}")).collect()
}

pub fn fast_headers() -> Vec<String> {
    FAST_P[1..].iter().map(|p| format!("fast{p:?}")).collect()
}

/// The page a per-task table is on: its rows share an entry there (an entry's page) or a task
/// (a task's page), so that column is left out and the table fits a 1400 px window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskTableOn {
    EntryPage,
    TaskPage,
}

#[derive(Debug, Clone)]
pub struct TaskTableView {
    pub id: String,
    /// Whether the Task and Entry columns are shown.
    pub task_column: bool,
    pub entry_column: bool,
    /// Whether the Arch, GPU column is shown (a task page holds both architectures' rows);
    /// elsewhere the source column names the GPU.
    pub arch_column: bool,
    pub rows: Vec<TaskRow>,
    pub turn_default: &'static str,
    pub pass_headers: Vec<String>,
    pub fast_headers: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct TaskRow {
    /// The row's element id (the first row of each task and GPU on an entry's page); empty:
    /// none.
    pub anchor: String,
    pub task: Link,
    pub entry: Link,
    pub provenance: &'static str,
    pub arch: String,
    /// The GPUs the row's numbers come from (empty: not recorded).
    pub gpu: String,
    pub turn_limit: String,
    pub text: String,
    pub trajectories: Cell,
    pub correct: Cell,
    pub correct_with_arch: Cell,
    pub correct_on_target: Cell,
    pub mma_share: Cell,
    pub pass: Vec<Cell>,
    pub fast: Vec<Cell>,
    pub geomean: Cell,
    pub best: Cell,
    pub min: Cell,
    pub peak: Cell,
}

impl TaskTableView {
    /// A table of per-task rows, as seen from page `from`. On an entry's page the first row of
    /// each (arch, GPU, task) gets the id [`paths::task_anchor`].
    pub fn new<'m>(
        ctx: &Context<'_>,
        rows: impl Iterator<Item = &'m TaskMetrics>,
        from: &str,
        id: &str,
        on: TaskTableOn,
    ) -> TaskTableView {
        let anchors = on == TaskTableOn::EntryPage;
        let mut seen = std::collections::BTreeSet::new();
        let rows = rows
            .map(|t| {
                let entry = entry_link(ctx, &t.entry, from);
                let anchor = paths::task_anchor(&t.arch, &t.gpu, &t.task);
                let anchor = if anchors && seen.insert(anchor.clone()) {
                    anchor
                } else {
                    String::new()
                };
                // The evidence of a measured row: its best record, and the task's records.
                let best = (t.provenance == Provenance::Measured)
                    .then(|| ctx.best_record(&t.entry, &t.arch, &t.gpu, &t.task, t.turn_limit))
                    .flatten()
                    .map(|r| paths::link(from, &paths::record(&r.digest)))
                    .unwrap_or_default();
                let records = if t.provenance == Provenance::Measured {
                    paths::link(from, &format!("{}#records", paths::task(&t.task)))
                } else {
                    String::new()
                };
                TaskRow {
                    anchor,
                    text: format!("{} {} {}", entry.text.to_lowercase(), t.task, t.arch),
                    task: Link {
                        text: t.task.clone(),
                        href: paths::link(from, &paths::task(&t.task)),
                    },
                    entry,
                    provenance: badge(t.provenance),
                    arch: t.arch.clone(),
                    gpu: t.gpu.clone(),
                    turn_limit: t.turn_limit.to_string(),
                    trajectories: Cell::count(t.trajectories).linked(records),
                    correct: Cell::count_rate_ci(t.correct, t.trajectories).linked(best.clone()),
                    correct_with_arch: match t.correct_with_arch {
                        Some(c) => Cell::count_rate_ci(c, t.trajectories),
                        None => cwa_cell(t.provenance, None),
                    },
                    correct_on_target: match t.correct_on_target {
                        Some(c) => Cell::count_rate_ci(c, t.trajectories),
                        None => measured_only(t.provenance, None),
                    },
                    mma_share: measured_only(t.provenance, t.mma_flop_share),
                    pass: t.pass_at()[1..].iter().map(|p| Cell::percent(*p)).collect(),
                    fast: t.fast_rates()[1..]
                        .iter()
                        .map(|f| Cell::percent(Some(*f)))
                        .collect(),
                    geomean: composed_mark(t, Cell::speedup(t.geomean_speedup)),
                    best: Cell::speedup(t.best_speedup).linked(best.clone()),
                    min: composed_mark(
                        t,
                        speedup_ci(t.min_speedup, t.min_speedup_ci95).linked(best),
                    ),
                    peak: peak_cell(t.provenance, t.peak_fraction),
                }
            })
            .collect();
        TaskTableView {
            id: id.to_string(),
            task_column: on != TaskTableOn::TaskPage,
            entry_column: on != TaskTableOn::EntryPage,
            arch_column: on == TaskTableOn::TaskPage,
            rows,
            turn_default: DEFAULT_TURN,
            pass_headers: pass_headers(),
            fast_headers: fast_headers(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_columns_left_out_are_the_ones_equal_to_correct() {
        // pass@1 is c/n and fast_0 counts the correct trajectories: both are the Correct
        // column, which is why per-task tables skip the first of each.
        assert_eq!(PASS_K[0], 1);
        assert_eq!(FAST_P[0], 0.0);
        assert_eq!(pass_headers().len(), PASS_K.len() - 1);
        assert_eq!(fast_headers().len(), FAST_P.len() - 1);
        assert!(!pass_headers().contains(&"pass@1".to_string()));
        assert!(!fast_headers().contains(&"fast0.0".to_string()));
    }
}
