//! Task files (`ptxbench::task`): mutated real task files of `tasks/`, YAML token soup, deep
//! nesting, alias bombs and random bytes are validated; a task that validates is summarised,
//! hashed, sized for every workload and written back to YAML that reads back to the same task.
//! A refusal lists problems that each name the file. Whole suites of mutated files load or
//! list their problems the same way.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::*;

use ptxbench::task::{Suite, Task, describe};

use crate::mutate::{self, YAML_TOKENS};
use crate::{bounded, config};

const FAMILIES: &[&str] = &[
    "gemm",
    "attention_fwd",
    "attention_bwd",
    "attention_fwd_fp8",
    "attention_decode",
];

/// Every task file of the suite, as (path relative to `tasks/`, text).
fn task_files() -> &'static [(String, String)] {
    static ALL: OnceLock<Vec<(String, String)>> = OnceLock::new();
    ALL.get_or_init(|| {
        FAMILIES
            .iter()
            .flat_map(|f| crate::yaml_files(&format!("tasks/{f}")))
            .map(|(rel, text)| {
                let rel = rel.strip_prefix("tasks/").unwrap_or(&rel).to_string();
                (rel, text)
            })
            .collect()
    })
}

/// Validates `text` as the task file `source`; checks a task or the problems.
fn exercise(source: String, text: String) {
    bounded("task file", move || {
        let src = PathBuf::from(&source);
        match Task::from_yaml(&text, &src) {
            Ok(t) => {
                let _ = describe(&t);
                let digest = t.digest();
                for w in &t.workloads {
                    let _ = (t.flops_of(w), t.bytes_of(w), t.problem(w));
                    let env = t.bindings(w);
                    for tensor in t.inputs.iter().chain(&t.outputs) {
                        let _ = (t.dims(tensor, &env), t.size_bytes(tensor, &env));
                    }
                }
                let yaml = t.to_yaml().expect("a valid task serializes");
                let back = Task::from_yaml(&yaml, &src)
                    .unwrap_or_else(|p| panic!("its own YAML reads back: {p:?}\n{yaml}"));
                assert_eq!(back, t, "{yaml}");
                assert_eq!(back.digest(), digest);
            }
            Err(problems) => {
                assert!(!problems.is_empty(), "a refusal says why");
                for p in &problems {
                    assert_eq!(p.file, src, "{p}");
                    assert!(!p.reason.is_empty(), "{p}");
                    assert!(
                        p.to_string().len() <= text.len() + 4096,
                        "a problem is not longer than the file: {} bytes",
                        p.to_string().len()
                    );
                }
            }
        }
    });
}

/// Writes a suite of `suite.yaml` (`header`) and `files` into a temp folder and loads it.
fn exercise_suite(header: String, files: Vec<(String, String)>) {
    bounded("task suite", move || {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("suite.yaml"), &header).expect("write suite.yaml");
        for (rel, text) in &files {
            let path = dir.path().join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("mkdir");
            }
            std::fs::write(&path, text).expect("write task");
        }
        match Suite::load(dir.path()) {
            Ok(s) => assert!(!s.tasks.is_empty()),
            Err(e) => {
                assert!(!e.problems.is_empty());
                for p in &e.problems {
                    assert!(p.file.starts_with(dir.path()), "{p}");
                }
            }
        }
    });
}

fn source_of(which: usize) -> &'static (String, String) {
    &task_files()[which % task_files().len()]
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn mutated_task_files_validate_or_name_the_problem(
        which in any::<usize>(),
        edits in mutate::edits(YAML_TOKENS, 6),
    ) {
        let (rel, text) = source_of(which);
        exercise(rel.clone(), mutate::apply_all(text, &edits));
    }

    #[test]
    fn yaml_soup_and_random_bytes_are_refused(
        which in any::<usize>(),
        text in prop_oneof![
            mutate::random_text(),
            mutate::token_soup(YAML_TOKENS),
            mutate::nesting_and_aliases(),
        ],
    ) {
        exercise(source_of(which).0.clone(), text);
    }
}

proptest! {
    #![proptest_config(config(16))]

    #[test]
    fn suites_of_mutated_files_load_or_list_problems(
        header_edits in prop::collection::vec(mutate::edit(YAML_TOKENS), 0..3),
        files in prop::collection::vec(
            (any::<usize>(), prop::collection::vec(mutate::edit(YAML_TOKENS), 0..3)),
            1..4,
        ),
    ) {
        let header = mutate::apply_all(&crate::read("tasks/suite.yaml"), &header_edits);
        let files = files
            .iter()
            .map(|(which, edits)| {
                let (rel, text) = source_of(*which);
                (rel.clone(), mutate::apply_all(text, edits))
            })
            .collect();
        exercise_suite(header, files);
    }
}

/// The suite's own files validate, so the mutations start from valid tasks.
#[test]
fn the_task_fixtures_validate() {
    assert!(task_files().len() > 10);
    for (rel, text) in task_files() {
        assert!(
            Task::from_yaml(text, Path::new(rel)).is_ok(),
            "{rel} validates"
        );
    }
}
