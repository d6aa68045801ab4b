#!/usr/bin/env python3
"""A Python producer serving Dissociated IPC over shared memory: its batches built in the
server's shared region (`Server.region_allocator()`, lent in place) or by pyarrow (copied into
the region by the server).

Each case starts a `ferry.dipc.Server` ("shm") whose dataset is a generator of one-column int64
batches; a separate Python process reads the stream with pyarrow (`ferry.dipc.connect`) and
times it, from connect to the end of the stream. "region" writes each batch's values into a
block of the region with numpy; "pool" wraps the same values with `pa.array` (no copy, as
numpy's memory is wrapped), so each case copies the values once: the producer into its block, or
the server into the region. Rounds alternate the two cases; the medians and ranges are printed.
"""
import argparse
import statistics
import subprocess
import sys

import numpy as np
import pyarrow as pa

import ferry

SCHEMA = pa.schema([("x", pa.int64())])

# The reader: a process of its own, so that the producer's GIL is not the client's.
CLIENT = r"""
import sys, time
import pyarrow as pa
import ferry
uri, n = sys.argv[1], int(sys.argv[2])
start = time.perf_counter()
got = sum(1 for _ in pa.RecordBatchReader.from_stream(ferry.dipc.connect(uri, "x")))
seconds = time.perf_counter() - start
if got != n:
    sys.exit(f"read {got} batches of {n}")
print(seconds)
"""


def batches(mode, allocator, rows, n):
    values = np.arange(rows, dtype=np.int64)
    for _ in range(n):
        if mode == "region":
            block = allocator.allocate(8 * rows)
            np.frombuffer(block, dtype=np.int64)[:] = values
            column = pa.Array.from_buffers(pa.int64(), rows, [None, pa.py_buffer(block)])
        else:
            column = pa.array(values)
        yield pa.record_batch([column], schema=SCHEMA)


def run(mode, rows, n):
    """One case: the batches a second its client read, and how many bodies were lent in place."""
    with ferry.dipc.Server.start("shm") as server:
        allocator = server.region_allocator()
        server.add("x", lambda: pa.RecordBatchReader.from_batches(
            SCHEMA, batches(mode, allocator, rows, n)))
        out = subprocess.run([sys.executable, "-c", CLIENT, server.uri, str(n)],
                             capture_output=True, text=True, check=True)
        return n / float(out.stdout), server.stats.bodies_lent_in_place


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    p.add_argument("--sizes", default="1000:20000,1000000:200",
                   help="ROWS:BATCHES pairs, comma-separated (default 1000:20000,1000000:200)")
    args = p.parse_args()
    print("| rows a batch | case | batches/s (median) | GB/s | range |")
    print("| --- | --- | --- | --- | --- |")
    for pair in args.sizes.split(","):
        rows, n = (int(v) for v in pair.split(":"))
        rates = {"pool": [], "region": []}
        for _ in range(args.rounds):
            for mode in rates:
                rate, lent = run(mode, rows, n)
                if lent != (n if mode == "region" else 0):
                    sys.exit(f"{mode}: {lent} of {n} bodies lent in place")
                rates[mode].append(rate)
                print(f"  {rows} rows, {mode}: {rate:,.0f} a second", file=sys.stderr, flush=True)
        for mode, v in rates.items():
            m = statistics.median(v)
            print(f"| {rows:,} | {mode} | {m:,.0f} | {m * rows * 8 / 1e9:.2f} | "
                  f"{min(v):,.0f}-{max(v):,.0f} |")


if __name__ == "__main__":
    main()
