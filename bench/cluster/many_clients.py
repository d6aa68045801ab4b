#!/usr/bin/env python3
"""bench/cluster/many_clients: 1, 2, 4, 8 and 16 concurrent `ferry get` of one server's dataset, on
every plane and body type, with the goals checked in the table.

  shm         shared memory, server and clients on one host
  ucx         UCX, server and clients on one host (UCX picks shared memory and CMA)
  ucx-hosts   UCX between two network namespaces joined by a bridge (TCP), clients on host c

Body types: packed (type 0), list (a type-1 server: it sends packed bodies to a client whose
gets UCX would emulate) and list-asked (the same server, its clients asking for buffer lists).

Each cell starts N clients at once, each a process of its own reading the whole dataset; a
client's time runs from its start to its exit. The goals: the aggregate throughput (N x size /
the slowest client's time) never falls below the single client's, and no client takes more than
N x the single client's time x 1.5. The server's CPU time over the cell says who did the work.

    FERRY_CLI=build/bench/tools/ferry/ferry .venv/bin/python bench/cluster/many_clients.py \\
        --mib 1024 --out many.json
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "support"))
from ferry_process import ServeProcess, ferry_cli  # noqa: E402
from netns import Hosts, Unavailable  # noqa: E402


def make_dataset(path, mib):
    """`mib` MiB of int64 and float64 columns in 16 MiB batches (two 8 MiB buffers each)."""
    rows = 1 << 20
    schema = pa.schema([("x", pa.int64()), ("y", pa.float64())])
    with ipc.new_stream(str(path), schema) as w:
        for i in range(max(1, mib // 16)):
            x = np.arange(i * rows, (i + 1) * rows, dtype=np.int64)
            w.write_batch(pa.record_batch([pa.array(x), pa.array(x * 0.5)], schema=schema))


def cpu_seconds(pid):
    """The CPU time (user + system) process `pid` has used, its threads that ended included."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_clients(n, uri, wrap, extra=()):
    """Starts `n` clients at once, each with `extra` arguments; their times in seconds. Fails on
    any client's failure."""
    args = [*wrap, ferry_cli(), "get", uri, "--ticket", "t", "--no-progress", "--validation",
            "none", *extra]
    procs = []
    for _ in range(n):
        procs.append((time.monotonic(), subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                                         stderr=subprocess.PIPE)))
    times = []
    for start, p in procs:
        _, err = p.communicate(timeout=600)
        times.append(time.monotonic() - start)
        if p.returncode != 0:
            raise RuntimeError(f"ferry get: exit {p.returncode}: {err.decode(errors='replace')}")
    return times


def serve(plane, body, path, hosts):
    """A server of `path` as dataset t on `plane` with `body` bodies, and the wrap its clients
    run under."""
    args = ["--body-type", "list" if body == "list-asked" else body]
    wrap_server, wrap_client = (), ()
    if plane == "shm":
        args += ["--transport", "shm"]
    elif plane == "ucx":
        args += ["--transport", "ucx"]
    else:
        args += ["--transport", "ucx", "--listen", f"{hosts['a'].ip}:0", "--insecure"]
        wrap_server, wrap_client = hosts["a"].wrap, hosts["c"].wrap
    server = ServeProcess([*args, f"t={path}"], wrap=wrap_server)
    uri = server.first_line().split()[-1]
    return server, uri, wrap_client


def cell_row(plane, body, counts, size, server, uri, wrap):
    # "list-asked": the clients ask for buffer lists, which the server lends even where UCX
    # emulates the gets (where it would otherwise send its "list" clients packed bodies).
    extra = ["--buffer-lists"] if body == "list-asked" else []
    run_clients(1, uri, wrap, extra)  # the server's first client pays its page faults
    rows = []
    for n in counts:
        cpu = cpu_seconds(server.proc.pid)
        times = run_clients(n, uri, wrap, extra)
        rows.append({"plane": plane, "body": body, "clients": n, "max_s": max(times),
                     "min_s": min(times), "aggregate_gbs": n * size / max(times) / 1e9,
                     "server_cpu_s": cpu_seconds(server.proc.pid) - cpu})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=1024, help="the dataset's size (default 1024)")
    ap.add_argument("--clients", default="1,2,4,8,16", help="client counts (default 1,2,4,8,16)")
    ap.add_argument("--planes", default="shm,ucx,ucx-hosts", help="planes (default all three)")
    ap.add_argument("--bodies", default="list,list-asked,packed",
                    help="body types: list (the server's choice for such a client), list-asked "
                    "(the clients ask for buffer lists) and packed (default all three)")
    ap.add_argument("--out", help="write the figures as JSON here")
    args = ap.parse_args()
    counts = [int(c) for c in args.clients.split(",")]
    if counts[0] != 1:
        ap.error("--clients must start with 1: the goals compare with the single client")
    tmp = tempfile.mkdtemp(prefix="ferry-many-clients-")
    path = os.path.join(tmp, "t.arrows")
    make_dataset(path, args.mib)
    size = os.path.getsize(path)
    planes = args.planes.split(",")
    rows = []
    hosts = None
    try:
        if "ucx-hosts" in planes:
            try:
                hosts = Hosts(["a", "c"]).__enter__()
            except Unavailable as e:
                print(f"ucx-hosts left out: {e}", file=sys.stderr)
                planes.remove("ucx-hosts")
        for plane in planes:
            for body in args.bodies.split(","):
                if plane == "shm" and body == "list-asked":
                    continue  # a shm server of type-1 bodies always lends: that is "list"
                server, uri, wrap = serve(plane, body, path, hosts)
                try:
                    rows += cell_row(plane, body, counts, size, server, uri, wrap)
                finally:
                    server.close()
    finally:
        if hosts is not None:
            hosts.__exit__(None, None, None)
        os.unlink(path)
        os.rmdir(tmp)
    ucx = json.loads(subprocess.run([ferry_cli(), "devices", "--json"], capture_output=True,
                                    text=True, check=True).stdout)["ucx"]
    print(f"\n{size / 2**30:.2f} GiB per client, N clients at once (ferry loads UCX "
          f"{ucx['loaded']})\n")
    print("| plane | body | clients | slowest client | fastest | aggregate GB/s | server CPU |"
          " goals |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    failed = 0
    for r in rows:
        single = next(s for s in rows if s["plane"] == r["plane"] and s["body"] == r["body"]
                      and s["clients"] == 1)
        ok_rate = r["aggregate_gbs"] >= single["aggregate_gbs"] * 0.999
        ok_time = r["max_s"] <= r["clients"] * single["max_s"] * 1.5
        r["goals_met"] = ok_rate and ok_time
        failed += not r["goals_met"]
        goals = "met" if r["goals_met"] else ", ".join(
            w for w, ok in (("aggregate below 1 client's", ok_rate), ("a client too slow", ok_time))
            if not ok)
        print(f"| {r['plane']} | {r['body']} | {r['clients']} | {r['max_s']:.3f} s | "
              f"{r['min_s']:.3f} s | {r['aggregate_gbs']:.2f} | {r['server_cpu_s']:.2f} s | "
              f"{goals} |")
    print(f"\n{len(rows) - failed} of {len(rows)} cells meet both goals")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"bytes": size, "ucx": ucx["loaded"], "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
