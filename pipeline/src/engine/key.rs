//! The evaluation key: what identifies one evaluation, the one digest that both the run index
//! (`ptxbench run`'s resumption) and the service's answers (`ptxbench serve`'s cache) are keyed
//! by. Two requests with the same key ask for the same evaluation; a new engine revision shares
//! no key with an old one. The leaderboard entry a record is made for is a label, not part of
//! the evaluation: each keeps its records by [`labelled`] (the run by its evaluation's name,
//! relabelling a renamed entry's records; the service by the entry).

use serde::Serialize;

use super::Protocol;
use crate::arch::Arch;
use crate::digest::Digest;

/// The candidate as it was submitted, by the digests of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Submitted {
    /// A model's raw response (the kernel and plan are extracted from it).
    Response { response: Digest },
    /// A kernel (PTX, or CUDA C++ when `cuda`) and its launch plan.
    Kernel {
        cuda: bool,
        kernel: Digest,
        plan: Digest,
    },
}

impl Submitted {
    /// A kernel and its plan, by their bytes.
    pub fn kernel(cuda: bool, kernel: &str, plan: &str) -> Submitted {
        Submitted::Kernel {
            cuda,
            kernel: Digest::of(kernel.as_bytes()),
            plan: Digest::of(plan.as_bytes()),
        }
    }

    /// A raw response, by its bytes.
    pub fn response(text: &str) -> Submitted {
        Submitted::Response {
            response: Digest::of(text.as_bytes()),
        }
    }
}

/// Every field that selects an evaluation's outcome, as one JSON object (never joined strings,
/// so no two selections share a key).
#[derive(Debug, Clone, Serialize)]
pub struct EvaluationKey<'a> {
    pub candidate: Submitted,
    /// The stored task definition.
    pub task: Digest,
    pub arch: Arch,
    /// The base seed; `None` when each evaluation draws its own (then no two share inputs,
    /// and the key says so).
    pub seed: Option<u64>,
    pub protocol: &'a Protocol,
    /// The workloads asked for (empty: every one), a list.
    pub workloads: &'a [String],
    /// Correctness and evidence only.
    pub no_timing: bool,
}

impl EvaluationKey<'_> {
    pub fn digest(&self) -> Digest {
        #[derive(Serialize)]
        struct Keyed<'k, 'a> {
            engine: &'static str,
            #[serde(flatten)]
            key: &'k EvaluationKey<'a>,
        }
        let keyed = Keyed {
            engine: super::ENGINE_REVISION,
            key: self,
        };
        Digest::of(&serde_json::to_vec(&keyed).expect("digests, strings and numbers serialise"))
    }
}

/// An evaluation key under a label (a run list's evaluation name, a submission's entry): two
/// labels of one evaluation keep two records.
pub fn labelled(key: Digest, label: &str) -> Digest {
    let mut h = blake3::Hasher::new();
    h.update(key.hex().as_bytes());
    h.update(b"\0");
    h.update(label.as_bytes());
    Digest::from_hasher(&h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(protocol: &Protocol) -> EvaluationKey<'_> {
        EvaluationKey {
            candidate: Submitted::kernel(false, ".version 8.7", "launches: []"),
            task: Digest::of(b"task"),
            arch: Arch::Sm90a,
            seed: Some(7),
            protocol,
            workloads: &[],
            no_timing: false,
        }
    }

    #[test]
    fn every_field_selects_a_different_key() {
        let p = Protocol::default();
        let base = key(&p).digest();
        assert_eq!(base, key(&p).digest());
        let m1 = ["M1".to_string()];
        let variants = [
            EvaluationKey {
                candidate: Submitted::kernel(true, ".version 8.7", "launches: []"),
                ..key(&p)
            },
            EvaluationKey {
                candidate: Submitted::kernel(false, ".version 8.8", "launches: []"),
                ..key(&p)
            },
            EvaluationKey {
                candidate: Submitted::response(".version 8.7"),
                ..key(&p)
            },
            EvaluationKey {
                task: Digest::of(b"other task"),
                ..key(&p)
            },
            EvaluationKey {
                arch: Arch::Sm100a,
                ..key(&p)
            },
            EvaluationKey {
                seed: None,
                ..key(&p)
            },
            EvaluationKey {
                workloads: &m1,
                ..key(&p)
            },
            EvaluationKey {
                no_timing: true,
                ..key(&p)
            },
        ];
        for v in &variants {
            assert_ne!(v.digest(), base, "{v:?}");
        }
        let slower = Protocol {
            iterations: p.iterations + 1,
            ..Protocol::default()
        };
        assert_ne!(key(&slower).digest(), base);
        // Labels part one evaluation's records, and never collide with the bare key.
        assert_ne!(labelled(base, "a"), labelled(base, "b"));
        assert_eq!(labelled(base, "a"), labelled(base, "a"));
        assert_ne!(labelled(base, ""), base);
    }
}
