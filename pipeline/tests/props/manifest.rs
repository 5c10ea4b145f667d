//! Leaderboard manifests (`ptxbench::manifest`) and generation manifests
//! (`ptxbench::generate::manifest`): mutations of `manifests/*.yaml`, YAML token soup, deep
//! nesting, alias bombs and random bytes parse into a valid manifest or an error naming the
//! file. A leaderboard manifest that parses writes back to YAML that parses to the same
//! manifest, and lists its roots.

use std::path::Path;
use std::sync::OnceLock;

use proptest::prelude::*;

use ptxbench::generate::manifest::{GenManifest, GenManifestError};
use ptxbench::manifest::{Manifest, ManifestError};

use crate::mutate::{self, YAML_TOKENS};
use crate::{bounded, config};

/// The path errors are to name.
const PATH: &str = "manifests/hostile.yaml";

/// Leaderboard manifests (`manifest: 1`) and generation manifests (`generate: 1`) of
/// `manifests/`.
fn manifests() -> &'static (Vec<String>, Vec<String>) {
    static ALL: OnceLock<(Vec<String>, Vec<String>)> = OnceLock::new();
    ALL.get_or_init(|| {
        let (generate, leaderboard): (Vec<_>, Vec<_>) = crate::yaml_files("manifests")
            .into_iter()
            .map(|(_, text)| text)
            .partition(|t| t.lines().any(|l| l.starts_with("generate:")));
        assert!(!generate.is_empty() && !leaderboard.is_empty());
        (leaderboard, generate)
    })
}

fn exercise_leaderboard(text: String) {
    bounded("leaderboard manifest", move || {
        let path = Path::new(PATH);
        match Manifest::parse(&text, path) {
            Ok(m) => {
                assert_eq!(m.manifest, 1);
                let roots = m.roots(path);
                assert!(roots.iter().all(|r| r.label.starts_with(PATH)));
                let yaml = serde_saphyr::to_string(&m).expect("a manifest serializes");
                let back = Manifest::parse(&yaml, path)
                    .unwrap_or_else(|e| panic!("its own YAML reads back: {e}\n{yaml}"));
                assert_eq!(back, m, "{yaml}");
            }
            Err(e) => {
                let path_named = match &e {
                    ManifestError::Read { path, .. }
                    | ManifestError::Parse { path, .. }
                    | ManifestError::Invalid { path, .. } => path == Path::new(PATH),
                };
                assert!(path_named, "{e}");
                assert!(e.to_string().starts_with(PATH), "{e}");
            }
        }
    });
}

fn exercise_generate(text: String) {
    bounded("generation manifest", move || {
        let path = Path::new(PATH);
        match GenManifest::parse(&text, path) {
            Ok(m) => {
                assert_eq!(m.generate, 1);
                assert!(m.max_turns() >= 1);
                for model in &m.models {
                    assert!(!model.entry().is_empty());
                    assert!(model.url().ends_with("/chat/completions"));
                }
            }
            Err(e) => {
                let path_named = match &e {
                    GenManifestError::Read { path, .. }
                    | GenManifestError::Parse { path, .. }
                    | GenManifestError::Invalid { path, .. } => path == Path::new(PATH),
                };
                assert!(path_named, "{e}");
                assert!(e.to_string().contains(PATH), "{e}");
            }
        }
    });
}

fn hostile_text() -> impl Strategy<Value = String> {
    prop_oneof![
        mutate::random_text(),
        mutate::token_soup(YAML_TOKENS),
        mutate::nesting_and_aliases(),
    ]
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn mutated_leaderboard_manifests_parse_or_name_the_file(
        which in any::<prop::sample::Index>(),
        edits in mutate::edits(YAML_TOKENS, 6),
    ) {
        let text = which.get(&manifests().0);
        exercise_leaderboard(mutate::apply_all(text, &edits));
    }

    #[test]
    fn mutated_generation_manifests_parse_or_name_the_file(
        which in any::<prop::sample::Index>(),
        edits in mutate::edits(YAML_TOKENS, 6),
    ) {
        let text = which.get(&manifests().1);
        exercise_generate(mutate::apply_all(text, &edits));
    }

    #[test]
    fn hostile_text_is_no_manifest(text in hostile_text()) {
        exercise_leaderboard(text.clone());
        exercise_generate(text);
    }
}

/// The unmutated fixtures parse.
#[test]
fn the_manifest_fixtures_parse() {
    for text in &manifests().0 {
        Manifest::parse(text, Path::new(PATH)).unwrap_or_else(|e| panic!("{e}"));
    }
    for text in &manifests().1 {
        GenManifest::parse(text, Path::new(PATH)).unwrap_or_else(|e| panic!("{e}"));
    }
}
