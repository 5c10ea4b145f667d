#!/usr/bin/env bash
# The hostile-input campaign of issue 41: runs the real `ptxbench` binary over generated hostile
# inputs, category by category, and prints a Markdown table of what each run did.
#
#   pipeline/scripts/hostile-campaign.sh PTXBENCH [--seed N]
#
# PTXBENCH is the binary to try (a debug build will do). With CUDA_HOME set, NVRTC, ptxas and
# nvdisasm run as `check` runs them, inside the compiler sandbox; its wall-clock limit is lowered
# to 20 s and 2 GiB (PTXBENCH_COMPILE_LIMIT_S, PTXBENCH_COMPILE_MEMORY_MIB) so that a compiler
# bomb ends well within the run's own limit of 90 s.
# Inputs are drawn from a seeded generator (default seed 41): the same seed tries the same
# inputs. Every run happens in a fresh folder under a temp folder that is removed at the end;
# nothing in the repository is written.
#
# Each run is classified as one of
#   clear error  non-zero exit with an `error:` or report line that names the input's file,
#                field or position (a line holding one of the names the category gives),
#   unclear      non-zero exit without such a line,
#   accepted     exit 0,
#   panic        exit 101 or "panicked" in its output,
#   hang         killed at the run's time limit,
# and separately flagged for
#   leak         a secret set in its environment (PTXBENCH_TEST_TOKEN, OPENAI_API_KEY, fresh
#                random values each campaign) in its output or in any file of its folder,
#   data lost    a store object (or manifest) that was there before changed or vanished,
#   litter       a file left that is neither an input nor an output the command exists to
#                write (temp files, files in TMPDIR, which points into the run's folder).
# Then the table, a line per category on what it generated, and every run that was not a clear
# error or acceptance, or was flagged, with its first line of output.
set -euo pipefail
if [[ $# -lt 1 ]]; then
    echo "usage: $0 PTXBENCH [--seed N]" >&2
    exit 2
fi
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
exec python3 - "$repo" "$@" <<'PY'
import hashlib
import io
import os
import random
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(sys.argv[1])
BIN = str(Path(sys.argv[2]).resolve())
SEED = 41
args = sys.argv[3:]
while args:
    a = args.pop(0)
    if a == "--seed" and args:
        SEED = int(args.pop(0))
    else:
        sys.exit(f"unknown argument {a!r}")
if not os.access(BIN, os.X_OK):
    sys.exit(f"{BIN} is not an executable")

RNG = random.Random(SEED)
TOKEN = "tok-campaign-" + secrets.token_hex(12)
API_KEY = "sk-campaign-" + secrets.token_hex(12)
SECRETS = [TOKEN.encode(), API_KEY.encode()]
TASK = "gemm_n7168_k5120"
TASKS = str(REPO / "tasks")
ROOT = Path(tempfile.mkdtemp(prefix="ptxbench-campaign-"))

# ---------------------------------------------------------------- inputs


def read(rel):
    return (REPO / rel).read_bytes()


PTX = read("tasks/candidates/nvcc_simt_gemm/kernel.ptx")
PTX_PLAN = read("tasks/candidates/nvcc_simt_gemm/plan.yaml")
CU = read("tasks/candidates/simt/gemm/kernel.cu")
CU_PLAN = read("tasks/candidates/simt/gemm/plan.yaml")
TASK_FILE = read(f"tasks/gemm/{TASK}.yaml")
SUITE_FILE = read("tasks/suite.yaml")
LOOPBACK = read("manifests/loopback.yaml")
LEADERBOARD = read("manifests/leaderboard.yaml")

YAML_TOKENS = [b"&a ", b"*a", b"<<: *a", b"!!binary ", b"!!str ", b"{", b"}", b"[", b"]",
               b"- ", b": ", b"? ", b"|", b">-", b"'", b'"', b"#", b"---\n", b"...\n",
               b"%YAML 1.1\n", b"\t", b"\r", b"~", b"null", b"yes", b"N", b".nan", b"1e999",
               b"-1", b"0", b"99999999999999999999", b"-9223372036854775808", b"0x7fffffff",
               b"\xef\xbb\xbf", b"\x00", b"\xff\xfe", b"\xc3\xa9", b"\xe3\x80\x80"]
PTX_TOKENS = [b"{", b"}", b"(", b")", b";", b".param", b".reg", b".u64", b"[", b"]",
              b"99999999999999999999", b".entry", b".func", b"call", b"vprintf", b"@", b"%r1",
              b"/*", b"*/", b"//", b"\"", b".align 0", b".global", b".shared", b"\x00",
              b"\xff", b"\xe3\x80\x80"]


def mutate(data, tokens, n):
    """`data` with `n` random edits: cut, line dropped or repeated, token or bytes put in."""
    for _ in range(n):
        kind = RNG.randrange(6)
        at = RNG.randrange(len(data) + 1)
        if kind == 0:
            data = data[:at]
        elif kind == 1 and data:
            lines = data.split(b"\n")
            del lines[RNG.randrange(len(lines))]
            data = b"\n".join(lines)
        elif kind == 2 and data:
            lines = data.split(b"\n")
            i = RNG.randrange(len(lines))
            lines[i:i] = [lines[i]] * RNG.randrange(1, 200)
            data = b"\n".join(lines)
        elif kind == 3:
            data = data[:at] + RNG.choice(tokens) + data[at:]
        elif kind == 4:
            data = data[:at] + bytes(RNG.randrange(256) for _ in range(RNG.randrange(1, 16))) + data[at:]
        else:
            data = data[:at] + RNG.choice(tokens) + data[at + RNG.randrange(1, 8):]
    return data


def random_bytes(n=4096):
    return bytes(RNG.randrange(256) for _ in range(RNG.randrange(1, n)))


def alias_bomb(key=b"launches"):
    s = b'a0: &a0 ["lol"]\n'
    for level in range(1, 12):
        refs = b", ".join([b"*a%d" % (level - 1)] * 10)
        s += b"a%d: &a%d [%s]\n" % (level, level, refs)
    return s + key + b": *a11\n"


def deep_block(depth=1000):
    return b"".join(b" " * i + b"k%d:\n" % i for i in range(depth))


def deep_flow(depth=50000):
    return b"[" * depth + b"]" * depth


# ---------------------------------------------------------------- running


class Stats:
    def __init__(self):
        self.rows = {}
        self.findings = []
        self.about = {}
        self.accepted = {}


STATS = Stats()
COLUMNS = ["inputs", "clear", "unclear", "accepted", "panic", "hang", "leak", "lost", "litter"]


def snapshot(folder):
    """Every path under `folder`: its kind and, for a regular file, its hash."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(folder))
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = "link:" + os.readlink(p)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = "dir"
            elif stat.S_ISREG(st.st_mode):
                try:
                    out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
                except OSError as e:
                    out[rel] = f"unreadable: {e}"
            else:
                out[rel] = "special"
    return out


def leaked_in_files(folder, after):
    hits = []
    for rel, kind in after.items():
        if kind in ("dir", "special") or kind.startswith("link:"):
            continue
        try:
            data = (folder / rel).read_bytes()
        except OSError:
            continue
        if any(s in data for s in SECRETS):
            hits.append(rel)
    return hits


def run(category, label, case, argv, names, keep=(), expect_new=lambda rel: False,
        stdout_path=None, timeout=90, program=None):
    """Runs ptxbench with `argv` in folder `case` and classifies what it did.

    `names`: strings of which one in the output counts as naming the input; `keep`: paths
    (relative to `case`) that must keep their content; `expect_new`: which new paths are the
    command's outputs (anything else new is litter)."""
    tmp = case / "tmp"
    tmp.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PTXBENCH_")}
    env.update(PTXBENCH_TEST_TOKEN=TOKEN, OPENAI_API_KEY=API_KEY, TMPDIR=str(tmp),
               PTXBENCH_COMPILE_LIMIT_S="20", PTXBENCH_COMPILE_MEMORY_MIB="2048")
    env.pop("RUST_BACKTRACE", None)
    before = snapshot(case)
    out_file = open(stdout_path, "wb") if stdout_path else None
    started = time.monotonic()
    proc = subprocess.Popen(program or [BIN] + argv, cwd=case, env=env, stdin=subprocess.DEVNULL,
                            stdout=out_file or subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    hang = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        hang = True
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    if out_file:
        out_file.close()
    seconds = time.monotonic() - started
    out = out or b""
    err = err or b""
    after = snapshot(case)
    text = (out + b"\n" + err).decode("utf-8", "replace")
    rc = proc.returncode
    panic = not hang and (rc == 101 or "panicked" in text)
    leak = [s.decode() for s in SECRETS if s in out or s in err]
    leak += leaked_in_files(case, after)
    lost = [k for k in keep if after.get(k) != before.get(k)]
    litter = [k for k, v in after.items()
              if k not in before and v != "dir" and not expect_new(k)]
    named = any(n in line for line in text.splitlines() for n in names)
    if hang:
        outcome = "hang"
    elif panic:
        outcome = "panic"
    elif rc == 0:
        outcome = "accepted"
    elif named:
        outcome = "clear"
    else:
        outcome = "unclear"
    if category is None:
        return outcome, bool(leak), bool(lost), bool(litter)
    row = STATS.rows.setdefault(category, dict.fromkeys(COLUMNS, 0))
    row["inputs"] += 1
    row[outcome] += 1
    row["leak"] += bool(leak)
    row["lost"] += bool(lost)
    row["litter"] += bool(litter)
    if outcome == "accepted":
        STATS.accepted.setdefault(category, []).append(label)
    if outcome in ("unclear", "panic", "hang") or leak or lost or litter:
        first = next((l for l in text.splitlines() if l.strip()), "")[:200]
        STATS.findings.append(
            f"{category} / {label}: {outcome} (exit {rc}, {seconds:.1f} s)"
            + (f", leak in {leak}" if leak else "")
            + (f", lost {lost}" if lost else "")
            + (f", litter {litter}" if litter else "")
            + f": {first}")
    print(f"{category:10} {outcome:9} {seconds:6.1f}s {label}", file=sys.stderr)


N = [0]


def new_case():
    N[0] += 1
    case = ROOT / f"case-{N[0]:04}"
    case.mkdir()
    return case


def put(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)


def special(path, kind):
    """Makes `path` a symbolic link to the environment of the process that reads it, a
    folder, a FIFO, or a link to nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "environ":
        os.symlink("/proc/self/environ", path)
    elif kind == "dir":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dangling":
        os.symlink(path.parent / "nothing-here", path)
    elif kind == "zero":
        os.symlink("/dev/zero", path)


# ---------------------------------------------------------------- categories


def candidate_run(category, label, kernel_name, kernel, plan, names):
    case = new_case()
    cand = case / "cand"
    for name, data in ((kernel_name, kernel), ("plan.yaml", plan)):
        if isinstance(data, tuple):
            special(cand / name, data[1])
        else:
            put(cand / name, data)
    run(category, label, case, ["check", "cand", "--task", TASK, "--tasks", TASKS], names)


def ptx_inputs():
    STATS.about["PTX"] = (
        "`check` on a candidate folder whose kernel.ptx is the nvcc SIMT GEMM's PTX with 1-6 "
        "random edits (cuts, lines dropped or repeated up to 200 times, PTX tokens and random "
        "bytes put in), random bytes, empty, NUL and invalid UTF-8 files, blocks nested 50,000 "
        "deep, a 1 MB name, 20,000 parameters, an array of 10^20 bytes, 2^32 bytes of shared "
        "memory, 2^31 registers, "
        "`.align 0`, calls to vprintf and malloc, `.file` naming /proc/self/environ, an "
        "unsupported `.version`/`.target`, 60,000 instructions for ptxas, and kernel.ptx as a "
        "link to /proc/self/environ, /dev/zero, nothing, or a folder, FIFO")
    names = ["PTX", "kernel.ptx", "ptxas", "line "]
    for i in range(40):
        candidate_run("PTX", f"mutated #{i}", "kernel.ptx", mutate(PTX, PTX_TOKENS, RNG.randrange(1, 7)), PTX_PLAN, names)
    head = b".version 8.7\n.target sm_90a\n.address_size 64\n"
    fixed = {
        "random bytes": random_bytes(),
        "empty": b"",
        "NUL bytes": b"\x00" * 4096,
        "invalid UTF-8": PTX.replace(b"gemm_simt", b"gemm_\xff\xfesimt"),
        "nested blocks": head + b".visible .entry gemm_simt()\n{\n" + b"{\n" * 50000 + b"ret;\n" + b"}\n" * 50001,
        "1 MB name": head + b".visible .entry " + b"k" * (1 << 20) + b"()\n{\nret;\n}\n",
        "20,000 parameters": head + b".visible .entry gemm_simt(\n" + b",\n".join(b".param .u64 p%d" % i for i in range(20000)) + b"\n)\n{\nret;\n}\n",
        "huge array": head + b".global .align 8 .b8 g[99999999999999999999];\n" + PTX.split(b".address_size 64", 1)[-1],
        "2^32 shared": PTX.replace(b".reg .pred", b".shared .align 4 .b8 s[4294967296];\n.reg .pred", 1),
        "2^31 registers": PTX.replace(b".reg .pred", b".reg .b32 %big<2147483647>;\n.reg .pred", 1),
        "align 0": PTX.replace(b".param .u64", b".param .align 0 .u64", 1),
        "vprintf": head + b".extern .func (.param .b32 r) vprintf(.param .b64 a, .param .b64 b);\n.visible .entry gemm_simt()\n{\n.reg .b64 %rd<2>;\n{ .param .b64 a; .param .b64 b; .param .b32 r;\ncall.uni (r), vprintf, (a, b); }\nret;\n}\n",
        "malloc": head + b".extern .func (.param .b64 r) malloc(.param .b64 n);\n.visible .entry gemm_simt()\n{\n{ .param .b64 n; .param .b64 r;\ncall.uni (r), malloc, (n); }\nret;\n}\n",
        ".file environ": PTX.replace(b".address_size 64", b".address_size 64\n.file 1 \"/proc/self/environ\"", 1),
        "version 99.9": PTX.replace(b".version", b".version 99.9\n//", 1),
        "target sm_999": PTX.replace(b".target sm_90a", b".target sm_999", 1),
        "60,000 instructions": head + b".visible .entry gemm_simt(.param .u64 p)\n{\n.reg .b32 %r<4>;\n.reg .b64 %rd<2>;\nld.param.u64 %rd1, [p];\n" + b"add.s32 %r1, %r1, %r2;\nmul.lo.s32 %r2, %r1, %r1;\n" * 30000 + b"st.global.u32 [%rd1], %r2;\nret;\n}\n",
    }
    for label, data in fixed.items():
        candidate_run("PTX", label, "kernel.ptx", data, PTX_PLAN, names)
    for kind in ("environ", "zero", "dangling", "dir", "fifo"):
        candidate_run("PTX", f"kernel.ptx is {kind}", "kernel.ptx", ("special", kind), PTX_PLAN, names)


def cuda_inputs():
    STATS.about["CUDA"] = (
        "`check` on a candidate folder whose kernel.cu is the SIMT GEMM source with one hostile "
        "line put first: includes of absolute paths, /proc/self/environ, `..`, the plan, itself, "
        "by macro, by line continuation and trigraph, `#include_next`, `#import`, `#embed`, "
        "`__has_include`, `_Pragma`, `#line` naming /etc/passwd, `#error`; an exponential macro "
        "expansion, a template recursion, a constexpr loop, 4 MB of comments, NUL and invalid "
        "UTF-8; and kernel.cu as a link to /proc/self/environ, a FIFO")
    names = ["kernel.cu", "CUDA source", "include", "line ", "NVRTC", "nvrtc", "compile"]
    lines = {
        "absolute include": b'#include "/etc/passwd"',
        "angle absolute include": b"#include </proc/self/environ>",
        "parent include": b'#include "../../../../../../etc/passwd"',
        "plan include": b'#include "plan.yaml"',
        "self include": b'#include "kernel.cu"',
        "macro include": b"#define F </proc/self/environ>\n#include F",
        "continued include": b'#inc\\\nlude "/etc/passwd"',
        "trigraph include": b'??=include "/etc/passwd"',
        "spaced include": b'  #   include   "/etc/hostname"',
        "include_next": b"#include_next <cuda_bf16.h>",
        "import": b'#import "/etc/passwd"',
        "embed": b'const char e[] = {\n#embed "/proc/self/environ"\n};',
        "has_include": b'#if __has_include("/proc/self/environ")\n#error found\n#endif',
        "_Pragma": b'_Pragma("push_macro(\\"x\\")") _Pragma("message(\\"hi\\")")',
        "#line": b'#line 1 "/etc/passwd"\n#error here',
        "#error with names": b"#error PTXBENCH_TEST_TOKEN OPENAI_API_KEY",
        "macro bomb": b"#define A0 x x\n" + b"".join(b"#define A%d A%d A%d\n" % (i, i - 1, i - 1) for i in range(1, 40)) + b"int bomb[] = {A39};",
        "template recursion": b"template <unsigned long long N> struct F { static const unsigned long long v = F<N + 1>::v; };\n__device__ unsigned long long t = F<0>::v;",
        "constexpr loop": b"constexpr int spin(int n) { while (n >= 0) { n = n + 1 - 1; } return n; }\n__device__ int s = spin(1);",
        "4 MB of comments": b"// " + b"x" * 4000 + (b"\n// " + b"x" * 4000) * 1000,
        "NUL bytes": b"\x00" * 64,
        "invalid UTF-8": b"// \xff\xfe\xfd",
    }
    for label, line in lines.items():
        candidate_run("CUDA", label, "kernel.cu", line + b"\n" + CU, CU_PLAN, names)
    candidate_run("CUDA", "the real source", "kernel.cu", CU, CU_PLAN, names)
    for kind in ("environ", "fifo"):
        candidate_run("CUDA", f"kernel.cu is {kind}", "kernel.cu", ("special", kind), CU_PLAN, names)


def plan_inputs():
    STATS.about["plan YAML"] = (
        "`check` on a candidate folder with the nvcc SIMT GEMM's PTX and a plan.yaml that is its "
        "real plan with 1-6 random edits (YAML tokens: anchors, aliases, tags, flow and block "
        "punctuation, odd numbers, BOM, NUL), an alias bomb, nesting 1,000 (block) and 50,000 "
        "(flow) deep, 45,000 workspaces, 17 launches, expressions that overflow, divide by zero, "
        "are floats or strings, random bytes, empty, invalid UTF-8, and plan.yaml as a link to "
        "/proc/self/environ or nothing, a folder, a FIFO")
    names = ["plan.yaml", "launches", "workspaces", "plan"]
    for i in range(40):
        candidate_run("plan YAML", f"mutated #{i}", "kernel.ptx", PTX, mutate(PTX_PLAN, YAML_TOKENS, RNG.randrange(1, 7)), names)
    lines = PTX_PLAN.split(b"\n")
    grid = next(l for l in lines if b"grid" in l)
    fixed = {
        "alias bomb": alias_bomb(),
        "deep block nesting": deep_block(),
        "deep flow nesting": b"launches: " + deep_flow(),
        "45,000 workspaces": PTX_PLAN + b"\nworkspaces:\n" + b"".join(b"  - {name: w%d, bytes: 1}\n" % i for i in range(45000)),
        "17 launches": b"launches:\n" + b"".join(b"  - " + PTX_PLAN.split(b"  - ", 1)[1] for _ in range(17)),
        "grid overflow": PTX_PLAN.replace(grid, b'    grid: ["M*M*M*M*M*M*M*M", "9223372036854775807 + 1"]'),
        "divide by zero": PTX_PLAN.replace(grid, b'    grid: ["ceil_div(M, 0)", "M % 0"]'),
        "float and string": PTX_PLAN.replace(grid, b'    grid: [1.5, "\\"M\\"", [1], {a: 1}]'),
        "random bytes": random_bytes(),
        "empty": b"",
        "invalid UTF-8": PTX_PLAN + b"\n# \xff\xfe",
        "duplicate key": PTX_PLAN.replace(grid, grid + b"\n" + grid),
    }
    for label, data in fixed.items():
        candidate_run("plan YAML", label, "kernel.ptx", PTX, data, names)
    for kind in ("environ", "dangling", "dir", "fifo"):
        candidate_run("plan YAML", f"plan.yaml is {kind}", "kernel.ptx", PTX, ("special", kind), names)


def task_inputs():
    STATS.about["task YAML"] = (
        "`tasks check --tasks DIR` on a suite of suite.yaml and one task file: the real "
        f"{TASK}.yaml with 1-6 random edits, an alias bomb, nesting 1,000 (block) and 50,000 "
        "(flow) deep, 100,000 keys, a 5 MB file, random bytes, empty, invalid UTF-8; suite.yaml "
        "with random edits; the task file as a link to /proc/self/environ, a FIFO, a folder; "
        "the family folder as a link")
    names = [f"{TASK}.yaml", "suite.yaml", "gemm"]

    def suite_run(label, task=TASK_FILE, suite=SUITE_FILE, kind=None):
        case = new_case()
        put(case / "suite" / "suite.yaml", suite)
        path = case / "suite" / "gemm" / f"{TASK}.yaml"
        if kind == "family link":
            put(case / "elsewhere" / f"{TASK}.yaml", task)
            os.symlink(case / "elsewhere", case / "suite" / "gemm")
        elif kind:
            special(path, kind)
        else:
            put(path, task)
        run("task YAML", label, case, ["tasks", "check", "--tasks", "suite"], names)

    for i in range(40):
        suite_run(f"mutated #{i}", task=mutate(TASK_FILE, YAML_TOKENS, RNG.randrange(1, 7)))
    for i in range(4):
        suite_run(f"suite.yaml mutated #{i}", suite=mutate(SUITE_FILE, YAML_TOKENS, RNG.randrange(1, 4)))
    fixed = {
        "alias bomb": alias_bomb(b"axes"),
        "deep block nesting": deep_block(),
        "deep flow nesting": b"axes: " + deep_flow(),
        "100,000 keys": TASK_FILE + b"".join(b"k%d: 1\n" % i for i in range(100000)),
        "5 MB": TASK_FILE + (b"# " + b"x" * 1000 + b"\n") * 5000,
        "random bytes": random_bytes(),
        "empty": b"",
        "invalid UTF-8": TASK_FILE.replace(b"title:", b"title: \xff\xfe", 1),
    }
    for label, data in fixed.items():
        suite_run(label, task=data)
    for kind in ("environ", "fifo", "dir", "family link"):
        suite_run(f"task file is {kind}" if kind != "family link" else kind, kind=kind)


TEMPLATE = ROOT / "template"


def build_template():
    """The loopback manifest's closure in a store of its own, by the binary under test."""
    TEMPLATE.mkdir()
    zip_path = TEMPLATE / "loopback.zip"
    subprocess.run([BIN, "bundle", str(REPO / "manifests/loopback.yaml"), "-o", str(zip_path),
                    "--store", str(REPO / "artifacts"), "--tasks", TASKS],
                   check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    subprocess.run([BIN, "import", str(zip_path), "--store", str(TEMPLATE / "store" / "artifacts"),
                    "--manifests", str(TEMPLATE / "store" / "manifests"), "--tasks", TASKS],
                   check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)


def store_copy(case):
    shutil.copytree(TEMPLATE / "store", case / "s", symlinks=True)
    return [k for k, v in snapshot(case).items() if v not in ("dir", "special")]


def manifest_inputs():
    STATS.about["manifests"] = (
        "`verify MANIFEST` (35 runs) and `site MANIFEST -o DIR` (8 runs) against a store holding "
        "the loopback manifest's closure: manifests/loopback.yaml and leaderboard.yaml with 1-6 "
        "random edits, an alias bomb, nesting 1,000 and 50,000 deep, random bytes, empty, "
        "invalid UTF-8, and the manifest as a link to /proc/self/environ")
    names = ["m.yaml"]

    def manifest_run(label, data, command, kind=None):
        case = new_case()
        keep = store_copy(case)
        path = case / "m.yaml"
        if kind:
            special(path, kind)
        else:
            put(path, data)
        if command == "verify":
            argv = ["verify", "m.yaml", "--store", "s/artifacts", "--tasks", TASKS]
            new = lambda rel: False
        else:
            argv = ["site", "m.yaml", "-o", "public", "--store", "s/artifacts", "--tasks", TASKS]
            new = lambda rel: rel.startswith("public/")
        run("manifests", f"{command}: {label}", case, argv, names, keep=keep, expect_new=new)

    for i in range(24):
        manifest_run(f"loopback mutated #{i}", mutate(LOOPBACK, YAML_TOKENS, RNG.randrange(1, 7)), "verify")
    for i in range(4):
        manifest_run(f"leaderboard mutated #{i}", mutate(LEADERBOARD, YAML_TOKENS, RNG.randrange(1, 7)), "verify")
    for i in range(6):
        manifest_run(f"loopback mutated #{i}", mutate(LOOPBACK, YAML_TOKENS, RNG.randrange(1, 4)), "site")
    manifest_run("the loopback manifest", LOOPBACK, "site")
    fixed = {
        "alias bomb": alias_bomb(b"runs"),
        "deep block nesting": deep_block(),
        "deep flow nesting": b"runs: " + deep_flow(),
        "random bytes": random_bytes(),
        "empty": b"",
        "invalid UTF-8": LOOPBACK.replace(b"title:", b"title: \xff", 1),
    }
    for label, data in fixed.items():
        manifest_run(label, data, "verify")
    manifest_run("link to /proc/self/environ", None, "verify", kind="environ")
    manifest_run("link to /proc/self/environ", None, "site", kind="environ")


def zip_bytes(entries, encrypted=False):
    """A zip of (name, bytes[, ZipInfo tweak]) entries; with `encrypted`, every entry's
    general-purpose flags claim encryption (zipfile clears them when writing, so they are
    patched in the local and central headers afterwards)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for entry in entries:
            name, data = entry[0], entry[1]
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            if len(entry) > 2:
                entry[2](info)
            z.writestr(info, data)
    data = bytearray(buf.getvalue())
    if encrypted:
        for signature, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
            at = data.find(signature)
            while at >= 0:
                data[at + flags_at] |= 0x1
                at = data.find(signature, at + 4)
    return bytes(data)


def blake3_name(data):
    """The entry name of an object: the campaign cannot hash BLAKE3 with the standard
    library, so it names a digest that the content does not have."""
    h = hashlib.sha256(data).hexdigest()
    return f"artifacts/v1/blake3/{h[:2]}/{h[2:4]}/{h}"


def bundle_inputs():
    STATS.about["bundles"] = (
        "`import BUNDLE` into a store that already holds part of the loopback closure and a "
        "manifest: the real loopback bundle with 1-5 byte edits (flips, bytes set to 0xff or "
        "0, cuts, insertions, copies, half of them in the last 512 bytes where the central "
        "directory is), zips with entry names `../`, absolute, `C:/`, backslashes, NUL, two "
        "manifests, a manifest name with `..`, a symbolic-link entry to /proc/self/environ, the "
        "encryption flag, a 64 MiB zip bomb, an object under a digest its bytes do not have, "
        "a manifest differing from one of the same name in the store, random bytes, empty, "
        "and the bundle as a folder or /dev/zero")
    names = ["bundle.zip", "manifests/"]
    real = (TEMPLATE / "loopback.zip").read_bytes()

    def bundle_run(label, data=None, kind=None, conflict=False):
        case = new_case()
        keep = store_copy(case)
        if conflict:
            put(case / "s" / "manifests" / "m.yaml", b"another manifest\n")
            keep.append("s/manifests/m.yaml")
        path = case / "bundle.zip"
        if kind:
            special(path, kind)
        else:
            put(path, data)

        def new(rel):
            name = rel.rsplit("/", 1)[-1]
            return (rel.startswith("s/artifacts/v1/blake3/")
                    or (rel.startswith("s/manifests/") and not name.startswith(".")))

        run("bundles", label, case,
            ["import", "bundle.zip", "--store", "s/artifacts", "--manifests", "s/manifests",
             "--tasks", TASKS], names, keep=keep, expect_new=new)

    def byte_edit(data):
        data = bytearray(data)
        for _ in range(RNG.randrange(1, 6)):
            end = RNG.random() < 0.5
            at = (len(data) - 1 - RNG.randrange(min(512, len(data)))) if end else RNG.randrange(len(data))
            kind = RNG.randrange(5)
            if kind == 0:
                data[at] ^= RNG.randrange(1, 256)
            elif kind == 1:
                data[at:at + 4] = b"\xff" * len(data[at:at + 4])
            elif kind == 2:
                data = data[:at]
            elif kind == 3:
                data[at:at] = bytes(RNG.randrange(256) for _ in range(RNG.randrange(1, 32)))
            else:
                src = RNG.randrange(len(data))
                n = RNG.randrange(1, 64)
                chunk = data[src:src + n]
                data[at:at + len(chunk)] = chunk
            if not data:
                break
        return bytes(data)

    for i in range(40):
        bundle_run(f"real bundle, bytes edited #{i}", byte_edit(real))
    manifest = (b'manifest: 1\nsuite: { version: "1.0.0", hash: "' + b"0" * 64
                + b'" }\nruns: []\nsite: { title: T, base_path: / }\n')
    obj = b"an object"

    def symlink(info):
        info.create_system = 3
        info.external_attr = (0o120777 << 16)

    zips = {
        "../ entry": [("manifests/m.yaml", manifest), ("../escape", obj)],
        "absolute entry": [("manifests/m.yaml", manifest), ("/tmp/escape", obj)],
        "C:/ entry": [("manifests/m.yaml", manifest), ("C:/escape", obj)],
        "backslash entry": [("manifests/m.yaml", manifest), ("artifacts\\..\\..\\escape", obj)],
        "NUL in a name": [("manifests/m.yaml", manifest), ("artifacts/v1\x00/x", obj)],
        "two manifests": [("manifests/m.yaml", manifest), ("manifests/n.yaml", manifest)],
        "manifest name with ..": [("manifests/../m.yaml", manifest)],
        "symbolic-link entry": [("manifests/m.yaml", manifest), (blake3_name(b"/proc/self/environ"), b"/proc/self/environ", symlink)],
        "zip bomb": [("manifests/m.yaml", manifest), (blake3_name(b"z"), b"\x00" * (64 << 20))],
        "object under a wrong digest": [("manifests/m.yaml", manifest), (blake3_name(obj), obj)],
        "no manifest": [(blake3_name(obj), obj)],
    }
    for label, entries in zips.items():
        bundle_run(label, zip_bytes(entries))
    bundle_run("encrypted entries", zip_bytes([("manifests/m.yaml", manifest)], encrypted=True))
    bundle_run("manifest conflict", zip_bytes([("manifests/m.yaml", manifest)]), conflict=True)
    bundle_run("random bytes", random_bytes())
    bundle_run("PK header and random bytes", b"PK\x03\x04" + random_bytes())
    bundle_run("empty", b"")
    bundle_run("bundle is a folder", kind="dir")
    bundle_run("bundle is /dev/zero", kind="zero")


def response_inputs():
    STATS.about["responses"] = (
        "`check RESPONSE.md` on a model response made of prose, the nvcc SIMT GEMM's PTX in a "
        "```ptx block and its plan in a ```yaml block, with 1-6 random edits (fences, tags, "
        "indentation with tabs and U+00A0/U+3000, YAML tokens), fence soup, blocks indented "
        "with non-ASCII spaces, an unterminated block, prose only, 20,000 blocks, a 4 MB "
        "response, a CUDA block with hostile includes, random bytes, NUL, invalid UTF-8, and "
        "the response as a link to /proc/self/environ")
    names = ["response.md", "block", "PTX", "plan", "launches", "include"]
    base = b"Here is my kernel.\n\n```ptx\n" + PTX + b"```\n\nAnd the plan:\n\n```yaml\n" + PTX_PLAN + b"```\n"
    fence_tokens = [b"```", b"~~~", b"````", b"```ptx\n", b"```yaml\n", b"```cuda\n", b"\t",
                    b"\xc2\xa0", b"\xe3\x80\x80", b"\n", b"\r\n", b"launches:\n"] + YAML_TOKENS

    def response_run(label, data=None, kind=None):
        case = new_case()
        path = case / "response.md"
        if kind:
            special(path, kind)
        else:
            put(path, data)
        run("responses", label, case, ["check", "response.md", "--task", TASK, "--tasks", TASKS], names)

    for i in range(32):
        response_run(f"mutated #{i}", mutate(base, fence_tokens, RNG.randrange(1, 7)))
    soup = b"".join(RNG.choice([b"```", b"```ptx", b"```yaml", b"~~~", b".entry k", b"launches:", b"\xe3\x80\x80```", b"text"]) + b"\n" for _ in range(400))
    fixed = {
        "fence soup": soup,
        "U+00A0 indentation": b" ```ptx\n\xc2\xa0" + PTX + b"```\n```yaml\n" + PTX_PLAN + b"```\n",
        "U+3000 indentation": b"\xe3\x80\x80```ptx\n\xe3\x80\x80 " + PTX + b"```\n\xe3\x80\x80```yaml\n" + PTX_PLAN + b"```\n",
        "unterminated block": base.rsplit(b"```", 1)[0],
        "prose only": b"I could not write this kernel.\n" * 100,
        "20,000 blocks": b"```ptx\n.version 8.7\n```\n" * 20000,
        "4 MB": base + b"x" * (4 << 20),
        "hostile CUDA block": b"```cuda\n#include \"/proc/self/environ\"\n" + CU + b"```\n```yaml\n" + CU_PLAN + b"```\n",
        "random bytes": random_bytes(),
        "NUL bytes": b"\x00" * 1000,
        "invalid UTF-8": base.replace(b"Here", b"H\xffre", 1),
    }
    for label, data in fixed.items():
        response_run(label, data)
    response_run("link to /proc/self/environ", kind="environ")


def output_inputs():
    STATS.about["output paths"] = (
        "`bundle m.yaml -o PATH` and `export results m.yaml --format csv -o PATH` (the loopback "
        "manifest and its store) where PATH is a folder, a link to a store object, to /dev/null "
        "or to nothing, a FIFO, in a missing folder, ends in `/`, is /dev/full, has a 300-byte "
        "name, a newline in its name, is an existing file, or is a store object's own path")
    names = ["out", "/dev/full", "store", "No space", "m.yaml"]

    def out_run(label, command, setup):
        case = new_case()
        keep = store_copy(case)
        put(case / "m.yaml", LOOPBACK)
        target = setup(case)
        if command == "bundle":
            argv = ["bundle", "m.yaml", "-o", target, "--store", "s/artifacts", "--tasks", TASKS]
        else:
            argv = ["export", "--tasks", TASKS, "results", "m.yaml", "--format", "csv", "-o", target, "--store", "s/artifacts"]
        wanted = str(Path(target)) if not target.startswith("/") else None
        run("output paths", f"{command} -o {label}", case, argv, names + [wanted or target], keep=keep,
            expect_new=lambda rel: rel == wanted)

    def an_object(case):
        return next(str(p.relative_to(case)) for p in sorted((case / "s/artifacts/v1/blake3").rglob("*")) if p.is_file())

    setups = {
        "a folder": lambda c: (c / "out").mkdir() or "out",
        "a link to a store object": lambda c: os.symlink(c / an_object(c), c / "out") or "out",
        "a link to /dev/null": lambda c: os.symlink("/dev/null", c / "out") or "out",
        "a dangling link": lambda c: os.symlink(c / "nothing", c / "out") or "out",
        "a FIFO": lambda c: os.mkfifo(c / "out") or "out",
        "a missing folder": lambda c: "missing/out",
        "a trailing /": lambda c: "out/",
        "/dev/full": lambda c: "/dev/full",
        "a 300-byte name": lambda c: "o" * 300,
        "a newline in the name": lambda c: "out\nput",
        "an existing file": lambda c: put(c / "out", b"old\n") or "out",
        "a store object's path": an_object,
    }
    for command in ("bundle", "export"):
        for label, setup in setups.items():
            out_run(label, command, setup)


def stdout_inputs():
    STATS.about["full stdout"] = (
        "each command that prints, with its standard output on /dev/full: tasks list / show / "
        "check, prompt, check (text and --json), verify (store and manifest), show (text and "
        "--raw), bundle, import, site, export results, --help, --version")
    names = ["standard output", "stdout"]

    def full_run(label, argv, with_store=True):
        case = new_case()
        keep = store_copy(case) if with_store else []
        put(case / "m.yaml", LOOPBACK)
        run("full stdout", label, case, argv, names, keep=keep, stdout_path="/dev/full",
            expect_new=lambda rel: rel.startswith(("public/", "s2/", "lb.zip", "out.csv")))

    digest = next(p.name for p in sorted((TEMPLATE / "store/artifacts/v1/blake3").rglob("*")) if p.is_file())
    st = ["--store", "s/artifacts"]
    commands = {
        "tasks list": ["tasks", "--tasks", TASKS, "list"],
        "tasks show": ["tasks", "--tasks", TASKS, "show", TASK],
        "tasks check": ["tasks", "--tasks", TASKS, "check"],
        "prompt": ["prompt", TASK, "--tasks", TASKS],
        "check": ["check", str(REPO / "tasks/candidates/nvcc_simt_gemm"), "--task", TASK, "--tasks", TASKS],
        "check --json": ["check", str(REPO / "tasks/candidates/nvcc_simt_gemm"), "--task", TASK, "--tasks", TASKS, "--json"],
        "verify": ["verify", "--tasks", TASKS] + st,
        "verify manifest": ["verify", "m.yaml", "--tasks", TASKS] + st,
        "show": ["show", digest, "--tasks", TASKS] + st,
        "show --raw": ["show", "--raw", digest, "--tasks", TASKS] + st,
        "bundle": ["bundle", "m.yaml", "-o", "lb.zip", "--tasks", TASKS] + st,
        "import": ["import", str(TEMPLATE / "loopback.zip"), "--store", "s2/artifacts", "--manifests", "s2/manifests", "--tasks", TASKS],
        "site": ["site", "m.yaml", "-o", "public", "--tasks", TASKS] + st,
        "export results": ["export", "--tasks", TASKS, "results", "m.yaml", "--format", "csv", "-o", "out.csv"] + st,
        "--help": ["--help"],
        "--version": ["--version"],
    }
    for label, argv in commands.items():
        full_run(label, argv)


def self_check():
    """Each classification fires on a stand-in for the binary that does the thing."""
    cases = {
        "clear": ("echo 'error: in.yaml: bad' >&2; exit 2", ("clear", False, False, False)),
        "unclear": ("echo 'error: something' >&2; exit 2", ("unclear", False, False, False)),
        "panic": ("echo \"thread 'main' panicked at x\" >&2; exit 101", ("panic", False, False, False)),
        "hang": ("sleep 30", ("hang", False, False, False)),
        "leak in output": ('echo "$PTXBENCH_TEST_TOKEN"', ("accepted", True, False, False)),
        "leak in a file": ('echo "$OPENAI_API_KEY" > report.txt', ("accepted", True, False, True)),
        "data lost": ("echo x >> kept", ("accepted", False, True, False)),
        "litter": ('touch "$TMPDIR/left"', ("accepted", False, False, True)),
    }
    for label, (script, want) in cases.items():
        case = new_case()
        put(case / "kept", b"kept\n")
        got = run(None, label, case, [], ["in.yaml"], keep=["kept"], timeout=2,
                  program=["bash", "-c", script])
        if got != want:
            sys.exit(f"self-check {label}: classified {got}, expected {want}")


# ---------------------------------------------------------------- main

started = time.monotonic()
try:
    self_check()
    build_template()
    for generate in (ptx_inputs, cuda_inputs, plan_inputs, task_inputs, manifest_inputs,
                     bundle_inputs, response_inputs, output_inputs, stdout_inputs):
        generate()
finally:
    shutil.rmtree(ROOT, ignore_errors=True)

print("| category | inputs tried | clear errors | unclear errors | accepted | panics | hangs | leaks | data lost | litter |")
print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
total = dict.fromkeys(COLUMNS, 0)
for category, row in STATS.rows.items():
    print(f"| {category} | " + " | ".join(str(row[c]) for c in COLUMNS) + " |")
    for c in COLUMNS:
        total[c] += row[c]
print("| **all** | " + " | ".join(f"**{total[c]}**" for c in COLUMNS) + " |")
print()
print(f"Seed {SEED}; {time.monotonic() - started:.0f} s in all. The classification was checked "
      "first on stand-ins that exit 2 with and without naming their input, panic, hang, print "
      "or write a secret, change a kept file and leave a temp file: each was classified as "
      "such.")
print()
print("What each category tried:")
print()
for category, about in STATS.about.items():
    print(f"- **{category}**: {about}.")
print()
print("Accepted (exit 0), by category:")
print()
for category, labels in STATS.accepted.items():
    print(f"- **{category}**: " + "; ".join(labels) + ".")
print()
if STATS.findings:
    print("Runs that were not a clear error or an acceptance, or that were flagged:")
    print()
    for f in STATS.findings:
        print(f"- {f}")
else:
    print("Every run was a clear error or an acceptance; none leaked, lost data or left litter.")
PY
