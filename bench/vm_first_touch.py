"""What fresh memory costs on this machine: the first write to newly mapped anonymous pages
(4 KiB pages, and 2 MiB transparent huge pages), against a second write to the same pages.

A process that receives a body into a buffer it has not touched before pays the first write
inside the transfer (the kernel faults the pages in while it copies). On bare metal the first
write is a page fault and a clear; in a VM whose host backs guest memory lazily and takes freed
pages back, it can also be a fault on the host, which is what made this project's cross-process
figures bimodal (docs/benchmarks.md). Each trial runs in a fresh process, as `ferry get` does.

    .venv/bin/python bench/vm_first_touch.py --mib 49 --trials 8
"""

import argparse
import mmap
import statistics
import subprocess
import sys
import time

import numpy as np

MADV_HUGEPAGE = 14


def trial(mib, huge):
    """One fresh mapping: seconds for the first and for the second write of every byte."""
    size = mib << 20
    m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if huge:
        m.madvise(MADV_HUGEPAGE)
    a = np.frombuffer(m, dtype=np.uint8)
    start = time.perf_counter()
    a.fill(1)
    first = time.perf_counter() - start
    start = time.perf_counter()
    a.fill(2)
    second = time.perf_counter() - start
    del a
    m.close()
    return first, second


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mib", type=int, default=49, help="mapping size (default 49, one batch of "
                    "the 1 GiB CLI file)")
    ap.add_argument("--trials", type=int, default=8, help="fresh processes per page size")
    ap.add_argument("--child", choices=["4k", "huge"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        first, second = trial(args.mib, args.child == "huge")
        print(first, second)
        return
    size = args.mib << 20
    for kind in ("4k", "huge"):
        firsts, seconds = [], []
        for _ in range(args.trials):
            out = subprocess.run([sys.executable, __file__, "--mib", str(args.mib), "--child", kind],
                                 capture_output=True, text=True, check=True).stdout.split()
            firsts.append(float(out[0]))
            seconds.append(float(out[1]))
        rate = lambda t: size / t / 1e9  # noqa: E731
        print(f"{kind:>4} pages, {args.mib} MiB in a fresh process: first write "
              f"{rate(max(firsts)):.2f}-{rate(min(firsts)):.2f} GB/s "
              f"(median {rate(statistics.median(firsts)):.2f}), second write "
              f"median {rate(statistics.median(seconds)):.2f} GB/s")


if __name__ == "__main__":
    main()
