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

/// A folder outside the CUDA include folders with a header at `detail/execution_policy.h`,
/// the path the Thrust header builds from two macros a source may define.
fn host_folder(content: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(d.path().join("detail")).expect("mkdir");
    std::fs::write(d.path().join("detail/execution_policy.h"), content).expect("write");
    d
}

/// The Thrust route: `#include __THRUST_HOST_SYSTEM_TAG_HEADER` inside CCCL's own header, with
/// the namespace macro pointing out of the include folder with `../` segments.
fn thrust_route(target_dir: &Path) -> String {
    let ups = "../".repeat(40);
    let rel = target_dir.display().to_string();
    format!(
        "#define THRUST_HOST_SYSTEM 4\n#define __THRUST_HOST_SYSTEM_NAMESPACE {ups}{}\n#include <thrust/iterator/detail/host_system_tag.h>\n{}",
        rel.trim_start_matches('/'),
        simt_source()
    )
}

/// Issue 55, finding 1: a macro inside CUDA's own headers made NVRTC read any host file; its
/// first line came back in `check`'s output. The compiler now cannot open it.
#[test]
fn issue_55_the_thrust_route_reads_no_host_file() {
    if !cuda_tools("issue_55_the_thrust_route_reads_no_host_file") {
        return;
    }
    let host = host_folder("int HOST_FILE_CONTENT_55 = 1;\n#error HOST-FILE-WAS-READ-55\n");
    let cand = candidate("kernel.cu", &thrust_route(host.path()));
    let (code, text, _) = check(cand.path(), &[]);
    assert_eq!(code, 1, "{text}");
    assert!(!text.contains("HOST-FILE-WAS-READ-55"), "{text}");
    assert!(!text.contains("HOST_FILE_CONTENT_55"), "{text}");
    assert!(
        text.contains("cannot open source file"),
        "the open was refused: {text}"
    );
    assert!(
        !text.contains("Permission denied"),
        "the reason tells that the file exists: {text}"
    );
    // No host path of the CUDA install in what is printed (and stored).
    let cuda = std::env::var("CUDA_HOME").unwrap_or_default();
    assert!(cuda.is_empty() || !text.contains(&cuda), "{text}");
}

/// Issue 55, finding 1: the same route to another process's environment (the two-turn read of
/// `/proc/<pid>/environ`), here through a link in a folder the source names.
#[test]
fn issue_55_the_thrust_route_reads_no_process_environment() {
    if !cuda_tools("issue_55_the_thrust_route_reads_no_process_environment") {
        return;
    }
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(d.path().join("detail")).expect("mkdir");
    let environ = format!("/proc/{}/environ", std::process::id());
    std::os::unix::fs::symlink(&environ, d.path().join("detail/execution_policy.h")).expect("link");
    let first = std::fs::read(&environ).expect("our own environ");
    let first =
        String::from_utf8_lossy(first.split(|b| *b == 0).next().unwrap_or_default()).into_owned();
    let cand = candidate("kernel.cu", &thrust_route(d.path()));
    let (code, text, _) = check(cand.path(), &[]);
    assert_eq!(code, 1, "{text}");
    assert!(first.len() < 8 || !text.contains(&first), "{text}");
    assert!(text.contains("cannot open source file"), "{text}");
    assert!(!text.contains("Permission denied"), "{text}");
}

/// Issue 55, finding 1: a token-pasted `__has_include` answered whether a host file exists.
#[test]
fn issue_55_has_include_probes_see_no_host_file() {
    if !cuda_tools("issue_55_has_include_probes_see_no_host_file") {
        return;
    }
    let host = host_folder("int x;\n");
    for probe in [
        host.path().join("detail/execution_policy.h"),
        "/proc/self/environ".into(),
        "/etc/passwd".into(),
    ] {
        let src = format!(
            "#define CAT(a, b) a##b\n#define PROBE CAT(__has_, include)\n#if PROBE(\"{}\")\n#error PROBE-SAYS-EXISTS\n#else\n#error PROBE-SAYS-ABSENT\n#endif\n{}",
            probe.display(),
            simt_source()
        );
        let cand = candidate("kernel.cu", &src);
        let (code, text, _) = check(cand.path(), &[]);
        assert_eq!(code, 1, "{text}");
        assert!(
            text.contains("PROBE-SAYS-ABSENT"),
            "{}: {text}",
            probe.display()
        );
    }
}

/// Issue 55, finding 7: a compiler outlived a killed ptxbench (under init, up to its CPU
/// limit). The sandbox's child dies with the process that started it.
#[test]
fn issue_55_a_sandboxed_child_dies_with_its_parent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("child.pid");
    // A shell stands in for ptxbench: it starts the gate (with itself as the parent) around a
    // long sleep, writes the gate's pid, and is then killed.
    let script = r#"
spec=$(printf '{"read":["/bin","/usr/bin"],"work":"%s","memory":1073741824,"cpu_s":60,"parent":%d,"unconfined_allowed":false}' "$2" $$)
"$1" sandbox-exec "$spec" /bin/sleep 60 &
echo $! > "$3"
wait
"#;
    let mut parent = Command::new("/bin/bash")
        .arg("-c")
        .arg(script)
        .arg("bash")
        .arg(env!("CARGO_BIN_EXE_ptxbench"))
        .arg(dir.path())
        .arg(&pid_file)
        .spawn()
        .expect("bash runs");
    let start = Instant::now();
    let child_pid = loop {
        if let Some(p) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
        {
            break p;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "no child");
        std::thread::sleep(Duration::from_millis(20));
    };
    // The gate has become `sleep` when its command line says so.
    let cmdline = || std::fs::read(format!("/proc/{child_pid}/cmdline")).unwrap_or_default();
    while !String::from_utf8_lossy(&cmdline()).starts_with("/bin/sleep") {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the gate did not exec"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    parent.kill().expect("kill");
    parent.wait().expect("wait");
    let gone = || {
        std::fs::read_to_string(format!("/proc/{child_pid}/stat"))
            .map_or(true, |s| s.split_whitespace().nth(2) == Some("Z"))
    };
    let killed = Instant::now();
    while !gone() {
        assert!(
            killed.elapsed() < Duration::from_secs(5),
            "the sandboxed child outlived its parent"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Issue 55, finding 2: compile memory was limited per process, not in total. With the budget
/// at 1 GiB, the ptxas that takes 6.7 GB is stopped, and the message names the limit.
#[test]
fn issue_55_the_compile_budget_bounds_every_compiler() {
    if !cuda_tools("issue_55_the_compile_budget_bounds_every_compiler") {
        return;
    }
    let extra = ".visible .entry hog(.param .u64 p) { .reg .b32 %zz<850000000>; .reg .b64 %rd<2>; ld.param.u64 %rd1, [p]; st.global.u32 [%rd1], %zz7; ret; }\n";
    let cand = triton_with(extra);
    let (code, text, _) = check(cand.path(), &[("PTXBENCH_COMPILE_BUDGET_MIB", "1024")]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("1024 MiB"), "the limit is named: {text}");
}

/// Issue 55, finding 4 (and the campaign's): with the temp folder unusable, a PTX candidate
/// failed as `Compilation` and a CUDA one passed with a warning. The harness's failure is no
/// verdict: `check` says it did not check and exits 3.
#[test]
fn issue_55_an_unusable_temp_folder_is_the_harness_failure() {
    if !cuda_tools("issue_55_an_unusable_temp_folder_is_the_harness_failure") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let not_a_folder = dir.path().join("a-file");
    std::fs::write(&not_a_folder, "x").expect("write");
    for tmp in [dir.path().join("missing"), not_a_folder] {
        for (name, kernel) in [
            ("kernel.cu", simt_source()),
            (
                "kernel.ptx",
                std::fs::read_to_string(root().join("tasks/candidates/nvcc_simt_gemm/kernel.ptx"))
                    .expect("ptx"),
            ),
        ] {
            let cand = candidate(name, &kernel);
            let (code, text, _) = check(cand.path(), &[("TMPDIR", tmp.to_str().expect("utf-8"))]);
            assert_eq!(code, 3, "{name} with TMPDIR {}: {text}", tmp.display());
            assert!(text.contains("not checked (the harness failed"), "{text}");
            assert!(!text.contains("result: ok"), "{text}");
        }
    }
}
