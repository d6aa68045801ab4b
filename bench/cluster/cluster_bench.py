#!/usr/bin/env python3
"""bench/cluster: a dataset spread over two server hosts, read from a third, every peer measured
in the same run. Hosts are network namespaces joined by a bridge (tests/support/netns.py), so
everything between hosts goes over TCP (UCX on TCP, gRPC); server b federates server a (`--peer`).

  parallel read   ferry's client on host c reads flight t from b: both endpoints at once
                  (parallel=2) and one after the other (parallel=1), with the client's CPU time,
                  with the Python client's full validation; and at once with default validation
  ceiling         two concurrent `ucx_perftest -t tag_bw` streams over TCP, c to a and c to b
  one stream      `ferry get` on host c of host a's half over UCX, type 0, the file's bodies
                  sent whole from its pages and from a kept copy; ferry's UCX transport alone
                  moving the same bytes in the same 8 MiB messages (ferry_ucx_stream: no Arrow,
                  no Dissociated IPC), each from its own place and all from one place, as
                  tag_bw sends; and one tag_bw stream, in alternating rounds: the median ratio
                  and its range
  plain TCP       the same bytes over plain sockets (no UCX, no Arrow), two streams into one
                  process and one stream: what any reader could reach between these hosts; and
                  two streams into memory the reader keeps, sent from a buffer that stays in
                  cache and from memory of the stream's size (each byte from its own place);
                  that last ceiling and the parallel read (full and default validation) again
                  in alternating rounds (--rounds), each round's ratio seconds apart, the
                  parallel read once more connecting anew (the others read over the UCX
                  connections their warm-up read kept), and UCX alone, two tag_bw streams into
                  host c whose ends sleep on their workers' events (ucx_peer.py), and the
                  limit over UCX: libucp alone sending each byte from and receiving it into
                  its own place (ucx_limit.c); --only ceiling runs these rounds alone
                  (ceiling_rounds.py)
  pyarrow.flight  the same flight read on host c by pyarrow.flight, its endpoints on two threads
  small reads     a flight of 1,000 rows on each server (40 KB), read again and again on host c:
                  ferry's client as it chooses (DoGet, below GetOptions::grpc_below), ferry's
                  client over UCX (on the connections it kept, and connecting anew each
                  read), each endpoint read
                  alone as an engine's task reads it (pickled, knowing its size; and made from
                  its ticket and locations alone, which knows none) and pyarrow.flight (a
                  client for each endpoint's server each read); the median read. --only small
                  runs this case alone
  Dask            x.sum() with a worker on each server host: ferry.dask.read_flight, dd.from_map
                  over pyarrow.flight DoGet, and dd.read_parquet of the same halves written with
                  pyarrow's defaults; the servers' counters say which plane the reads took

Prints a Markdown table (best of --repeat, and the ratios), and writes JSON with --out.

    FERRY_CLI=build/bench/tools/ferry/ferry .venv/bin/python bench/cluster/cluster_bench.py \\
        --mib 512 --repeat 3 --out cluster.json
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.flight as fl
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "support"))
from ferry_process import ServeProcess  # noqa: E402
from netns import Hosts  # noqa: E402
from tcp_peer import tcp_streams  # noqa: E402
from one_stream import one_stream  # noqa: E402
from ucx_peer import tag_bw  # noqa: E402
from ceiling_rounds import FERRY_READER, against_ceiling, print_against, reader  # noqa: E402

TOKEN = "bench"
AUTH = fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {TOKEN}".encode())])


def make_half(path, mib, start):
    """About `mib` MiB of mixed columns (int64 x, float64, int32, a 16-letter string) in 8 MiB
    batches."""
    rows_per_mib = (1 << 20) // 36
    rows = max(1000, mib * rows_per_mib)
    batch = min(rows, 8 * rows_per_mib)
    with ipc.new_stream(str(path), pa.schema([("x", pa.int64()), ("f", pa.float64()),
                                              ("i", pa.int32()), ("s", pa.string())])) as w:
        for lo in range(0, rows, batch):
            n = min(batch, rows - lo)
            x = pa.array(range(start + lo, start + lo + n), pa.int64())
            w.write_batch(pa.record_batch({
                "x": x, "f": pa.array([v / 3 for v in range(n)], pa.float64()),
                "i": pa.array([v % 1000 for v in range(n)], pa.int32()),
                "s": pa.array([f"{v:016d}" for v in range(n)])}))
    return rows


PYARROW_READER = """
import resource, sys, threading, time, pyarrow.flight as fl
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
auth = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer bench")])
def read(e, tables):
    grpc = [l.uri.decode() for l in e.locations if l.uri.decode().startswith("grpc")]
    tables.append(fl.connect(grpc[0] if grpc else sys.argv[1]).do_get(e.ticket, options=auth).read_all())
best = None
for i in range(int(sys.argv[2]) + 1):
    start, used = time.monotonic(), cpu()
    info = fl.connect(sys.argv[1]).get_flight_info(fl.FlightDescriptor.for_path("t"), options=auth)
    tables = []
    threads = [threading.Thread(target=read, args=(e, tables)) for e in info.endpoints]
    for t in threads: t.start()
    for t in threads: t.join()
    run = (time.monotonic() - start, cpu() - used)
    del tables
    if i and (best is None or run < best):
        best = run
print(*best)
"""


# A reader of the small flight "s" on host c: argv[2] reads after a warm-up, each timed from
# GetFlightInfo to the whole table; prints the median seconds. argv[3] is how: ferry's client
# choosing its plane ("auto"), ferry's client over UCX on the connections it kept ("ucx") or
# connecting anew each read ("ucx, fresh"), each endpoint read on its own after a pickle, as an
# engine's task gets it ("alone"), the same made from its ticket and locations only ("alone,
# unsized"), or pyarrow.flight ("pyarrow").
SMALL_READER = """
import pickle, statistics, sys, time, pyarrow as pa, pyarrow.flight as fl, ferry.flight
auth = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer bench")])
client = ferry.flight.connect(sys.argv[1], token="bench",
                              keep_connections=sys.argv[3] != "ucx, fresh")
def pyarrow_read():
    info = fl.connect(sys.argv[1]).get_flight_info(fl.FlightDescriptor.for_path("s"), options=auth)
    parts = []
    for e in info.endpoints:
        grpc = [l.uri.decode() for l in e.locations if l.uri.decode().startswith("grpc")]
        parts.append(fl.connect(grpc[0] if grpc else sys.argv[1]).do_get(e.ticket, options=auth).read_all())
    return pa.concat_tables(parts)
def alone(sized):
    parts = []
    for e in client.get_flight_info("s").endpoints:
        task = pickle.loads(pickle.dumps(e if sized else ferry.flight.Endpoint(e.ticket, e.locations)))
        parts.append(pa.table(client.do_get(task)))
    return pa.concat_tables(parts)
read = {"auto": lambda: pa.table(client.do_get("s", parallel=2)),
        "ucx": lambda: pa.table(client.do_get("s", parallel=2, via="ucx")),
        "ucx, fresh": lambda: pa.table(client.do_get("s", parallel=2, via="ucx")),
        "alone": lambda: alone(True), "alone, unsized": lambda: alone(False),
        "pyarrow": pyarrow_read}[sys.argv[3]]
times = []
for i in range(int(sys.argv[2]) + 1):
    start = time.monotonic()
    table = read()
    if i:
        times.append(time.monotonic() - start)
assert table.num_rows == 2000, table.num_rows
print(statistics.median(times))
"""


SMALL_READERS = {
    "auto": "ferry's client, choosing (DoGet below grpc_below)",
    "ucx": "ferry's client over UCX (each server's connection kept from the read before)",
    "ucx, fresh": "ferry's client over UCX, connecting to each server each read",
    "alone": "ferry's client, each endpoint alone as an engine's task gets it (pickled, sized)",
    "alone, unsized": "the same, each endpoint made from its ticket and locations (no size)",
    "pyarrow": "pyarrow.flight (a client for each endpoint's server each read)",
}


def small_reads(hosts, b, reads):
    """The small flight read on host c by each reader in turn, three rounds: each reader's median
    seconds, per round."""
    rounds = []
    for _ in range(3):
        rounds.append({how: float(hosts["c"].run(
            [sys.executable, "-c", SMALL_READER, b.uri, str(reads), how], capture_output=True,
            text=True, timeout=600, check=True).stdout) for how in SMALL_READERS})
    return rounds


def stats(uri):
    [r] = list(fl.connect(uri).do_action(fl.Action("stats", b""), options=AUTH))
    return json.loads(r.body.to_pybytes())


class PyarrowPart:
    """A partition read as Dask users of pyarrow.flight read one: DoGet on the endpoint's server,
    then to_pandas."""

    def __call__(self, endpoint):
        ticket, locations, fallback = endpoint
        grpc = [u for u in locations if u.startswith("grpc")]
        client = fl.connect(grpc[0] if grpc else fallback)
        # (Made here: call options do not pickle.)
        auth = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer " + TOKEN.encode())])
        return client.do_get(fl.Ticket(ticket), options=auth).read_all().to_pandas()

    def __dask_tokenize__(self):
        return "cluster-bench-pyarrow-part"


def dask_runs(hosts, a, b, tmp, repeat):
    import dask.dataframe as dd
    import distributed

    import ferry.dask

    out = {}
    with distributed.LocalCluster(n_workers=0, host=hosts.root_ip, scheduler_port=0,
                                  dashboard_address=":0") as local:
        workers = [hosts[n].popen([sys.executable, "-m", "distributed.cli.dask_worker",
                                   local.scheduler_address, "--host", hosts[n].ip, "--nthreads",
                                   "1", "--no-nanny", "--no-dashboard"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                   for n in ("a", "b")]
        try:
            with distributed.Client(local) as client:
                client.wait_for_workers(2, timeout=60)
                info = fl.connect(b.uri).get_flight_info(fl.FlightDescriptor.for_path("t"),
                                                         options=AUTH)
                parts = [(e.ticket.ticket, [l.uri.decode() for l in e.locations], b.uri)
                         for e in info.endpoints]
                meta = info.schema.empty_table().to_pandas()
                cases = {
                    "ferry.dask.read_flight": lambda: ferry.dask.read_flight(
                        b.uri, "t", token=TOKEN).x.sum().compute(),
                    "dd.from_map over pyarrow.flight DoGet": lambda: dd.from_map(
                        PyarrowPart(), parts, meta=meta).x.sum().compute(),
                    "dd.read_parquet (pyarrow's defaults)": lambda: dd.read_parquet(
                        [str(tmp / "a.parquet"), str(tmp / "b.parquet")]).x.sum().compute(),
                }
                def settle():
                    # A run's keys are the same every time: wait until the scheduler forgot the
                    # last run's, so that no result is served from its memory.
                    deadline = time.monotonic() + 30
                    while (client.run_on_scheduler(lambda dask_scheduler: len(
                            dask_scheduler.tasks)) and time.monotonic() < deadline):
                        time.sleep(0.01)

                for name, run in cases.items():
                    before = {s.uri: stats(s.uri) for s in (a, b)}
                    run()  # warm-up: the workers import what the case needs
                    times = []
                    for _ in range(repeat):
                        settle()
                        start = time.monotonic()
                        run()
                        times.append(time.monotonic() - start)
                    out[name] = min(times)
                    if name.startswith("ferry"):
                        after = {s.uri: stats(s.uri) for s in (a, b)}
                        out["ferry planes"] = {
                            p: sum(after[u][p]["clients"] - before[u][p]["clients"]
                                   for u in after) for p in ("shm", "ucx")}
                        out["ferry planes"]["grpc"] = sum(
                            after[u]["grpc"]["do_gets"] - before[u]["grpc"]["do_gets"]
                            for u in after)
        finally:
            for w in workers:
                w.terminate()
                w.wait()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=512, help="MiB per server (default 512)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each case; the best is kept")
    ap.add_argument("--rounds", type=int, default=5,
                    help="alternating rounds of the parallel read and the plain TCP ceiling "
                         "(default 5)")
    ap.add_argument("--small-reads", type=int, default=20,
                    help="reads of the small flight by each reader in each round (default 20)")
    ap.add_argument("--only", choices=["small", "ceiling"],
                    help="run only this case (small: the small reads; ceiling: the alternating "
                         "rounds of the parallel read and the plain TCP ceiling)")
    ap.add_argument("--out", help="write the figures as JSON here")
    args = ap.parse_args()
    import tempfile
    from pathlib import Path
    tmp = Path(tempfile.mkdtemp(prefix="ferry-cluster-bench-"))
    try:
        mib_each = 0 if args.only == "small" else args.mib
        rows = [make_half(tmp / "a.arrows", mib_each, 0)]
        rows.append(make_half(tmp / "b.arrows", mib_each, rows[0]))
        make_half(tmp / "a_small.arrows", 0, 0)  # 1,000 rows
        make_half(tmp / "b_small.arrows", 0, 1000)
        for name in ("a", "b"):
            pq.write_table(ipc.open_stream(str(tmp / f"{name}.arrows")).read_all(),
                           str(tmp / f"{name}.parquet"))
        total_bytes = sum(os.path.getsize(tmp / f"{n}.arrows") for n in ("a", "b"))
        figures = {"mib_per_server": args.mib, "rows": sum(rows)}
        env = dict(os.environ, FERRY_TOKEN=TOKEN)
        with Hosts(["a", "b", "c"]) as hosts:
            a = ServeProcess(["--flight", f"{hosts['a'].ip}:0", "--keep", f"t={tmp / 'a.arrows'}",
                              f"s={tmp / 'a_small.arrows'}"],
                             env=env, tmp=str(tmp), wrap=hosts["a"].wrap)
            a.uri = a.first_line()
            b = ServeProcess(["--flight", f"{hosts['b'].ip}:0", "--keep", "--peer", a.uri,
                              f"t={tmp / 'b.arrows'}", f"s={tmp / 'b_small.arrows'}"], env=env,
                             tmp=str(tmp), wrap=hosts["b"].wrap)
            b.uri = b.first_line()
            try:
                if args.only == "small":
                    figures["small reads"] = small_reads(hosts, b, args.small_reads)
                    print_small(figures)
                    return write_out(args.out, figures)
                if args.only == "ceiling":
                    against = against_ceiling(hosts, b.uri, total_bytes // 2, args.rounds)
                    figures["against the cold ceiling, rounds"] = against
                    print("| case | — | MiB/s | against the ceiling |\n| --- | --- | --- | --- |")
                    print_against(against)
                    return write_out(args.out, figures)
                for parallel in (2, 1):
                    figures[f"ferry, parallel {parallel}"] = reader(
                        hosts["c"], [sys.executable, "-c", FERRY_READER, b.uri, str(parallel),
                                     str(args.repeat)])
                figures["ferry, parallel 2, default validation"] = reader(
                    hosts["c"], [sys.executable, "-c", FERRY_READER, b.uri, "2", str(args.repeat),
                                 "DEFAULT"])
                bw = tag_bw(hosts, 8 << 20, max(20, args.mib // 8))
                figures["tag_bw MiB/s"] = bw
                figures["one stream, rounds"] = one_stream(hosts, tmp / "a.arrows",
                                                           max(args.repeat, 3), tmp)
                half = total_bytes // 2
                figures["two TCP streams MiB/s"] = tcp_streams(hosts, half, args.repeat)
                figures["one TCP stream MiB/s"] = tcp_streams(hosts, half, args.repeat, ("a",))
                figures["two TCP streams kept MiB/s"] = tcp_streams(hosts, half, args.repeat,
                                                                    keep=True)
                figures["two TCP streams kept, cold MiB/s"] = tcp_streams(
                    hosts, half, args.repeat, keep=True, cold=True)
                figures["against the cold ceiling, rounds"] = against_ceiling(
                    hosts, b.uri, half, args.rounds)
                figures["pyarrow.flight, two threads"] = reader(
                    hosts["c"], [sys.executable, "-c", PYARROW_READER, b.uri, str(args.repeat)])
                figures["dask"] = dask_runs(hosts, a, b, tmp, args.repeat)
                figures["small reads"] = small_reads(hosts, b, args.small_reads)
            finally:
                a.close()
                b.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # the halves and their Parquet copies
    mib = total_bytes / (1 << 20)
    par, seq = figures["ferry, parallel 2"], figures["ferry, parallel 1"]
    ceiling = sum(figures["tag_bw MiB/s"].values())
    pa_run = figures["pyarrow.flight, two threads"]
    print(f"\n{mib:.0f} MiB over two servers, read on a third host (UCX on TCP between namespaces)\n")
    print("| case | time (client CPU) | MiB/s | ratio |")
    print("| --- | --- | --- | --- |")
    print(f"| ferry's client, endpoints at once | {par['s']:.3f} s ({par['cpu_s']:.2f} s) | "
          f"{mib / par['s']:.0f} | {mib / par['s'] / ceiling:.2f}x of two tag_bw streams |")
    print(f"| ferry's client, one after the other | {seq['s']:.3f} s ({seq['cpu_s']:.2f} s) | "
          f"{mib / seq['s']:.0f} | {seq['s'] / par['s']:.2f}x the parallel read's time |")
    dv = figures["ferry, parallel 2, default validation"]
    print(f"| ferry's client, endpoints at once, default validation (not full) | {dv['s']:.3f} s "
          f"({dv['cpu_s']:.2f} s) | {mib / dv['s']:.0f} | {par['s'] / dv['s']:.2f}x as fast as "
          f"full validation |")
    print(f"| two ucx_perftest tag_bw streams over TCP | — | {ceiling:.0f} | the ceiling |")
    tcp2, tcp1 = figures["two TCP streams MiB/s"], figures["one TCP stream MiB/s"]
    print(f"| two plain TCP streams into one process (no UCX, no Arrow) | {mib / tcp2:.3f} s | "
          f"{tcp2:.0f} | ferry's parallel read at {mib / par['s'] / tcp2:.2f}x; the fastest any "
          f"reader could be: {pa_run['s'] * tcp2 / mib:.2f}x pyarrow.flight |")
    kept = figures["two TCP streams kept MiB/s"]
    print(f"| the same into memory the reader keeps (each byte its own place, as a table's) | "
          f"{mib / kept:.3f} s | {kept:.0f} | {kept / tcp2:.2f}x the reused buffer's rate; ferry's "
          f"parallel read at {mib / par['s'] / kept:.2f}x it |")
    cold = figures["two TCP streams kept, cold MiB/s"]
    print(f"| the same, each byte also sent from its own place (as a kept dataset's server sends) | "
          f"{mib / cold:.3f} s | {cold:.0f} | {cold / tcp2:.2f}x the reused buffer's rate; ferry's "
          f"parallel read at {mib / par['s'] / cold:.2f}x it ({mib / dv['s'] / cold:.2f}x with "
          f"default validation) |")
    against = figures["against the cold ceiling, rounds"]
    print_against(against)
    rounds = figures["one stream, rounds"]
    one_bw = statistics.median(r["tag_bw"] for r in rounds)
    print(f"| one plain TCP stream, a to c | — | {tcp1:.0f} | one tag_bw stream (median of "
          f"{len(rounds)}) at {one_bw / tcp1:.2f}x |")
    for key, what in (("file", "`ferry get` over UCX, type 0, the file's bodies sent whole"),
                      ("kept", "`ferry get` over UCX, type 0, a kept copy"),
                      ("transport", "ferry's UCX transport alone (ferry_ucx_stream), 8 MiB "
                                    "messages"),
                      ("transport, one place", "the same, every message sent from one place "
                                               "(as tag_bw sends)")):
        ratios = sorted(r[key] / r["tag_bw"] for r in rounds)
        rate = statistics.median(r[key] for r in rounds)
        print(f"| one stream a to c, {what} | — | {rate:.0f} | "
              f"{statistics.median(ratios):.2f}x one tag_bw stream, median of {len(rounds)} "
              f"alternating rounds ({ratios[0]:.2f}-{ratios[-1]:.2f}x; tag_bw {one_bw:.0f} "
              f"MiB/s) |")
    protocol = sorted(r["kept"] / r["transport"] for r in rounds)
    print(f"| `ferry get` of the kept copy against the transport alone | — | — | "
          f"{statistics.median(protocol):.2f}x, median of {len(rounds)} rounds "
          f"({protocol[0]:.2f}-{protocol[-1]:.2f}x): the Dissociated IPC protocol's part |")
    print(f"| pyarrow.flight, endpoints on two threads | {pa_run['s']:.3f} s "
          f"({pa_run['cpu_s']:.2f} s) | {mib / pa_run['s']:.0f} | "
          f"ferry {pa_run['s'] / par['s']:.2f}x faster |")
    d = figures["dask"]
    base = d["ferry.dask.read_flight"]
    for name in ("ferry.dask.read_flight", "dd.from_map over pyarrow.flight DoGet",
                 "dd.read_parquet (pyarrow's defaults)"):
        print(f"| Dask x.sum(): {name} | {d[name]:.3f} s | {mib / d[name]:.0f} | "
              f"{d[name] / base:.2f}x ferry's time |")
    print(f"\nDask's reads by plane (servers' counters): {d['ferry planes']}")
    print_small(figures)
    write_out(args.out, figures)


def print_small(figures):
    small = figures["small reads"]
    print("\nThe small flight (1,000 rows on each server), read again and again on host c: the "
          "median read in each of three rounds, ms\n")
    print("| reader | round 1 | round 2 | round 3 | against pyarrow.flight (median) |")
    print("| --- | --- | --- | --- | --- |")
    for how, what in SMALL_READERS.items():
        ratio = statistics.median(r[how] / r["pyarrow"] for r in small)
        print(f"| {what} | " + " | ".join(f"{r[how] * 1e3:.1f}" for r in small) +
              f" | {ratio:.2f}x |")


def write_out(path, figures):
    if path:
        with open(path, "w") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
