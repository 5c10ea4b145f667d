"""What a CUDA context costs on this GPU (issue 46: a worker opens a fresh context for every
candidate). Driver API through ctypes, no other dependency.

1. cuInit, then creating and destroying a context serially, N times (ms each).
2. Creating contexts while K earlier ones stay alive and idle, then destroying them together.
3. Round trips of a small operation (a 4-byte memset and a synchronize) in one process, alone
   and while another process creates and destroys contexts in a loop: the interference a
   worker's context change causes the evaluation running beside it.
4. The same with an allocation and a free of 64 MiB around each memset (what a correctness
   trial does for its tensors).

Usage: python3 context_cost.py [N]
"""

import ctypes
import statistics
import subprocess
import sys
import time

cu = ctypes.CDLL("libcuda.so.1")


def ok(r, what):
    if r != 0:
        sys.exit(f"{what} failed: CUresult {r}")


def create(dev):
    ctx = ctypes.c_void_p()
    ok(cu.cuCtxCreate_v4(ctypes.byref(ctx), None, 0, dev), "cuCtxCreate")
    return ctx


def ms(f):
    t = time.perf_counter()
    out = f()
    return out, (time.perf_counter() - t) * 1e3


def round_trips(dev, seconds, alloc=False):
    ctx = create(dev)
    p = ctypes.c_uint64()
    ok(cu.cuMemAlloc_v2(ctypes.byref(p), 256), "cuMemAlloc")
    lat = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        if alloc:
            big = ctypes.c_uint64()
            ok(cu.cuMemAlloc_v2(ctypes.byref(big), 64 << 20), "cuMemAlloc")
            ok(cu.cuMemsetD32_v2(big, 1, 1), "cuMemsetD32")
            ok(cu.cuCtxSynchronize(), "cuCtxSynchronize")
            ok(cu.cuMemFree_v2(big), "cuMemFree")
        else:
            ok(cu.cuMemsetD32_v2(p, 1, 1), "cuMemsetD32")
            ok(cu.cuCtxSynchronize(), "cuCtxSynchronize")
        lat.append((time.perf_counter() - t) * 1e3)
    cu.cuMemFree_v2(p)
    cu.cuCtxDestroy_v2(ctx)
    return lat


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    if n < 0:  # the loop another process runs in part 3
        ok(cu.cuInit(0), "cuInit")
        dev = ctypes.c_int()
        ok(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
        end = time.perf_counter() - n
        while time.perf_counter() < end:
            cu.cuCtxDestroy_v2(create(dev))
        return
    _, t = ms(lambda: ok(cu.cuInit(0), "cuInit"))
    print(f"cuInit {t:.1f} ms")
    dev = ctypes.c_int()
    ok(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    made, gone = [], []
    for _ in range(n):
        ctx, t = ms(lambda: create(dev))
        made.append(t)
        _, t = ms(lambda: cu.cuCtxDestroy_v2(ctx))
        gone.append(t)
    print(f"serial: create {' '.join(f'{x:.1f}' for x in made)} ms")
    print(f"serial: destroy {' '.join(f'{x:.1f}' for x in gone)} ms")
    kept, made = [], []
    for _ in range(n):
        ctx, t = ms(lambda: create(dev))
        kept.append(ctx)
        made.append(t)
        cu.cuCtxPopCurrent_v2(None)
    print(f"kept alive: create {' '.join(f'{x:.1f}' for x in made)} ms")
    _, t = ms(lambda: [cu.cuCtxDestroy_v2(c) for c in kept])
    print(f"kept alive: destroying all {n}: {t:.1f} ms")
    results = []
    for alloc in (False, True):
        what = "memset, 64 MiB alloc and free" if alloc else "memset"
        results.append((f"{what}, alone", round_trips(dev, 2.0, alloc)))
        other = subprocess.Popen([sys.executable, __file__, "-4"])
        time.sleep(0.5)
        results.append((f"{what}, beside context changes", round_trips(dev, 2.0, alloc)))
        other.wait()
    for name, lat in results:
        q = statistics.quantiles(lat, n=100)
        print(f"round trip {name}: {len(lat)} in 2 s, median {statistics.median(lat):.3f} ms, p90 {q[89]:.3f}, p99 {q[98]:.3f}, max {max(lat):.1f}")


if __name__ == "__main__":
    main()
