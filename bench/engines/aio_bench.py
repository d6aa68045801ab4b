"""1 GiB through ferry.aio's `async for` against the blocking client, in the same run: a ferry
Flight server in its own process serves the data from its shared region, and this process reads
it whole with each client in turn (ABBA rounds, so neither always goes first); each read is
timed from the call to the last batch.

    .venv/bin/python bench/engines/aio_bench.py [--gib G] [--batch-mib M] [--rounds R]

FERRY_BENCH_SMOKE=1 shrinks it to a few MiB and one round (CI proves it runs).
Two kinds of data, each its own server: int64 (the read is the per-batch work alone) and strings
(full validation checks their UTF-8, about 30 ms a 64 MiB batch). Prints one line per read and,
per kind, the median of each client and of the rounds' asyncio/blocking ratios.
"""
import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time

import ferry.aio
import ferry.flight

SERVE = """
import sys, numpy as np, pyarrow as pa, ferry
batch, count, kind = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
if kind == "int64":
    column = pa.array(np.arange(batch // 8, dtype=np.int64))
else:  # 60-byte strings and their 4-byte offsets: 64 bytes a row
    rows = batch // 64
    offsets = pa.py_buffer((np.arange(rows + 1, dtype=np.int32) * 60).tobytes())
    column = pa.Array.from_buffers(pa.string(), rows,
                                   [None, offsets, pa.py_buffer(b"0123456789" * 6 * rows)])
server = ferry.flight.Server.start(keep=True)
server.add("t", [pa.record_batch({"c": column})] * count)
print(server.uri, flush=True)
sys.stdin.read()
"""

#: Bytes a row of each kind of data moves (its column's buffers).
ROW_BYTES = {"int64": 8, "strings": 64}


def blocking(uri, row_bytes):
    client = ferry.flight.connect(uri)
    start, moved = time.perf_counter(), 0
    for batch in client.do_get("t"):
        moved += len(batch) * row_bytes
    return time.perf_counter() - start, moved


def with_asyncio(uri, row_bytes):
    async def main():
        client = await ferry.aio.flight.connect(uri)
        start, moved = time.perf_counter(), 0
        async for batch in client.do_get("t"):
            moved += len(batch) * row_bytes
        seconds = time.perf_counter() - start
        await client.close()
        return seconds, moved
    return asyncio.run(main())


def measure(kind, batch, count, rounds):
    """The median seconds of each client reading the flight of `kind`, ABBA."""
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(batch), str(count), kind],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        uri = proc.stdout.readline().strip()
        times = {"blocking": [], "asyncio": []}
        readers = {"blocking": blocking, "asyncio": with_asyncio}
        for r in range(rounds):
            order = ["blocking", "asyncio"] if r % 2 == 0 else ["asyncio", "blocking"]
            for name in order:
                seconds, moved = readers[name](uri, ROW_BYTES[kind])
                assert moved == batch * count, (name, moved)
                times[name].append(seconds)
                print(f"{kind:7} round {r} {name:8} {seconds * 1e3:8.1f} ms", flush=True)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    ratios = sorted(a / b for a, b in zip(times["asyncio"], times["blocking"]))
    out = {k: statistics.median(v) for k, v in times.items()}
    out["ratio"] = statistics.median(ratios)
    out["ratio_range"] = (ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4])
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gib", type=float, default=1.0)
    p.add_argument("--batch-mib", type=int, default=64)
    p.add_argument("--rounds", type=int, default=10)
    args = p.parse_args()
    if os.environ.get("FERRY_BENCH_SMOKE") == "1":
        args.gib, args.batch_mib, args.rounds = 0.02, 4, 1
    batch = args.batch_mib << 20
    count = max(1, round(args.gib * (1 << 30) / batch))
    gib = batch * count / (1 << 30)
    rows = []
    for kind in ("int64", "strings"):
        rows.append((kind, measure(kind, batch, count, args.rounds)))
    print(f"{gib:.2f} GiB over shared memory in {count} batches of {args.batch_mib} MiB, "
          f"full validation, medians of {args.rounds} rounds (asyncio/blocking: the median of "
          f"the rounds' own ratios, quartiles in brackets):")
    print(f"{'data':8} {'blocking':>12} {'asyncio':>12}  asyncio/blocking")
    for kind, med in rows:
        low, high = med["ratio_range"]
        print(f"{kind:8} {med['blocking'] * 1e3:9.1f} ms {med['asyncio'] * 1e3:9.1f} ms  "
              f"{med['ratio']:.3f} ({low:.3f} to {high:.3f})")


if __name__ == "__main__":
    main()
