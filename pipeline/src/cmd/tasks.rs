//! `ptxbench tasks list|show|check|store|import`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Subcommand;
use comfy_table::{Table, presets::UTF8_BORDERS_ONLY};

use crate::record::task::store_suite;
use crate::task::{self, WorkloadKind};

use super::verify::StoreArgs;

#[derive(Debug, Subcommand)]
pub enum TasksCommand {
    /// One line per task: family, workloads, targets.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Everything about one task.
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Validate every task file; each problem names file, field and reason.
    Check,
    /// Store the suite and every task definition as objects (`ptxbench.suite/1`,
    /// `ptxbench.task/1`), so records of it audit from the store alone. `run` and `generate`
    /// do this themselves; this is for suites records were measured against earlier.
    Store {
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Turn a FlashInfer-Trace definition (JSON) into a task file (YAML).
    Import {
        /// The definition JSON.
        definition: PathBuf,
        /// Its workloads (JSON lines), if any.
        #[arg(long)]
        workloads: Option<PathBuf>,
        /// Where to write the task file (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

pub fn run(cmd: TasksCommand, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    match cmd {
        TasksCommand::List { json } => {
            let suite = super::load_suite(dir)?;
            if json {
                let rows: Vec<_> = suite
                    .tasks
                    .iter()
                    .map(|t| {
                        serde_json::json!({
                            "id": t.id.as_str(),
                            "family": t.family,
                            "workloads": t.workloads.len(),
                            "targets": t.targets.iter().map(|x| x.arch).collect::<Vec<_>>(),
                            "digest": t.digest(),
                        })
                    })
                    .collect();
                outln!("{}", serde_json::to_string_pretty(&rows)?)?;
                return Ok(ExitCode::SUCCESS);
            }
            let mut table = Table::new();
            table.load_preset(UTF8_BORDERS_ONLY);
            table.set_header(["task", "family", "correctness", "performance", "targets"]);
            for t in &suite.tasks {
                let count = |k: WorkloadKind| t.workloads.iter().filter(|w| w.kind == k).count();
                table.add_row([
                    t.id.to_string(),
                    serde_json::to_value(t.family)?
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    count(WorkloadKind::Correctness).to_string(),
                    count(WorkloadKind::Performance).to_string(),
                    t.targets
                        .iter()
                        .map(|x| x.arch.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                ]);
            }
            outln!("{table}")?;
            outln!(
                "suite {} · {} tasks · digest {}",
                suite.version,
                suite.tasks.len(),
                suite.digest()
            )?;
            Ok(ExitCode::SUCCESS)
        }
        TasksCommand::Show { id, json } => {
            let suite = super::load_suite(dir)?;
            let t = suite.get(&id).with_context(|| {
                format!(
                    "no task `{id}` in the suite (`ptxbench tasks list` shows the {} tasks)",
                    suite.tasks.len()
                )
            })?;
            if json {
                outln!("{}", serde_json::to_string_pretty(t)?)?;
            } else {
                out!("{}", task::describe(t))?;
                outln!("digest: {}", t.digest())?;
            }
            Ok(ExitCode::SUCCESS)
        }
        TasksCommand::Check => {
            let dir = super::suite_dir(dir)?;
            let problems = task::check_dir(&dir);
            if problems.is_empty() {
                let suite = task::Suite::load(&dir)
                    .with_context(|| format!("loading {}", dir.display()))?;
                outln!(
                    "ok: {} tasks, suite {} digest {}",
                    suite.tasks.len(),
                    suite.version,
                    suite.digest()
                )?;
                Ok(ExitCode::SUCCESS)
            } else {
                for p in &problems {
                    outln!("{p}")?;
                }
                eprintln!("{} problem(s) in {}", problems.len(), dir.display());
                Ok(ExitCode::from(1))
            }
        }
        TasksCommand::Store { store } => {
            let suite = super::load_suite(dir)?;
            let store = store.open()?;
            let stored = store_suite(&store, &suite).with_context(|| {
                format!(
                    "storing suite {} into {}",
                    suite.version,
                    store.root().display()
                )
            })?;
            for (id, (d, _)) in &stored.tasks {
                outln!("task  {d}  {id}")?;
            }
            outln!(
                "suite {}  {} (suite hash {}, {} tasks)",
                stored.digest,
                suite.version,
                stored.suite_hash,
                stored.tasks.len()
            )?;
            Ok(ExitCode::SUCCESS)
        }
        TasksCommand::Import {
            definition,
            workloads,
            output,
        } => {
            let def = super::read_text(&definition)?;
            let wl = workloads.as_deref().map(super::read_text).transpose()?;
            let (yaml, notes) = task::import_flashinfer(&def, wl.as_deref())
                .with_context(|| format!("importing {}", definition.display()))?;
            for n in &notes {
                eprintln!("note: {n}");
            }
            match output {
                Some(path) => {
                    // A dangling link exists too: never written through.
                    if std::fs::symlink_metadata(&path).is_ok() {
                        anyhow::bail!(
                            "{} exists; refusing to overwrite a task file (remove it first)",
                            path.display()
                        );
                    }
                    crate::destination::write_atomic(&path, yaml.as_bytes())
                        .with_context(|| format!("writing {}", path.display()))?;
                    eprintln!("wrote {}", path.display());
                }
                None => out!("{yaml}")?,
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
