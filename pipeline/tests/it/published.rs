//! The committed GPU evidence as published: the records of the runs that the default manifest
//! (manifests/leaderboard.yaml) names, read from the committed store through `ptxbench::record`.
//! A change to the record schema or to a stored record fails the tests that read them.

use ptxbench::digest::Digest;
use ptxbench::evidence::FamilyEvidence;
use ptxbench::manifest::Manifest;
use ptxbench::record::{self, Record};
use ptxbench::runner::list::RunList;
use ptxbench::store::Store;
use ptxbench::task::glob_match;

use crate::root;

/// A published record and the evaluation of its run list that made it.
#[derive(Debug)]
pub struct Published {
    pub digest: Digest,
    pub evaluation: String,
    pub record: Record,
}

/// How many of `records` ran on each GPU (by device name): a published list may run on several.
pub fn per_gpu<'a>(
    records: impl IntoIterator<Item = &'a Published>,
) -> std::collections::BTreeMap<String, usize> {
    let mut out = std::collections::BTreeMap::new();
    for r in records {
        let gpu = r
            .record
            .outcome
            .device
            .as_ref()
            .expect("device")
            .name
            .clone();
        *out.entry(gpu).or_default() += 1;
    }
    out
}

impl Published {
    /// The evidence of target family `name`, if the record has any.
    pub fn family(&self, name: &str) -> Option<&FamilyEvidence> {
        self.record
            .outcome
            .evidence
            .as_ref()
            .and_then(|e| e.families.iter().find(|f| f.family == name))
    }

    pub fn label(&self) -> String {
        format!(
            "{} on {} ({})",
            self.evaluation, self.record.task, self.digest
        )
    }
}

/// Every record of the manifest's run named `run`.
pub fn results(run: &str) -> Vec<Published> {
    let path = root().join("manifests/leaderboard.yaml");
    let manifest = Manifest::load(&path).expect("the default manifest");
    let store = Store::open(root().join("artifacts"));
    let list_path = root().join("tasks/runs").join(format!("{run}.yaml"));
    let mut out = Vec::new();
    for d in &manifest.runs {
        let object = record::load_run(&store, d).expect("a run the manifest names");
        if object.name != run {
            continue;
        }
        let list_text =
            String::from_utf8(store.get(&object.list_digest).expect("its list")).expect("UTF-8");
        let list = RunList::parse(&list_text, &list_path).expect("its run list parses");
        for r in &object.record_digests {
            let record = record::load_record(&store, r).expect("a record of the run");
            let evaluation = record
                .evaluation
                .clone()
                .unwrap_or_else(|| evaluation_of(&record, &list, &list_path, r));
            out.push(Published {
                digest: *r,
                evaluation,
                record,
            });
        }
    }
    assert!(!out.is_empty(), "the default manifest names no run `{run}`");
    out
}

/// The evaluation of `list` that made a record that does not name it (`ptxbench.record/1`):
/// the one of its entry whose plan file has the record's plan and whose patterns match its task.
fn evaluation_of(
    record: &Record,
    list: &RunList,
    list_path: &std::path::Path,
    d: &Digest,
) -> String {
    let base = list_path.parent().expect("the list's folder");
    let found: Vec<&str> = list
        .evaluations
        .iter()
        .filter(|e| e.entry() == record.entry)
        .filter(|e| e.tasks.iter().any(|p| glob_match(p, &record.task)))
        .filter(|e| {
            std::fs::read(base.join(&e.plan)).is_ok_and(|p| Digest::of(&p) == record.plan_digest)
        })
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(
        found.len(),
        1,
        "record {d}: evaluations {found:?} of {} match it",
        list_path.display()
    );
    found[0].to_string()
}
