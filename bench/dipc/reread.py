#!/usr/bin/env python3
"""bench/dipc/reread.py: one client process reading the same UCX dataset again and again, right
after its last read and after a pause, alternating. A read lands in the UCX transport's receive
buffers; a pause longer than their one-second decay finds them handed back to the kernel, where
fresh pages cost a fault and zeroing each (on a VM whose host takes freed pages back, more). The
server is `ferry serve --transport ucx --body-type packed --keep` on this host (UCX picks its
shared-memory lanes); the client is ferry's Python client on a kept connection
(ferry.dipc.ConnectionPool), with default validation.

    FERRY_CLI=build/bench/tools/ferry/ferry .venv/bin/python bench/dipc/reread.py --mib 512

Prints, for each pause, the median read time and MiB/s of --rounds reads, and the ratio of the
paused reads' time to the unpaused ones' (median of the rounds' ratios).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "support"))
from ferry_process import ferry_cli  # noqa: E402

import ferry  # noqa: E402
import ferry.dipc  # noqa: E402


def write_dataset(path, mib):
    """`mib` MiB of two int64 columns in 8 MiB batches."""
    rows = (8 << 20) // 16
    schema = pa.schema([("x", pa.int64()), ("y", pa.int64())])
    with ipc.new_stream(path, schema) as w:
        for i in range(max(1, mib // 8)):
            x = np.arange(i * rows, (i + 1) * rows, dtype=np.int64)
            w.write_batch(pa.record_batch([pa.array(x), pa.array(x * 3)], schema=schema))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=512, help="MiB in the dataset (default 512)")
    ap.add_argument("--rounds", type=int, default=7, help="reads at each pause (default 7)")
    ap.add_argument("--pause", type=float, default=2.0,
                    help="seconds between the paused reads and the read before (default 2)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ferry-reread-") as d:
        path = os.path.join(d, "t.arrows")
        write_dataset(path, args.mib)
        server = subprocess.Popen([ferry_cli(), "serve", "--transport", "ucx", "--body-type",
                                   "packed", "--keep", f"t={path}"], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True)
        try:
            uri = server.stdout.readline().split()[1]
            pool = ferry.dipc.ConnectionPool()

            def read():
                start = time.monotonic()
                table = pa.table(ferry.dipc.connect(uri, "t", pool=pool,
                                                    validation=ferry.ValidationLevel.DEFAULT))
                took = time.monotonic() - start
                assert table.num_rows == max(1, args.mib // 8) * ((8 << 20) // 16)
                del table
                return took

            read()  # the first read maps every page afresh, whatever the pause
            times = {0.0: [], args.pause: []}
            for i in range(args.rounds):
                for pause in ((0.0, args.pause) if i % 2 == 0 else (args.pause, 0.0)):
                    time.sleep(pause)  # what the benchmark measures: a client idle this long
                    times[pause].append(read())
        finally:
            server.terminate()
            server.wait()
    print(f"| pause before the read | median read of {args.mib} MiB | MiB/s |")
    print("| --- | --- | --- |")
    for pause, t in times.items():
        m = statistics.median(t)
        print(f"| {pause:g} s | {m * 1e3:.0f} ms ({min(t) * 1e3:.0f}-{max(t) * 1e3:.0f}) | "
              f"{args.mib / m:,.0f} |")
    ratios = [p / q for p, q in zip(times[args.pause], times[0.0])]
    print(f"\npaused against unpaused read time: {statistics.median(ratios):.2f}x "
          f"({min(ratios):.2f}-{max(ratios):.2f}x)")


if __name__ == "__main__":
    main()
