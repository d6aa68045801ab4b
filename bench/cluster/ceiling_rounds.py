"""bench/cluster/ceiling_rounds.py: the alternating rounds of bench/cluster/cluster_bench.py
(--only ceiling), where ferry's parallel read, the plain TCP ceiling, UCX's own streams and the
limit over UCX run seconds apart in each round, so that each round's ratios compare one minute
of this noisy VM; and the reader process they and cluster_bench share."""
import statistics
import sys

from tcp_peer import tcp_streams
from ucx_peer import tag_bw_sleeping, ucx_limit


def reader(host, args):
    """Runs a reader script on `host`: its fastest read's {"s", "cpu_s"}."""
    r = host.run(args, capture_output=True, text=True, timeout=1200)
    if r.returncode != 0:
        raise RuntimeError(f"reader: exit {r.returncode}: {r.stderr}")
    took, cpu = r.stdout.split()[:2]
    return {"s": float(took), "cpu_s": float(cpu)}


def against_ceiling(hosts, uri, per_server, rounds):
    """The parallel read with full and default validation and the plain TCP ceiling sent and
    received each byte at its own place, one after the other in each of `rounds` rounds (each a
    process of its own: a warm-up read, then one timed), so that each round's ratios compare
    reads seconds apart on this noisy VM: [{"full", "default", "default, fresh", "ceiling"}
    MiB/s, "ucx": UCX's own two streams, ucx_peer.tag_bw_sleeping, "ucx limit": the same bytes
    moved by libucp from and into each byte's own place, ucx_peer.ucx_limit]. "default, fresh"
    connects anew for its timed read, as a process's first read does; the others read over the
    connections their warm-up read kept."""
    mib = 2 * per_server / (1 << 20)
    runs = []
    for _ in range(rounds):
        run = {}
        for key, level, keep in (("full", "FULL", "keep"), ("default", "DEFAULT", "keep"),
                                 ("default, fresh", "DEFAULT", "fresh")):
            r = reader(hosts["c"], [sys.executable, "-c", FERRY_READER, uri, "2", "1", level,
                                    keep])
            run[key] = mib / r["s"]
        run["ceiling"] = tcp_streams(hosts, per_server, 1, keep=True, cold=True)
        run["ucx"] = tag_bw_sleeping(hosts, per_server)
        run["ucx limit"] = ucx_limit(hosts, per_server)
        runs.append(run)
    return runs


# Each reader runs in a process of its own on host c: one read to warm up (a fresh process's first
# read pays the page faults of memory it never touched, on this VM about 0.3 s for 56 MiB), then
# argv[3] reads, each timed from GetFlightInfo to the whole table with the CPU time it used; it
# prints the fastest as "SECONDS CPU_SECONDS". argv[4], if given, is the validation level
# (ferry.ValidationLevel's name; FULL, the Python client's default, otherwise); argv[5] "fresh"
# connects anew for every read (keep_connections=False) where the client otherwise reads over the
# UCX connections its warm-up read kept.
FERRY_READER = """
import resource, sys, time, pyarrow as pa, ferry.flight
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
client = ferry.flight.connect(sys.argv[1], token="bench",
                              keep_connections=sys.argv[5:6] != ["fresh"])
level = getattr(ferry.ValidationLevel, sys.argv[4] if len(sys.argv) > 4 else "FULL")
best = None
for i in range(int(sys.argv[3]) + 1):
    start, used = time.monotonic(), cpu()
    table = pa.table(client.do_get("t", parallel=int(sys.argv[2]), validation=level))
    run = (time.monotonic() - start, cpu() - used)
    del table
    if i and (best is None or run < best):
        best = run
print(*best)
"""


def print_against(against):
    """The rows of the alternating rounds against the plain TCP ceiling."""
    for key, what in (("full", "full validation"), ("default", "default validation"),
                      ("default, fresh", "default validation, connecting anew")):
        ratios = sorted(r[key] / r["ceiling"] for r in against)
        print(f"| the parallel read, {what}, against that ceiling in alternating rounds | — | "
              f"{statistics.median(r[key] for r in against):.0f} | "
              f"{statistics.median(ratios):.2f}x, median of {len(against)} rounds "
              f"({ratios[0]:.2f}-{ratios[-1]:.2f}x; the ceiling "
              f"{statistics.median(r['ceiling'] for r in against):.0f} MiB/s) |")
    ucx = sorted(r["ucx"] / r["ceiling"] for r in against)
    print(f"| UCX alone: two `ucx_perftest -t tag_bw -E sleep` streams into host c, against "
          f"that ceiling | — | {statistics.median(r['ucx'] for r in against):.0f} | "
          f"{statistics.median(ucx):.2f}x ({ucx[0]:.2f}-{ucx[-1]:.2f}x) |")
    own = sorted(r["default"] / r["ucx"] for r in against)
    print(f"| the parallel read, default validation, against UCX alone | — | — | "
          f"{statistics.median(own):.2f}x ({own[0]:.2f}-{own[-1]:.2f}x) |")
    limit = sorted(r["ucx limit"] / r["ceiling"] for r in against)
    print(f"| the limit over UCX: libucp alone, each byte sent from and kept at its own place "
          f"(ferry_ucx_limit), against that ceiling | — | "
          f"{statistics.median(r['ucx limit'] for r in against):.0f} | "
          f"{statistics.median(limit):.2f}x ({limit[0]:.2f}-{limit[-1]:.2f}x) |")
    for key, what in (("default", "default validation"), ("full", "full validation")):
        at = sorted(r[key] / r["ucx limit"] for r in against)
        print(f"| the parallel read, {what}, against the limit over UCX | — | — | "
              f"{statistics.median(at):.2f}x ({at[0]:.2f}-{at[-1]:.2f}x) |")
    kept = sorted(r["default"] / r["default, fresh"] for r in against)
    print(f"| kept connections against connecting anew, default validation | — | — | "
          f"{statistics.median(kept):.2f}x, median of {len(against)} rounds "
          f"({kept[0]:.2f}-{kept[-1]:.2f}x) |")
