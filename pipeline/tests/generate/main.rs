//! Integration tests of `ptxbench generate` and `ptxbench export sft`, against a real HTTP
//! server on loopback (the canned chat server) and the real `ptxbench` binary. They run without
//! a GPU: `generate` refuses to start without one unless `--no-eval` (or `--allow-no-gpu`, a
//! dry run, when an evaluation then ends as `other: no GPU`, which the loop must record as the
//! harness's failure, never feed back to the model, and grade again on the next run).

#[path = "../support/canned.rs"]
mod canned;
mod export;
mod hostile;
mod loopback;
mod preflight;

use std::path::{Path, PathBuf};
use std::process::Command;

use ptxbench::digest::Digest;
use ptxbench::store::Store;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("pipeline/ has a parent")
        .to_path_buf()
}

/// The known-good SIMT GEMM candidate as a model would answer it.
pub fn good_answer() -> String {
    let dir = root().join("tasks/candidates/simt/gemm");
    let kernel = std::fs::read_to_string(dir.join("kernel.cu")).expect("kernel.cu");
    let plan = std::fs::read_to_string(dir.join("plan.yaml")).expect("plan.yaml");
    format!(
        "Here is a tiled SIMT kernel.\n\n```cuda\n{kernel}```\n\nAnd its launch plan:\n\n```yaml\n{plan}```\n"
    )
}

/// The SIMT GEMM with a plan that does not bind (it names a tensor the task does not have):
/// refused by the static check, no GPU needed.
pub fn unbound_answer() -> String {
    let g = good_answer();
    let a = g.replacen("{tensor: C}", "{tensor: D}", 1);
    assert_ne!(a, g, "the plan names tensor C");
    a
}

/// An answer cut off inside its kernel block.
pub fn truncated_answer() -> String {
    let g = good_answer();
    g[..g.len() / 3].to_string()
}

pub const NO_BLOCK_ANSWER: &str =
    "I would tile the GEMM in 128x128 blocks and use wgmma, but I will not write the code.";

/// A canned-server folder with answers by turn and optional faults; it lists the model of
/// [`manifest`].
pub fn canned_dir(answers: &[(usize, String)], faults: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("temp dir");
    std::fs::write(d.path().join("models.txt"), "canned-model\n").expect("models.txt");
    for (turn, text) in answers {
        std::fs::write(d.path().join(format!("turn-{turn}.md")), text).expect("answer");
    }
    if !faults.is_empty() {
        std::fs::write(d.path().join("faults.txt"), faults).expect("faults");
    }
    d
}

/// A generation manifest for one model on one GEMM task.
pub fn manifest(url: &str, replicas: u32, turn_limits: &str, extra_model: &str) -> String {
    format!(
        "generate: 1\nname: loopback-test\ntasks: [gemm_n4096_k4096]\narchs: [sm_90a]\nvariants: [1]\nreplicas: {replicas}\nturn_limits: {turn_limits}\nretry: {{max_attempts: 6, base_delay_ms: 10, max_delay_ms: 2000}}\nmodels:\n  - name: canned-model\n    display_name: Canned Model\n    endpoint: \"{url}\"\n    api_key_env: PTXBENCH_TEST_KEY\n    concurrency: 1\n    timeout_s: 1\n    sampling: {{temperature: 0.2, max_tokens: 4096, extra: {{seed: 7}}}}\n{extra_model}"
    )
}

pub const SECRET: &str = "sk-loopback-secret-do-not-store";

/// `ptxbench generate` on `manifest_text` (written to `work/gen.yaml`), into `work/out` and the
/// store `work/artifacts`.
pub fn generate_command(work: &Path, manifest_text: &str, args: &[&str]) -> Command {
    let path = work.join("gen.yaml");
    std::fs::write(&path, manifest_text).expect("manifest");
    let mut c = Command::new(env!("CARGO_BIN_EXE_ptxbench"));
    c.arg("--tasks")
        .arg(root().join("tasks"))
        .arg("generate")
        .arg(&path)
        .arg("--out")
        .arg(work.join("out"))
        .arg("--store")
        .arg(work.join("artifacts"))
        .args(args)
        .env("PTXBENCH_TEST_KEY", SECRET);
    c
}

/// Runs `ptxbench generate`; returns (exit code, stdout, stderr).
pub fn generate(work: &Path, manifest_text: &str, args: &[&str]) -> (i32, String, String) {
    let out = generate_command(work, manifest_text, args)
        .output()
        .expect("ptxbench runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// Every object reachable from `d` is in the store and re-hashes.
pub fn assert_closure(store: &Store, d: Digest) {
    let mut stack = vec![d];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(d) = stack.pop() {
        if !seen.insert(d) {
            continue;
        }
        let bytes = store
            .get(&d)
            .unwrap_or_else(|e| panic!("{d} is not in the store: {e}"));
        if bytes.starts_with(b"{\"schema\":\"ptxbench.") {
            let o = store.get_object(&d).expect("an object parses");
            stack.extend(o.references.iter().map(|r| r.digest));
        }
    }
}

/// No file under `dir` contains `needle`.
pub fn assert_nowhere(dir: &Path, needle: &str) {
    for e in walkdir::WalkDir::new(dir).into_iter().flatten() {
        if e.file_type().is_file() {
            let bytes = std::fs::read(e.path()).expect("readable");
            assert!(
                !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
                "{} contains the secret",
                e.path().display()
            );
        }
    }
}
