//! `ptxbench export sft SOURCE --kind kernelgen|fixit --out FILE`: SFT datasets from records.
//!
//! SOURCE is a manifest (its runs and records) or a stored run, generation, trajectory or
//! record object (digest or unique prefix). `kernelgen` turns every correct record into
//! prompt → kernel; `fixit` turns every failed turn followed by a correct one into prompt,
//! failed answer, feedback → fixed kernel (the repair-conditioned examples). Both use the chat
//! layout fine-tuning tools read (`{"messages":[{"role":…,"content":…}, …]}`, plus metadata
//! columns); the assistant's target is the canonical answer: the kernel that ran in one fenced
//! block and its launch plan in another. Examples are deduplicated by PTX digest, capped per
//! task (interleaving archs so each keeps its share), and sorted, so the same records give the
//! same file. A coverage report (per task and arch, and the verdicts of the failures repaired)
//! is printed and written beside the output as `<FILE>.coverage.txt`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::digest::Digest;
use crate::engine::Verdict;
use crate::generate::chat::Message;
use crate::manifest::Manifest;
use crate::record::Record;
use crate::store::Store;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SftKind {
    /// Verified kernels: prompt → correct kernel.
    Kernelgen,
    /// Repair-conditioned: prompt, failed answer, feedback → fixed kernel.
    Fixit,
}

#[derive(Debug, Args)]
pub struct SftArgs {
    /// A manifest (YAML file), or a run / generation / trajectory / record digest or prefix.
    pub source: String,
    #[arg(long, value_enum)]
    pub kind: SftKind,
    /// The dataset file: `.jsonl` or `.parquet`.
    #[arg(long)]
    pub out: PathBuf,
    /// The store (default: the `artifacts/` nearest the manifest, or the current folder).
    #[arg(long)]
    pub store: Option<PathBuf>,
    /// At most this many examples per task.
    #[arg(long)]
    pub cap: Option<usize>,
    /// Keep only kernels whose target instructions executed at run time.
    #[arg(long)]
    pub require_arch: bool,
}

/// One training example.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Example {
    pub messages: Vec<Message>,
    pub kind: String,
    pub task: String,
    pub arch: String,
    pub model: String,
    /// The record whose kernel is the target.
    pub record_digest: String,
    pub ptx_digest: String,
    pub speedup: Option<f64>,
    /// fixit only: the failed turn's record and verdict.
    pub failed_record_digest: Option<String>,
    pub failed_verdict: Option<String>,
}

/// What the selection kept and dropped.
#[derive(Debug, Default)]
pub struct Coverage {
    pub candidates: usize,
    pub duplicates: usize,
    pub over_cap: usize,
    pub per_task_arch: BTreeMap<(String, String), usize>,
    pub repaired_verdicts: BTreeMap<String, usize>,
    pub notes: Vec<String>,
}

const REQUIRE_ARCH_NOTE: &str = "--require-arch: only records whose target evidence shows every required family in the SASS and executed (status dynamic_present) qualify";

/// Whether the record's evidence proves every required target family executed.
fn target_executed(r: &Record) -> bool {
    r.outcome
        .evidence
        .as_ref()
        .is_some_and(crate::evidence::TargetEvidence::all_dynamic_present)
}

pub fn run(a: SftArgs) -> anyhow::Result<ExitCode> {
    let ext = a.out.extension().and_then(|e| e.to_str()).unwrap_or("");
    anyhow::ensure!(
        ext == "jsonl" || ext == "parquet",
        "--out {}: the file must end in .jsonl or .parquet",
        a.out.display()
    );
    let (store, records) = load_source(&a.source, a.store.as_deref())?;
    let (examples, coverage) = select(&store, &records, a.kind, a.cap, a.require_arch)?;
    write_examples(&examples, &a.out)?;
    let report = render_coverage(&a, &examples, &coverage);
    print!("{report}");
    let mut cov_path = a.out.clone().into_os_string();
    cov_path.push(".coverage.txt");
    let cov_path = PathBuf::from(cov_path);
    // Through the one atomic write: a link, FIFO or store file there is refused, never written
    // through.
    crate::destination::write_atomic(&cov_path, report.as_bytes())
        .with_context(|| format!("writing {}", cov_path.display()))?;
    eprintln!("coverage report: {}", cov_path.display());
    Ok(ExitCode::SUCCESS)
}

/// The store and the records a source names (deduplicated, sorted by digest).
pub fn load_source(
    source: &str,
    store: Option<&Path>,
) -> anyhow::Result<(Store, BTreeMap<Digest, Record>)> {
    let path = Path::new(source);
    let mut roots: Vec<Digest> = Vec::new();
    let store = if path.is_file() {
        let m = Manifest::load(path)?;
        roots.extend(
            m.runs
                .iter()
                .chain(&m.generations)
                .chain(&m.records)
                .copied(),
        );
        let root = match store {
            Some(s) => s.to_path_buf(),
            None => {
                let start = std::path::absolute(path)?;
                Store::discover(start.parent().unwrap_or(Path::new(".")))
                    .context("no artifacts/ store near the manifest; pass --store")?
            }
        };
        Store::open(root)
    } else {
        let root = match store {
            Some(s) => s.to_path_buf(),
            None => Store::discover(&std::env::current_dir()?)
                .context("no artifacts/ store here or above; pass --store")?,
        };
        let s = Store::open(root);
        roots.push(s.resolve(source).with_context(|| {
            format!("`{source}` is neither a manifest file nor a stored object")
        })?);
        s
    };
    let mut records = BTreeMap::new();
    let mut stack = roots;
    let mut seen = BTreeSet::new();
    while let Some(d) = stack.pop() {
        if !seen.insert(d) {
            continue;
        }
        let value: serde_json::Value = store.get_json(&d)?;
        let schema = value["schema"].as_str().unwrap_or("").to_string();
        let list = |key: &str| -> anyhow::Result<Vec<Digest>> {
            Ok(serde_json::from_value(value[key].clone()).unwrap_or_default())
        };
        match schema.split('/').next().unwrap_or("") {
            "ptxbench.record" => {
                let r = crate::record::load_record(&store, &d)?;
                records.insert(d, r);
            }
            "ptxbench.run" | "ptxbench.trajectory" => stack.extend(list("record_digests")?),
            "ptxbench.generation" => {
                stack.extend(list("run_digests")?);
                stack.extend(list("trajectory_digests")?);
            }
            other => anyhow::bail!("{d}: a `{other}` object holds no records to export"),
        }
    }
    Ok((store, records))
}

fn messages_of(store: &Store, r: &Record) -> anyhow::Result<Option<Vec<Message>>> {
    let Some(p) = r.prompt_digest else {
        return Ok(None);
    };
    let bytes = store.get(&p)?;
    Ok(serde_json::from_slice(&bytes).ok())
}

/// The canonical answer of a record: its kernel and its plan in fenced blocks.
fn canonical_answer(store: &Store, r: &Record) -> anyhow::Result<Option<String>> {
    let (digest, tag) = match (r.kernel_source_digest, r.ptx_digest) {
        (Some(d), _) => (d, "cuda"),
        (None, Some(d)) => (d, "ptx"),
        (None, None) => return Ok(None),
    };
    let text = |d: &Digest| -> anyhow::Result<String> {
        Ok(String::from_utf8_lossy(&store.get(d)?).to_string())
    };
    let kernel = text(&digest)?;
    let plan = text(&r.plan_digest)?;
    let nl = |s: &str| if s.ends_with('\n') { "" } else { "\n" };
    Ok(Some(format!(
        "```{tag}\n{kernel}{}```\n\n```yaml\n{plan}{}```\n",
        nl(&kernel),
        nl(&plan)
    )))
}

/// The conversation's opening: its system messages and its first user message.
fn opening(messages: &[Message]) -> Vec<Message> {
    let mut out: Vec<Message> = messages
        .iter()
        .take_while(|m| m.role == "system")
        .cloned()
        .collect();
    if let Some(u) = messages.iter().find(|m| m.role == "user") {
        out.push(u.clone());
    }
    out
}

/// Builds, deduplicates and caps the examples.
pub fn select(
    store: &Store,
    records: &BTreeMap<Digest, Record>,
    kind: SftKind,
    cap: Option<usize>,
    require_arch: bool,
) -> anyhow::Result<(Vec<Example>, Coverage)> {
    let mut cov = Coverage::default();
    let mut candidates: Vec<(Example, String)> = Vec::new();
    for (d, r) in records {
        if r.verdict != Verdict::Correct {
            continue;
        }
        let (Some(ptx), Some(messages), Some(answer)) = (
            r.ptx_digest,
            messages_of(store, r)?,
            canonical_answer(store, r)?,
        ) else {
            continue;
        };
        let base = |messages: Vec<Message>| Example {
            messages,
            kind: match kind {
                SftKind::Kernelgen => "kernelgen".into(),
                SftKind::Fixit => "fixit".into(),
            },
            task: r.task.clone(),
            arch: r.arch.to_string(),
            model: r.model.clone().unwrap_or_else(|| r.entry.clone()),
            record_digest: d.to_string(),
            ptx_digest: ptx.to_string(),
            speedup: r.min_speedup,
            failed_record_digest: None,
            failed_verdict: None,
        };
        match kind {
            SftKind::Kernelgen => {
                let mut m = opening(&messages);
                m.push(Message::new("assistant", answer));
                candidates.push((base(m), ptx.to_string()));
            }
            SftKind::Fixit => {
                let Some(prev_digest) = r.previous_digest else {
                    continue;
                };
                let prev: Record = match records.get(&prev_digest) {
                    Some(p) => p.clone(),
                    None => crate::record::load_record(store, &prev_digest)?,
                };
                if matches!(prev.verdict, Verdict::Correct | Verdict::Other) {
                    continue;
                }
                // The conversation of the fixed turn ends with the failed answer and its feedback.
                let n = messages.len();
                if n < 3 || messages[n - 2].role != "assistant" || messages[n - 1].role != "user" {
                    continue;
                }
                let mut m = opening(&messages);
                m.push(messages[n - 2].clone());
                m.push(messages[n - 1].clone());
                m.push(Message::new("assistant", answer));
                let mut e = base(m);
                e.failed_record_digest = Some(prev_digest.to_string());
                e.failed_verdict = Some(prev.verdict.as_str().to_string());
                let failed_key = prev
                    .ptx_digest
                    .or(prev.response_digest)
                    .map(|x| x.to_string())
                    .unwrap_or_default();
                candidates.push((e, format!("{failed_key}>{ptx}")));
            }
        }
    }
    cov.candidates = candidates.len();
    if require_arch {
        let before = candidates.len();
        candidates.retain(|(e, _)| {
            e.record_digest
                .parse::<Digest>()
                .ok()
                .and_then(|d| records.get(&d))
                .is_some_and(target_executed)
        });
        cov.notes.push(format!(
            "{REQUIRE_ARCH_NOTE} ({} of {before} kept)",
            candidates.len()
        ));
    }
    // Deterministic order, then dedup by PTX (first kept).
    candidates.sort_by(|(a, _), (b, _)| {
        (&a.task, &a.arch, &a.record_digest).cmp(&(&b.task, &b.arch, &b.record_digest))
    });
    let mut seen = BTreeSet::new();
    let mut unique = Vec::new();
    for (e, key) in candidates {
        if seen.insert(key) {
            unique.push(e);
        } else {
            cov.duplicates += 1;
        }
    }
    // Per task: interleave archs (rank within arch first), then cap.
    let mut by_task: BTreeMap<String, Vec<(usize, Example)>> = BTreeMap::new();
    let mut rank: BTreeMap<(String, String), usize> = BTreeMap::new();
    for e in unique {
        let r = rank.entry((e.task.clone(), e.arch.clone())).or_default();
        by_task.entry(e.task.clone()).or_default().push((*r, e));
        *r += 1;
    }
    let mut out = Vec::new();
    for (_, mut list) in by_task {
        list.sort_by(|(ra, a), (rb, b)| (ra, &a.arch).cmp(&(rb, &b.arch)));
        let keep = cap.unwrap_or(usize::MAX);
        cov.over_cap += list.len().saturating_sub(keep);
        out.extend(list.into_iter().take(keep).map(|(_, e)| e));
    }
    out.sort_by(|a, b| {
        (&a.task, &a.arch, &a.record_digest).cmp(&(&b.task, &b.arch, &b.record_digest))
    });
    for e in &out {
        *cov.per_task_arch
            .entry((e.task.clone(), e.arch.clone()))
            .or_default() += 1;
        if let Some(v) = &e.failed_verdict {
            *cov.repaired_verdicts.entry(v.clone()).or_default() += 1;
        }
    }
    Ok((out, cov))
}

/// Writes the examples as JSON lines or Parquet (atomically: temp file, then rename; see
/// [`crate::destination`]).
pub fn write_examples(examples: &[Example], path: &Path) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut tmp = crate::destination::temp_for(path, crate::metrics::export::TEMP_PREFIX)?;
    let parquet = path.extension().and_then(|e| e.to_str()) == Some("parquet");
    // Through a `FirstError`: a failed write (a full disk) is reported as itself, naming the
    // file, not as what the encoder makes of it.
    let mut w = crate::destination::FirstError::new(std::io::BufWriter::new(tmp.as_file_mut()));
    let written = write_to(examples, parquet, &mut w, path);
    let flushed = w.flush();
    w.check(path)?;
    written?;
    flushed.with_context(|| format!("writing {}", path.display()))?;
    drop(w);
    crate::destination::persist(tmp, path)?;
    Ok(())
}

/// Encodes the examples into `w`: Parquet, or JSON lines; `path` names the file in errors.
fn write_to(
    examples: &[Example],
    parquet: bool,
    w: &mut dyn std::io::Write,
    path: &Path,
) -> anyhow::Result<()> {
    if parquet {
        use polars::prelude::*;
        use polars_io::SerReader as _;
        use polars_io::json::{JsonFormat, JsonReader};
        use polars_io::parquet::write::ParquetWriter;
        let mut frame = if examples.is_empty() {
            DataFrame::new(
                0,
                vec![Column::new("messages".into(), Vec::<String>::new())],
            )?
        } else {
            let json = serde_json::to_vec(examples)?;
            JsonReader::new(std::io::Cursor::new(json))
                .with_json_format(JsonFormat::Json)
                .infer_schema_len(None)
                .finish()
                .map_err(|e| anyhow::anyhow!("building the Parquet table: {e}"))?
        };
        ParquetWriter::new(w)
            .finish(&mut frame)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    } else {
        for e in examples {
            serde_json::to_writer(&mut *w, e)?;
            w.write_all(b"\n")?;
        }
    }
    Ok(())
}

fn render_coverage(a: &SftArgs, examples: &[Example], c: &Coverage) -> String {
    let mut s = String::new();
    let kind = match a.kind {
        SftKind::Kernelgen => "kernelgen (prompt → verified kernel)",
        SftKind::Fixit => "fixit (prompt, failed answer, feedback → fixed kernel)",
    };
    let _ = writeln!(s, "SFT export {kind} from {}", a.source);
    let _ = writeln!(
        s,
        "examples written: {} to {}",
        examples.len(),
        a.out.display()
    );
    let _ = writeln!(
        s,
        "candidates: {}; duplicates dropped (same PTX): {}; over the per-task cap{}: {}",
        c.candidates,
        c.duplicates,
        a.cap.map_or(String::new(), |n| format!(" of {n}")),
        c.over_cap
    );
    for n in &c.notes {
        let _ = writeln!(s, "note: {n}");
    }
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
    t.set_header(["task", "arch", "examples"]);
    for ((task, arch), n) in &c.per_task_arch {
        t.add_row([task.clone(), arch.clone(), n.to_string()]);
    }
    if !c.per_task_arch.is_empty() {
        let _ = writeln!(s, "{t}");
    }
    if a.kind == SftKind::Fixit {
        let _ = writeln!(
            s,
            "failures repaired, by verdict class: {}",
            if c.repaired_verdicts.is_empty() {
                "none".to_string()
            } else {
                c.repaired_verdicts
                    .iter()
                    .map(|(v, n)| format!("{v} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
    }
    s
}
