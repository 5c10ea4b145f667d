//! What a generation leaves behind: with `--no-eval` the candidates as files and a run list per
//! arch for `ptxbench run`; once every trajectory has ended, a `ptxbench.run` object per arch
//! (all turns' records; with `--no-eval` records that were checked, not run, so the entry is on
//! a leaderboard before it is evaluated) and the `ptxbench.generation` object, with their
//! digests written into the output folder (`run-<arch>.digest`, `generation.digest`). A
//! manifest names a generation under `generations:` ([`load_generation`] reads it back).

use crate::record::Stage;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::TrajectorySpec;
use super::error::GenerateError;
use super::journal::Journal;
use super::manifest::GenManifest;
use crate::arch::Arch;
use crate::digest::Digest;
use crate::engine::Verdict;
use crate::record::{RUN_SCHEMA, Record, RunObject};
use crate::store::Store;
use crate::task::Suite;

/// The base seed of a generation and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seed {
    pub value: u64,
    /// Drawn from the operating system's entropy (now or when the generation started), not
    /// given by the manifest.
    pub drawn: bool,
}

pub const GENERATION_SCHEMA: &str = "ptxbench.generation/1";

/// Lists the runs and trajectories of one generation manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GenerationObject {
    pub schema: String,
    pub name: String,
    pub manifest_digest: Digest,
    pub no_eval: bool,
    /// The base seed of the evaluation seeds.
    pub seed: u64,
    /// Whether it was drawn from the operating system's entropy (the manifest gave none).
    pub seed_drawn: bool,
    /// One `ptxbench.run` per arch (with `--no-eval`, of records that are checked, not run).
    pub run_digests: Vec<Digest>,
    /// In work-list order.
    pub trajectory_digests: Vec<Digest>,
}

/// Reads the generation object `digest` from `store`, or says why it is not one.
pub fn load_generation(store: &Store, digest: &Digest) -> Result<GenerationObject, String> {
    #[derive(Deserialize)]
    struct Schema {
        schema: String,
    }
    let bytes = store.get(digest).map_err(|e| e.to_string())?;
    let not_one = |what: String| format!("{digest} is {what}, not a {GENERATION_SCHEMA} object");
    let schema = serde_json::from_slice::<Schema>(&bytes)
        .map_err(|_| not_one("not a JSON object with a schema".into()))?
        .schema;
    if schema != GENERATION_SCHEMA {
        let hint = if schema.starts_with("ptxbench.run/") {
            " (a run goes under `runs:`)"
        } else {
            ""
        };
        return Err(not_one(format!("a `{schema}` object")) + hint);
    }
    serde_json::from_slice(&bytes).map_err(|e| not_one(format!("malformed ({e})")))
}

/// What was published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// (run object, its name, its arch).
    pub runs: Vec<(Digest, String, Arch)>,
    pub generation: Digest,
}

/// A run list of candidates to evaluate later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateList {
    pub arch: Arch,
    pub count: usize,
    pub path: PathBuf,
}

/// The generation being published.
#[derive(Debug)]
pub struct Generated<'a> {
    pub manifest: &'a GenManifest,
    pub manifest_text: &'a str,
    pub suite: &'a Suite,
    pub seed: Seed,
    pub no_eval: bool,
    pub out: &'a Path,
}

fn write(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), GenerateError> {
    crate::destination::write_atomic(path, bytes.as_ref()).map_err(|e| GenerateError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    })
}

/// Publishes a run object per arch (all turns' records), then the generation object.
pub fn publish(
    store: &Store,
    journal: &Journal,
    specs: &[TrajectorySpec],
    g: &Generated,
) -> Result<Published, GenerateError> {
    let manifest_digest = store.put(g.manifest_text.as_bytes())?;
    let mut runs = Vec::new();
    for &arch in &g.manifest.archs {
        let mut records: Vec<Digest> = journal
            .turns
            .iter()
            .filter(|(k, _)| {
                specs
                    .iter()
                    .any(|s| s.arch == arch && k.starts_with(&format!("{}#", s.key)))
            })
            .map(|(_, t)| t.record_digest)
            .collect();
        if records.is_empty() {
            continue;
        }
        records.sort();
        let run = RunObject {
            schema: RUN_SCHEMA.into(),
            name: format!("{}-{arch}", g.manifest.name),
            arch,
            list_digest: manifest_digest,
            suite_hash: g.suite.digest(),
            record_digests: records,
        };
        let d = store.put_object(&run)?;
        write(&g.out.join(format!("run-{arch}.digest")), format!("{d}\n"))?;
        runs.push((d, run.name, arch));
    }
    let generation = GenerationObject {
        schema: GENERATION_SCHEMA.into(),
        name: g.manifest.name.clone(),
        manifest_digest,
        no_eval: g.no_eval,
        seed: g.seed.value,
        seed_drawn: g.seed.drawn,
        run_digests: runs.iter().map(|r| r.0).collect(),
        trajectory_digests: specs
            .iter()
            .filter_map(|s| journal.trajectories.get(&s.key).copied())
            .collect(),
    };
    let d = store.put_object(&generation)?;
    write(&g.out.join("generation.digest"), format!("{d}\n"))?;
    Ok(Published {
        runs,
        generation: d,
    })
}

#[derive(Serialize)]
struct RunListOut {
    name: String,
    arch: Arch,
    evaluations: Vec<EvaluationOut>,
}

#[derive(Serialize)]
struct EvaluationOut {
    name: String,
    kernel: String,
    plan: String,
    tasks: Vec<String>,
}

/// With `--no-eval`: each candidate that passed the static check, as files, and a run list per
/// arch that `ptxbench run` evaluates.
pub fn write_candidates(
    store: &Store,
    journal: &Journal,
    specs: &[TrajectorySpec],
    out: &Path,
    manifest: &GenManifest,
) -> Result<Vec<CandidateList>, GenerateError> {
    let mut lists: BTreeMap<Arch, Vec<EvaluationOut>> = BTreeMap::new();
    for s in specs {
        let Some(t) = journal.turns_of(&s.key).first().copied() else {
            continue;
        };
        let record: Record = store.get_json(&t.record_digest)?;
        if record.verdict != Verdict::Other || record.outcome.stage != Stage::NotEvaluated {
            continue;
        }
        let (kernel_digest, kernel_name) = match (record.kernel_source_digest, record.ptx_digest) {
            (Some(d), _) => (d, "kernel.cu"),
            (None, Some(d)) => (d, "kernel.ptx"),
            (None, None) => continue,
        };
        let slug: String = s
            .key
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let dir = out.join("candidates").join(&slug);
        std::fs::create_dir_all(&dir).map_err(|source| GenerateError::Io {
            path: dir.clone(),
            source,
        })?;
        write(&dir.join(kernel_name), store.get(&kernel_digest)?)?;
        write(&dir.join("plan.yaml"), store.get(&record.plan_digest)?)?;
        lists.entry(s.arch).or_default().push(EvaluationOut {
            name: s.key.clone(),
            kernel: format!("candidates/{slug}/{kernel_name}"),
            plan: format!("candidates/{slug}/plan.yaml"),
            tasks: vec![s.task.clone()],
        });
    }
    let mut written = Vec::new();
    for (arch, evaluations) in lists {
        let count = evaluations.len();
        let list = RunListOut {
            name: format!("{}-{arch}", manifest.name),
            arch,
            evaluations,
        };
        let path = out.join(format!("eval-{arch}.yaml"));
        let text =
            serde_saphyr::to_string(&list).map_err(|e| GenerateError::RunList(e.to_string()))?;
        write(&path, text)?;
        written.push(CandidateList { arch, count, path });
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_43_a_generation_reads_back_and_a_run_in_its_place_is_named() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path().to_path_buf());
        let run = store.put(b"a run").expect("stored");
        let g = GenerationObject {
            schema: GENERATION_SCHEMA.into(),
            name: "my-model".into(),
            manifest_digest: store.put(b"name: my-model").expect("stored"),
            no_eval: true,
            seed: 1,
            seed_drawn: false,
            run_digests: vec![run],
            trajectory_digests: Vec::new(),
        };
        let d = store.put_object(&g).expect("stored");
        assert_eq!(load_generation(&store, &d).expect("reads back"), g);
        let not = store
            .put(br#"{"schema":"ptxbench.run/1","name":"x"}"#)
            .expect("stored");
        let e = load_generation(&store, &not).expect_err("a run");
        assert!(
            e.contains("`ptxbench.run/1`") && e.contains("goes under `runs:`"),
            "{e}"
        );
        let e = load_generation(&store, &Digest::of(b"absent")).expect_err("missing");
        assert!(!e.is_empty());
    }
}
