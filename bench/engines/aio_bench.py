"""1 GiB through ferry.aio's `async for` against the blocking client, in the same run: one ferry
Flight server in its own process serves the data from its shared region, and this process reads
it whole with each client in turn (ABBA rounds, so neither always goes first); each read is
timed from the call to the last batch.

    .venv/bin/python bench/engines/aio_bench.py [--gib G] [--batch-mib M] [--rounds R]

FERRY_BENCH_SMOKE=1 shrinks it to a few MiB and one round (CI proves it runs).
Prints one line per read and a summary: the median of each client, GiB/s, and async/blocking.
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
import sys, pyarrow as pa, ferry
rows = int(sys.argv[1]) // 8
one = pa.record_batch({"x": pa.array(range(rows), pa.int64())})
server = ferry.flight.Server.start(keep=True)
server.add("t", [one] * int(sys.argv[2]))
print(server.uri, flush=True)
sys.stdin.read()
"""


def blocking(uri):
    client = ferry.flight.connect(uri)
    start, moved = time.perf_counter(), 0
    for batch in client.do_get("t"):
        moved += batch.length * 8
    return time.perf_counter() - start, moved


def with_asyncio(uri):
    async def main():
        client = await ferry.aio.flight.connect(uri)
        start, moved = time.perf_counter(), 0
        async for batch in client.do_get("t"):
            moved += batch.length * 8
        seconds = time.perf_counter() - start
        await client.close()
        return seconds, moved
    return asyncio.run(main())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gib", type=float, default=1.0)
    p.add_argument("--batch-mib", type=int, default=64)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    if os.environ.get("FERRY_BENCH_SMOKE") == "1":
        args.gib, args.batch_mib, args.rounds = 0.02, 4, 1
    batch = args.batch_mib << 20
    count = max(1, round(args.gib * (1 << 30) / batch))
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(batch), str(count)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        uri = proc.stdout.readline().strip()
        times = {"blocking": [], "asyncio": []}
        readers = {"blocking": blocking, "asyncio": with_asyncio}
        for r in range(args.rounds):
            order = ["blocking", "asyncio"] if r % 2 == 0 else ["asyncio", "blocking"]
            for name in order:
                seconds, moved = readers[name](uri)
                assert moved == batch * count, (name, moved)
                times[name].append(seconds)
                print(f"round {r} {name:8} {seconds * 1e3:8.1f} ms  "
                      f"{moved / seconds / (1 << 30):6.2f} GiB/s", flush=True)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    gib = batch * count / (1 << 30)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{gib:.2f} GiB in {count} batches of {args.batch_mib} MiB, median of {args.rounds}:")
    for name, seconds in med.items():
        print(f"  {name:8} {seconds * 1e3:8.1f} ms  {gib / seconds:6.2f} GiB/s")
    print(f"  asyncio / blocking: {med['asyncio'] / med['blocking']:.3f}")


if __name__ == "__main__":
    main()
