"""ferry.ray on a real Ray cluster across hosts: network namespaces a and b joined by a bridge
(tests/support/netns.py), each holding a `ferry serve --flight` with half of a dataset (b lists a
as its peer) and a Ray node (`ray start`: the head on a, a worker on b). A driver on a:

- reads the federated flight with `ferry.ray.read_flight`: its sum is what pyarrow computes from
  the files, and each server's counters show its endpoint read through shared memory (one shm
  client each, nothing over gRPC or UCX), so each read task ran on its server's node;
- reads a projection and a limit: the limited reads stop early and close their streams, so no
  session stays open on either server;
- writes the dataset back with `ferry.ray.write_flight`: each block goes from the node that read
  it to the server on that node, so each server holds exactly its own half again, which
  pyarrow.flight reads back.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.flight as fl
import pyarrow.ipc as ipc
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from ferry_process import ServeProcess  # noqa: E402
from netns import Hosts, Unavailable  # noqa: E402
from ray_nodes import RayNode, close_nodes  # noqa: E402

pytest.importorskip("ray.data", reason="ray[data] is not installed (scripts/setup.sh installs it)")
pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")

TOKEN = "s3cret"
AUTH = fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {TOKEN}".encode())])
ROWS = 40_000  # a half: blocks of 10,000 rows, over 100 KB, which Ray keeps on their node
# Ray as lean as it runs: no dashboard, a small object store, no usage report, no token (the
# namespaces are private to this test); its logs stay out of the test's output.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0",
           "RAY_DATA_DISABLE_PROGRESS_BARS": "1", "PYTHONWARNINGS": "ignore::DeprecationWarning"}
RAY_ARGS = ["--num-cpus", "2", "--object-store-memory", str(80 << 20)]


def _table(rows, start):
    return pa.table({
        "x": pa.array(range(start, start + rows), pa.int64()),
        "f": pa.array([i / 4 for i in range(rows)], pa.float64()),
        "s": pa.array([f"row-{start + i}" for i in range(rows)]),
    })


def _stats(uri):
    [result] = list(fl.connect(uri).do_action(fl.Action("stats", b""), options=AUTH))
    return json.loads(result.body.to_pybytes())


DRIVER = """
import json, sys, time
import pyarrow as pa
import ray
import ferry.flight
import ferry.ray as fray

head, near, far, token = sys.argv[1:5]
servers = {"near": near, "far": far}
out = {"steps": {}}


def stats():
    return {k: json.loads(ferry.flight.connect(u, token=token).do_action("stats")[0])
            for k, u in servers.items()}


def step(name, run):
    before = stats()
    start = time.monotonic()
    out[name] = run()
    seconds = time.monotonic() - start
    after = stats()
    out["steps"][name] = {"s": seconds, "before": before, "after": after}


ray.init(address=head, log_to_driver=False)
deadline = time.monotonic() + 60  # the worker joins the head
while len([n for n in ray.nodes() if n["Alive"]]) < 2 and time.monotonic() < deadline:
    time.sleep(0.1)
out["nodes"] = sorted(n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"])


def table(ds):
    return pa.concat_tables(list(ds.iter_batches(batch_format="pyarrow", batch_size=None)))


step("sum", lambda: fray.read_flight(near, "t", token=token).sum("x"))
step("projected", lambda: table(fray.read_flight(near, "t", token=token, columns=["x"]))
     .column_names)
step("limited", lambda: table(fray.read_flight(near, "t", token=token).limit(7)).num_rows)
# The limited reads close their streams as they stop: within a second no session is open.
deadline = time.monotonic() + 1
while time.monotonic() < deadline and any(
        s["shm"]["sessions_active"] for s in stats().values()):
    time.sleep(0.05)
out["sessions_after_limit"] = {k: s["shm"]["sessions_active"] for k, s in stats().items()}
step("written", lambda: len(fray.write_flight(fray.read_flight(near, "t", token=token), near,
                                              "w", token=token, servers=[far, near]).endpoints))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """Hosts a and b, each with a server (b federates a) and a Ray node (the head on a)."""
    tmp = tmp_path_factory.mktemp("ray")
    halves = [_table(ROWS, 0), _table(ROWS, ROWS)]
    paths = []
    for name, half in zip(("a", "b"), halves):
        paths.append(tmp / f"{name}.arrows")
        with ipc.new_stream(str(paths[-1]), half.schema) as w:
            w.write_table(half, max_chunksize=10_000)
    try:
        hosts = Hosts(["a", "b"]).__enter__()
    except Unavailable as e:
        pytest.skip(f"this sandbox forbids network namespaces and bridges: {e}")
    started = time.monotonic()
    closing = []
    nodes = []
    # Ray's session directory, short: its sockets' paths must fit a sockaddr_un.
    ray_tmp = tempfile.mkdtemp(prefix="ferry-ray-")
    log = open(tmp / "ray.log", "w+")
    try:
        env = dict(os.environ, FERRY_TOKEN=TOKEN)
        a = ServeProcess(["--flight", f"{hosts['a'].ip}:0", f"t={paths[0]}"], env=env,
                         tmp=str(tmp), wrap=hosts["a"].wrap)
        closing.append(a)
        a.uri = a.first_line()
        b = ServeProcess(["--flight", f"{hosts['b'].ip}:0", "--peer", a.uri, f"t={paths[1]}"],
                         env=env, tmp=str(tmp), wrap=hosts["b"].wrap)
        closing.append(b)
        b.uri = b.first_line()
        ray_env = dict(os.environ, **RAY_ENV)
        head = f"{hosts['a'].ip}:6379"
        nodes.append(RayNode(hosts["a"], [*RAY_ARGS, "--head", "--node-ip-address",
                                          hosts["a"].ip, "--port", "6379", "--temp-dir", ray_tmp,
                                          "--include-dashboard=false"], ray_env, log))
        nodes.append(RayNode(hosts["b"], [*RAY_ARGS, "--address", head, "--node-ip-address",
                                          hosts["b"].ip], ray_env, log))
        r = hosts["a"].run([sys.executable, "-c", DRIVER, head, b.uri, a.uri, TOKEN],
                           env=ray_env, capture_output=True, text=True, timeout=240)
        if r.returncode != 0:
            log.seek(0)
            raise AssertionError(f"the driver failed:\n{r.stderr[-6000:]}\nray:\n"
                                 f"{log.read()[-3000:]}")
        result = json.loads(r.stdout.strip().splitlines()[-1])
        result["cluster_s"] = time.monotonic() - started
        steps = result["steps"]
        print(f"ray: cluster up and driver done in {result['cluster_s']:.1f} s; read and sum "
              f"{steps['sum']['s']:.2f} s, write {steps['written']['s']:.2f} s")
        yield hosts, a, b, halves, result
    finally:
        close_nodes(nodes)
        for c in reversed(closing):
            c.close()
        log.close()
        hosts.__exit__(None, None, None)
        subprocess.run(["rm", "-rf", ray_tmp])


def _delta(result, step, plane, counter):
    """How much `counter` of `plane` grew on each server ("near": b, "far": a) during `step`."""
    d = result["steps"][step]
    return {k: d["after"][k][plane][counter] - d["before"][k][plane][counter]
            for k in ("near", "far")}


def test_both_hosts_are_ray_nodes(ray_cluster):
    hosts, a, b, halves, result = ray_cluster
    assert result["nodes"] == sorted([hosts["a"].ip, hosts["b"].ip])


@pytest.mark.parametrize("step", ["sum", "projected", "written"])
def test_each_endpoint_is_read_on_its_servers_node_through_shared_memory(ray_cluster, step):
    """Each server holds one endpoint of the flight: each read task ran beside its server, since
    each server served one client through shared memory, and none over gRPC or UCX."""
    assert _delta(ray_cluster[4], step, "shm", "clients") == {"near": 1, "far": 1}
    assert _delta(ray_cluster[4], step, "ucx", "clients") == {"near": 0, "far": 0}
    assert _delta(ray_cluster[4], step, "grpc", "do_gets") == {"near": 0, "far": 0}


def test_the_sum_is_pyarrows(ray_cluster):
    hosts, a, b, halves, result = ray_cluster
    assert result["sum"] == pa.compute.sum(pa.concat_tables(halves).column("x")).as_py()


def test_projection_and_limit_reach_the_reads(ray_cluster):
    hosts, a, b, halves, result = ray_cluster
    assert result["projected"] == ["x"]
    assert result["limited"] == 7
    # The limited reads stopped early and closed their streams within a second.
    assert result["sessions_after_limit"] == {"near": 0, "far": 0}


def test_each_block_is_written_to_the_server_on_its_node(ray_cluster):
    """The write's blocks were read on both nodes; each went to the server on its own node, so
    each server holds exactly its own half again (a listing only its own, b answering for
    both as a's peer)."""
    hosts, a, b, halves, result = ray_cluster
    puts = _delta(result, "written", "grpc", "do_puts")
    assert puts["near"] >= 1 and puts["far"] >= 1, puts
    own_a = fl.connect(a.uri).get_flight_info(fl.FlightDescriptor.for_path("w"), options=AUTH)
    assert len(own_a.endpoints) == puts["far"]
    got_a = pa.concat_tables([fl.connect(a.uri).do_get(e.ticket, options=AUTH).read_all()
                              for e in own_a.endpoints])
    got_a = got_a.sort_by("x")
    assert got_a.num_rows == halves[0].num_rows and got_a.equals(halves[0]), (
        got_a.num_rows, got_a.schema, [got_a.column(n).equals(halves[0].column(n))
                                       for n in halves[0].column_names])
    info = fl.connect(b.uri).get_flight_info(fl.FlightDescriptor.for_path("w"), options=AUTH)
    assert len(info.endpoints) == result["written"] == puts["near"] + puts["far"]
    tables = []
    for e in info.endpoints:
        grpc = [l.uri.decode() for l in e.locations if l.uri.decode().startswith("grpc")]
        tables.append(fl.connect(grpc[0] if grpc else b.uri).do_get(e.ticket, options=AUTH)
                      .read_all())
    assert pa.concat_tables(tables).sort_by("x").equals(pa.concat_tables(halves))
