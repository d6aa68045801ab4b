#!/usr/bin/env python3
"""bench/engines/ray_bench.py: Ray Data over a dataset spread over two server hosts, every peer
measured in the same run. Hosts a and b are network namespaces joined by a bridge
(tests/support/netns.py), each holding a `ferry serve --flight` with half of the data (b federates
a with `--peer`) and a Ray node (`ray start`: the head on a, a worker on b); the driver runs on a.

  ferry          ferry.ray.read_flight(b, "t").sum("x"): one read task per endpoint, each on its
                 server's node, through shared memory (the servers' counters are checked)
  ferry, x only  the same with columns=["x"]
  pyarrow.flight a Datasource whose read tasks redeem each endpoint with pyarrow.flight DoGet at
                 its server's grpc:// location, placed on the same nodes as ferry's
  parquet        ray.data.read_parquet of the same halves written with pyarrow's defaults to the
                 hosts' local disk
  blocks only    each of the three reads alone: every block made and stored in its node's object
                 store (Dataset.iter_internal_ref_bundles), without the aggregation's tasks
  no read        the floor of any reader in Ray: a Datasource whose read tasks read nothing and
                 make the same blocks in memory (numpy, the values the endpoints hold, 8 MiB
                 each), placed as the pyarrow.flight peer's; with and without the sum
  Ray's placement  the pyarrow.flight peer and the floor, their sums again with one read task per
                 endpoint where Ray's default scheduling puts it (no placement, no union)

Each peer runs --repeat times in alternating rounds (after one warm-up round); the median and the
best of each are printed as a Markdown table with their ratios to ferry's, and written as JSON with
--out. The best is the figure to compare: a case's time depends on the case before it.

    FERRY_CLI=build/bench/tools/ferry/ferry .venv/bin/python bench/engines/ray_bench.py \\
        --mib 256 --repeat 5 --out ray.json
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "support"))
from ferry_process import ServeProcess  # noqa: E402
from netns import Hosts  # noqa: E402
from ray_nodes import RayNode, close_nodes  # noqa: E402

TOKEN = "bench"
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0",
           "RAY_DATA_DISABLE_PROGRESS_BARS": "1", "PYTHONWARNINGS": "ignore"}


def make_half(directory, mib, start):
    """About `mib` MiB of four 8-byte columns (x, y, z int64, f float64) in 8 MiB batches, as an
    IPC stream and as a Parquet file (pyarrow's defaults); the number of rows."""
    rows = max(1000, (mib << 20) // 32)
    batch = min(rows, (8 << 20) // 32)
    schema = pa.schema([("x", pa.int64()), ("y", pa.int64()), ("z", pa.int64()),
                        ("f", pa.float64())])
    with ipc.new_stream(str(directory / "half.arrows"), schema) as w, \
            pq.ParquetWriter(str(directory / "half.parquet"), schema) as p:
        for lo in range(0, rows, batch):
            n = min(batch, rows - lo)
            x = pa.array(range(start + lo, start + lo + n), pa.int64())
            b = pa.record_batch([x, x, x, pa.array([v / 4 for v in range(n)], pa.float64())],
                                schema=schema)
            w.write_batch(b)
            p.write_batch(b)
    return rows


DRIVER = r'''
import json, sys, time
import pyarrow.flight as fl
import ray
from ray.data import Datasource, ReadTask
from ray.data.block import BlockMetadata
import ferry.flight
import ferry.ray as fray

head, near, far, token, parquet, repeat, rows, with_parquet = sys.argv[1:9]
repeat, rows = int(repeat), int(rows)
ray.init(address=head, log_to_driver=False)
deadline = time.monotonic() + 60
while len([n for n in ray.nodes() if n["Alive"]]) < 2 and time.monotonic() < deadline:
    time.sleep(0.1)


def read_pyarrow(ticket, location, token):
    auth = fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {token}".encode())])
    table = fl.connect(location).do_get(fl.Ticket(ticket), options=auth).read_all()
    return [table]


class Reads(Datasource):
    """One read task per function of `reads`, each returning its blocks: the peers' sources."""

    def __init__(self, reads):
        super().__init__()
        self.reads = reads

    def estimate_inmemory_data_size(self):
        return None

    def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
        meta = BlockMetadata(num_rows=None, size_bytes=None, input_files=None, exec_stats=None)
        return [ReadTask(read, meta) for read in self.reads]


def make_blocks(first, count):
    """The rows [first, first + count) of the four columns, made in memory, 8 MiB a block."""
    import numpy as np
    import pyarrow as pa
    step = (8 << 20) // 32
    out = []
    for lo in range(first, first + count, step):
        x = pa.array(np.arange(lo, min(lo + step, first + count), dtype=np.int64))
        f = pa.array(np.arange(len(x), dtype=np.float64) / 4)
        out.append(pa.table({"x": x, "y": x, "z": x, "f": f}))
    return out


def placed_dataset(make):
    """One dataset per node that holds endpoints, made by make(node's endpoint indices, info),
    its read tasks placed on that node as ferry.ray places its own; their union."""
    info = ferry.flight.connect(near, token=token).get_flight_info("t")
    nodes = fray.node_of_host()
    hosts = fray.endpoint_hosts(info, near)
    datasets = []
    for node, indices in fray.node_runs(hosts, nodes):
        datasets.append(ray.data.read_datasource(make(indices, info),
                                                 override_num_blocks=len(indices),
                                                 ray_remote_args=fray.placed_on(node) if node
                                                 else None))
    return datasets[0] if len(datasets) == 1 else datasets[0].union(*datasets[1:])


def pyarrow_source(indices, info):
    """Each endpoint redeemed with pyarrow.flight DoGet at its server's grpc:// location."""
    reads = []
    for i in indices:
        e = info.endpoints[i]
        grpc = [l for l in e.locations if l.startswith("grpc://")]
        location = grpc[0] if grpc else near
        reads.append(lambda t=e.ticket, l=location, k=token: read_pyarrow(t, l, k))
    return Reads(reads)


def no_read_source(indices, info):
    """The floor: per endpoint, a read that reads nothing and makes its blocks. Each endpoint
    holds an equal share of the 2 * rows rows; which share is which does not change the sum."""
    share, left = divmod(2 * rows, len(info.endpoints))
    assert left == 0, (rows, len(info.endpoints))
    return Reads([lambda first=i * share: make_blocks(first, share) for i in indices])


def pyarrow_dataset():
    return placed_dataset(pyarrow_source)


def unplaced_dataset(make):
    """One dataset of every endpoint, made by make(all endpoint indices, info), its read tasks
    where Ray puts them (its default scheduling)."""
    info = ferry.flight.connect(near, token=token).get_flight_info("t")
    indices = list(range(len(info.endpoints)))
    return ray.data.read_datasource(make(indices, info), override_num_blocks=len(indices))


def blocks(ds):
    """Every block made and stored in its node's object store, none brought here: the read alone,
    without the aggregation's tasks; the number of rows."""
    return sum(sum(m.num_rows for m in b.metadata) for b in ds.iter_internal_ref_bundles())


def stats():
    return {u: json.loads(ferry.flight.connect(u, token=token).do_action("stats")[0])
            for u in (near, far)}


peers = {
    "ferry": lambda: fray.read_flight(near, "t", token=token).sum("x"),
    "ferry, x only": lambda: fray.read_flight(near, "t", token=token, columns=["x"]).sum("x"),
    "pyarrow.flight": lambda: pyarrow_dataset().sum("x"),
    "parquet": lambda: ray.data.read_parquet(parquet, override_num_blocks=2).sum("x"),
    "ferry, blocks only": lambda: blocks(fray.read_flight(near, "t", token=token)),
    "pyarrow.flight, blocks only": lambda: blocks(pyarrow_dataset()),
    "parquet, blocks only": lambda: blocks(ray.data.read_parquet(parquet,
                                                                override_num_blocks=2)),
    "no read": lambda: placed_dataset(no_read_source).sum("x"),
    "no read, blocks only": lambda: blocks(placed_dataset(no_read_source)),
    "pyarrow.flight, Ray's placement": lambda: unplaced_dataset(pyarrow_source).sum("x"),
    "no read, Ray's placement": lambda: unplaced_dataset(no_read_source).sum("x"),
}
if with_parquet != "yes":
    peers = {k: v for k, v in peers.items() if not k.startswith("parquet")}
times = {k: [] for k in peers}
sums = {}
before = stats()
for round in range(repeat + 1):
    order = list(peers) if round % 2 == 0 else list(reversed(peers))
    for name in order:
        start = time.monotonic()
        sums[name] = peers[name]()
        if round:  # the first round warms Ray's workers up
            times[name].append(time.monotonic() - start)
after = stats()
planes = {u: {p: after[u][p]["clients"] - before[u][p]["clients"] for p in ("shm", "ucx")}
          | {"grpc_do_gets": after[u]["grpc"]["do_gets"] - before[u]["grpc"]["do_gets"]}
          for u in (near, far)}
print(json.dumps({"times": times, "sums": sums, "planes": planes}))
'''


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=256, help="MiB of data on each host")
    parser.add_argument("--repeat", type=int, default=5,
                        help="measured rounds (0: only the warm-up round, untimed)")
    parser.add_argument("--cpus", type=int, default=2, help="Ray CPUs on each node")
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--no-parquet", action="store_true",
                        help="leave out the two read_parquet peers (they run no ferry code, and "
                             "take Ray 25-30 s each at the smallest size)")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="ferry-raybench-")
    from pathlib import Path
    dirs = [Path(work) / "a", Path(work) / "b"]
    rows = 0
    for i, d in enumerate(dirs):
        d.mkdir()
        rows = make_half(d, args.mib, i * rows)
    closing = []
    nodes = []
    hosts = Hosts(["a", "b"]).__enter__()
    log = open(Path(work) / "ray.log", "w+")
    try:
        env = dict(os.environ, FERRY_TOKEN=TOKEN)
        # A Ray read task holds its endpoint's batches until Ray has stored them: the region
        # (the bound on bytes lent at once) must hold a whole half (docs/ray.md, "Limits").
        region = ["--region-bytes", str(max(256 << 20, 2 * (args.mib << 20)))]
        a = ServeProcess(["--flight", f"{hosts['a'].ip}:0", *region,
                          f"t={dirs[0] / 'half.arrows'}"], env=env, tmp=work, wrap=hosts["a"].wrap)
        closing.append(a)
        a.uri = a.first_line()
        b = ServeProcess(["--flight", f"{hosts['b'].ip}:0", *region, "--peer", a.uri,
                          f"t={dirs[1] / 'half.arrows'}"], env=env, tmp=work, wrap=hosts["b"].wrap)
        closing.append(b)
        b.uri = b.first_line()
        ray_env = dict(os.environ, **RAY_ENV)
        store = str(max(256 << 20, 3 * (args.mib << 20)))
        head = f"{hosts['a'].ip}:6379"
        nodes.append(RayNode(hosts["a"], ["--head", "--node-ip-address", hosts["a"].ip,
                                          "--port", "6379", "--temp-dir", work + "/ray",
                                          "--include-dashboard=false", "--num-cpus",
                                          str(args.cpus), "--object-store-memory", store],
                             ray_env, log))
        nodes.append(RayNode(hosts["b"], ["--address", head, "--node-ip-address",
                                          hosts["b"].ip, "--num-cpus", str(args.cpus),
                                          "--object-store-memory", store], ray_env, log))
        # One directory of both halves: Ray lists the paths it is given on threads, which
        # import fsspec's HTTP module at once, and that import fails on a race where aiohttp
        # is not installed (ray.data's path_util catches only ModuleNotFoundError).
        (Path(work) / "parquet").mkdir()
        for name, d in zip("ab", dirs):
            (Path(work) / "parquet" / f"{name}.parquet").symlink_to(d / "half.parquet")
        parquet = str(Path(work) / "parquet")
        r = hosts["a"].run([sys.executable, "-c", DRIVER, head, b.uri, a.uri, TOKEN, parquet,
                            str(args.repeat), str(rows), "no" if args.no_parquet else "yes"],
                           env=ray_env, capture_output=True,
                           text=True, timeout=3600)
        if r.returncode != 0:
            log.seek(0)
            sys.exit(f"the driver failed:\n{r.stderr[-6000:]}\n{log.read()[-3000:]}")
        result = json.loads(next(line for line in reversed(r.stdout.splitlines())
                                 if line.startswith('{"times"')))
    finally:
        close_nodes(nodes)
        for c in reversed(closing):
            c.close()
        log.close()
        hosts.__exit__(None, None, None)
        subprocess.run(["rm", "-rf", work])

    expected = sum(range(2 * rows))
    for name, total in result["sums"].items():
        assert total == (2 * rows if "blocks only" in name else expected), (name, total)
    for uri, planes in result["planes"].items():
        # ferry's reads (three peers, every round and the warm-up) all came over shared memory.
        assert planes["ucx"] == 0, (uri, planes)
        assert planes["shm"] == 3 * (args.repeat + 1), (uri, planes)
    if args.repeat == 0:
        print("every peer read the dataset once (the warm-up round); nothing was timed")
        return
    medians = {k: sorted(v)[len(v) // 2] for k, v in result["times"].items()}
    # A case's time depends on the case before it (each round reverses the order): in one of the
    # two orders some cases take two to six times as long. The best of a case's rounds is its
    # time without that.
    best = {k: min(v) for k, v in result["times"].items()}
    total_mib = 2 * args.mib
    print(f"Ray Data, {total_mib} MiB over two hosts (x.sum(), median and best of {args.repeat}; "
          f"{args.cpus} CPUs a node)\n")
    print("| reader | median s | ferry is faster by | best s | ferry is faster by |")
    print("|---|---|---|---|---|")
    for name, s in medians.items():
        print(f"| {name} | {s:.3f} | {s / medians['ferry']:.2f}x | {best[name]:.3f} | "
              f"{best[name] / best['ferry']:.2f}x |")
    floor_sum = medians["pyarrow.flight"] / medians["no read"]
    floor_read = medians["pyarrow.flight, blocks only"] / medians["no read, blocks only"]
    print(f"\nThe floor: a reader that took no time at all would be {floor_sum:.2f}x faster than "
          f"the pyarrow.flight peer (the sum), {floor_read:.2f}x (the blocks alone); by the "
          f"best rounds {best['pyarrow.flight'] / best['no read']:.2f}x and "
          f"{best['pyarrow.flight, blocks only'] / best['no read, blocks only']:.2f}x.")
    print(f"\nservers' planes during the run: {json.dumps(result['planes'])}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"mib_per_host": args.mib, "repeat": args.repeat, "cpus": args.cpus,
                       "times": result["times"], "medians": medians, "best": best,
                       "planes": result["planes"]}, f, indent=1)


if __name__ == "__main__":
    main()
