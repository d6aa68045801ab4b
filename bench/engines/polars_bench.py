#!/usr/bin/env python3
"""bench/engines: Polars over a flight spread on two server hosts, every peer measured in the same
run. Hosts are network namespaces joined by a bridge (tests/support/netns.py), as in
bench/cluster: `ferry serve --flight --keep` on host a with one half, and on host b with the
other half and `--peer` a, so b's FlightInfo lists both halves.

Plain Polars has no ranks, so the rank-aware layout is played by one Polars process per server
host, started together, each reading the endpoints whose server is on its host (the endpoint
hosts of ferry.polars.FlightSource, then restrict()): a case's time is the slower host's best.

  ferry.polars          scan_flight(...).select(pl.col("x").sum()) of the host's endpoints
  pyarrow.flight        DoGet of the same endpoints, each on its own server, then pl.from_arrow
                        and the same sum
  scan_parquet          pl.scan_parquet of the host's half on local disk (pyarrow's defaults),
                        the same sum
  one process           plain Polars on host a: the whole flight (b's half over UCX on TCP), by
                        ferry.polars and by pyarrow.flight + pl.from_arrow
  bytes                 what ferry's client received for x alone and for all four columns (its
                        plane_bytes), against x's own bytes

Prints a Markdown table (best of --repeat, the ratios), and writes JSON with --out.
FERRY_BENCH_SMOKE=1 (the docs suite's smallest run) makes it 4 MiB per server, one repeat.

    FERRY_CLI=build/bench/tools/ferry/ferry .venv/bin/python bench/engines/polars_bench.py \\
        --mib 256 --repeat 3 --out engines.json
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "support"))

CASES = ("ferry.polars", "pyarrow.flight", "scan_parquet")


def make_half(path, mib, start):
    """About `mib` MiB of four columns (int64 x, float64 f, int64 k, int64 t) in 8 MiB batches;
    writes the stream to `path` and a Parquet copy beside it. Returns the rows."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows_per_mib = (1 << 20) // 32
    rows = max(1000, mib * rows_per_mib)
    batch = min(rows, 8 * rows_per_mib)
    schema = pa.schema([("x", pa.int64()), ("f", pa.float64()), ("k", pa.int64()),
                        ("t", pa.int64())])
    batches = []
    for lo in range(0, rows, batch):
        n = min(batch, rows - lo)
        x = np.arange(start + lo, start + lo + n, dtype=np.int64)
        batches.append(pa.record_batch([x, x / 3, x % 1000, x * 7], schema=schema))
    with pa.ipc.new_stream(str(path), schema) as w:
        for b in batches:
            w.write_batch(b)
    pq.write_table(pa.Table.from_batches(batches), str(path).replace(".arrows", ".parquet"))
    return rows


def rank(args):
    """One host's reader: the best time of `args.case` over its endpoints, as JSON on stdout."""
    import polars as pl
    import pyarrow as pa
    import pyarrow.flight as fl

    import ferry.polars
    from ferry._locality import endpoint_host

    def endpoints():
        source = ferry.polars.FlightSource(args.uri, "t", token=args.token)
        if args.host == "all":
            return source
        mine = [i for i, h in zip(source.endpoints, source.endpoint_hosts()) if h == args.host]
        return source.restrict(mine)

    options = fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {args.token}".encode())])

    def run():
        if args.case == "ferry.polars":
            return endpoints().lazy().select(pl.col("x").sum()).collect().item()
        if args.case == "pyarrow.flight":
            info = fl.connect(args.uri).get_flight_info(fl.FlightDescriptor.for_path("t"),
                                                        options)
            tables = []
            for e in info.endpoints:
                locations = [u.uri.decode() for u in e.locations]
                if args.host in ("all", endpoint_host(locations, args.uri)):
                    # DoGet on the endpoint's own server: its grpc:// location, else the one asked.
                    grpc = [u for u in locations if u.startswith("grpc")]
                    server = fl.connect(grpc[0] if grpc else args.uri)
                    tables.append(server.do_get(e.ticket, options).read_all())
            return pl.from_arrow(pa.concat_tables(tables)).select(pl.col("x").sum()).item()
        return pl.scan_parquet(args.parquet).select(pl.col("x").sum()).collect().item()

    result = run()  # warm-up
    best = None
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        got = run()
        took = time.perf_counter() - t0
        assert got == result, (got, result)
        best = took if best is None else min(best, took)
    out = {"s": best, "sum": result}
    if args.case == "ferry.polars":
        source = endpoints()
        source.lazy().select(pl.col("x").sum()).collect()
        one = sum(source.client.plane_bytes.values())
        source = endpoints()
        source.lazy().collect()
        out["bytes_x"] = one
        out["bytes_all"] = sum(source.client.plane_bytes.values())
    print(json.dumps(out))


def _ranks(hosts, names, case, uri, tmp, args):
    """Runs `case` on the hosts `names` at once: {name: its JSON}."""
    procs = {}
    for n in names:
        host = hosts[n].ip if n in ("a", "b") and len(names) > 1 else "all"
        cmd = [sys.executable, os.path.abspath(__file__), "--rank", case, "--uri", uri,
               "--host", host, "--token", "bench", "--repeat", str(args.repeat),
               "--parquet", str(tmp / f"{n}.parquet")]
        procs[n] = hosts[n].popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = {}
    for n, p in procs.items():
        stdout, stderr = p.communicate(timeout=1200)
        if p.returncode != 0:
            raise RuntimeError(f"{case} on host {n}: exit {p.returncode}: {stderr}")
        out[n] = json.loads(stdout.strip().splitlines()[-1])
    return out


def stats(uri):
    import ferry.flight

    [body] = ferry.flight.connect(uri, token="bench").do_action("stats")
    return json.loads(body)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=256, help="MiB per server (default 256)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each case; the best is kept")
    ap.add_argument("--out", help="write the figures as JSON here")
    ap.add_argument("--rank", help=argparse.SUPPRESS)
    ap.add_argument("--uri", help=argparse.SUPPRESS)
    ap.add_argument("--host", help=argparse.SUPPRESS)
    ap.add_argument("--token", help=argparse.SUPPRESS)
    ap.add_argument("--parquet", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rank:
        args.case = args.rank
        return rank(args)
    if os.environ.get("FERRY_BENCH_SMOKE") == "1":
        args.mib, args.repeat = min(args.mib, 4), 1
    import tempfile
    from pathlib import Path

    from ferry_process import ServeProcess
    from netns import Hosts

    tmp = Path(tempfile.mkdtemp(prefix="ferry-engines-bench-"))
    try:
        rows = make_half(tmp / "a.arrows", args.mib, 0)
        rows += make_half(tmp / "b.arrows", args.mib, rows)
        total = sum(os.path.getsize(tmp / f"{n}.arrows") for n in "ab")
        figures = {"mib_per_server": args.mib, "rows": rows, "repeat": args.repeat}
        env = dict(os.environ, FERRY_TOKEN="bench")
        with Hosts(["a", "b"]) as hosts:
            a = ServeProcess(["--flight", f"{hosts['a'].ip}:0", "--keep", f"t={tmp / 'a.arrows'}"],
                             env=env, tmp=str(tmp), wrap=hosts["a"].wrap)
            a.uri = a.first_line()
            b = ServeProcess(["--flight", f"{hosts['b'].ip}:0", "--keep", "--peer", a.uri,
                              f"t={tmp / 'b.arrows'}"], env=env, tmp=str(tmp),
                             wrap=hosts["b"].wrap)
            b.uri = b.first_line()
            try:
                servers = (("a", a), ("b", b))
                figures["ranks"] = {}
                for c in CASES:
                    before = {n: stats(s.uri) for n, s in servers}
                    figures["ranks"][c] = _ranks(hosts, ("a", "b"), c, b.uri, tmp, args)
                    after = {n: stats(s.uri) for n, s in servers}
                    figures[f"{c} reads by plane"] = {
                        n: {p: after[n][p][k] - before[n][p][k]
                            for p, k in (("shm", "clients"), ("ucx", "clients"),
                                         ("grpc", "do_gets"))} for n, _ in servers}
                figures["one process"] = {c: _ranks(hosts, ("a",), c, b.uri, tmp, args)["a"]
                                          for c in CASES[:2]}
            finally:
                a.close()
                b.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report(figures, total)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(figures, f, indent=1)


def report(figures, total):
    mib = total / (1 << 20)
    ranks = figures["ranks"]
    best = {c: max(r["s"] for r in ranks[c].values()) for c in CASES}
    sums = {ranks[c]["a"]["sum"] + ranks[c]["b"]["sum"] for c in CASES}
    assert len(sums) == 1, f"the cases disagree on the sum: {sums}"
    base = best["ferry.polars"]
    print(f"\n{mib:.0f} MiB (4 columns, {figures['rows']:,} rows) on two server hosts; one "
          f"Polars process per host reads that host's endpoints; best of {figures['repeat']}, "
          f"the slower host\n")
    print("| case | time | ratio |")
    print("| --- | --- | --- |")
    names = {"ferry.polars": "`ferry.polars.scan_flight(...).select(pl.col(\"x\").sum())`",
             "pyarrow.flight": "pyarrow.flight DoGet + `pl.from_arrow`, the same sum",
             "scan_parquet": "`pl.scan_parquet` of the host's half on local disk"}
    for c in CASES:
        ratio = "1.00×" if c == "ferry.polars" else f"ferry {best[c] / base:.1f}× faster"
        print(f"| {names[c]} | {best[c] * 1000:.1f} ms | {ratio} |")
    one = figures["one process"]
    print(f"| one Polars process on host a, the whole flight: ferry.polars | "
          f"{one['ferry.polars']['s'] * 1000:.1f} ms | — |")
    print(f"| the same by pyarrow.flight DoGet + `pl.from_arrow` | "
          f"{one['pyarrow.flight']['s'] * 1000:.1f} ms | ferry "
          f"{one['pyarrow.flight']['s'] / one['ferry.polars']['s']:.1f}× faster |")
    r = ranks["ferry.polars"]["a"]
    print(f"\nBytes ferry's client received on host a: x alone {r['bytes_x']:,}, all four "
          f"columns {r['bytes_all']:,} ({r['bytes_x'] / r['bytes_all']:.3f} of them; x is "
          f"{figures['rows'] // 2 * 8:,} bytes of each half).")
    print(f"Reads by plane (servers' counters): ferry.polars {figures['ferry.polars reads by plane']}, "
          f"pyarrow.flight {figures['pyarrow.flight reads by plane']}")


if __name__ == "__main__":
    main()
