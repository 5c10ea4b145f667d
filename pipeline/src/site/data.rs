//! The data downloads behind the data page: three tables (metrics, records, per-workload
//! timings), each written from one Polars frame as CSV, JSON and Parquet, and the column
//! schema the page prints. Every frame is built in a fixed order (metrics in key order,
//! records and workloads in record-digest order), and the writers add no time or host, so
//! the files are byte-stable.

use polars::prelude::{Column, DataFrame};
use polars_io::SerWriter;
use polars_io::json::{JsonFormat, JsonWriter};

use super::SiteError;
use super::context::{Context, is_evaluated, workload_rates};
use super::input::LoadedRecord;
use super::paths;
use crate::metrics::MetricsError;
use crate::metrics::export::{Format, write_frame};
use crate::record::Record;

/// One documented column: name, type as the CSV holds it, meaning.
pub type ColumnDoc = (&'static str, &'static str, &'static str);

/// A downloadable table.
#[derive(Debug)]
pub struct Table {
    /// File stem under `data/`.
    pub stem: &'static str,
    pub title: &'static str,
    pub about: &'static str,
    /// (name, type, meaning) of each column, in order.
    pub columns: Vec<(String, &'static str, &'static str)>,
    /// Its rows (kept when the frame is dropped after its files are written).
    pub rows: usize,
    pub frame: DataFrame,
}

impl Table {
    fn new(
        stem: &'static str,
        title: &'static str,
        about: &'static str,
        columns: Vec<(String, &'static str, &'static str)>,
        frame: DataFrame,
    ) -> Table {
        Table {
            stem,
            title,
            about,
            columns,
            rows: frame.height(),
            frame,
        }
    }
}

/// The formats each table is written in, with their file extension.
pub const FORMATS: [(&str, &str); 3] = [("CSV", "csv"), ("JSON", "json"), ("Parquet", "parquet")];

/// The site path of `stem` in format `ext`.
pub fn path(stem: &str, ext: &str) -> String {
    format!("data/{stem}.{ext}")
}

const RECORD_COLUMNS: [ColumnDoc; 23] = [
    (
        "record",
        "hex",
        "blake3 digest of the record object (its page is record/<digest>.html; its bytes re-hash to it)",
    ),
    (
        "entry",
        "text",
        "the entry (model or reference kernel) as the record names it",
    ),
    ("role", "text", "entry or harness-test"),
    (
        "kind",
        "text",
        "what wrote the kernel: model, ablation (a paper's study of one model's settings), reference (hand-written or compiler-made), engine-check (the engine's simple kernels, listed with the harness tests) or harness-test",
    ),
    (
        "model",
        "text",
        "the model that wrote the kernel, where one did",
    ),
    ("task", "text", "task id"),
    (
        "task_digest",
        "hex",
        "blake3 digest of the task object the record was evaluated against",
    ),
    (
        "suite_digest",
        "hex",
        "blake3 digest of the suite object the record names",
    ),
    ("arch", "text", "target architecture (sm_90a, sm_100a)"),
    (
        "gpu",
        "text",
        "the GPU the record was measured on (as the driver names it)",
    ),
    ("turn", "integer", "0-based turn within the trajectory"),
    (
        "previous_digest",
        "hex",
        "the record of the previous turn of the same trajectory",
    ),
    (
        "verdict",
        "text",
        "correct, the class of failure, or not_evaluated (generate --no-eval: checked, never run)",
    ),
    (
        "stage",
        "text",
        "the stage that decided the verdict (static, correctness, timing, ...; not-evaluated)",
    ),
    ("expected", "text", "the verdict a harness test expects"),
    (
        "min_speedup",
        "number",
        "smallest speedup over the performance workloads (library time / kernel time)",
    ),
    (
        "correct_with_arch",
        "boolean",
        "correct, and the target instructions were shown to execute",
    ),
    (
        "correct_on_target",
        "boolean",
        "correct with arch, enough of the FLOPs on the target MMA and few elsewhere",
    ),
    (
        "mma_flop_share",
        "number",
        "executed target-MMA FLOPs over the task's FLOPs, on the counted workload",
    ),
    (
        "other_flop_share",
        "number",
        "executed FLOPs outside the target families (SIMT FMA/add/mul, mma.sync) over the task's FLOPs (empty: not counted)",
    ),
    (
        "tma_byte_share",
        "number",
        "bytes TMA loaded over the task's compulsory input bytes",
    ),
    ("seed", "integer", "the seed the inputs were drawn from"),
    (
        "page",
        "text",
        "the record's page, relative to the site root",
    ),
];

const WORKLOAD_COLUMNS: [ColumnDoc; 13] = [
    ("record", "hex", "blake3 digest of the record"),
    ("entry", "text", "the entry"),
    ("task", "text", "task id"),
    ("arch", "text", "target architecture"),
    ("gpu", "text", "the GPU measured on"),
    ("workload", "text", "workload name (a shape of the task)"),
    (
        "candidate_ms",
        "number",
        "median time of the kernel, milliseconds",
    ),
    (
        "baseline_ms",
        "number",
        "median time of the library, milliseconds",
    ),
    (
        "speedup",
        "number",
        "paired speedup over the library (library time / kernel time)",
    ),
    (
        "speedup_ci95_lo",
        "number",
        "lower end of the speedup's 95% bootstrap interval",
    ),
    (
        "speedup_ci95_hi",
        "number",
        "upper end of the speedup's 95% bootstrap interval",
    ),
    (
        "candidate_tflops",
        "number",
        "kernel throughput from the task's FLOP formula, TFLOP/s",
    ),
    ("baseline_tflops", "number", "library throughput, TFLOP/s"),
];

/// Meanings of the metric table's columns (`fast_*` and `pass_at_*` by prefix).
fn metric_meaning(name: &str) -> &'static str {
    match name {
        "provenance" => "reported (the paper's) or measured (records here); never pooled",
        "entry" => "the entry",
        "arch" => "target architecture",
        "gpu" => {
            "the GPU the row's numbers were measured on (reported: the one the paper names; measured: the records' device): an entry measured on two GPUs has a row for each, never pooled; speedups compare across GPUs, times and throughputs do not"
        }
        "task" => "task id; * on rows over all the entry's tasks",
        "turn_limit" => "a trajectory counts its turns 0..limit",
        "trajectories" => "trajectories counted",
        "tasks_solved" => {
            "tasks with a correct trajectory below the turn limit (1 or 0 on task rows; the leaderboards' \"tasks solved\" on * rows)"
        }
        "kind" => {
            "what the entry is: model, ablation (a paper's study of one model's settings, not a model) or reference (hand-written or compiler-made kernels)"
        }
        "correct" => "trajectories with a correct turn below the limit",
        "correctness_rate" => "correct / trajectories (macro average over tasks on * rows)",
        "correct_with_arch" | "correct_with_arch_rate" => {
            "correct with the target instructions shown to execute (empty: not measured)"
        }
        "correct_on_target" | "correct_on_target_rate" => {
            "correct with arch, enough FLOPs on the target MMA and few elsewhere (empty: not measured)"
        }
        "mma_flop_share" => "mean executed target-MMA FLOPs over the task's FLOPs",
        "turns_seen" => "most turns any trajectory used",
        "best_speedup" => {
            "best speedup on the best workload (not the headline; * rows: over the tasks timed against a library)"
        }
        "composed_tasks" => {
            "1 where the task's baseline is composed (no library has the op: cuBLASLt products and harness kernels); on * rows, the tasks left out of the speedup columns for it"
        }
        "min_speedup" => {
            "best over correct trajectories of the smallest speedup over the workloads (* rows: over the tasks timed against a library)"
        }
        "min_speedup_ci95_lo" | "min_speedup_ci95_hi" => "95% interval of min_speedup",
        "geomean_speedup" => {
            "geometric mean of the trajectories' smallest speedups (* rows: over the tasks timed against a library)"
        }
        "peak_fraction" => "best fraction of the measured library peak",
        "level" => "task (one task) or all (over tasks)",
        n if n.starts_with("fast_") => {
            "fraction of trajectories correct with smallest speedup above p (fast_0.0: correct; * rows: mean over the tasks timed against a library)"
        }
        n if n.starts_with("pass_at_") => {
            "unbiased pass@k (empty where k exceeds the trajectories)"
        }
        _ => "",
    }
}

fn dtype_word(d: &polars::prelude::DataType) -> &'static str {
    use polars::prelude::DataType::*;
    match d {
        String => "text",
        Boolean => "boolean",
        Float32 | Float64 => "number",
        UInt8 | UInt16 | UInt32 | UInt64 | Int8 | Int16 | Int32 | Int64 => "integer",
        _ => "other",
    }
}

fn gpu(r: &LoadedRecord) -> Option<String> {
    r.record.gpu_name().map(str::to_string)
}

/// What wrote a record's kernel ([`EntryKind`](crate::site::context::EntryKind) or the harness test it is), as `kind` says.
fn record_kind(ctx: &Context<'_>, r: &Record) -> &'static str {
    if r.is_harness_test() {
        "harness-test"
    } else {
        ctx.entry(&r.entry).map_or(
            if r.model.is_some() {
                "model"
            } else {
                "reference"
            },
            |e| e.kind.as_str(),
        )
    }
}

/// The verdict column: `not_evaluated` for a candidate never run (its stored verdict is
/// `other`, the harness-failure class).
fn verdict_word(r: &Record) -> &'static str {
    if is_evaluated(r) {
        r.verdict.as_str()
    } else {
        "not_evaluated"
    }
}

/// `records` with their [`record_kind`] (in the same order).
fn records_frame(
    records: &[&LoadedRecord],
    kinds: &[&'static str],
) -> Result<DataFrame, MetricsError> {
    let text = |f: &dyn Fn(&LoadedRecord) -> String| -> Vec<String> {
        records.iter().map(|r| f(r)).collect()
    };
    let opt = |f: &dyn Fn(&LoadedRecord) -> Option<String>| -> Vec<Option<String>> {
        records.iter().map(|r| f(r)).collect()
    };
    let num = |f: &dyn Fn(&Record) -> Option<f64>| -> Vec<Option<f64>> {
        records.iter().map(|r| f(&r.record)).collect()
    };
    let flag = |f: &dyn Fn(&Record) -> Option<bool>| -> Vec<Option<bool>> {
        records.iter().map(|r| f(&r.record)).collect()
    };
    Ok(DataFrame::new(
        records.len(),
        vec![
            Column::new("record".into(), text(&|x| x.digest.to_string())),
            Column::new("entry".into(), text(&|x| x.record.entry.clone())),
            Column::new("role".into(), text(&|x| x.record.role.as_str().to_string())),
            Column::new("kind".into(), kinds.to_vec()),
            Column::new("model".into(), opt(&|x| x.record.model.clone())),
            Column::new("task".into(), text(&|x| x.record.task.clone())),
            Column::new(
                "task_digest".into(),
                opt(&|x| x.record.task_digest.map(|d| d.to_string())),
            ),
            Column::new(
                "suite_digest".into(),
                opt(&|x| x.record.suite_digest.map(|d| d.to_string())),
            ),
            Column::new("arch".into(), text(&|x| x.record.arch.to_string())),
            Column::new("gpu".into(), opt(&gpu)),
            Column::new(
                "turn".into(),
                records.iter().map(|x| x.record.turn).collect::<Vec<_>>(),
            ),
            Column::new(
                "previous_digest".into(),
                opt(&|x| x.record.previous_digest.map(|d| d.to_string())),
            ),
            Column::new(
                "verdict".into(),
                text(&|x| verdict_word(&x.record).to_string()),
            ),
            Column::new(
                "stage".into(),
                text(&|x| x.record.outcome.stage.as_str().to_string()),
            ),
            Column::new(
                "expected".into(),
                records
                    .iter()
                    .map(|x| x.record.expected.map(|v| v.as_str()))
                    .collect::<Vec<_>>(),
            ),
            Column::new("min_speedup".into(), num(&Record::min_speedup)),
            Column::new("correct_with_arch".into(), flag(&Record::correct_with_arch)),
            Column::new("correct_on_target".into(), flag(&Record::correct_on_target)),
            Column::new("mma_flop_share".into(), num(&Record::mma_flop_share)),
            Column::new("other_flop_share".into(), num(&Record::other_flop_share)),
            Column::new("tma_byte_share".into(), num(&Record::tma_byte_share)),
            Column::new(
                "seed".into(),
                records.iter().map(|x| x.record.seed).collect::<Vec<_>>(),
            ),
            Column::new("page".into(), text(&|x| paths::record(&x.digest))),
        ],
    )?)
}

fn workloads_frame(
    ctx: &Context<'_>,
    records: &[&LoadedRecord],
) -> Result<DataFrame, MetricsError> {
    let mut cols: [Vec<String>; 6] = Default::default();
    let mut nums: [Vec<Option<f64>>; 7] = Default::default();
    for r in records {
        let rates = workload_rates(&r.record, &ctx.flops);
        for w in &r.record.outcome.workloads {
            let Some(t) = &w.timing else { continue };
            let rate = rates.iter().find(|x| x.workload == w.workload);
            for (c, v) in cols.iter_mut().zip([
                r.digest.to_string(),
                r.record.entry.clone(),
                r.record.task.clone(),
                r.record.arch.to_string(),
                gpu(r).unwrap_or_default(),
                w.workload.clone(),
            ]) {
                c.push(v);
            }
            for (c, v) in nums.iter_mut().zip([
                Some(t.candidate.median_ms),
                t.baseline.as_ref().map(|b| b.median_ms),
                rate.and_then(|x| x.speedup),
                t.speedup_ci95.map(|c| c[0]),
                t.speedup_ci95.map(|c| c[1]),
                rate.and_then(|x| x.candidate_tflops),
                rate.and_then(|x| x.baseline_tflops),
            ]) {
                c.push(v.filter(|x| x.is_finite()));
            }
        }
    }
    let height = cols[0].len();
    let mut columns: Vec<Column> = Vec::new();
    for (doc, c) in WORKLOAD_COLUMNS.iter().zip(cols) {
        columns.push(Column::new(doc.0.into(), c));
    }
    for (doc, c) in WORKLOAD_COLUMNS[6..].iter().zip(nums) {
        columns.push(Column::new(doc.0.into(), c));
    }
    Ok(DataFrame::new(height, columns)?)
}

/// Inserts `column` after column `after` (last when there is none).
fn insert_after(frame: &mut DataFrame, after: &str, column: Column) -> Result<(), SiteError> {
    let at = frame
        .get_column_index(after)
        .map_or(frame.width(), |i| i + 1);
    frame
        .insert_column(at, column)
        .map_err(MetricsError::from)?;
    Ok(())
}

/// Adds the `kind` column after `entry`: what each row's entry is ([`EntryKind`](crate::site::context::EntryKind)), so the
/// paper's ablations and the reference kernels are never read as models.
fn with_kind_column(ctx: &Context<'_>, frame: &mut DataFrame) -> Result<(), SiteError> {
    let entries = frame.column("entry").map_err(MetricsError::from)?;
    let entries = entries.str().map_err(MetricsError::from)?;
    let kind: Vec<&str> = (0..entries.len())
        .map(|i| {
            let name = entries.get(i).unwrap_or_default();
            ctx.entry(name).map_or("model", |e| e.kind.as_str())
        })
        .collect();
    insert_after(frame, "entry", Column::new("kind".into(), kind))
}

/// How many rows readers that infer a table's types from its first rows look at (Polars'
/// `read_json` default).
pub const TYPED_ROWS: usize = 100;

/// Moves to the front, in their order, the rows where a column has its first value, when
/// that is past the first [`TYPED_ROWS`] rows; every other row keeps its order after them. A
/// reader that infers types from the first rows (Polars' `read_json`) otherwise takes such a
/// column for all-null and fails on its first value.
fn lead_with_every_type(frame: &mut DataFrame) -> Result<(), SiteError> {
    let mut first: Vec<usize> = frame
        .columns()
        .iter()
        .filter_map(|c| c.first_non_null())
        .filter(|&i| i >= TYPED_ROWS)
        .collect();
    if first.is_empty() {
        return Ok(());
    }
    first.sort_unstable();
    first.dedup();
    let lead: std::collections::BTreeSet<usize> = first.iter().copied().collect();
    let order: Vec<polars::prelude::IdxSize> = first
        .iter()
        .copied()
        .chain((0..frame.height()).filter(|i| !lead.contains(i)))
        .map(|i| i as polars::prelude::IdxSize)
        .collect();
    let order = polars::prelude::IdxCa::from_vec("order".into(), order);
    *frame = frame.take(&order).map_err(MetricsError::from)?;
    Ok(())
}

fn owned(docs: &[ColumnDoc]) -> Vec<(String, &'static str, &'static str)> {
    docs.iter()
        .map(|(n, t, m)| (n.to_string(), *t, *m))
        .collect()
}

/// The three tables of the site, each made and handed to `each` before the next is made (so
/// one frame at a time is held where `each` drops it: the 100k-record site's take about
/// 110 MB together).
pub fn tables(
    ctx: &Context<'_>,
    mut each: impl FnMut(Table) -> Result<(), SiteError>,
) -> Result<(), SiteError> {
    let mut records: Vec<&LoadedRecord> = ctx.input.records.iter().collect();
    records.sort_by_key(|r| r.digest);
    // The engine's simple kernels are harness tests; a reference kernel's one attempt is
    // the same at every turn limit ([`Context::listed`]).
    let listed = crate::metrics::Metrics {
        tasks: ctx
            .metrics
            .tasks
            .iter()
            .filter(|t| ctx.listed(&t.entry, t.turn_limit))
            .cloned()
            .collect(),
        overall: ctx
            .metrics
            .overall
            .iter()
            .filter(|o| ctx.listed(&o.entry, o.turn_limit))
            .cloned()
            .collect(),
        speedups: Vec::new(),
    };
    let mut results = crate::metrics::export::results_frame(&listed)?;
    // Tasks with a correct trajectory: the task rows (1 or 0), then the rows over all tasks,
    // in the frame's order (task rows, then overall rows, each in metrics order).
    let solved: Vec<u32> = listed
        .tasks
        .iter()
        .map(|t| u32::from(t.correct > 0))
        .chain(listed.overall.iter().map(|o| o.tasks_solved))
        .collect();
    insert_after(
        &mut results,
        "trajectories",
        Column::new("tasks_solved".into(), solved),
    )?;
    with_kind_column(ctx, &mut results)?;
    lead_with_every_type(&mut results)?;
    let results_columns = results
        .columns()
        .iter()
        .map(|c| {
            (
                c.name().to_string(),
                dtype_word(c.dtype()),
                metric_meaning(c.name()),
            )
        })
        .collect();
    each(Table::new(
        "results",
        "Metrics",
        "One row per (source, entry, architecture, GPU, task, turn limit), then one per (source, entry, architecture, GPU, turn limit) over all its tasks: the numbers of the leaderboards. A reference kernel (one attempt) has turn limit 1 only; the engine's simple kernels are harness tests and have no row (see the records).",
        results_columns,
        results,
    ))?;
    each(Table::new(
        "records",
        "Records",
        "Every record of the site (harness tests included), one row each, in digest order (see the note on row order).",
        owned(&RECORD_COLUMNS),
        {
            let kinds: Vec<&'static str> = records
                .iter()
                .map(|r| record_kind(ctx, &r.record))
                .collect();
            let mut frame = records_frame(&records, &kinds).map_err(SiteError::from)?;
            lead_with_every_type(&mut frame)?;
            frame
        },
    ))?;
    each(Table::new(
        "workloads",
        "Per-workload timings",
        "One row per timed workload of every record: the medians, the paired speedup with its 95% interval, and throughputs.",
        owned(&WORKLOAD_COLUMNS),
        {
            let mut frame = workloads_frame(ctx, &records).map_err(SiteError::from)?;
            lead_with_every_type(&mut frame)?;
            frame
        },
    ))
}

/// Writes `table` in each of [`FORMATS`], each file straight to the writer `stream` gives for
/// its site path (so no download is ever held whole in memory: the records' JSON of a
/// 100k-record site is 74 MB); returns each file's path and size, in [`FORMATS`] order.
pub fn files(
    table: &mut Table,
    stream: &crate::site::StreamSink<'_>,
) -> Result<Vec<(String, u64)>, SiteError> {
    let mut sizes = Vec::with_capacity(FORMATS.len());
    for (_, ext) in FORMATS {
        let frame = &mut table.frame;
        let path = path(table.stem, ext);
        let size = stream(path.clone(), &mut |w| {
            match ext {
                "csv" => write_frame(frame, Format::Csv, w)?,
                "parquet" => write_frame(frame, Format::Parquet, w)?,
                _ => {
                    if !json_rows(frame, w)? {
                        JsonWriter::new(w)
                            .with_json_format(JsonFormat::Json)
                            .finish(frame)
                            .map_err(MetricsError::from)?;
                    }
                }
            }
            Ok(())
        })?;
        sizes.push((path, size));
    }
    Ok(sizes)
}

/// Writes the next value of a column: serde_json's form of it, or `null` for a missing one
/// (serde_json writes a float that is not finite as `null` too).
type JsonColumn<'a> = Box<dyn FnMut(&mut Vec<u8>) -> serde_json::Result<()> + 'a>;

fn json_column<'a, T: serde::Serialize + 'a>(
    mut values: impl Iterator<Item = Option<T>> + 'a,
) -> JsonColumn<'a> {
    Box::new(move |out| match values.next().flatten() {
        Some(x) => serde_json::to_writer(out, &x),
        None => {
            out.extend_from_slice(b"null");
            Ok(())
        }
    })
}

/// Writes `frame` to `w` as a JSON array of row objects, byte for byte what Polars'
/// `JsonWriter` (`JsonFormat::Json`) writes (serde_json's string escapes and shortest float
/// digits; `null` for a missing value or a float that is not finite), a few times faster: the
/// 100k-record site's JSON downloads (120 MB) took Polars about 0.8 s of CPU. `false` (and
/// nothing written) when a column has a type this writer does not know.
fn json_rows(frame: &DataFrame, w: &mut dyn std::io::Write) -> Result<bool, SiteError> {
    use polars::prelude::DataType;
    let failed = |e: &dyn std::fmt::Display| SiteError::Internal(format!("writing JSON: {e}"));
    let mut keys = Vec::new();
    let mut columns = Vec::new();
    for c in frame.columns() {
        let s = c.as_materialized_series();
        let values = match s.dtype() {
            DataType::String => json_column(s.str().map_err(|e| failed(&e))?.iter()),
            DataType::Float64 => json_column(s.f64().map_err(|e| failed(&e))?.iter()),
            DataType::Int64 => json_column(s.i64().map_err(|e| failed(&e))?.iter()),
            DataType::Int32 => json_column(s.i32().map_err(|e| failed(&e))?.iter()),
            DataType::UInt64 => json_column(s.u64().map_err(|e| failed(&e))?.iter()),
            DataType::UInt32 => json_column(s.u32().map_err(|e| failed(&e))?.iter()),
            DataType::Boolean => json_column(s.bool().map_err(|e| failed(&e))?.iter()),
            _ => return Ok(false),
        };
        let mut key = serde_json::to_vec(c.name().as_str()).map_err(|e| failed(&e))?;
        key.push(b':');
        keys.push(key);
        columns.push(values);
    }
    // Rows are made in a buffer that goes to `w` whenever it passes 1 MiB.
    const FLUSH_AT: usize = 1 << 20;
    let written = |e: std::io::Error| failed(&e);
    let mut out = Vec::with_capacity(FLUSH_AT + 64 * 1024);
    out.push(b'[');
    for row in 0..frame.height() {
        if out.len() >= FLUSH_AT {
            w.write_all(&out).map_err(written)?;
            out.clear();
        }
        if row > 0 {
            out.push(b',');
        }
        out.push(b'{');
        for (i, (key, values)) in keys.iter().zip(&mut columns).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(key);
            values(&mut out).map_err(|e| failed(&e))?;
        }
        out.push(b'}');
    }
    out.push(b']');
    w.write_all(&out).map_err(written)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The records download and its schema on the data page name the same columns, in order.
    #[test]
    fn the_records_schema_documents_every_column() {
        let frame = records_frame(&[], &[]).expect("an empty frame");
        let names: Vec<&str> = frame
            .get_column_names()
            .iter()
            .map(|n| n.as_str())
            .collect();
        let documented: Vec<&str> = RECORD_COLUMNS.iter().map(|c| c.0).collect();
        assert_eq!(names, documented);
    }

    fn polars_json(frame: &mut DataFrame) -> Vec<u8> {
        let mut bytes = Vec::new();
        JsonWriter::new(&mut bytes)
            .with_json_format(JsonFormat::Json)
            .finish(frame)
            .expect("Polars writes JSON");
        bytes
    }

    /// The JSON writer gives Polars' bytes for every column type it knows, with escapes,
    /// missing values, floats of every size and floats that are not finite; a column of a type
    /// it does not know is left to Polars.
    #[test]
    fn the_json_writer_writes_what_polars_writes() {
        let mut frame = DataFrame::new(
            4,
            vec![
                Column::new(
                    "text \"quoted\" \u{1}".into(),
                    [
                        Some("plain"),
                        None,
                        Some("\"\\\n\t\r\u{8}\u{c}\u{1f}\u{7f} é → 🦀 </script>"),
                        Some(""),
                    ],
                ),
                Column::new(
                    "float".into(),
                    [Some(0.0), Some(-1.5e-7), Some(f64::NAN), Some(1e300)],
                ),
                Column::new(
                    "more floats".into(),
                    [
                        Some(f64::INFINITY),
                        None,
                        Some(0.1 + 0.2),
                        Some(123456789.125),
                    ],
                ),
                Column::new(
                    "signed".into(),
                    [Some(i64::MIN), None, Some(0i64), Some(i64::MAX)],
                ),
                Column::new("i32".into(), [Some(-7i32), Some(0), None, Some(i32::MAX)]),
                Column::new(
                    "unsigned".into(),
                    [Some(u64::MAX), Some(0u64), None, Some(42)],
                ),
                Column::new("u32".into(), [None, Some(1u32), Some(u32::MAX), Some(9)]),
                Column::new("flag".into(), [Some(true), None, Some(false), Some(true)]),
            ],
        )
        .expect("a frame");
        let mut ours = Vec::new();
        assert!(json_rows(&frame, &mut ours).expect("written"));
        assert_eq!(
            String::from_utf8(ours).expect("UTF-8"),
            String::from_utf8(polars_json(&mut frame)).expect("UTF-8")
        );

        let mut empty = records_frame(&[], &[]).expect("an empty frame");
        let mut ours = Vec::new();
        assert!(json_rows(&empty, &mut ours).expect("written"));
        assert_eq!(ours, polars_json(&mut empty));

        // Past the 1 MiB at which rows go to the writer: the same bytes across the cuts.
        let rows = 30_000;
        let mut large = DataFrame::new(
            rows,
            vec![
                Column::new(
                    "text".into(),
                    (0..rows)
                        .map(|i| format!("row {i} \"quoted\" é {}", "x".repeat(i % 50)))
                        .collect::<Vec<_>>(),
                ),
                Column::new(
                    "value".into(),
                    (0..rows).map(|i| i as f64 / 7.0).collect::<Vec<_>>(),
                ),
            ],
        )
        .expect("a frame");
        let mut ours = Vec::new();
        assert!(json_rows(&large, &mut ours).expect("written"));
        assert!(ours.len() > 2 << 20, "{} bytes", ours.len());
        assert!(ours == polars_json(&mut large), "large frame differs");

        let single =
            DataFrame::new(2, vec![Column::new("f32".into(), [1.5f32, 2.0])]).expect("a frame");
        let mut ours = Vec::new();
        assert!(!json_rows(&single, &mut ours).expect("no error"));
        assert!(ours.is_empty());
    }
}
