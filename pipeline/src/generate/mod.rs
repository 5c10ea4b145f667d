//! Generation: models meet the suite through an OpenAI-compatible chat-completions endpoint.
//!
//! A generation manifest ([`manifest`]) expands into trajectories, one per model x task x arch
//! x prompt variant x replica ([`work_list`]). Each trajectory ([`trajectory`]) prompts the
//! model, extracts and checks the candidate, evaluates it in an engine worker, and feeds the
//! result back ([`feedback`]) for further turns. Requests go through [`chat`] with retries
//! ([`backoff`]); the [`journal`] makes a run resumable. [`generation`] runs a whole work list
//! and [`publish`] writes what it leaves behind.

pub mod backoff;
pub mod chat;
mod error;
pub mod feedback;
pub mod generation;
pub mod journal;
pub mod manifest;
pub mod preflight;
pub mod publish;
pub mod trajectory;

use crate::arch::Arch;
use crate::prompt::Variant;
use crate::task::{Suite, glob_match};

use manifest::GenManifest;

/// One trajectory to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrajectorySpec {
    /// `<model name>/<task>/<arch>/v<variant>/r<replica>`: the journal key.
    pub key: String,
    /// Index into the manifest's models.
    pub model: usize,
    pub task: String,
    pub arch: Arch,
    pub variant: Variant,
    /// 1-based.
    pub replica: u32,
    /// The evaluation seed; distinct per (variant, replica), so the leaderboard tells
    /// trajectories apart (`base * 1_000_000 + variant * 1000 + replica`).
    pub seed: u64,
}

/// The trajectories of a manifest, in a fixed order (model, task, arch, variant, replica), and
/// the (task, arch) pairs skipped because the task has no target for the arch. `seed` is the
/// base of the evaluation seeds (the manifest's, or the one drawn for this generation). More
/// than [`manifest::MAX_TRAJECTORIES`] is an error, found before any is built.
pub fn work_list(
    m: &GenManifest,
    suite: &Suite,
    seed: u64,
) -> Result<(Vec<TrajectorySpec>, Vec<String>), String> {
    let mut specs = Vec::new();
    let mut skipped = Vec::new();
    for (i, p) in m.tasks.iter().enumerate() {
        if !suite.tasks.iter().any(|t| glob_match(p, t.id.as_str())) {
            return Err(format!("tasks[{i}]: no task matches `{p}`"));
        }
    }
    // Every task evaluated must have every workload `eval.workloads` names.
    for t in suite
        .tasks
        .iter()
        .filter(|t| m.tasks.iter().any(|p| glob_match(p, t.id.as_str())))
    {
        if let Some(why) = t.unknown_workload(&m.eval.workloads) {
            return Err(format!("eval.workloads: {why}"));
        }
    }
    let pairs = suite
        .tasks
        .iter()
        .filter(|t| m.tasks.iter().any(|p| glob_match(p, t.id.as_str())))
        .map(|t| m.archs.iter().filter(|&&a| t.target(a).is_some()).count() as u64)
        .sum::<u64>();
    let total = [
        m.models.len() as u64,
        m.variants.len() as u64,
        u64::from(m.replicas),
    ]
    .into_iter()
    .try_fold(pairs, u64::checked_mul)
    .unwrap_or(u64::MAX);
    if total > manifest::MAX_TRAJECTORIES {
        return Err(format!(
            "{total} trajectories (models x (task, arch) pairs x variants x replicas), over the limit of {}",
            manifest::MAX_TRAJECTORIES
        ));
    }
    for (mi, model) in m.models.iter().enumerate() {
        for task in suite
            .tasks
            .iter()
            .filter(|t| m.tasks.iter().any(|p| glob_match(p, t.id.as_str())))
        {
            for &arch in &m.archs {
                if task.target(arch).is_none() {
                    if mi == 0 {
                        skipped.push(format!("{} has no target for {arch}", task.id));
                    }
                    continue;
                }
                for &v in &m.variants {
                    let variant = Variant::new(v)?;
                    for replica in 1..=m.replicas {
                        specs.push(TrajectorySpec {
                            key: format!("{}/{}/{arch}/v{v}/r{replica}", model.name, task.id),
                            model: mi,
                            task: task.id.to_string(),
                            arch,
                            variant,
                            replica,
                            seed: seed
                                .wrapping_mul(1_000_000)
                                .wrapping_add(u64::from(v) * 1000 + u64::from(replica)),
                        });
                    }
                }
            }
        }
    }
    Ok((specs, skipped))
}
