//! Issue 41: model-written code compiles in a box. Hostile sources through the real `check`
//! command: reads of the host are refused before any compiler sees them, compilers that hang
//! or eat memory are stopped at their limits, and a check that could not finish fails.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::{cuda_tools, root};

const TOKEN: &str = "tok-sandbox-test-0123456789";

/// `ptxbench check DIR --task gemm_n4096_k4096` with a secret in the environment and `env`.
fn check(dir: &Path, env: &[(&str, &str)]) -> (i32, String, Duration) {
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_ptxbench"))
        .args(["check"])
        .arg(dir)
        .args(["--task", "gemm_n4096_k4096"])
        .env("PTXBENCH_TEST_TOKEN", TOKEN)
        .envs(env.iter().copied())
        .current_dir(root())
        .output()
        .expect("ptxbench runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text, start.elapsed())
}

/// A candidate folder: the SIMT GEMM's plan with `kernel` as its kernel file `name`.
fn candidate(name: &str, kernel: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    let simt = root().join("tasks/candidates/simt/gemm");
    let plan = std::fs::read_to_string(simt.join("plan.yaml")).expect("plan");
    std::fs::write(d.path().join("plan.yaml"), plan).expect("plan");
    std::fs::write(d.path().join(name), kernel).expect("kernel");
    d
}

fn simt_source() -> String {
    std::fs::read_to_string(root().join("tasks/candidates/simt/gemm/kernel.cu")).expect("kernel.cu")
}

#[test]
fn issue_41_includes_of_host_files_are_refused_and_nothing_leaks() {
    let secret_dir = tempfile::tempdir().expect("tempdir");
    let secret_file = secret_dir.path().join("shadow");
    std::fs::write(&secret_file, "root:SHADOW-CONTENT-42:19000::::::\n").expect("secret");
    for include in [
        "/proc/self/environ".to_string(),
        secret_file.display().to_string(),
    ] {
        let src = format!("{}\n#include \"{include}\"\n", simt_source());
        let cand = candidate("kernel.cu", &src);
        let (code, text, _) = check(cand.path(), &[]);
        assert_eq!(code, 1, "{text}");
        assert!(text.contains("is refused"), "{text}");
        assert!(
            text.contains(&include),
            "the message names the include: {text}"
        );
        assert!(!text.contains(TOKEN), "{text}");
        assert!(!text.contains("SHADOW-CONTENT-42"), "{text}");
        assert!(!text.contains("CARGO_"), "{text}");
    }
}

#[test]
fn issue_41_nvrtc_sees_no_environment_and_no_working_folder() {
    if !cuda_tools("issue_41_nvrtc_sees_no_environment_and_no_working_folder") {
        return;
    }
    // A header next to where ptxbench runs: with the source's folder searched it would be found.
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        work.path().join("local.h"),
        "#error LOCAL-HEADER-WAS-READ\n",
    )
    .expect("h");
    let src = format!("#include \"local.h\"\n{}", simt_source());
    let cand = candidate("kernel.cu", &src);
    let out = Command::new(env!("CARGO_BIN_EXE_ptxbench"))
        .arg("--tasks")
        .arg(root().join("tasks"))
        .arg("check")
        .arg(cand.path())
        .args(["--task", "gemm_n4096_k4096"])
        .current_dir(work.path())
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(!text.contains("LOCAL-HEADER-WAS-READ"), "{text}");
    assert!(text.contains("local.h"), "{text}");
}

#[test]
fn issue_41_a_compiler_that_hangs_is_stopped_and_the_check_fails() {
    if !cuda_tools("issue_41_a_compiler_that_hangs_is_stopped_and_the_check_fails") {
        return;
    }
    // Each macro doubles the one before: the expansion NVRTC must make grows as 2^40.
    let mut src = String::from("#define L0 1\n");
    for i in 1..=40 {
        src.push_str(&format!("#define L{i} (L{} + L{})\n", i - 1, i - 1));
    }
    src.push_str("__device__ int x = sizeof(char[L40 > 0 ? 1 : 2]);\n");
    src.push_str(&simt_source());
    let cand = candidate("kernel.cu", &src);
    let (code, text, took) = check(cand.path(), &[("PTXBENCH_COMPILE_LIMIT_S", "3")]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("NVRTC did not finish within 3 s"),
        "the step and the reason are named: {text}"
    );
    assert!(took < Duration::from_secs(60), "took {took:?}");
}

/// The Triton TMA GEMM's PTX with `extra` appended (extra entries the plan does not launch).
fn triton_with(extra: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    let src = root().join("tasks/candidates/triton_gemm_tma");
    let ptx = std::fs::read_to_string(src.join("kernel.ptx")).expect("ptx");
    std::fs::write(d.path().join("kernel.ptx"), format!("{ptx}\n{extra}")).expect("ptx");
    std::fs::copy(src.join("plan.yaml"), d.path().join("plan.yaml")).expect("plan");
    d
}

#[test]
fn issue_41_ptxas_that_runs_out_of_time_fails_the_check() {
    if !cuda_tools("issue_41_ptxas_that_runs_out_of_time_fails_the_check") {
        return;
    }
    let mut extra = String::new();
    for i in 0..100_000 {
        extra.push_str(&format!(
            ".visible .entry pad{i}(.param .u64 p) {{ .reg .b64 %rd<2>; ld.param.u64 %rd1, [p]; st.global.u64 [%rd1], %rd1; ret; }}\n"
        ));
    }
    let cand = triton_with(&extra);
    let (code, text, _) = check(cand.path(), &[("PTXBENCH_COMPILE_LIMIT_S", "2")]);
    assert_eq!(code, 1, "a check that could not finish is not ok: {text}");
    assert!(
        text.contains("ptxas -arch=sm_90a did not finish"),
        "the step is named: {text}"
    );
}

#[test]
fn issue_41_ptxas_that_runs_out_of_memory_fails_the_check() {
    if !cuda_tools("issue_41_ptxas_that_runs_out_of_memory_fails_the_check") {
        return;
    }
    let extra = ".visible .entry hog(.param .u64 p) { .reg .b32 %zz<1000000000>; .reg .b64 %rd<2>; ld.param.u64 %rd1, [p]; st.global.u32 [%rd1], %zz7; ret; }\n";
    let cand = triton_with(extra);
    let start = Instant::now();
    let (code, text, _) = check(cand.path(), &[("PTXBENCH_COMPILE_MEMORY_MIB", "1024")]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("ptxas"), "{text}");
    assert!(start.elapsed() < Duration::from_secs(120));
}

/// The command line compiles CUDA C++ in its sandbox whatever its file is called (a binary
/// carried to a GPU machine under another name once found no `ptxbench` beside it and compiled
/// nothing).
#[test]
fn issue_41_a_renamed_binary_still_compiles_cuda() {
    if !cuda_tools("issue_41_a_renamed_binary_still_compiles_cuda") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let renamed = dir.path().join("p");
    std::fs::copy(env!("CARGO_BIN_EXE_ptxbench"), &renamed).expect("copy");
    let out = Command::new(&renamed)
        .arg("--tasks")
        .arg(root().join("tasks"))
        .arg("check")
        .arg(root().join("tasks/candidates/simt/gemm"))
        .args(["--task", "gemm_n4096_k4096"])
        .env_remove("PTXBENCH_EXE")
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("nvrtc "), "{text}");
}
