#!/usr/bin/env bash
# The hostile-input campaign of issues 41 and 55: runs the real `ptxbench` binary over generated
# hostile inputs, category by category, and prints a Markdown table of what each run did.
#
#   pipeline/scripts/hostile-campaign.sh PTXBENCH [--seed N] [--canned-server PATH]
#                                        [--only CATEGORY,...] [--no-oom] [--log DIR]
#
# PTXBENCH is the binary to try (a debug build will do). With CUDA_HOME set, NVRTC, ptxas and
# nvdisasm run as `check` runs them, inside the compiler sandbox; its wall-clock limit is lowered
# to 20 s and 2 GiB (PTXBENCH_COMPILE_LIMIT_S, PTXBENCH_COMPILE_MEMORY_MIB) so that a compiler
# bomb ends well within the run's own limit of 90 s (the "compile memory" category and the OOM
# reproduction also run with the default limits).
# The categories that talk to a model endpoint (endpoint echoes, leftovers of `generate`, the OOM
# reproduction) need the loopback `canned-server` (cargo build --example canned-server; default:
# beside PTXBENCH or target/debug/examples/); "temp folder" mounts small tmpfs folders and needs
# root; "large objects" needs the Python `blake3` module and /usr/bin/time (peak RSS). A
# category whose tool is missing is skipped and says so.
# --only runs the named categories (keys: ptx cuda plan task manifests bundles responses outputs
# stdout routes memory echoes tempdir links large leftovers oom); --no-oom skips the OOM
# reproduction (generate at concurrency 2 on ptxas register bombs, MemAvailable sampled); --log
# writes each run's command, classification and output (its first 20,000 characters) to DIR.
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
# The issue-55 categories add their own checks to these flags: a host file's marker or another
# process's secret in the output is a leak, and so is an output that tells an existing host file
# from a missing one; a compiler process that outlives a killed ptxbench is litter; what a
# category expects beyond the classes (a limit named, no candidate verdict for a harness failure)
# is listed under "not as expected".
# Then the table, a line per category on what it generated, and every run that was not a clear
# error or acceptance, or was flagged, with its first line of output, then the runs not as
# expected and the sections of the OOM reproduction, the large objects and the leftovers.
set -euo pipefail
if [[ $# -lt 1 ]]; then
    echo "usage: $0 PTXBENCH [--seed N] [--canned-server PATH] [--only CATEGORY,...] [--no-oom] [--log DIR]" >&2
    exit 2
fi
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
exec python3 - "$repo" "$@" <<'PY'
import hashlib
import io
import os
import random
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

REPO = Path(sys.argv[1])
BIN = str(Path(sys.argv[2]).resolve())
SEED = 41
CANNED = None
ONLY = None
OOM = True
LOG = None
args = sys.argv[3:]
while args:
    a = args.pop(0)
    if a == "--seed" and args:
        SEED = int(args.pop(0))
    elif a == "--canned-server" and args:
        CANNED = str(Path(args.pop(0)).resolve())
    elif a == "--only" and args:
        ONLY = set(args.pop(0).split(","))
    elif a == "--no-oom":
        OOM = False
    elif a == "--log" and args:
        LOG = Path(args.pop(0)).resolve()
        LOG.mkdir(parents=True, exist_ok=True)
    else:
        sys.exit(f"unknown argument {a!r}")
if not os.access(BIN, os.X_OK):
    sys.exit(f"{BIN} is not an executable")
if CANNED is None:
    for c in (Path(BIN).parent / "canned-server", Path(BIN).parent / "examples" / "canned-server",
              REPO / "target/debug/examples/canned-server"):
        if os.access(c, os.X_OK):
            CANNED = str(c)
            break

RNG = random.Random(SEED)
TOKEN = "tok-campaign-" + secrets.token_hex(12)
API_KEY = "sk-campaign-" + secrets.token_hex(12)


def json_escaped(text):
    """`text` as a JSON string spells it with every character \\u-escaped."""
    return "".join(f"\\u{ord(c):04x}" for c in text)


# Each secret also counts in its JSON-escaped form (an endpoint may echo the key escaped), and the
# API key also as the `Authorization` value it travels in.
SECRETS = [s.encode() for s in (TOKEN, API_KEY, json_escaped(TOKEN), json_escaped(API_KEY),
                                json_escaped("Bearer " + API_KEY))]
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
        # Runs whose class is no flag but not what their category expects.
        self.unexpected = []
        # Markdown sections printed after the table (title, lines).
        self.sections = []
        # Categories skipped for a missing tool, with why.
        self.skipped = {}
        # The OOM reproduction's figures.
        self.oom = []


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


def leaked_in_files(folder, after, secrets=SECRETS):
    hits = []
    for rel, kind in after.items():
        if kind in ("dir", "special") or kind.startswith("link:"):
            continue
        try:
            data = (folder / rel).read_bytes()
        except OSError:
            continue
        if any(s in data for s in secrets):
            hits.append(rel)
    return hits


def campaign_env(case, env=None):
    """The environment of a run in `case`: the secrets, TMPDIR inside the case, the lowered
    compile limits; `env` overrides (a value of None removes the variable)."""
    tmp = case / "tmp"
    tmp.mkdir(exist_ok=True)
    out = {k: v for k, v in os.environ.items() if not k.startswith("PTXBENCH_")}
    out.update(PTXBENCH_TEST_TOKEN=TOKEN, OPENAI_API_KEY=API_KEY, TMPDIR=str(tmp),
               PTXBENCH_COMPILE_LIMIT_S="20", PTXBENCH_COMPILE_MEMORY_MIB="2048")
    out.pop("RUST_BACKTRACE", None)
    for k, v in (env or {}).items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


class Result:
    def __init__(self, **kw):
        self.__dict__.update(kw)


TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def run(category, label, case, argv, names, keep=(), expect_new=lambda rel: False,
        stdout_path=None, timeout=90, program=None, env=None, secrets=(), judge=None,
        post=None, rss=False):
    """Runs ptxbench with `argv` in folder `case` and classifies what it did.

    `names`: strings of which one in the output counts as naming the input; `keep`: paths
    (relative to `case`) that must keep their content; `expect_new`: which new paths are the
    command's outputs (anything else new is litter). The issue-55 categories add: `env`
    (overrides of the run's environment), `secrets` (more byte strings whose presence in the
    output or a file is a leak), `post(case)` (done after the command, before its folder is
    compared: an edit of what it wrote), `judge(text, rc, case)` (returns reasons, each
    "leak: ...", "lost: ...", "litter: ..." flagging the run, or "unexpected: ..." listing it as
    not what its category expects) and `rss` (its peak resident memory, by /usr/bin/time)."""
    env = campaign_env(case, env)
    all_secrets = SECRETS + [s.encode() if isinstance(s, str) else s for s in secrets]
    before = snapshot(case)
    out_file = open(stdout_path, "wb") if stdout_path else None
    rss_file = None
    command = program or [BIN] + argv
    if rss and TIME:
        rss_file = ROOT / f"rss-{case.name}-{time.monotonic_ns()}.txt"
        command = [TIME, "-f", "%M", "-o", str(rss_file)] + command
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=case, env=env, stdin=subprocess.DEVNULL,
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
    if post:
        post(case)
    after = snapshot(case)
    text = (out + b"\n" + err).decode("utf-8", "replace")
    rc = proc.returncode
    peak_kb = None
    if rss_file:
        try:
            peak_kb = int(rss_file.read_text().split()[-1])
        except (OSError, ValueError, IndexError):
            pass
    panic = not hang and (rc == 101 or "panicked" in text)
    leak = [s.decode() for s in all_secrets if s in out or s in err]
    leak += leaked_in_files(case, after, all_secrets)
    lost = [k for k in keep if after.get(k) != before.get(k)]
    litter = [k for k, v in after.items()
              if k not in before and v != "dir" and not expect_new(k)]
    named = any(n in line for line in text.splitlines() for n in names)
    unexpected = []
    for reason in (judge(text, rc, case) if judge and not hang else []):
        flag, _, why = reason.partition(": ")
        {"leak": leak, "lost": lost, "litter": litter}.get(flag, unexpected).append(why)
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
    if LOG and category is not None:
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{case.name}-{category}-{label}")[:150]
        (LOG / f"{name}.txt").write_text(
            f"{category} / {label}\nargv: {argv}\nexit: {rc}; {outcome}; leak {leak}; lost {lost}; "
            f"litter {litter}; unexpected {unexpected}\n\n" + text[:20000]
            + (f"\n[... {len(text) - 20000} more characters]" if len(text) > 20000 else ""))
    result = Result(outcome=outcome, leak=leak, lost=lost, litter=litter, rc=rc, text=text,
                    seconds=seconds, rss_kb=peak_kb, out_bytes=len(out) + len(err),
                    unexpected=unexpected)
    if category is None:
        return result
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
    if unexpected:
        STATS.unexpected.append(f"{category} / {label}: {outcome} (exit {rc}, {seconds:.1f} s): "
                                + "; ".join(unexpected))
    print(f"{category:10} {outcome:9} {seconds:6.1f}s {label}"
          + (f" [{'; '.join(unexpected)}]" if unexpected else ""), file=sys.stderr)
    return result


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


# ---------------------------------------------------------------- issue 55


TRITON_PTX = read("tasks/candidates/triton_gemm_tma/kernel.ptx")
TRITON_PLAN = read("tasks/candidates/triton_gemm_tma/plan.yaml")
# A ptxas register bomb: ptxas takes about 6.7 GB for it (issue 55, finding 2).
HOG = (b".visible .entry hog(.param .u64 p) { .reg .b32 %zz<850000000>; .reg .b64 %rd<2>; "
       b"ld.param.u64 %rd1, [p]; st.global.u32 [%rd1], %zz7; ret; }\n")
BOMB_PTX = TRITON_PTX + b"\n" + HOG
GEN_TASK = "gemm_n4096_k4096"
FLASHINFER_DEF = REPO / "pipeline/tests/fixtures/tasks/flashinfer/gemm_n4096_k4096.json"
CUDA = bool(os.environ.get("CUDA_HOME"))
MOUNTS = []
STRAYS = []


def slow_ptx(n=100_000):
    """The Triton GEMM's PTX with `n` small extra entries: ptxas works on it for a while."""
    return TRITON_PTX + b"\n" + b"".join(
        b".visible .entry pad%d(.param .u64 p) { .reg .b64 %%rd<2>; ld.param.u64 %%rd1, [p]; "
        b"st.global.u64 [%%rd1], %%rd1; ret; }\n" % i for i in range(n))


def good_answer():
    return (b"Here is a tiled SIMT kernel.\n\n```cuda\n" + CU + b"```\n\nAnd its launch plan:\n\n"
            b"```yaml\n" + CU_PLAN + b"```\n")


def ptx_answer(ptx, plan=TRITON_PLAN):
    return b"Here is my kernel.\n\n```ptx\n" + ptx + b"\n```\n\nAnd the plan:\n\n```yaml\n" + plan + b"```\n"


def skip(category, why):
    STATS.skipped[category] = why
    print(f"{category:10} skipped: {why}", file=sys.stderr)


def session_procs(sid, also=None):
    """(pid, command line) of each live process of session `sid`, or whose command line holds
    `also` (zombies are not counted)."""
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            st = Path(f"/proc/{p}/stat").read_text()
            fields = st[st.rindex(")") + 2:].split()
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ")
        except (OSError, ValueError):
            continue
        cmd = cmd.decode("utf-8", "replace").strip()
        if fields[0] == "Z":
            continue
        if int(fields[3]) == sid or (also and also in cmd):
            found.append((int(p), cmd))
    return found


def rss_of(pids):
    total = 0
    page = os.sysconf("SC_PAGE_SIZE")
    for p in pids:
        try:
            total += int(Path(f"/proc/{p}/statm").read_text().split()[1]) * page
        except (OSError, ValueError, IndexError):
            pass
    return total


def meminfo(key="MemAvailable"):
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def gib(n):
    return f"{n / (1 << 30):.2f} GiB"


class Canned:
    """The loopback chat server answering `answer` (with `faults`), in a folder outside every
    case."""
    count = 0

    def __init__(self, answer, faults=""):
        Canned.count += 1
        self.folder = ROOT / "canned" / f"server-{Canned.count:03}"
        put(self.folder / "models.txt", "canned-model\n")
        put(self.folder / "turn-0.md", answer)
        if faults:
            put(self.folder / "faults.txt", faults)
        self.proc = subprocess.Popen([CANNED, str(self.folder)], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        STRAYS.append(self.proc)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("serving"):
            raise RuntimeError(f"canned-server did not start: {line!r}")
        self.url = line.split()[-1]

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def gen_manifest(url, replicas=1, concurrency=1, max_attempts=6, timeout_s=60):
    return (f"generate: 1\nname: campaign\ntasks: [{GEN_TASK}]\narchs: [sm_90a]\nvariants: [1]\n"
            f"replicas: {replicas}\nturn_limits: [1]\n"
            f"retry: {{max_attempts: {max_attempts}, base_delay_ms: 10, max_delay_ms: 200}}\n"
            f"models:\n  - name: canned-model\n    display_name: Canned Model\n"
            f"    endpoint: \"{url}\"\n    api_key_env: OPENAI_API_KEY\n"
            f"    concurrency: {concurrency}\n    timeout_s: {timeout_s}\n"
            f"    sampling: {{temperature: 0.2, max_tokens: 4096, extra: {{seed: 7}}}}\n")


GEN_ARGS = ["--tasks", TASKS, "generate", "gen.yaml", "--out", "out", "--store", "artifacts",
            "--no-eval"]
# The evaluation path without a GPU: `generate --no-eval` statically checks a PTX answer without
# ptxas (check::check with no architecture to compile for); the evaluation compiles it with ptxas
# before it finds no GPU, and that is where a register bomb takes its memory.
GEN_EVAL_ARGS = GEN_ARGS[:-1] + ["--allow-no-gpu"]
OBJECT_PATH = re.compile(r"^(s/)?artifacts/v1/blake3/[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{64}$")


def generated(rel):
    """The outputs `generate` exists to write: its output folder and store objects."""
    return rel.startswith("out/") or bool(OBJECT_PATH.match(rel))


def verdicts(text):
    return re.findall(r"^result: (.*)$", text, re.M)


def routes_inputs():
    cat = "CUDA header routes"
    STATS.about[cat] = (
        "`check` of the SIMT GEMM source with a prefix that makes CCCL's own "
        "thrust/iterator/detail/host_system_tag.h include `<folder>/detail/execution_policy.h` "
        "(`#define THRUST_HOST_SYSTEM 4`, `#define __THRUST_HOST_SYSTEM_NAMESPACE` 40 `../` and "
        "an absolute folder) where that header is missing (the baseline every other route's output "
        "is compared with), a file holding a marker, a link to another process's "
        "/proc/<pid>/environ (a `sleep` with a secret in its environment), to /proc/self/environ, "
        "to 0600 and 0644 shadow-like files, or a dangling link; and token-pasted `__has_include` "
        "probes (`#define CAT(a,b) a##b`, `#define P CAT(__has_,include)`, `#if P(\"path\")` then "
        "`#error` EXISTS or ABSENT) of a CUDA header (the control, which must say EXISTS), the "
        "marker file, a missing file, /proc/self/environ, another process's environ, "
        "/etc/passwd (quoted and in angle brackets), the shadow-like file, a host folder, the "
        "candidate's own kernel.cu, and with `__has_include_next`. A leak: a marker or secret in "
        "the output, a probe saying EXISTS, or a route whose output differs from the missing "
        "header's (it tells an existing host file from a missing one)")
    if not CUDA:
        return skip(cat, "CUDA_HOME is not set (NVRTC is needed)")
    names = ["kernel.cu", "execution_policy.h", "host_system_tag.h", "#error", "include"]
    marker = "hostfile" + secrets.token_hex(8)
    shadow_secret = "shadowpw" + secrets.token_hex(8)
    env_secret = "sleeperenv" + secrets.token_hex(8)
    hidden = [marker, shadow_secret, env_secret]
    sleeper = subprocess.Popen(["sleep", "600"], env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                                       "CAMPAIGN_SLEEPER_SECRET": env_secret},
                               start_new_session=True)
    STRAYS.append(sleeper)
    hosts = ROOT / "host-files"  # outside every case folder, like a host's own files
    put(hosts / "shadow", f"root:{shadow_secret}:19000:0:99999:7:::\n")
    os.chmod(hosts / "shadow", 0o600)
    put(hosts / "shadow-readable", f"root:{shadow_secret}:19000:0:99999:7:::\n")
    os.chmod(hosts / "shadow-readable", 0o644)
    marker_text = f"int {marker} = 1;\n#error {marker}\n"

    def target(name, kind):
        folder = hosts / f"route-{name}"
        header = folder / "detail" / "execution_policy.h"
        if kind == "missing":
            return folder
        header.parent.mkdir(parents=True, exist_ok=True)
        if kind == "file":
            put(header, marker_text)
        else:
            os.symlink(kind, header)
        return folder

    def route(folder):
        return (b"#define THRUST_HOST_SYSTEM 4\n#define __THRUST_HOST_SYSTEM_NAMESPACE "
                + b"../" * 40 + str(folder).lstrip("/").encode()
                + b"\n#include <thrust/iterator/detail/host_system_tag.h>\n" + CU)

    def normal(text, folder):
        text = text.replace(str(folder).lstrip("/"), "<FOLDER>")
        return re.sub(r"case-\d+", "case-N", text)

    def check_run(label, source, judge):
        case = new_case()
        put(case / "cand" / "kernel.cu", source)
        put(case / "cand" / "plan.yaml", CU_PLAN)
        return run(cat, label, case, ["check", "cand", "--task", TASK, "--tasks", TASKS], names,
                   secrets=hidden, judge=judge)

    try:
        missing = target("missing", "missing")
        baseline = check_run("route: header missing (baseline)", route(missing), None)
        base = normal(baseline.text, missing)
        routes = {
            "route: a host file with a marker": ("marker", "file"),
            "route: a link to another process's /proc/PID/environ": ("environ", f"/proc/{sleeper.pid}/environ"),
            "route: a link to /proc/self/environ": ("self-environ", "/proc/self/environ"),
            "route: a link to a 0600 shadow-like file": ("shadow", str(hosts / "shadow")),
            "route: a link to a 0644 shadow-like file": ("shadow-readable", str(hosts / "shadow-readable")),
            "route: a dangling link": ("dangling", str(hosts / "nothing-here")),
        }
        for label, (name, kind) in routes.items():
            folder = target(name, kind)

            def judge(text, rc, case, folder=folder):
                mine = normal(text, folder)
                if mine == base:
                    return []
                a = [l for l in mine.splitlines() if l not in base.splitlines()]
                return [f"leak: the output differs from the missing header's, so it tells that "
                        f"the file exists: `…{(a or ['?'])[0].strip()[-70:]}`"]
            check_run(label, route(folder), judge)

        def probe(path, macro="__has_, include"):
            return (b"#define CAT(a, b) a##b\n#define P CAT(" + macro.encode() + b")\n#if P("
                    + path.encode() + b")\n#error PROBE-SAYS-EXISTS\n#else\n#error PROBE-SAYS-ABSENT\n"
                    b"#endif\n" + CU)

        def probe_judge(control=False):
            def judge(text, rc, case):
                if "PROBE-SAYS-EXISTS" not in text and "PROBE-SAYS-ABSENT" not in text:
                    return ["unexpected: neither EXISTS nor ABSENT: the probe did not run"]
                if control:
                    return [] if "PROBE-SAYS-EXISTS" in text else [
                        "unexpected: the control probe of a CUDA header says ABSENT"]
                return ["leak: the probe says the host file exists"] if "PROBE-SAYS-EXISTS" in text else []
            return judge

        marker_file = hosts / "route-marker" / "detail" / "execution_policy.h"
        probes = {
            "probe control: <cuda_fp16.h>": ("<cuda_fp16.h>", "__has_, include", True),
            "probe: the marker file": (f'"{marker_file}"', "__has_, include", False),
            "probe: a missing file": (f'"{hosts}/missing.h"', "__has_, include", False),
            "probe: /proc/self/environ": ('"/proc/self/environ"', "__has_, include", False),
            "probe: another process's environ": (f'"/proc/{sleeper.pid}/environ"', "__has_, include", False),
            "probe: /etc/passwd": ('"/etc/passwd"', "__has_, include", False),
            "probe: </etc/passwd>": ("</etc/passwd>", "__has_, include", False),
            "probe: the 0600 shadow-like file": (f'"{hosts}/shadow"', "__has_, include", False),
            "probe: a host folder": (f'"{hosts}"', "__has_, include", False),
            "probe: its own kernel.cu": (None, "__has_, include", False),
            "probe: __has_include_next of the marker file": (f'"{marker_file}"', "__has_, include_next", False),
        }
        for label, (path, macro, control) in probes.items():
            if path is None:
                path = f'"{ROOT / f"case-{N[0] + 1:04}" / "cand" / "kernel.cu"}"'
            check_run(label, probe(path, macro), probe_judge(control))
    finally:
        sleeper.kill()
        sleeper.wait()


def memory_inputs():
    cat = "compile memory"
    STATS.about[cat] = (
        "`check` of the Triton TMA GEMM's PTX (its plan alongside) with a ptxas register bomb "
        "appended (an entry declaring `.reg .b32 %zz<850000000>`), with the default compile limits "
        "(ptxas 8 GiB, budget half of MemTotal), with the campaign's (2048 MiB) and with "
        "PTXBENCH_COMPILE_BUDGET_MIB=1024, which must fail naming \"1024 MiB\"")
    if not CUDA:
        return skip(cat, "CUDA_HOME is not set (ptxas is needed)")
    names = ["ptxas", "kernel.ptx", "hog", "MiB"]
    rows = []

    def limit_named(limit):
        def judge(text, rc, case):
            why = []
            if limit and rc == 0:
                why.append("unexpected: accepted (exit 0)")
            if limit and limit not in text:
                why.append(f"unexpected: the failure does not name {limit}")
            return why
        return judge

    for label, env, limit in (
            ("register bomb, default limits",
             {"PTXBENCH_COMPILE_LIMIT_S": None, "PTXBENCH_COMPILE_MEMORY_MIB": None}, None),
            ("register bomb, the campaign's limits (2048 MiB)", {}, "2048 MiB"),
            ("register bomb, PTXBENCH_COMPILE_BUDGET_MIB=1024", {"PTXBENCH_COMPILE_BUDGET_MIB": "1024"}, "1024 MiB")):
        case = new_case()
        put(case / "cand" / "kernel.ptx", BOMB_PTX)
        put(case / "cand" / "plan.yaml", TRITON_PLAN)
        r = run(cat, label, case, ["check", "cand", "--task", TASK, "--tasks", TASKS], names,
                env=env, judge=limit_named(limit), rss=True, timeout=400)
        ptxas = [l.strip() for l in r.text.splitlines()
                 if l.startswith("ptxas sm_") or "ran out of memory" in l]
        rows.append(f"| {label} | {r.rc} | {', '.join(verdicts(r.text)) or '-'} | "
                    f"{'; '.join(ptxas)[:300]} | {r.rss_kb // 1024 if r.rss_kb else '?'} MiB | {r.seconds:.1f} s |")
    STATS.sections.append(("Compile memory: the register bomb in `check`", [
        "| run | exit | result | ptxas | peak RSS (ptxbench and its largest child) | wall |",
        "|---|--:|---|---|--:|--:|"] + rows))


def echoes_inputs():
    cat = "endpoint echoes"
    STATS.about[cat] = (
        "`generate --no-eval` of the SIMT GEMM task against the loopback canned-server answering "
        "the known-good SIMT answer, with the key in the model's `api_key_env` (OPENAI_API_KEY), "
        "and faults `echo-key-error` (a 500 quoting the request's Authorization) then "
        "`echo-key-ok` (the answer with the Authorization plain in an extra field and "
        "\\u-escaped in the content), `echo-key-ok` alone, and `echo-key-error` until the "
        "retries run out; a leak: the key, `Bearer <key>` or either \\u-escaped, anywhere in "
        "the output, the output folder or the store")
    if not CANNED:
        return skip(cat, "no canned-server (build it: cargo build --example canned-server)")
    names = ["gen.yaml", "HTTP", "endpoint", "canned-model", "500"]
    for label, faults, attempts in (
            ("echo-key-error, then echo-key-ok", "echo-key-error\necho-key-ok\n", 6),
            ("echo-key-ok", "echo-key-ok\n", 6),
            ("echo-key-error until the retries run out", "echo-key-error\n" * 3, 3)):
        case = new_case()
        server = Canned(good_answer(), faults)
        try:
            put(case / "gen.yaml", gen_manifest(server.url, max_attempts=attempts))
            run(cat, label, case, GEN_ARGS, names, expect_new=generated, timeout=120)
        finally:
            server.stop()


def mount_tmpfs(path, options):
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                          capture_output=True)
    if done.returncode != 0:
        raise OSError(done.stderr.decode().strip())
    MOUNTS.append(path)


def unmount(path):
    subprocess.run(["umount", str(path)], capture_output=True)
    if path in MOUNTS:
        MOUNTS.remove(path)


def tempdir_inputs():
    cat = "temp folder"
    STATS.about[cat] = (
        "`check` of the SIMT GEMM (CUDA) and of the nvcc SIMT GEMM's PTX with TMPDIR on a 64 KiB "
        "tmpfs filled to the last byte, on a read-only tmpfs, naming a missing folder, and naming "
        "a regular file; expected: a non-zero exit with an error that the harness (its temp "
        "folder, the compiler sandbox) could not run, and no candidate verdict (`result:` line)")
    if not CUDA:
        return skip(cat, "CUDA_HOME is not set")
    if os.geteuid() != 0:
        return skip(cat, "mounting a tmpfs needs root")

    def judge(text, rc, case):
        why = []
        if rc == 0:
            why.append("unexpected: exit 0 although the compilers could not run")
        for v in verdicts(text):
            why.append(f"unexpected: a candidate verdict `result: {v}` for a temp folder the harness could not use")
        said = [l.strip() for l in text.splitlines()
                if re.search(r"could not run|cannot compile|No space|Read-only|No such file|Not a directory", l)]
        if why and said:
            why.append(f"unexpected: it said `{said[-1][:220]}`")
        return why

    for kind in ("full", "read-only", "missing", "a file"):
        for kernel in ("CUDA", "PTX"):
            if kind in ("missing", "a file") and kernel == "PTX":
                continue
            case = new_case()
            if kernel == "CUDA":
                put(case / "cand" / "kernel.cu", CU)
                put(case / "cand" / "plan.yaml", CU_PLAN)
            else:
                put(case / "cand" / "kernel.ptx", PTX)
                put(case / "cand" / "plan.yaml", PTX_PLAN)
            tmp = case / "t"
            try:
                if kind == "full":
                    mount_tmpfs(tmp, "size=64k")
                    fd = os.open(tmp / "fill", os.O_WRONLY | os.O_CREAT, 0o644)
                    try:
                        while os.write(fd, b"\0" * 4096):
                            pass
                    except OSError:
                        pass
                    finally:
                        os.close(fd)
                elif kind == "read-only":
                    mount_tmpfs(tmp, "ro,size=64k")
                elif kind == "a file":
                    put(tmp, b"not a folder\n")
            except OSError as e:
                skip(cat, f"mount failed: {e}")
                return
            names = ["TMPDIR", "temp folder", "temporary folder", "harness", "sandbox", str(tmp)]
            try:
                run(cat, f"{kernel}, TMPDIR {kind}", case,
                    ["check", "cand", "--task", TASK, "--tasks", TASKS], names,
                    env={"TMPDIR": str(tmp)}, judge=judge)
            finally:
                if tmp in MOUNTS:
                    unmount(tmp)


GEN_TEMPLATE = {}


def build_gen_template():
    """A store holding one generation (generate --no-eval of the SIMT answer), for export sft."""
    if GEN_TEMPLATE or not CANNED or not CUDA:
        return GEN_TEMPLATE
    folder = ROOT / "gen-template"
    folder.mkdir()
    server = Canned(good_answer())
    try:
        put(folder / "gen.yaml", gen_manifest(server.url))
        subprocess.run([BIN] + GEN_ARGS, cwd=folder, env=campaign_env(folder), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    finally:
        server.stop()
    GEN_TEMPLATE["digest"] = (folder / "out" / "generation.digest").read_text().split()[0]
    GEN_TEMPLATE["store"] = folder / "artifacts"
    return GEN_TEMPLATE


def links_inputs():
    cat = "links and FIFOs"
    STATS.about[cat] = (
        "writes that could destroy data and reads that could block: `export sft GENERATION --out "
        "d.jsonl` with d.jsonl.coverage.txt a link to a store object or a FIFO; `tasks import DEF "
        "-o PATH` with PATH a dangling link, a link to a store object, a path in the store's "
        "v1/blake3/ and a store object's own path; `site` with `-o` inside the store; a `site` "
        "built and then every file of its objects/ overwritten (the store must not change); "
        "`import` of a FIFO; `verify` (store and manifest), `site`, `show`, `bundle` and "
        "`export results` over the loopback store with its run object replaced by a FIFO "
        "(30 s limit: a blocked read is a hang)")
    names = ["coverage.txt", "d.jsonl", "task.yaml", "store", "FIFO", "link", "bundle.zip",
             "public", "m.yaml"]
    tasks = ["--tasks", TASKS]
    gen = build_gen_template()
    if gen:
        for label, make in (("a link to a store object", "link"), ("a FIFO", "fifo")):
            case = new_case()
            shutil.copytree(gen["store"], case / "artifacts")
            keep = [k for k, v in snapshot(case).items() if v not in ("dir", "special")]
            cov = case / "d.jsonl.coverage.txt"
            if make == "link":
                os.symlink(case / keep[0], cov)
            else:
                os.mkfifo(cov)
            run(cat, f"export sft, coverage report is {label}", case,
                tasks + ["export", "sft", gen["digest"], "--kind", "kernelgen", "--out", "d.jsonl",
                         "--store", "artifacts"], names, keep=keep,
                expect_new=lambda rel: rel == "d.jsonl", timeout=30)
    else:
        skip(cat + " (export sft)", "no canned-server or CUDA_HOME: no generation to export")

    def an_object(case):
        return next(str(p.relative_to(case)) for p in sorted((case / "s/artifacts/v1/blake3").rglob("*")) if p.is_file())

    def store_case():
        case = new_case()
        keep = store_copy(case)
        put(case / "m.yaml", LOOPBACK)
        return case, keep

    for label, setup in (
            ("a dangling link", lambda c: os.symlink(c / "elsewhere.yaml", c / "task.yaml") or "task.yaml"),
            ("a link to a store object", lambda c: os.symlink(c / an_object(c), c / "task.yaml") or "task.yaml"),
            ("in the store's v1/blake3/", lambda c: "s/artifacts/v1/blake3/task.yaml"),
            ("a store object's own path", an_object)):
        case, keep = store_case()
        target = setup(case)
        run(cat, f"tasks import -o {label}", case,
            tasks + ["tasks", "import", str(FLASHINFER_DEF), "-o", target], names + [target],
            keep=keep, timeout=30)
    case, keep = store_case()
    run(cat, "site -o inside the store", case,
        ["site", "m.yaml", "-o", "s/artifacts/public", "--store", "s/artifacts"] + tasks, names,
        keep=keep, timeout=30)

    overwritten = [0]

    def overwrite(case):
        for p in (case / "public" / "objects").rglob("*"):
            if p.is_file() and not p.is_symlink():
                with open(p, "r+b") as f:
                    f.write(b"overwritten by the campaign\n")
                overwritten[0] += 1

    case, keep = store_case()
    run(cat, "site built, then its objects/ overwritten", case,
        ["site", "m.yaml", "-o", "public", "--store", "s/artifacts"] + tasks, names, keep=keep,
        expect_new=lambda rel: rel.startswith("public/"), post=overwrite,
        judge=lambda text, rc, case: [] if overwritten[0] else
        ["unexpected: the site has no objects/ to overwrite"], timeout=60)
    case = new_case()
    os.mkfifo(case / "bundle.zip")
    run(cat, "import of a FIFO", case,
        ["import", "bundle.zip", "--store", "s/artifacts", "--manifests", "s/manifests"] + tasks,
        names, timeout=30)
    run_digest = re.search(rb'runs:\s*\n\s*- "([0-9a-f]{64})"', LOOPBACK).group(1).decode()
    for label, argv, new in (
            ("verify (store)", ["verify", "--store", "s/artifacts"], None),
            ("verify m.yaml", ["verify", "m.yaml", "--store", "s/artifacts"], None),
            ("site", ["site", "m.yaml", "-o", "public", "--store", "s/artifacts"], "public/"),
            ("show", ["show", run_digest, "--store", "s/artifacts"], None),
            ("bundle", ["bundle", "m.yaml", "-o", "out.zip", "--store", "s/artifacts"], "out.zip"),
            ("export results", ["export", "--tasks", TASKS, "results", "m.yaml", "--format", "csv",
                                "-o", "out.csv", "--store", "s/artifacts"], "out.csv")):
        case, keep = store_case()
        rel = f"s/artifacts/v1/blake3/{run_digest[:2]}/{run_digest[2:4]}/{run_digest}"
        os.remove(case / rel)
        os.mkfifo(case / rel)
        keep = [k for k in keep if k != rel]
        run(cat, f"{label} with an object that is a FIFO", case, argv + (tasks if label != "export results" else []),
            names + [run_digest, run_digest[:12]], keep=keep,
            expect_new=lambda r, new=new: bool(new) and r.startswith(new), timeout=30,
            judge=lambda text, rc, case: ["unexpected: exit 0: the object that is a FIFO is not an error"
                                          + "".join(f" (it said `{l.strip()[:120]}`)" for l in text.splitlines()
                                                    if "FIFO" in l or "stray" in l)[:300]] if rc == 0 else [])


def large_inputs():
    cat = "large objects"
    STATS.about[cat] = (
        "a 256 MiB typed object in a store: `{\"schema\":\"ptxbench.sample/1\",\"padding\":\"xxx…\"}` "
        "and a decodable run object whose `name` is 256 MiB of x, each named by a manifest's "
        "`runs:`; `import` of a bundle (stored, not deflated, so no zip-bomb ratio) of the "
        "manifest and the object, `verify` of the store and of the manifest, `site`, `show` and "
        "`export results`, each under /usr/bin/time for its peak RSS; expected: a clear refusal "
        "naming the 64 MiB limit (MAX_OBJECT_BYTES)")
    try:
        import blake3
    except ImportError:
        return skip(cat, "no Python blake3 module (python3 -m pip install blake3)")
    big = ROOT / "big"
    objects = {}
    pad = b"x" * (256 << 20)
    for kind, data in (
            ("sample", b'{"schema":"ptxbench.sample/1","padding":"' + pad + b'"}'),
            ("run", b'{"schema":"ptxbench.run/1","name":"' + pad + b'","arch":"sm_90a","list_digest":"'
             + b"0" * 64 + b'","suite_hash":"' + b"0" * 64 + b'","record_digests":[]}')):
        h = blake3.blake3(data).hexdigest()
        rel = f"artifacts/v1/blake3/{h[:2]}/{h[2:4]}/{h}"
        manifest = (f'manifest: 1\nsuite: {{ version: "1.0.0", hash: "{"0" * 64}" }}\nruns: ["{h}"]\n'
                    f"site: {{ title: T, base_path: / }}\n")
        put(big / kind / rel, data)
        with zipfile.ZipFile(big / kind / "bundle.zip", "w", zipfile.ZIP_STORED) as z:
            z.writestr("manifests/m.yaml", manifest)
            z.writestr(rel, data)
        objects[kind] = (h, rel, manifest)
    del pad, data
    rows = []

    def judge(text, rc, case):
        why = []
        if not ("64 MiB" in text and "MAX_OBJECT_BYTES" in text):
            why.append("unexpected: the refusal does not name the 64 MiB limit (MAX_OBJECT_BYTES)")
        if len(text) > (1 << 20):
            why.append(f"unexpected: {len(text) >> 20} MiB of output")
        return why

    for kind, label, argv, new in (
            ("sample", "import", ["import", "bundle.zip", "--store", "s2/artifacts", "--manifests", "s2/manifests"], "s2/"),
            ("sample", "verify (store)", ["verify", "--store", "s/artifacts"], None),
            ("sample", "verify m.yaml", ["verify", "m.yaml", "--store", "s/artifacts"], None),
            ("sample", "site", ["site", "m.yaml", "-o", "public", "--store", "s/artifacts"], "public/"),
            ("sample", "show", ["show", "DIGEST", "--store", "s/artifacts"], None),
            ("run", "import", ["import", "bundle.zip", "--store", "s2/artifacts", "--manifests", "s2/manifests"], "s2/"),
            ("run", "verify m.yaml", ["verify", "m.yaml", "--store", "s/artifacts"], None),
            ("run", "site", ["site", "m.yaml", "-o", "public", "--store", "s/artifacts"], "public/"),
            ("run", "export results", ["export", "--tasks", TASKS, "results", "m.yaml", "--format", "csv", "-o", "out.csv", "--store", "s/artifacts"], "out.csv")):
        h, rel, manifest = objects[kind]
        case = new_case()
        if label == "import":
            os.link(big / kind / "bundle.zip", case / "bundle.zip")
            keep = ["bundle.zip"]
        else:
            (case / "s" / rel).parent.mkdir(parents=True)
            shutil.copyfile(big / kind / rel, case / "s" / rel)
            put(case / "m.yaml", manifest)
            keep = ["s/" + rel]
        argv = [h if a == "DIGEST" else a for a in argv]
        if label != "export results":
            argv = argv + ["--tasks", TASKS]
        desc = "sample/1, padding" if kind == "sample" else "run/1, name"
        r = run(cat, f"{label} ({desc})", case, argv, [h, h[:12], "bundle.zip", "m.yaml"], keep=keep,
                expect_new=lambda x, new=new: bool(new) and x.startswith(new), judge=judge,
                rss=True, timeout=120)
        named = "64 MiB" in r.text and "MAX_OBJECT_BYTES" in r.text
        first = next((l for l in r.text.splitlines() if l.strip() and not l.startswith("warning: m.yaml names suite")), "")
        rows.append(f"| `{label}` ({desc}) | {r.rc} | {'yes' if named else 'no'} | "
                    f"{r.rss_kb // 1024 if r.rss_kb else '?'} MiB | {r.seconds:.1f} s | {r.out_bytes:,} | "
                    f"{first.strip()[:150].replace('|', '/')} |")
        shutil.rmtree(case, ignore_errors=True)
    shutil.rmtree(big, ignore_errors=True)
    STATS.sections.append(("Large objects: peak RSS", [
        "| command (object) | exit | names the 64 MiB limit | peak RSS | wall | output bytes | first line |",
        "|---|--:|---|--:|--:|--:|---|"] + rows))


def kill_during(case, argv, wait_for, limit=90):
    """Starts ptxbench `argv` in `case`, SIGKILLs it (it alone, not its group) once a process of
    its session has `wait_for` in its command line, and looks 2 s later for what survived."""
    proc = subprocess.Popen([BIN] + argv, cwd=case, env=campaign_env(case),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    started = time.monotonic()
    seen = None
    while time.monotonic() - started < limit and proc.poll() is None:
        if any(wait_for in c for p, c in session_procs(proc.pid, also=str(case)) if p != proc.pid):
            seen = time.monotonic() - started
            break
        time.sleep(0.05)
    time.sleep(0.3)
    ended_before = proc.poll() is not None
    proc.kill()
    proc.wait()
    killed_at = time.monotonic()
    time.sleep(2)
    survivors = session_procs(proc.pid, also=str(case))
    for p, _ in survivors:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    scratch = sorted(p.name for p in (case / "tmp").glob("ptxbench-scratch-*"))
    return dict(seen=seen, survivors=survivors, scratch=scratch, killed_at=killed_at,
                ended_before=ended_before)


def leftovers_inputs():
    cat = "leftovers"
    STATS.about[cat] = (
        "`kill -9` of ptxbench alone (not its process group) while its compiler runs: `check` of "
        "the Triton GEMM's PTX with 100,000 small extra entries once ptxas runs, `check` of a "
        "CUDA source whose macros expand 2^40-fold once NVRTC's compile-cuda child runs, and "
        "`generate --allow-no-gpu` answered that PTX once its evaluation's ptxas runs (`--no-eval` "
        "runs no ptxas on a PTX answer); 2 s later every process of its "
        "session (or naming its folder) counts as a survivor (litter), then, 10 s later (the "
        "age a scratch folder must have to be swept), a `check` of the nvcc SIMT GEMM in the same "
        "TMPDIR (the row's class is that run's) must leave no `ptxbench-scratch-*` folder and "
        "nothing else of the killed run")
    if not CUDA:
        return skip(cat, "CUDA_HOME is not set")
    slow = slow_ptx()
    bomb = b"#define L0 1\n" + b"".join(b"#define L%d (L%d + L%d)\n" % (i, i - 1, i - 1) for i in range(1, 41)) \
        + b"__device__ int x = sizeof(char[L40 > 0 ? 1 : 2]);\n" + CU
    scenarios = []
    for label, kernel, source, plan, wait_for in (
            ("check killed while ptxas runs", "kernel.ptx", slow, TRITON_PLAN, "bin/ptxas"),
            ("check killed while NVRTC runs", "kernel.cu", bomb, CU_PLAN, "compile-cuda")):
        case = new_case()
        put(case / "cand" / kernel, source)
        put(case / "cand" / "plan.yaml", plan)
        pre = snapshot(case)
        k = kill_during(case, ["check", "cand", "--task", TASK, "--tasks", TASKS], wait_for)
        scenarios.append((label, case, pre, k, lambda rel: False))
    if CANNED:
        case = new_case()
        server = Canned(ptx_answer(slow))
        try:
            put(case / "gen.yaml", gen_manifest(server.url))
            pre = snapshot(case)
            k = kill_during(case, GEN_EVAL_ARGS, "bin/ptxas")
        finally:
            server.stop()
        scenarios.append(("generate killed while ptxas runs", case, pre, k,
                          lambda rel: generated(rel) or rel.startswith("out/")))
    else:
        skip(cat + " (generate)", "no canned-server")
    if scenarios:
        time.sleep(max(0.0, max(s[3]["killed_at"] for s in scenarios) + 10.5 - time.monotonic()))
    rows = []
    for label, case, pre, k, allowed in scenarios:
        def judge(text, rc, case, k=k, pre=pre, allowed=allowed):
            why = [f"litter: process {p} `{c[:120]}` outlived the killed ptxbench by 2 s"
                   for p, c in k["survivors"]]
            left = sorted(p.name for p in (case / "tmp").glob("ptxbench-scratch-*"))
            why += [f"litter: {n} left in TMPDIR after the next run" for n in left]
            now = snapshot(case)
            why += [f"litter: {rel} left by the killed run" for rel, v in now.items()
                    if rel not in pre and v != "dir" and not allowed(rel)
                    and not rel.startswith("tmp/ptxbench-scratch-")]
            if k["seen"] is None:
                why.append("unexpected: the compiler was never seen running: nothing was killed mid-compile")
            return why
        r = run(cat, f"{label}, then a check", case,
                ["check", str(REPO / "tasks/candidates/nvcc_simt_gemm"), "--task", TASK, "--tasks", TASKS],
                ["kernel.ptx", "PTX", "ptxas"], judge=judge)
        left = sorted(p.name for p in (case / "tmp").glob("ptxbench-scratch-*"))
        rows.append(f"| {label} | {'%.1f s' % k['seen'] if k['seen'] is not None else 'never'} | "
                    f"{len(k['survivors'])} | {len(k['scratch'])} | {len(left)} | {r.outcome} |")
    STATS.sections.append(("Leftovers: kill -9 during a compile", [
        "| scenario | compiler seen after | processes alive 2 s after the kill | scratch folders after the kill | after the next run | next run |",
        "|---|--:|--:|--:|--:|---|"] + rows))


def oom_reproduction():
    """Issue 55, finding 2: generate at concurrency 2 on register bombs, MemAvailable sampled
    every 100 ms (a section of its own, not in the table)."""
    title = "OOM reproduction: generate at concurrency 2 on ptxas register bombs"
    if not CUDA or not CANNED:
        STATS.sections.append((title, ["Skipped: it needs CUDA_HOME and the canned-server."]))
        return
    lines = [f"MemTotal {gib(meminfo('MemTotal'))}. Each run: `generate` of {GEN_TASK} with 4 "
             "replicas at concurrency 2 (models[0].concurrency: 2) against the canned-server, "
             "every answer the Triton TMA GEMM's PTX with the 850,000,000-register entry appended "
             "(```ptx) and its plan (```yaml); the compile limits are the defaults (the campaign's "
             "lowered ones removed) unless the run names a budget. MemAvailable (/proc/meminfo) and "
             "the RSS summed over ptxbench's session and every process naming its folder are "
             "sampled every 100 ms; the machine is shared, so other processes move MemAvailable "
             "too.", "",
             "| run | exit | wall | MemAvailable before | min MemAvailable | largest drop | peak RSS of its processes | most ptxas at once | per-turn verdicts (verdict/stage) |",
             "|---|--:|--:|--:|--:|--:|--:|--:|---|"]
    details = []
    default = {"PTXBENCH_COMPILE_LIMIT_S": None, "PTXBENCH_COMPILE_MEMORY_MIB": None}
    for label, argv, env in (
            ("`--no-eval`, default limits", GEN_ARGS, default),
            ("`--allow-no-gpu` (evaluation path), default limits", GEN_EVAL_ARGS, default),
            ("`--allow-no-gpu`, PTXBENCH_COMPILE_BUDGET_MIB=1024", GEN_EVAL_ARGS,
             dict(default, PTXBENCH_COMPILE_BUDGET_MIB="1024"))):
        case = new_case()
        server = Canned(ptx_answer(BOMB_PTX))
        try:
            put(case / "gen.yaml", gen_manifest(server.url, replicas=4, concurrency=2))
            before = meminfo()
            samples = []
            stop = threading.Event()
            proc = subprocess.Popen([BIN] + argv, cwd=case, env=campaign_env(case, env),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True)

            def sample():
                while not stop.is_set():
                    procs = session_procs(proc.pid, also=str(case))
                    samples.append((meminfo(), rss_of(p for p, _ in procs),
                                    sum("bin/ptxas" in c for _, c in procs)))
                    time.sleep(0.1)
            sampler = threading.Thread(target=sample)
            sampler.start()
            started = time.monotonic()
            try:
                out, err = proc.communicate(timeout=480)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
            wall = time.monotonic() - started
            stop.set()
            sampler.join()
        finally:
            server.stop()
        low = min((x[0] for x in samples), default=before)
        peak = max((x[1] for x in samples), default=0)
        most = max((x[2] for x in samples), default=0)
        turns = []
        try:
            import json
            journal = json.loads((case / "out" / "journal.json").read_text())
            for key, t in sorted(journal.get("turns", {}).items()):
                turns.append((key, t.get("verdict"), t.get("stage"), t.get("stop"), t.get("record_digest")))
        except (OSError, ValueError):
            pass
        summary = "; ".join(f"{v}/{st}" for _, v, st, _, _ in turns) or "none recorded"
        lines.append(f"| {label} | {proc.returncode} | {wall:.0f} s | {gib(before)} | {gib(low)} | "
                     f"{gib(before - low)} | {gib(peak)} | {most} | {summary} |")
        STATS.oom.append(dict(label=label, rc=proc.returncode, low=low, before=before, peak=peak,
                              most=most, turns=[(v, st) for _, v, st, _, _ in turns]))
        text = (out + b"\n" + err).decode("utf-8", "replace")
        said = [l.strip() for l in text.splitlines() if l.strip()]
        details.append(f"- {label}: exit {proc.returncode}; it printed: "
                       + " / ".join(x[:200] for x in said[:8]))
        for key, v, st, stop_why, record in turns:
            details.append(f"  - {key}: verdict {v}, stage {st}, stop `{(stop_why or '')[:260]}`")
        shutil.rmtree(case / "artifacts", ignore_errors=True)
    lines += ["", "What each run printed, and each turn:", ""] + details
    STATS.sections.append((title, lines))


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
        "escaped leak in a file": ("python3 -c 'import os; open(\"out.json\", \"w\").write("
                                   "\"\".join(\"\\\\u%04x\" % ord(c) for c in os.environ[\"OPENAI_API_KEY\"]))'",
                                   ("accepted", True, False, True)),
        "leak by a category's judge": ("echo 'error: in.yaml: EXISTS' >&2; exit 1", ("clear", True, False, False)),
    }
    judges = {"leak by a category's judge":
              lambda text, rc, case: ["leak: says EXISTS"] if "EXISTS" in text else []}
    for label, (script, want) in cases.items():
        case = new_case()
        put(case / "kept", b"kept\n")
        r = run(None, label, case, [], ["in.yaml"], keep=["kept"], timeout=2,
                program=["bash", "-c", script], judge=judges.get(label))
        got = (r.outcome, bool(r.leak), bool(r.lost), bool(r.litter))
        if got != want:
            sys.exit(f"self-check {label}: classified {got}, expected {want}")


# ---------------------------------------------------------------- main

started = time.monotonic()
CATEGORIES = {"ptx": ptx_inputs, "cuda": cuda_inputs, "plan": plan_inputs, "task": task_inputs,
              "manifests": manifest_inputs, "bundles": bundle_inputs, "responses": response_inputs,
              "outputs": output_inputs, "stdout": stdout_inputs, "routes": routes_inputs,
              "memory": memory_inputs, "echoes": echoes_inputs, "tempdir": tempdir_inputs,
              "links": links_inputs, "large": large_inputs, "leftovers": leftovers_inputs}
NEED_TEMPLATE = {"manifests", "bundles", "outputs", "stdout", "links"}
if ONLY is not None and ONLY - set(CATEGORIES) - {"oom"}:
    sys.exit(f"unknown categories {sorted(ONLY - set(CATEGORIES) - {'oom'})}; known: {sorted(CATEGORIES)} oom")
chosen = [k for k in CATEGORIES if ONLY is None or k in ONLY]
try:
    self_check()
    if NEED_TEMPLATE & set(chosen):
        build_template()
    for key in chosen:
        CATEGORIES[key]()
    if OOM and (ONLY is None or "oom" in ONLY):
        oom_reproduction()
finally:
    for path in list(MOUNTS):
        subprocess.run(["umount", "-l", str(path)], capture_output=True)
    for proc in STRAYS:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
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
      "or write a secret (also \\u-escaped), change a kept file, leave a temp file and say "
      "what a category's own check counts as a leak: each was classified as such.")
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
if STATS.unexpected:
    print()
    print("Runs not as their category expects:")
    print()
    for f in STATS.unexpected:
        print(f"- {f}")
if STATS.skipped:
    print()
    print("Skipped:")
    print()
    for category, why in STATS.skipped.items():
        print(f"- **{category}**: {why}.")
for title, lines in STATS.sections:
    print()
    print(f"### {title}")
    print()
    for line in lines:
        print(line)
PY
