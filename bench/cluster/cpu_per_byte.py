#!/usr/bin/env python3
"""bench/cluster/cpu_per_byte.py: what the parallel read between hosts costs the whole machine
per GiB, against the limit over UCX. Hosts are network namespaces joined by a bridge
(tests/support/netns.py), so both servers, the reader and the kernel's TCP for all of them share
this machine's cores, and a read whose cores are busy from start to end goes as fast as its CPU
a byte allows.

In each of --rounds rounds, one after the other:
  ferry           the Python client on host c reads flight t from two `ferry serve --flight
                  --keep` (both endpoints at once, default validation, over the UCX connections
                  its warm-up read kept), --reads times
  the limit       ferry_ucx_limit (bench/cluster/ucx_limit.c) moves the same bytes in 8 MiB
                  messages from and into each byte's own place, with 16 and with one message in
                  flight each way, --reads runs each
Each read is bracketed by /proc/stat: the machine's busy CPU seconds and context switches over
it, per GiB read. Prints the medians, and ferry's against the limit's.

    FERRY_CLI=build/bench/tools/ferry/ferry .venv/bin/python bench/cluster/cpu_per_byte.py \\
        --mib 512 --rounds 4
"""
import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# parallel_read (through cluster_bench) puts tests/support on the path, for ucx_peer's imports.
from parallel_read import served_halves  # noqa: E402
from ucx_peer import ucx_limit_runs  # noqa: E402

# On host c: argv[2] reads of flight t after a warm-up read, each bracketed by the machine's
# /proc/stat; a line each: MiB/s, CPU seconds a GiB, context switches a GiB.
READER = """
import os, sys, time, pyarrow as pa, ferry, ferry.flight
def machine():
    with open("/proc/stat") as f:
        lines = f.read().splitlines()
    t = [int(x) for x in lines[0].split()[1:9]]
    switches = int(next(line for line in lines if line.startswith("ctxt")).split()[1])
    return (sum(t) - t[3] - t[4]) / os.sysconf("SC_CLK_TCK"), switches, time.monotonic()
client = ferry.flight.connect(sys.argv[1], token="bench")
for i in range(int(sys.argv[2]) + 1):
    before = machine()
    table = pa.table(client.do_get("t", parallel=2, validation=ferry.ValidationLevel.DEFAULT))
    after = machine()
    gib = table.nbytes / 2**30
    del table
    if i:
        print(gib * 1024 / (after[2] - before[2]), (after[0] - before[0]) / gib,
              (after[1] - before[1]) / gib, flush=True)
"""

CASES = {"ferry": "ferry's parallel read (Python client, default validation)",
         "limit": "the limit over UCX, 16 messages in flight each way",
         "limit, one": "the limit over UCX, one message in flight each way"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=512, help="MiB on each server (default 512)")
    ap.add_argument("--rounds", type=int, default=4, help="alternating rounds (default 4)")
    ap.add_argument("--reads", type=int, default=3, help="reads of each case a round (default 3)")
    args = ap.parse_args()
    runs = {case: [] for case in CASES}
    with served_halves(args.mib, "ferry-cpu-per-byte-") as (hosts, uri, per_server):
        for _ in range(args.rounds):
            r = hosts["c"].run([sys.executable, "-c", READER, uri, str(args.reads)],
                               capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                raise RuntimeError(f"reader: exit {r.returncode}: {r.stderr}")
            runs["ferry"] += [[float(x) for x in line.split()]
                              for line in r.stdout.splitlines() if line]
            runs["limit"] += ucx_limit_runs(hosts, per_server, args.reads, window=16)
            runs["limit, one"] += ucx_limit_runs(hosts, per_server, args.reads, window=1)
    med = {case: [statistics.median(run[i] for run in runs[case]) for i in range(3)]
           for case in CASES}
    print(f"\n{args.rounds} alternating rounds, {2 * args.mib} MiB a read; the whole machine's "
          "CPU and context switches over each read, medians\n")
    print("| case | MiB/s | CPU seconds a GiB | context switches a GiB | against the limit "
          "(rate; CPU; switches) |")
    print("| --- | --- | --- | --- | --- |")
    for case, what in CASES.items():
        ratios = "; ".join(ratio(mine, its) for mine, its in zip(med[case], med["limit"]))
        rate, cpu, switches = med[case]
        print(f"| {what} | {rate:.0f} | {cpu:.3f} | {switches:.0f} | {ratios} |")


def ratio(mine, its):
    """`mine` against `its`, or a dash where `its` is 0 (a read too short for /proc/stat's
    clock ticks to count its CPU)."""
    return f"{mine / its:.2f}x" if its else "—"


if __name__ == "__main__":
    main()
