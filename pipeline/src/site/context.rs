//! What the pages are built from: the loaded input plus everything derived from it once
//! (metrics, the peak proxies, entries and their slugs, record indexes). Building it is the
//! only place records and reported data become metric samples.

use std::collections::{BTreeMap, BTreeSet};

use crate::digest::{Digest, DigestMap};
use crate::metrics::reported::{Grouping, reported_arch, reported_samples};
use crate::metrics::{self, Metrics, Provenance, Sample, Samples};
use crate::store::reported::ReportedResult;
use crate::task::{Task, WorkloadKind};

use super::SiteError;
pub use super::entries::{EntryInfo, EntryKind, Pending};
use super::input::{LoadedRecord, SiteInput};
use super::paths;
pub use super::rates::{FlopTable, WorkloadRate, workload_rates};
use super::trajectory::Trajectories;
use crate::record::Record;

/// The name prefix of the engine's simple kernels ([`EntryKind::EngineCheck`]).
pub const ENGINE_CHECK_PREFIX: &str = "simt-";

/// Whether a record was evaluated: `generate --no-eval` stores candidates that were checked,
/// never run (stage `not-evaluated`); they count in no table and no plot.
pub fn is_evaluated(r: &Record) -> bool {
    r.outcome.stage != crate::record::Stage::NotEvaluated
}

/// The peak proxy of one (arch, GPU, precision): the best library throughput seen in any
/// record measured on that GPU (a library is faster on one GPU than on another, so a fraction
/// of another GPU's peak would say nothing).
#[derive(Debug, Clone, PartialEq)]
pub struct Peak {
    pub arch: String,
    /// The GPU's name as the records give it (empty: not recorded).
    pub gpu: String,
    /// The dtype of the task's first input (`bf16`, `e4m3`).
    pub precision: String,
    pub tflops: f64,
    pub task: String,
    pub workload: String,
    pub record: Digest,
}

#[derive(Debug)]
pub struct Context<'a> {
    pub input: &'a SiteInput,
    pub metrics: Metrics,
    /// By name.
    pub entries: BTreeMap<String, EntryInfo>,
    /// Architectures with any data, sorted (`sm_100a` < `sm_90a` as text; see [`Context::archs`]).
    pub archs: Vec<String>,
    pub peaks: Vec<Peak>,
    /// Task ids of the suite and of the data, sorted.
    pub tasks: Vec<String>,
    /// Indices into `input.records` of role `entry`, by entry name.
    pub entry_records: BTreeMap<String, Vec<usize>>,
    /// Indices into `input.records` of every role, by task.
    pub task_records: BTreeMap<String, Vec<usize>>,
    /// Indices into `input.records` of role `harness-test`.
    pub harness: Vec<usize>,
    /// Indices into `input.records` of records that were not evaluated ([`is_evaluated`]).
    pub unevaluated: Vec<usize>,
    /// Indices into `input.records` of the records of (entry, arch) pairs with work not
    /// evaluated yet ([`Pending`]), evaluated or not: in no table, plot or rate.
    pub pending: Vec<usize>,
    /// Indices into `input.records` of role `entry`, by (entry, arch, GPU, task) (the GPU as
    /// [`Record::gpu_name`] gives it, empty where none).
    pub cell_records: BTreeMap<CellKey, Vec<usize>>,
    /// The paper's own per-run aggregates, per reported data set (as published).
    pub published: Vec<Vec<ReportedResult>>,
    /// `Suite::digest()` of the suite, computed once (it hashes every task).
    pub suite_digest: Digest,
    /// `Task::digest()` of every task of the suite, by id.
    pub task_digests: BTreeMap<String, Digest>,
    /// Suite versions by suite hash: this site's suite, the manifest's, and the suite objects
    /// records name.
    pub suite_versions: BTreeMap<Digest, String>,
    pub flops: FlopTable,
    /// The footer every page shows (made once).
    pub footer: String,
    /// Text blobs shown on a page of their own (see [`Context::is_shared`]), with the records
    /// that name them (indices, sorted) and what they hold there.
    pub shared_blobs: BTreeMap<Digest, SharedBlob>,
    /// The generation trajectories among the records.
    pub trajectories: Trajectories,
    /// Every stored object the site copies into `objects/` byte for byte (records, the blobs
    /// they name, their task and suite objects, runs and run lists), sorted.
    pub objects: BTreeSet<Digest>,
    /// What each digest of the site is, for [`Context::digest_link`]: whether the site has its
    /// bytes (`objects`) and whether it is one of the records (pages look digests up hundreds
    /// of thousands of times).
    pub kinds: DigestMap<DigestKind>,
    /// Per-entry metrics over the core tasks only ([`crate::metrics::core_set`]), sorted as
    /// `metrics.overall`.
    pub core_overall: Vec<crate::metrics::OverallMetrics>,
    /// The core tasks that have data here, in [`crate::metrics::core_set::CORE_TASKS`] order.
    pub core_tasks: Vec<String>,
    /// Library time, best reference and best model per task and workload.
    pub ceilings: super::ceiling::Ceilings,
    /// Each record's place (by index into `input.records`) in the order record lists use:
    /// entry, task, turn, digest. Sorted once, so a page listing thousands of records orders
    /// them by comparing numbers.
    pub list_rank: Vec<u32>,
}

/// The key of a metric row's records: (entry, arch, GPU, task).
pub type CellKey = (String, String, String, String);

/// What the site holds of a digest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DigestKind {
    /// Its exact bytes are in `objects/`.
    pub stored: bool,
    /// It is a record of the site.
    pub record: bool,
}

/// A digest as pages show it: where it leads (its page, else its bytes; empty for a hash that
/// names no stored object, such as `task_hash`) and its bytes for download.
#[derive(Debug, Clone, Default)]
pub struct DigestLink {
    pub digest: String,
    pub href: String,
    /// The object's exact bytes (`objects/<digest>`); empty when the site has no copy.
    pub raw: String,
    /// The file name a download suggests (`<digest>.json`, `.ptx`, ...).
    pub file: String,
}

/// A text blob named by several records: rendered once, linked from each.
#[derive(Debug, Clone, Default)]
pub struct SharedBlob {
    pub records: Vec<usize>,
    pub kinds: BTreeSet<super::blob_kind::BlobKind>,
    /// Whether it is a chat transcript ([`super::pages::text::chat`]), worked out once rather
    /// than on every page that names it.
    pub is_chat: bool,
    /// Its lines as pages say them ("N lines").
    pub lines: String,
}

/// A text blob named by at least this many records and at least [`SHARED_MIN_BYTES`] long gets
/// a page of its own instead of being repeated on every record page (prompts are shared by
/// every replica; one compiled kernel often serves many tasks).
pub const SHARED_MIN_RECORDS: usize = 2;
pub const SHARED_MIN_BYTES: usize = 1024;

/// Order of architectures on pages: by SM generation.
fn arch_rank(arch: &str) -> (u32, String) {
    let sm = arch
        .trim_start_matches("sm_")
        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse()
        .unwrap_or(u32::MAX);
    (sm, arch.to_string())
}

/// The precision class of a task, for the peak proxy.
pub fn precision(task: &Task) -> String {
    task.inputs
        .first()
        .map_or_else(|| "?".to_string(), |t| t.dtype.as_str().to_string())
}

impl<'a> Context<'a> {
    pub fn new(input: &'a SiteInput) -> Result<Context<'a>, SiteError> {
        Context::with_objects(input, objects(input))
    }

    /// [`Context::new`], given the stored objects the site copies ([`objects`] of `input`),
    /// which a build works out first to copy them while the rest is derived.
    pub fn with_objects(
        input: &'a SiteInput,
        objects: BTreeSet<Digest>,
    ) -> Result<Context<'a>, SiteError> {
        let suite = &input.suite;
        let records = &input.records;
        let flops = FlopTable::new(suite);

        let mut peak_at: BTreeMap<PeakKey, Peak> = BTreeMap::new();
        for r in records {
            let Some(task) = suite.get(&r.record.task) else {
                continue;
            };
            // The peak proxy is a library's throughput: a composed baseline is not one.
            if composed_baseline(r, Some(task)) {
                continue;
            }
            for w in workload_rates(&r.record, &flops) {
                let Some(tf) = w.baseline_tflops else {
                    continue;
                };
                let key = (
                    r.record.arch.to_string(),
                    r.record.gpu_name().unwrap_or_default().to_string(),
                    precision(task),
                );
                let better = peak_at.get(&key).is_none_or(|p| tf > p.tflops);
                if better {
                    peak_at.insert(
                        key.clone(),
                        Peak {
                            arch: key.0,
                            gpu: key.1,
                            precision: key.2,
                            tflops: tf,
                            task: task.id.to_string(),
                            workload: w.workload.clone(),
                            record: r.digest,
                        },
                    );
                }
            }
        }

        let mut samples = Samples::with_capacity(records.len());
        let mut entries: BTreeMap<String, EntryInfo> = BTreeMap::new();
        let mut entry_records: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut task_records: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut harness = Vec::new();
        let mut unevaluated = Vec::new();
        let mut cell_records: BTreeMap<CellKey, Vec<usize>> = BTreeMap::new();
        let mut archs = BTreeSet::new();
        let mut tasks: BTreeSet<String> = suite.tasks.iter().map(|t| t.id.to_string()).collect();
        let add_entry = |entries: &mut BTreeMap<String, EntryInfo>,
                         name: &str,
                         prov: Provenance,
                         arch: &str,
                         gpu: &str| {
            let e = entry_info(entries, name);
            e.provenances.insert(prov);
            if prov == Provenance::Reported {
                e.kind = EntryKind::Model;
            }
            let gpus = e.gpus.entry((prov, arch.to_string())).or_default();
            if !gpu.is_empty() {
                gpus.insert(gpu.to_string());
            }
        };

        let roots = trajectory_roots(records);
        let pending_pairs: BTreeSet<(&str, String)> = records
            .iter()
            .filter(|r| !is_evaluated(&r.record) && !r.record.is_harness_test())
            .map(|r| (r.record.entry.as_str(), r.record.arch.to_string()))
            .collect();
        let mut pending = Vec::new();
        for (i, r) in records.iter().enumerate() {
            let arch = r.record.arch.to_string();
            let evaluated = is_evaluated(&r.record);
            if !evaluated {
                unevaluated.push(i);
            }
            if !r.record.is_harness_test()
                && pending_pairs.contains(&(r.record.entry.as_str(), arch.clone()))
            {
                // Not a rate until every answer of the pair is evaluated ([`Pending`]).
                pending.push(i);
                archs.insert(arch.clone());
                let e = entry_info(&mut entries, &r.record.entry);
                if r.record.model.is_some() {
                    e.kind = EntryKind::Model;
                }
                let p = e.pending.entry(arch.clone()).or_default();
                if evaluated {
                    p.graded += 1;
                } else {
                    p.unevaluated += 1;
                }
                p.tasks.insert(r.record.task.clone());
                entry_records
                    .entry(r.record.entry.clone())
                    .or_default()
                    .push(i);
            }
            if !evaluated {
                continue;
            }
            tasks.insert(r.record.task.clone());
            task_records
                .entry(r.record.task.clone())
                .or_default()
                .push(i);
            if r.record.is_harness_test() {
                harness.push(i);
                continue;
            }
            // A given seed fixed every input in advance: the record has its page, no rank.
            if r.record.seed_given || pending.last() == Some(&i) {
                continue;
            }
            archs.insert(arch.clone());
            let gpu = r.record.gpu_name().unwrap_or_default().to_string();
            add_entry(
                &mut entries,
                &r.record.entry,
                Provenance::Measured,
                &arch,
                &gpu,
            );
            if r.record.model.is_some()
                && let Some(e) = entries.get_mut(&r.record.entry)
            {
                e.kind = EntryKind::Model;
            }
            entry_records
                .entry(r.record.entry.clone())
                .or_default()
                .push(i);
            cell_records
                .entry((
                    r.record.entry.clone(),
                    arch.clone(),
                    gpu.clone(),
                    r.record.task.clone(),
                ))
                .or_default()
                .push(i);
            let task = suite.get(&r.record.task);
            samples.push(record_sample(r, roots[i], task, &flops, &peak_at));
        }

        let mut published = Vec::new();
        for rep in &input.reported {
            let rows = rep.data.results().map_err(|source| SiteError::Reported {
                label: rep.label.clone(),
                digest: rep.data.import_digest,
                source: Box::new(source),
            })?;
            for row in &rows {
                if let Some((arch, gpu)) = reported_arch(&row.arch) {
                    archs.insert(arch.to_string());
                    add_entry(&mut entries, &row.model, Provenance::Reported, arch, gpu);
                    tasks.insert(row.definition.clone());
                }
            }
            published.push(rows);
            if let Some(s) = reported_samples(&rep.data, Grouping::Task)? {
                samples.extend(s);
            }
        }

        let slugs = paths::unique_slugs(entries.keys().map(String::as_str));
        for (name, e) in entries.iter_mut() {
            e.slug = slugs
                .get(name)
                .cloned()
                .unwrap_or_else(|| paths::slug(name));
            if name.starts_with(ENGINE_CHECK_PREFIX) && e.kind == EntryKind::Reference {
                e.kind = EntryKind::EngineCheck;
            }
            if let Some(m) = input.manifest.models.get(name) {
                e.kind = if m.ablation_of.is_some() {
                    EntryKind::Ablation
                } else {
                    EntryKind::Model
                };
                e.display_name = m.display_name.clone();
                e.organisation = Some(m.organisation.clone());
                e.release_date = m.release_date.clone();
            }
        }

        let metrics = metrics::compute(samples)?;
        let core_overall = metrics::core_set::core_overall(&metrics.tasks)?;
        let core_tasks = metrics::core_set::CORE_TASKS
            .iter()
            .filter(|t| metrics.tasks.iter().any(|m| m.task == **t))
            .map(|t| t.to_string())
            .collect();
        let ceilings = super::ceiling::ceilings(records, suite, &flops, &entries);
        let mut shared_blobs: BTreeMap<Digest, SharedBlob> = BTreeMap::new();
        for (i, r) in records.iter().enumerate() {
            for (kind, d) in super::blob_kind::text_blobs(&r.record) {
                let big = matches!(input.blobs.get(&d), Some(super::input::Blob::Text(t)) if t.len() >= SHARED_MIN_BYTES);
                if big {
                    let e = shared_blobs.entry(d).or_default();
                    if e.records.last() != Some(&i) {
                        e.records.push(i);
                    }
                    e.kinds.insert(kind);
                }
            }
        }
        shared_blobs.retain(|_, b| b.records.len() >= SHARED_MIN_RECORDS);
        for (d, b) in &mut shared_blobs {
            if let Some(super::input::Blob::Text(t)) = input.blobs.get(d) {
                b.is_chat = super::pages::text::chat(t).is_some();
                b.lines = super::pages::text::TextView::new(t.as_str()).lines_text();
            }
        }
        let task_digests = suite
            .tasks
            .iter()
            .map(|t| (t.id.to_string(), t.digest()))
            .collect();
        let mut archs: Vec<String> = archs.into_iter().collect();
        archs.sort_by_key(|a| arch_rank(a));
        let mut ctx = Context {
            input,
            metrics,
            entries,
            archs,
            peaks: peak_at.into_values().collect(),
            tasks: tasks.into_iter().collect(),
            entry_records,
            task_records,
            harness,
            unevaluated,
            pending,
            cell_records,
            published,
            suite_digest: suite.digest(),
            task_digests,
            flops,
            shared_blobs,
            trajectories: Trajectories::new(records, &roots),
            kinds: DigestMap::default(),
            objects,
            core_overall,
            core_tasks,
            ceilings,
            footer: String::new(),
            suite_versions: suite_versions(input),
            list_rank: list_ranks(records),
        };
        let mut kinds = DigestMap::default();
        kinds.reserve(ctx.objects.len());
        for d in &ctx.objects {
            kinds.insert(
                *d,
                DigestKind {
                    stored: true,
                    record: false,
                },
            );
        }
        for r in &input.records {
            kinds.entry(r.digest).or_default().record = true;
        }
        ctx.kinds = kinds;
        ctx.footer = footer(&ctx);
        Ok(ctx)
    }

    /// Whether `r` was measured against another definition of its task than this site's suite
    /// holds (`false` for a task the suite does not have: nothing to compare with).
    pub fn task_changed(&self, r: &Record) -> bool {
        self.task_digests
            .get(&r.task)
            .is_some_and(|current| *current != r.task_hash)
    }

    /// How many records were measured against an earlier definition of their task.
    pub fn changed_task_records(&self) -> usize {
        self.input
            .records
            .iter()
            .filter(|r| self.task_changed(&r.record))
            .count()
    }

    /// The version of the suite `r` was measured against, or its hash where the version is not
    /// known here.
    pub fn suite_of(&self, r: &Record) -> String {
        self.suite_versions
            .get(&r.suite_hash)
            .cloned()
            .unwrap_or_else(|| format!("hash {}", r.suite_hash.short(12)))
    }

    /// The best correct record of (entry, arch, GPU, task) among turns below `turn_limit`: the
    /// largest smallest-over-workloads speedup, then untimed ones, then digest order. What an
    /// aggregate's cell links to as its evidence.
    pub fn best_record(
        &self,
        entry: &str,
        arch: &str,
        gpu: &str,
        task: &str,
        turn_limit: u32,
    ) -> Option<&LoadedRecord> {
        let key = (
            entry.to_string(),
            arch.to_string(),
            gpu.to_string(),
            task.to_string(),
        );
        let speed = |r: &LoadedRecord| r.record.min_speedup().filter(|s| s.is_finite());
        self.cell_records
            .get(&key)?
            .iter()
            .map(|&i| &self.input.records[i])
            .filter(|r| r.record.is_correct() && r.record.turn.unwrap_or(0) < turn_limit)
            .min_by(|a, b| match (speed(a), speed(b)) {
                (Some(x), Some(y)) => y.total_cmp(&x).then(a.digest.cmp(&b.digest)),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => a.digest.cmp(&b.digest),
            })
    }

    /// How digest `d` is linked from page `from`: a record to its page, a shared text blob to
    /// its page, any other stored object to its bytes; `ext` names the download (`json`, `ptx`).
    pub fn digest_link(&self, from: &str, d: &Digest, ext: &str) -> DigestLink {
        let kind = self.kinds.get(d).copied().unwrap_or_default();
        let stored = kind.stored;
        let digest = d.hex();
        let raw = if stored {
            paths::link_parts(from, &[paths::OBJECTS, &digest])
        } else {
            String::new()
        };
        let href = if kind.record {
            paths::link_parts(from, &["record/", &digest, ".html"])
        } else if self.is_shared(d) {
            paths::link_parts(from, &["blob/", &digest, ".html"])
        } else {
            raw.clone()
        };
        let file = if stored {
            [digest.as_str(), ".", ext].concat()
        } else {
            String::new()
        };
        DigestLink {
            file,
            digest,
            href,
            raw,
        }
    }

    /// Whether blob `d` is shown on its own page rather than inline.
    pub fn is_shared(&self, d: &Digest) -> bool {
        self.shared_blobs.contains_key(d)
    }

    pub fn entry(&self, name: &str) -> Option<&EntryInfo> {
        self.entries.get(name)
    }

    /// Whether a metric row of `entry` at `turn_limit` is shown in the per-task tables and
    /// the downloads: never one of the engine's simple kernels (listed with the harness tests),
    /// and a reference kernel (one attempt) at the first turn limit only, where the others
    /// would repeat it.
    pub fn listed(&self, entry: &str, turn_limit: u32) -> bool {
        match self.entry(entry).map(|e| e.kind) {
            Some(EntryKind::EngineCheck) => false,
            Some(EntryKind::Reference) => turn_limit == crate::metrics::TURN_LIMITS[0],
            _ => true,
        }
    }

    /// The peak proxy of (arch, GPU, precision), where a record measured one.
    pub fn peak(&self, arch: &str, gpu: &str, precision: &str) -> Option<&Peak> {
        self.peaks
            .iter()
            .find(|p| p.arch == arch && p.gpu == gpu && p.precision == precision)
    }
}

/// The entry named `name`, made (a reference until something says otherwise) when new.
fn entry_info<'e>(entries: &'e mut BTreeMap<String, EntryInfo>, name: &str) -> &'e mut EntryInfo {
    entries
        .entry(name.to_string())
        .or_insert_with(|| EntryInfo {
            kind: EntryKind::Reference,
            name: name.to_string(),
            slug: String::new(),
            display_name: name.to_string(),
            organisation: None,
            release_date: None,
            provenances: BTreeSet::new(),
            gpus: BTreeMap::new(),
            pending: BTreeMap::new(),
        })
}

/// [`Context::list_rank`] of `records`.
fn list_ranks(records: &[LoadedRecord]) -> Vec<u32> {
    let mut order: Vec<usize> = (0..records.len()).collect();
    order.sort_unstable_by(|a, b| {
        let (x, y) = (&records[*a], &records[*b]);
        (&x.record.entry, &x.record.task, x.record.turn, x.digest).cmp(&(
            &y.record.entry,
            &y.record.task,
            y.record.turn,
            y.digest,
        ))
    });
    let mut rank = vec![0u32; records.len()];
    for (place, i) in order.into_iter().enumerate() {
        rank[i] = u32::try_from(place).unwrap_or(u32::MAX);
    }
    rank
}

/// Every object the site copies into `objects/`.
pub fn objects(input: &SiteInput) -> BTreeSet<Digest> {
    let mut out = BTreeSet::new();
    for r in &input.records {
        out.insert(r.digest);
        let doc = &r.record;
        out.extend(super::blob_kind::text_blobs(doc).map(|(_, d)| d));
        out.extend(
            [doc.cubin_digest, doc.task_digest, doc.suite_digest]
                .into_iter()
                .flatten(),
        );
    }
    for run in &input.runs {
        out.insert(run.digest);
        out.insert(run.run.list_digest);
    }
    out.extend(input.manifest.suites.iter().copied());
    // The reported data's import object and its files, so every reported row traces to bytes.
    for rep in &input.reported {
        out.insert(rep.data.import_digest);
        out.extend(rep.data.files.iter().map(|f| f.content_digest));
    }
    out
}

/// Suite versions by suite hash, from everything the site knows.
fn suite_versions(input: &SiteInput) -> BTreeMap<Digest, String> {
    let mut v: BTreeMap<Digest, String> = input
        .suites
        .iter()
        .map(|(h, s)| (*h, s.version.clone()))
        .collect();
    v.insert(
        input.manifest.suite.hash,
        input.manifest.suite.version.clone(),
    );
    v.insert(input.suite.digest(), input.suite.version.clone());
    v
}

/// The footer of every page: what the site was built from, and what that means for the
/// measured records (see the methodology page's suite section).
fn footer(ctx: &Context<'_>) -> String {
    let input = ctx.input;
    let manifest = &input.manifest.suite;
    let against = if manifest.hash == ctx.suite_digest {
        String::from("the suite its manifest names")
    } else {
        format!(
            "not the suite its manifest names ({} {}); results are compared with the tasks of {}",
            manifest.version,
            manifest.hash.short(12),
            input.suite.version
        )
    };
    let changed = ctx.changed_task_records();
    let flagged = match changed {
        0 => String::new(),
        1 => " 1 measured record was made against an earlier definition of its task and is flagged \"task changed\".".into(),
        n => format!(" {n} measured records were made against an earlier definition of their task and are flagged \"task changed\"."),
    };
    format!(
        "Built from {} (blake3 {}) with task suite {} ({}), {against}.{flagged} Reported numbers are the paper's, as published; measured numbers come from records in this repository's store.",
        input.manifest_name,
        input.manifest_digest.short(12),
        input.suite.version,
        ctx.suite_digest.short(12),
    )
}

/// For each record (by index), the digest of the first record of its trajectory: the end of
/// its `previous_digest` chain among the loaded records (itself when it has none).
fn trajectory_roots(records: &[LoadedRecord]) -> Vec<Digest> {
    let index: BTreeMap<Digest, usize> = records
        .iter()
        .enumerate()
        .map(|(i, r)| (r.digest, i))
        .collect();
    records
        .iter()
        .map(|r| {
            let mut at = r;
            // A chain longer than the records is a cycle: stop there.
            for _ in 0..records.len() {
                match at.record.previous_digest.and_then(|p| index.get(&p)) {
                    Some(&j) => at = &records[j],
                    None => break,
                }
            }
            at.digest
        })
        .collect()
}

/// The key of a peak proxy: (arch, GPU, precision).
type PeakKey = (String, String, String);

/// Whether `r`'s speedups are over a composed baseline: its record names one, or its task's
/// definition does (records made before the composed baseline was built have no speedup).
fn composed_baseline(r: &LoadedRecord, task: Option<&Task>) -> bool {
    let provider = crate::engine::composed::PROVIDER;
    r.record
        .outcome
        .baseline
        .as_ref()
        .is_some_and(|b| b.provider == provider)
        || task.is_some_and(|t| t.baseline.library == provider)
}

/// The metric sample of one record (role `entry`).
///
/// A trajectory is a chain of records linked by `previous_digest`, named by its first record;
/// a record without a turn is a single-turn trajectory (turn 0). `correct_with_arch` is
/// `None` unless the record carries dynamic target evidence.
fn record_sample(
    r: &LoadedRecord,
    root: Digest,
    task: Option<&Task>,
    flops: &FlopTable,
    peaks: &BTreeMap<PeakKey, Peak>,
) -> Sample {
    let record = &r.record;
    let arch = record.arch.to_string();
    let perf: Vec<WorkloadRate> = workload_rates(record, flops)
        .into_iter()
        .filter(|w| {
            task.and_then(|t| t.workload(&w.workload))
                .is_none_or(|wl| wl.kind == WorkloadKind::Performance)
        })
        .collect();
    let speedups: Vec<f64> = perf.iter().filter_map(|w| w.speedup).collect();
    let min = speedups
        .iter()
        .copied()
        .min_by(f64::total_cmp)
        .or(record.min_speedup);
    let best = speedups.iter().copied().max_by(f64::total_cmp).or(min);
    // The interval of the smallest speedup: if each workload's speedup lies in its interval,
    // the smallest lies between the smallest lower and the smallest upper bound. Only when
    // every timed workload has one.
    let timed: Vec<&WorkloadRate> = perf.iter().filter(|w| w.speedup.is_some()).collect();
    let cis = (!timed.is_empty())
        .then(|| {
            timed
                .iter()
                .map(|w| w.speedup_ci95)
                .collect::<Option<Vec<[f64; 2]>>>()
        })
        .flatten();
    let ci = cis.as_ref().map(|cis| {
        let lo = cis.iter().map(|c| c[0]).min_by(f64::total_cmp);
        let hi = cis.iter().map(|c| c[1]).min_by(f64::total_cmp);
        [lo.unwrap_or(f64::NAN), hi.unwrap_or(f64::NAN)]
    });
    // Likewise the largest lies between the largest lower and the largest upper bound.
    let best_ci = cis.as_ref().map(|cis| {
        let lo = cis.iter().map(|c| c[0]).max_by(f64::total_cmp);
        let hi = cis.iter().map(|c| c[1]).max_by(f64::total_cmp);
        [lo.unwrap_or(f64::NAN), hi.unwrap_or(f64::NAN)]
    });
    let gpu = record.gpu_name().unwrap_or_default().to_string();
    let peak = task.and_then(|t| peaks.get(&(arch.clone(), gpu.clone(), precision(t))));
    let peak_fraction = peak.and_then(|p| {
        perf.iter()
            .filter_map(|w| w.candidate_tflops)
            .max_by(f64::total_cmp)
            .map(|tf| tf / p.tflops)
    });
    let trajectory = root.to_string();
    let turn = record.turn.unwrap_or(0);
    Sample {
        provenance: Provenance::Measured,
        entry: record.entry.clone(),
        arch,
        gpu,
        task: record.task.clone(),
        trajectory,
        turn,
        correct: record.is_correct(),
        correct_with_arch: record.correct_with_arch(),
        correct_on_target: record.correct_on_target(),
        mma_flop_share: record.mma_flop_share(),
        speedup_min_ci95: ci,
        speedup_min: min,
        speedup_best: best,
        speedup_best_ci95: best_ci,
        peak_fraction,
        composed_baseline: composed_baseline(r, task),
    }
}
