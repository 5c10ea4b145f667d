//! Writing the metrics table to Parquet or CSV (`ptxbench export results`). The table is
//! [`results_frame`]: one row per (provenance, entry, arch, GPU, task, turn limit), then one per
//! (provenance, entry, arch, GPU, turn limit) over all tasks with `task` = `*`. The `gpu` column
//! holds one GPU's name (null where none was recorded), never a list.

use std::io::Write;
use std::path::Path;

use polars::prelude::*;
use polars_io::SerWriter;
use polars_io::csv::write::CsvWriter;
use polars_io::parquet::write::{ParquetCompression, ParquetWriter};

use super::{FAST_P, Metrics, MetricsError, PASS_K, task_frame};

/// The file formats `export results` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Parquet,
    Csv,
}

/// The results table: per-task rows (`level` = `task`), then all-task rows (`level` = `all`).
pub fn results_frame(metrics: &Metrics) -> Result<DataFrame, MetricsError> {
    let mut tasks = task_frame(&metrics.tasks)?;
    tasks.drop_in_place("ln_speedup_sum")?;
    tasks.drop_in_place("timed")?;
    let level = Column::new("level".into(), vec!["task"; tasks.height()]);
    tasks.with_column(level)?;

    let o = &metrics.overall;
    let n = o.len();
    let mut columns = vec![
        Column::new(
            "provenance".into(),
            o.iter().map(|r| r.provenance.as_str()).collect::<Vec<_>>(),
        ),
        Column::new(
            "entry".into(),
            o.iter().map(|r| r.entry.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            "arch".into(),
            o.iter().map(|r| r.arch.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            "gpu".into(),
            super::aggregate::gpu_column(o.iter().map(|r| r.gpu.as_str())),
        ),
        Column::new("task".into(), vec!["*"; n]),
        Column::new(
            "turn_limit".into(),
            o.iter().map(|r| r.turn_limit).collect::<Vec<_>>(),
        ),
        Column::new(
            "trajectories".into(),
            o.iter().map(|r| r.trajectories).collect::<Vec<_>>(),
        ),
        Column::new(
            "correct".into(),
            o.iter().map(|r| r.correct).collect::<Vec<_>>(),
        ),
        Column::new(
            "correctness_rate".into(),
            o.iter().map(|r| r.correctness_rate).collect::<Vec<_>>(),
        ),
        Column::new("correct_with_arch".into(), vec![None::<u32>; n]),
        Column::new(
            "correct_with_arch_rate".into(),
            o.iter()
                .map(|r| r.correct_with_arch_rate)
                .collect::<Vec<_>>(),
        ),
        Column::new("correct_on_target".into(), vec![None::<u32>; n]),
        Column::new(
            "correct_on_target_rate".into(),
            o.iter()
                .map(|r| r.correct_on_target_rate)
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "mma_flop_share".into(),
            o.iter().map(|r| r.mma_flop_share).collect::<Vec<_>>(),
        ),
        Column::new(
            "turns_seen".into(),
            o.iter().map(|r| r.turns_seen).collect::<Vec<_>>(),
        ),
        Column::new(
            "best_speedup".into(),
            o.iter().map(|r| r.best_speedup).collect::<Vec<_>>(),
        ),
        Column::new(
            "min_speedup".into(),
            o.iter().map(|r| r.min_speedup).collect::<Vec<_>>(),
        ),
        Column::new(
            "min_speedup_ci95_lo".into(),
            o.iter()
                .map(|r| r.min_speedup_ci95.map(|c| c[0]))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "min_speedup_ci95_hi".into(),
            o.iter()
                .map(|r| r.min_speedup_ci95.map(|c| c[1]))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "geomean_speedup".into(),
            o.iter().map(|r| r.geomean_speedup).collect::<Vec<_>>(),
        ),
        Column::new(
            "peak_fraction".into(),
            o.iter().map(|r| r.peak_fraction).collect::<Vec<_>>(),
        ),
        Column::new(
            "composed_tasks".into(),
            o.iter().map(|r| r.composed_tasks).collect::<Vec<_>>(),
        ),
    ];
    for (i, p) in FAST_P.iter().enumerate() {
        columns.push(Column::new(
            super::aggregate::fast_column(*p).into(),
            o.iter().map(|r| r.fast[i]).collect::<Vec<_>>(),
        ));
    }
    for (i, k) in PASS_K.iter().enumerate() {
        columns.push(Column::new(
            format!("pass_at_{k}").into(),
            o.iter().map(|r| r.pass_at[i]).collect::<Vec<_>>(),
        ));
    }
    columns.push(Column::new("level".into(), vec!["all"; n]));
    let overall = DataFrame::new(n, columns)?;
    let overall = overall.select(tasks.get_column_names_owned())?;
    Ok(tasks.vstack(&overall)?)
}

/// Writes `frame` to `out` in `format`.
pub fn write_frame(
    frame: &mut DataFrame,
    format: Format,
    out: &mut dyn Write,
) -> Result<(), MetricsError> {
    match format {
        Format::Csv => CsvWriter::new(out).include_header(true).finish(frame)?,
        Format::Parquet => {
            ParquetWriter::new(out)
                .with_compression(ParquetCompression::Uncompressed)
                .finish(frame)?;
        }
    }
    Ok(())
}

/// Name prefix of the temp file an export is written to (beside it; a killed export's is
/// removed by the next export there).
pub const TEMP_PREFIX: &str = ".ptxbench-export-";

/// Writes the results table of `metrics` to the file `path` (replaced atomically; see
/// [`crate::destination`]).
pub fn write_results(metrics: &Metrics, format: Format, path: &Path) -> Result<(), MetricsError> {
    let mut frame = results_frame(metrics)?;
    let mut tmp = crate::destination::temp_for(path, TEMP_PREFIX)?;
    write_frame_to(
        &mut frame,
        format,
        std::io::BufWriter::new(tmp.as_file_mut()),
        path,
    )?;
    crate::destination::persist(tmp, path)?;
    Ok(())
}

/// [`write_frame`] into `w` (the file `path` is written through it), flushed. When writing
/// fails (a full disk), the error is the writer's own, naming `path`, never what the encoder
/// makes of the failure (Parquet's "File out of specification").
fn write_frame_to<W: Write>(
    frame: &mut DataFrame,
    format: Format,
    w: W,
    path: &Path,
) -> Result<(), MetricsError> {
    let mut w = crate::destination::FirstError::new(w);
    let written = write_frame(frame, format, &mut w);
    let flushed = w.flush();
    w.check(path)?;
    written?;
    flushed.map_err(|source| MetricsError::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A disk that holds `room` bytes, then fails as a full one does.
    struct Full {
        written: usize,
        room: usize,
    }

    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.written + buf.len() > self.room {
                return Err(std::io::Error::from_raw_os_error(28));
            }
            self.written += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn issue_41_a_full_disk_is_reported_as_a_failed_write_naming_the_file() {
        let column = Column::new(
            "entry".into(),
            (0..2000).map(|i| format!("entry {i}")).collect::<Vec<_>>(),
        );
        for format in [Format::Parquet, Format::Csv] {
            let mut frame = DataFrame::new(2000, vec![column.clone()]).expect("frame");
            let full = Full {
                written: 0,
                room: 1000,
            };
            let e = write_frame_to(&mut frame, format, full, Path::new("out/results.parquet"))
                .expect_err("the disk is full");
            let text = e.to_string();
            assert!(
                text.contains("writing out/results.parquet failed")
                    && text.contains("No space left on device")
                    && !text.contains("specification"),
                "{format:?}: {text}"
            );
        }
    }
}
