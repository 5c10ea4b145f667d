"""What a site build's files cost the file system alone, with no rendering: the floor under
`cargo bench -p ptxbench --bench site`'s "render and write" time on the same folder.

Usage: python3 write_floor.py DIR [--files N] [--bytes B] [--links L] [--workers W]
                               [--hold-mib M] [--drain-mib D]
Writes N files of B bytes each (default: the 100k-record site's 122k pages at their mean
size, 17.6 KB) and L hard links to stored files (default: its 188k objects), split over W
processes (default 2, this machine's cores), into DIR (created; must not exist), then prints
the wall time and the system CPU the workers spent. DIR is left for the caller to remove
(removing it is file-system work of its own, not part of a build).

--hold-mib M first touches M MiB of memory and holds it while the files are written, as a
build's heap does: on a virtual machine where memory freed lately is cheap to take again and
other fresh memory dear, the files then get the dear kind. --drain-mib D makes each worker
drain as `ptxbench site` does on Linux (`DRAIN_BYTES`): each time more than D MiB of its files
wait, their pages are written (`sync_file_range`, started for every file, then waited for) and
dropped from the page cache (`posix_fadvise(DONTNEED)`).
"""

import argparse
import ctypes
import mmap
import os
import resource
import sys
import time
from multiprocessing import Process

# ext4 allows 65,000 links to one inode: each worker links to a file of its own per 50,000.
LINKS_PER_SOURCE = 50_000


# sync_file_range flags (linux/fs.h).
SYNC_FILE_RANGE_WAIT_BEFORE = 1
SYNC_FILE_RANGE_WRITE = 2
SYNC_FILE_RANGE_WAIT_AFTER = 4
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.sync_file_range.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]


def drain(waiting: list) -> None:
    wait_all = SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER
    for flags in (SYNC_FILE_RANGE_WRITE, wait_all):
        for fd in waiting:
            if LIBC.sync_file_range(fd, 0, 0, flags) != 0:
                raise OSError(ctypes.get_errno(), "sync_file_range")
    for fd in waiting:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    waiting.clear()


def work(root: str, k: int, files: int, size: int, links: int, drain_bytes: int) -> None:
    page = b"x" * size
    folder = os.path.join(root, f"pages{k}")
    objects = os.path.join(root, f"objects{k}")
    os.makedirs(folder)
    os.makedirs(objects)
    waiting: list = []
    most = max(16, min(4096, resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 4))
    for i in range(files):
        fd = os.open(os.path.join(folder, f"{i:064x}.html"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, page)
        if drain_bytes:
            waiting.append(fd)
            if len(waiting) * size > drain_bytes or len(waiting) >= most:
                drain(waiting)
        else:
            os.close(fd)
    for fd in waiting:
        os.close(fd)
    for i in range(links):
        source = os.path.join(root, f"store{k}-{i // LINKS_PER_SOURCE}")
        if i % LINKS_PER_SOURCE == 0:
            with open(source, "wb") as f:
                f.write(b"y" * 4096)
        os.link(source, os.path.join(objects, f"{i:064x}"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir")
    p.add_argument("--files", type=int, default=122_421)
    p.add_argument("--bytes", type=int, default=17_600)
    p.add_argument("--links", type=int, default=188_442)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--hold-mib", type=int, default=0)
    p.add_argument("--drain-mib", type=int, default=0)
    a = p.parse_args()
    if os.path.exists(a.dir):
        print(f"{a.dir} exists; give a new folder", file=sys.stderr)
        return 2
    os.makedirs(a.dir)
    held = None
    if a.hold_mib:
        held = mmap.mmap(-1, a.hold_mib << 20)
        for i in range(0, a.hold_mib << 20, mmap.PAGESIZE):
            held[i] = 1
    w = max(1, a.workers)
    start, before = time.monotonic(), os.times()
    procs = [
        Process(target=work, args=(a.dir, k, a.files // w + (k < a.files % w), a.bytes, a.links // w + (k < a.links % w), a.drain_mib << 20))
        for k in range(w)
    ]
    for q in procs:
        q.start()
    for q in procs:
        q.join()
    wall, after = time.monotonic() - start, os.times()
    if any(q.exitcode != 0 for q in procs):
        print("a worker failed", file=sys.stderr)
        return 1
    if held is not None:
        held.close()
    extra = (f", {a.hold_mib} MiB held" if a.hold_mib else "") + (f", drained every {a.drain_mib} MiB" if a.drain_mib else "")
    print(
        f"{a.files} files of {a.bytes} B ({a.files * a.bytes / 1e6:.0f} MB) and {a.links} hard links "
        f"in {w} processes{extra}: {wall:.2f} s wall, system CPU {after.children_system - before.children_system:.1f} s, "
        f"user CPU {after.children_user - before.children_user:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
