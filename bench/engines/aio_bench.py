"""1 GiB through ferry.aio's `async for` against the blocking client, in the same run: a ferry
Flight server in its own process serves the data from its shared region, and this process reads
it whole with each client in turn (each round in the reverse order of the one before); each read is
timed from the call to the last batch.

A third reader is the usual way to call a blocking client from asyncio: the blocking client's
whole read run on a worker thread that is already running, and awaited from the loop
(`loop.run_in_executor`). It leaves the loop's thread once and comes back once. Last, the cost
of coming back alone: a 1 ms job (a busy loop) run on the warm worker thread and awaited, 300
times, against its own 1 ms.

    .venv/bin/python bench/engines/aio_bench.py [--gib G] [--batch-mib M] [--rounds R]

FERRY_BENCH_SMOKE=1 shrinks it to a few MiB and one round (CI proves it runs).
Two kinds of data, each its own server: int64 (the read is the per-batch work alone) and strings
(full validation checks their UTF-8, about 30 ms a 64 MiB batch). Prints one line per read and,
per kind, the median of each client and of the rounds' asyncio/blocking ratios.
"""
import argparse
import asyncio
import concurrent.futures
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


def read_all(client, row_bytes):
    moved = 0
    for batch in client.do_get("t"):
        moved += len(batch) * row_bytes
    return moved


#: The executor reader's worker thread, started once and kept for every round.
POOL = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="executor")


def executor(uri, row_bytes):
    async def main():
        loop = asyncio.get_running_loop()
        client = ferry.flight.connect(uri)
        await loop.run_in_executor(POOL, lambda: None)  # the worker is up and idle
        start = time.perf_counter()
        moved = await loop.run_in_executor(POOL, read_all, client, row_bytes)
        return time.perf_counter() - start, moved
    return asyncio.run(main())


def crossing(jobs=300, job_s=0.001):
    """The time a `job_s` job run on the executor's warm thread and awaited from the loop takes
    beyond `job_s`, in seconds: (p10, p50, p90) of `jobs` of them."""
    def job():
        end = time.perf_counter() + job_s
        while time.perf_counter() < end:
            pass

    async def main():
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(POOL, lambda: None)
        extra = []
        for _ in range(jobs):
            start = time.perf_counter()
            await loop.run_in_executor(POOL, job)
            extra.append(time.perf_counter() - start - job_s)
            await asyncio.sleep(0.001)  # the worker goes idle again, as between two reads
        extra.sort()
        return tuple(extra[int(q * (jobs - 1))] for q in (0.1, 0.5, 0.9))
    return asyncio.run(main())


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
    """The median seconds of each client reading the flight of `kind`, each round's order the
    previous one's reversed."""
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(batch), str(count), kind],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        uri = proc.stdout.readline().strip()
        readers = {"blocking": blocking, "asyncio": with_asyncio, "executor": executor}
        times = {name: [] for name in readers}
        for r in range(rounds):
            order = list(readers) if r % 2 == 0 else list(reversed(readers))
            for name in order:
                seconds, moved = readers[name](uri, ROW_BYTES[kind])
                assert moved == batch * count, (name, moved)
                times[name].append(seconds)
                print(f"{kind:7} round {r} {name:8} {seconds * 1e3:8.1f} ms", flush=True)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    out = {k: statistics.median(v) for k, v in times.items()}
    for name in ("asyncio", "executor"):
        ratios = sorted(a / b for a, b in zip(times[name], times["blocking"]))
        out[name + "_ratio"] = statistics.median(ratios)
        out[name + "_range"] = (ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4])
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
    jobs = 30 if os.environ.get("FERRY_BENCH_SMOKE") == "1" else 300
    p10, p50, p90 = crossing(jobs)
    rows = []
    for kind in ("int64", "strings"):
        rows.append((kind, measure(kind, batch, count, args.rounds)))
    print(f"{gib:.2f} GiB over shared memory in {count} batches of {args.batch_mib} MiB, "
          f"full validation, medians of {args.rounds} rounds (each ratio to blocking: the median "
          f"of the rounds' own ratios, quartiles in brackets):")
    print(f"{'data':8} {'blocking':>12} {'asyncio':>12} {'executor':>12}  asyncio/blocking"
          f"          executor/blocking")
    for kind, med in rows:
        cells = [f"{med[n + '_ratio']:.3f} ({med[n + '_range'][0]:.3f} to "
                 f"{med[n + '_range'][1]:.3f})" for n in ("asyncio", "executor")]
        print(f"{kind:8} {med['blocking'] * 1e3:9.1f} ms {med['asyncio'] * 1e3:9.1f} ms "
              f"{med['executor'] * 1e3:9.1f} ms  {cells[0]}  {cells[1]}")
    print(f"a 1 ms job on the warm worker thread, awaited from the loop: {p50 * 1e6:.0f} us "
          f"beyond the job, p50 (p10 {p10 * 1e6:.0f}, p90 {p90 * 1e6:.0f}; {jobs} jobs)")


if __name__ == "__main__":
    main()
