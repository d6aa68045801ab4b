#!/usr/bin/env python3
"""bench/flight: 1 GiB of mixed columns in 64 MiB batches, read over Arrow Flight on one host,
each path timed from GetFlightInfo to a table the client can use (default validation):

  (a) pyarrow.flight server -> pyarrow.flight client (DoGet)
  (b) ferry server          -> pyarrow.flight client (DoGet)
  (c) ferry server          -> ferry client over gRPC (DoGet)
  (d) ferry client following the shared-memory location
  (e) ferry client following the UCX location

and GetFlightInfo's latency, pyarrow.flight's client against each server. The servers are
separate processes (bench/flight/pyarrow_server.py; `ferry serve --flight --keep`); the clients
run in processes of their own, one path after another, in interleaved rounds. Then one pyarrow
client alternates gets from the two servers (ABBA pairs), which compares (a) and (b) under the
same client state. Prints Markdown tables and writes JSON for plot_flight.py.

    FERRY_CLI=build/test/tools/ferry/ferry .venv/bin/python bench/flight/flight_bench.py \\
        --out flight.json
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.flight as fl

import ferry
import ferry.flight

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def make_data(path, gib, batch_mib):
    """Mixed columns (int64, float64, int32, bool, a 16-letter string, a dictionary) in batches of
    about `batch_mib` MiB, `gib` GiB in all; written once and reused."""
    rng = np.random.default_rng(7)
    row_bytes = 8 + 8 + 4 + 1 / 8 + (16 + 4) + 4
    rows = int(batch_mib * 2**20 / row_bytes)
    batches = max(1, round(gib * 1024 / batch_mib))
    if os.path.exists(path) and os.path.getsize(path) > 0.9 * gib * 2**30:
        return
    words = pa.array([f"w{i:03d}" for i in range(100)])
    schema = None
    with pa.OSFile(path + ".tmp", "wb") as sink:
        writer = None
        for b in range(batches):
            ints = rng.integers(-2**40, 2**40, rows)
            letters = rng.integers(97, 123, size=rows * 16, dtype=np.uint8)
            offsets = np.arange(rows + 1, dtype=np.int32) * 16
            names = pa.StringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(letters))
            batch = pa.record_batch({
                "id": pa.array(ints),
                "value": pa.array(rng.standard_normal(rows)),
                "small": pa.array(rng.integers(0, 1000, rows, dtype=np.int32)),
                "flag": pa.array(rng.integers(0, 2, rows).astype(bool)),
                "name": names,
                "word": pa.DictionaryArray.from_arrays(
                    pa.array(rng.integers(0, 100, rows, dtype=np.int32)), words),
            })
            if writer is None:
                schema = batch.schema
                writer = pa.ipc.new_stream(sink, schema)
            writer.write_batch(batch)
        writer.close()
    os.replace(path + ".tmp", path)


# The servers' logs: each server writes its stderr to a file of its own (a pipe nobody drains
# would stop a server that logs much), shown when a client fails.
SERVER_LOGS = {}


def spawn(args, env=None):
    log = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True,
                            env=dict(os.environ, **(env or {})))
    SERVER_LOGS[os.path.basename(args[1] if args[0] == sys.executable else args[0])] = log
    line = proc.stdout.readline().strip()
    if not line:
        proc.kill()
        proc.wait()
        raise SystemExit(f"{args[0]} did not start: {server_logs()}")
    return proc, line


def server_logs():
    """The last lines of each server's stderr so far."""
    out = []
    for name, log in SERVER_LOGS.items():
        log.flush()
        log.seek(0)
        lines = log.read().splitlines()[-20:]
        out.append(f"{name}'s log (last {len(lines)} lines):\n" + "\n".join(lines))
    return "\n".join(out)


def process_cpu_seconds(pid):
    """User and system CPU seconds a process has used so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(fn, repeat):
    fn()  # warm-up: first touches, connections, caches
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
        del out
    return times


def client(args):
    """One path's client, in a process of its own (so no path inherits another's memory or
    threads): prints the times as JSON."""
    descriptor = fl.FlightDescriptor.for_path("t")
    rows = args.rows
    if args.client == "ab":
        print(json.dumps(paired(args, descriptor, rows)))
        return
    if args.client in ("a", "b"):
        c = fl.connect(args.uri)

        def go():
            info = c.get_flight_info(descriptor)
            table = c.do_get(info.endpoints[0].ticket).read_all()
            assert table.num_rows == rows
            return table
    elif args.client in ("c", "d", "e"):
        via = {"c": "grpc", "d": "shm", "e": "ucx"}[args.client]
        c = ferry.flight.connect(args.uri)
        default = ferry.ValidationLevel.DEFAULT

        def go():
            table = pa.table(c.do_get("t", via=via, validation=default))
            assert table.num_rows == rows and c.last_location.startswith(via)
            return table
    else:  # GetFlightInfo latency: "lat-pyarrow" (pyarrow's client) or "lat-ferry" (ferry's)
        if args.client == "lat-pyarrow":
            c = fl.connect(args.uri)
            call = lambda: c.get_flight_info(descriptor)  # noqa: E731
        else:
            c = ferry.flight.connect(args.uri)
            call = lambda: c.get_flight_info("t")  # noqa: E731
        for _ in range(100):
            call()
        times = []
        for _ in range(args.latency_calls):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        print(json.dumps(times))
        return
    print(json.dumps(timed(go, args.repeat)))


def paired(args, descriptor, rows):
    """(a) against (b) in one pyarrow.flight client: gets from the two servers alternate in ABBA
    order, so the client's memory state and the VM's slow spells fall on both alike. Returns
    [a_seconds, b_seconds] pairs."""
    clients = {"a": fl.connect(args.uri), "b": fl.connect(args.uri_b)}

    def get(key):
        start = time.perf_counter()
        c = clients[key]
        table = c.do_get(c.get_flight_info(descriptor).endpoints[0].ticket).read_all()
        took = time.perf_counter() - start
        assert table.num_rows == rows
        return took

    get("a")  # warm-up of both: connections, first touches
    get("b")
    pairs = []
    for i in range(args.pairs):
        order = "ab" if i % 2 == 0 else "ba"
        t = {key: get(key) for key in order}
        pairs.append([t["a"], t["b"]])
    return pairs


def run_client(args, key, uri, rows, extra=()):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--client", key, "--uri", uri,
                          "--rows", str(rows), "--repeat", str(args.repeat),
                          "--latency-calls", str(args.latency_calls), *extra],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"client {key} failed: {out.stderr}\n{server_logs()}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gib", type=float, default=1.0)
    p.add_argument("--batch-mib", type=float, default=64)
    p.add_argument("--repeat", type=int, default=5, help="timed gets per client process")
    p.add_argument("--rounds", type=int, default=3,
                   help="rounds, each running every path's client once, interleaved")
    p.add_argument("--latency-calls", type=int, default=2000)
    p.add_argument("--pairs", type=int, default=10,
                   help="(a)/(b) pairs timed in one pyarrow client, ABBA order (0: none)")
    p.add_argument("--data", default="/tmp/ferry-flight-bench.arrows")
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument("--client", help=argparse.SUPPRESS)
    p.add_argument("--uri", help=argparse.SUPPRESS)
    p.add_argument("--uri-b", help=argparse.SUPPRESS)
    p.add_argument("--rows", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.client:
        client(args)
        return

    cli = os.environ.get("FERRY_CLI", os.path.join(REPO, "build", "test", "tools", "ferry", "ferry"))
    make_data(args.data, args.gib, args.batch_mib)
    size = os.path.getsize(args.data)
    expected = pa.ipc.open_stream(pa.memory_map(args.data)).read_all()
    rows, nbytes = expected.num_rows, expected.nbytes
    del expected

    pyarrow_proc, port = spawn([sys.executable, os.path.join(HERE, "pyarrow_server.py"),
                                args.data, "t"])
    ferry_proc, ferry_uri = spawn([cli, "serve", "-v", "--flight", "127.0.0.1:0", "--keep",
                                   f"t={args.data}"])
    pa_uri = f"grpc://127.0.0.1:{port}"
    results = {"bytes": nbytes, "rows": rows, "file_bytes": size, "repeat": args.repeat,
               "paths": {}, "latency_us": {}, "load_before": os.getloadavg()[0]}
    labels = {
        "a": ("pyarrow.flight server → pyarrow.flight client (DoGet)", pa_uri),
        "b": ("ferry server → pyarrow.flight client (DoGet)", ferry_uri),
        "c": ("ferry server → ferry client over gRPC (DoGet)", ferry_uri),
        "d": ("ferry client following the shared-memory location", ferry_uri),
        "e": ("ferry client following the UCX location", ferry_uri),
    }
    try:
        # Rounds interleave the paths, so a slow spell of the machine (this VM's memory bandwidth
        # comes and goes) falls on every path of a round, not on one path's whole sample; each
        # round's ratios to its own (a) are kept beside the pooled medians.
        # The server's own CPU per get (user + system, warm-up included) is the server side's
        # cost alone, which the client's share of two cores does not blur.
        server_of = {"a": pyarrow_proc.pid}
        for key, (label, _) in labels.items():
            results["paths"][key] = {"label": label, "seconds": [], "round_medians_s": [],
                                     "server_cpu_s": []}
        for rnd in range(args.rounds):
            for key, (label, uri) in labels.items():
                pid = server_of.get(key, ferry_proc.pid)
                cpu_before = process_cpu_seconds(pid)
                times = run_client(args, key, uri, rows)
                cpu_per_get = (process_cpu_seconds(pid) - cpu_before) / (len(times) + 1)
                r = results["paths"][key]
                r["seconds"] += times
                r["round_medians_s"].append(statistics.median(times))
                r["server_cpu_s"].append(cpu_per_get)
                print(f"round {rnd + 1}/{args.rounds} ({key}) {label}: median "
                      f"{statistics.median(times):.3f} s, best {min(times):.3f} s, server CPU "
                      f"{cpu_per_get * 1e3:.0f} ms a get", flush=True)
        for r in results["paths"].values():
            r["median_s"] = statistics.median(r["seconds"])
            r["server_cpu_median_s"] = statistics.median(r["server_cpu_s"])
        if args.pairs > 0:
            results["ab_pairs_s"] = run_client(args, "ab", pa_uri, rows,
                                               ["--uri-b", ferry_uri, "--pairs", str(args.pairs)])
        lat = {"pyarrow": run_client(args, "lat-pyarrow", pa_uri, rows),
               "ferry": run_client(args, "lat-pyarrow", ferry_uri, rows),
               "ferry_client": run_client(args, "lat-ferry", ferry_uri, rows)}
        for k, v in lat.items():
            results["latency_us"][k] = {"median": statistics.median(v) * 1e6,
                                        "p90": float(np.percentile(v, 90)) * 1e6}
    finally:
        for proc in (pyarrow_proc, ferry_proc):
            proc.terminate()
            proc.wait()
    results["load_after"] = os.getloadavg()[0]

    a = results["paths"]["a"]["median_s"]
    goals = {"a": None, "b": 1.0, "c": 1.3, "d": 20.0, "e": 3.0}
    print()
    results["rounds"] = args.rounds
    print(f"{nbytes / 2**30:.2f} GiB in {rows:,} rows, "
          f"{round(args.gib * 1024 / args.batch_mib)} batches; median of {args.repeat} gets "
          f"in each of {args.rounds} interleaved rounds; "
          f"load average {results['load_before']:.1f} before, {results['load_after']:.1f} after")
    print()
    print("| path | time | throughput | vs (a) | vs (a) by round | server CPU a get | goal |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    a_rounds = results["paths"]["a"]["round_medians_s"]
    for key, r in results["paths"].items():
        t = r["median_s"]
        ratio = a / t
        r["vs_a"] = ratio
        r["vs_a_by_round"] = [x / y for x, y in zip(a_rounds, r["round_medians_s"])]
        goal = goals[key]
        verdict = "" if goal is None else (f"≥ {goal:g}×: " + ("met" if ratio >= goal else "missed"))
        by_round = ", ".join(f"{x:.2f}" for x in r["vs_a_by_round"])
        print(f"| ({key}) {r['label']} | {t * 1000:.1f} ms | {nbytes / t / 1e9:.2f} GB/s | "
              f"{ratio:.2f}× | {by_round} | {r['server_cpu_median_s'] * 1e3:.0f} ms | {verdict} |")
    if results.get("ab_pairs_s"):
        ratios = sorted(a_s / b_s for a_s, b_s in results["ab_pairs_s"])
        results["ab_ratio_median"] = statistics.median(ratios)
        at_least = sum(r >= 1.0 for r in ratios)
        print(f"\n(b) against (a) in one pyarrow client, {len(ratios)} ABBA pairs: median "
              f"{results['ab_ratio_median']:.2f}× (range {ratios[0]:.2f}-{ratios[-1]:.2f}×; "
              f"{at_least} of {len(ratios)} pairs ≥ 1×; goal ≥ 1×: "
              f"{'met' if results['ab_ratio_median'] >= 1.0 else 'missed'})")
    la, lf = results["latency_us"]["pyarrow"]["median"], results["latency_us"]["ferry"]["median"]
    results["latency_ratio"] = lf / la
    print()
    print("| GetFlightInfo | median | p90 |")
    print("| --- | --- | --- |")
    for k, label in [("pyarrow", "pyarrow.flight client → pyarrow.flight server"),
                     ("ferry", "pyarrow.flight client → ferry server"),
                     ("ferry_client", "ferry client → ferry server")]:
        v = results["latency_us"][k]
        print(f"| {label} | {v['median']:.0f} µs | {v['p90']:.0f} µs |")
    print(f"\nferry / pyarrow GetFlightInfo latency: {lf / la:.2f}× (goal ≤ 1.2×: "
          f"{'met' if lf / la <= 1.2 else 'missed'})")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
