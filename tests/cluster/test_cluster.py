"""ferry across hosts: network namespaces joined by a bridge (tests/support/netns.py), two server
hosts each holding half of a dataset, a client host, and a Dask worker on each server host with
the scheduler reachable from all.

- Federation across hosts: server b lists server a as its peer (with a token, which b forwards);
  the flight is one FlightInfo, b's endpoint then a's, each naming its owner.
- ferry's client on the third host reads both endpoints at once over UCX (neither server is on its
  host, so no shared memory), equal to pyarrow's read of the files, and counts the bytes by plane;
  the servers send it packed bodies (UCX would emulate its gets over TCP), except to a projected
  read, which is lent buffer lists and fetches only its columns.
- pyarrow.flight on the third host reads the same flight by following each endpoint's location.
- Dask: read_flight on the two-worker cluster computes what pandas computes from the files, and
  every partition came through shared memory on its own server's host (the servers' counters:
  nothing over gRPC or UCX); to_flight writes a partitioned flight that pyarrow reads back.
"""
import json
import os
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.flight as fl
import pyarrow.ipc as ipc
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from ferry_process import ServeProcess, ferry_cli, stop_process  # noqa: E402
from netns import hosts_or_skip  # noqa: E402

TOKEN = "s3cret"
AUTH = fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {TOKEN}".encode())])


def _table(rows, start):
    return pa.table({
        "x": pa.array(range(start, start + rows), pa.int64()),
        "f": pa.array([i / 4 for i in range(rows)], pa.float64()),
        "s": pa.array([f"row-{start + i}" for i in range(rows)]),
    })


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Hosts a, b (servers) and c (client); server b federates a."""
    tmp = tmp_path_factory.mktemp("cluster")
    halves = [_table(50_000, 0), _table(50_000, 50_000)]
    paths = []
    for name, half in zip(("a", "b"), halves):
        paths.append(tmp / f"{name}.arrows")
        with ipc.new_stream(str(paths[-1]), half.schema) as w:
            w.write_table(half, max_chunksize=10_000)
    servers = []
    with hosts_or_skip(["a", "b", "c"]) as hosts:
        try:
            env = dict(os.environ, FERRY_TOKEN=TOKEN)
            a = ServeProcess(["-v", "--flight", f"{hosts['a'].ip}:0", f"t={paths[0]}"], env=env,
                             tmp=str(tmp), wrap=hosts["a"].wrap)
            servers.append(a)
            a.uri = a.first_line()
            b = ServeProcess(["-v", "--flight", f"{hosts['b'].ip}:0", "--peer", a.uri,
                              f"t={paths[1]}"], env=env, tmp=str(tmp), wrap=hosts["b"].wrap)
            servers.append(b)
            b.uri = b.first_line()
            yield hosts, a, b, halves, tmp
        finally:
            for s in servers:
                s.close()


def _stats(uri):
    [result] = list(fl.connect(uri).do_action(fl.Action("stats", b""), options=AUTH))
    return json.loads(result.body.to_pybytes())


def _get(hosts, uri, out, *options):
    """`ferry get` of flight t on the client host into `out`: the finished process, which must
    have succeeded, and the table it wrote."""
    r = hosts["c"].run([ferry_cli(), "get", uri, "--path", "t", *options, "--no-progress",
                        "--force", "--to", str(out)], env=dict(os.environ, FERRY_TOKEN=TOKEN),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r, ipc.open_stream(str(out)).read_all()


def _sorted(table):
    return table.sort_by("x")


def test_federation_across_hosts(cluster):
    hosts, a, b, halves, _ = cluster
    info = fl.connect(b.uri).get_flight_info(fl.FlightDescriptor.for_path("t"), options=AUTH)
    assert len(info.endpoints) == 2 and not info.ordered
    assert info.total_records == 100_000
    locations = [[l.uri.decode() for l in e.locations] for e in info.endpoints]
    assert any(l.startswith(f"ucx://{hosts['b'].ip}:") for l in locations[0])
    assert any(l.startswith(f"ucx://{hosts['a'].ip}:") for l in locations[1])
    assert a.uri in locations[1]


def test_the_client_host_reads_both_servers_at_once_over_ucx(cluster):
    hosts, a, b, halves, tmp = cluster
    out = tmp / "got.arrows"
    before = {s.uri: _stats(s.uri)["ucx"] for s in (a, b)}
    # Each half (1.5 MB) is below the size that goes over DoGet by default: --grpc-below 0.
    r, got = _get(hosts, b.uri, out, "--parallel", "2", "-v", "--grpc-below", "0")
    assert _sorted(got).equals(_sorted(pa.concat_tables(halves)))
    # Neither server is on the client's host: no shared memory, both over UCX.
    assert r.stderr.count("is not on this host") == 2, r.stderr
    assert r.stderr.count("reading over ucx") == 2, r.stderr
    assert "by plane: shm 0 bytes" in r.stdout and "grpc 0 bytes" in r.stdout, r.stdout
    # Over TCP UCX would emulate the client's reads of lent memory, a copy and a send by the
    # server for each: each server sent its half's bodies packed instead, and lent nothing.
    for s, half in ((a, halves[0]), (b, halves[1])):
        after = _stats(s.uri)["ucx"]
        assert after["addresses_lent"] == before[s.uri]["addresses_lent"], after
        assert after["body_bytes_sent"] - before[s.uri]["body_bytes_sent"] >= half.nbytes, after
    assert "sending packed bodies, since UCX would emulate" in a.stderr(), a.stderr()


def test_a_projected_read_across_hosts_is_lent_only_its_columns(cluster):
    """With columns, the client asks for buffer lists, so it fetches only the x column's
    buffers (the plane counter of ferry's client: 8 bytes a row), and the servers lend."""
    hosts, a, b, halves, tmp = cluster
    out = tmp / "x.arrows"
    before = {s.uri: _stats(s.uri)["ucx"] for s in (a, b)}
    r, got = _get(hosts, b.uri, out, "--columns", "x", "--grpc-below", "0")
    assert _sorted(got).equals(_sorted(pa.concat_tables(halves).select(["x"])))
    assert "by plane: shm 0 bytes, ucx 800000 bytes, grpc 0 bytes" in r.stdout, r.stdout
    for s in (a, b):
        after = _stats(s.uri)["ucx"]
        assert after["addresses_lent"] > before[s.uri]["addresses_lent"], after


def test_small_endpoints_on_other_hosts_are_read_over_grpc(cluster):
    """Below --grpc-below (4 MiB by default) an endpoint on another host is read with DoGet on
    its server's gRPC location, which moves it before a UCX connection is set up; the servers'
    counters see DoGets and no UCX client."""
    hosts, a, b, halves, tmp = cluster
    out = tmp / "small.arrows"
    before = {s.uri: _stats(s.uri) for s in (a, b)}
    r, got = _get(hosts, b.uri, out, "--parallel", "2", "-v")
    assert _sorted(got).equals(_sorted(pa.concat_tables(halves)))
    assert r.stderr.count("trying grpc before ucx") == 2, r.stderr
    assert r.stderr.count("reading over grpc") == 2, r.stderr
    assert "reading over ucx" not in r.stderr, r.stderr
    assert "shm 0 bytes, ucx 0 bytes" in r.stdout, r.stdout
    for s in (a, b):
        after = _stats(s.uri)
        assert after["grpc"]["do_gets"] == before[s.uri]["grpc"]["do_gets"] + 1, after
        assert after["ucx"]["clients"] == before[s.uri]["ucx"]["clients"], after


GRPC_BELOW_READER = """
import sys, pyarrow as pa, ferry.flight
client = ferry.flight.connect(sys.argv[1], token="s3cret")
small = pa.table(client.do_get("t", parallel=2))
print(client.last_location, client.plane_bytes, small.num_rows)
large = pa.table(client.do_get("t", parallel=2, grpc_below=0))
print(client.last_location, client.plane_bytes, large.num_rows)
again = pa.table(client.do_get("t", parallel=2))
print(client.last_location, client.plane_bytes, again.num_rows)
"""


def test_python_do_get_takes_grpc_below(cluster):
    """Python's do_get: the default reads the small halves over DoGet; grpc_below=0 over UCX
    (the client's location and its per-plane byte counts); and the default again over UCX, on the
    connections that read kept (the servers' UCX planes accepted one connection each and served
    the second read on it)."""
    hosts, a, b, halves, tmp = cluster
    before = {s.uri: _stats(s.uri)["ucx"] for s in (a, b)}
    r = hosts["c"].run([sys.executable, "-c", GRPC_BELOW_READER, b.uri], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    first, second, third = r.stdout.splitlines()
    assert first.startswith("grpc://") and first.endswith(" 100000"), first
    assert "'ucx': 0" in first, first
    assert second.startswith("ucx://") and second.endswith(" 100000"), second
    assert "'ucx': 0" not in second, second
    assert third.startswith("ucx://") and third.endswith(" 100000"), third
    for s in (a, b):
        after = _stats(s.uri)["ucx"]
        assert after["clients"] == before[s.uri]["clients"] + 1, after
        assert after["requests_reused"] == before[s.uri]["requests_reused"] + 1, after


LONE_ENDPOINT_READER = """
import pickle, sys, pyarrow as pa, ferry.flight
client = ferry.flight.connect(sys.argv[1], token="s3cret")
print(client.get_flight_info("t").total_bytes)
for e in client.get_flight_info("t").endpoints:
    alone = pickle.loads(pickle.dumps(e))  # as an engine's task gets it
    rows = pa.table(client.do_get(alone)).num_rows
    print(client.last_location.split(":")[0], alone.expected_bytes, rows)
    unsized = ferry.flight.Endpoint(e.ticket, e.locations)
    rows = pa.table(client.do_get(unsized)).num_rows
    print(client.last_location.split(":")[0], unsized.expected_bytes, rows)
"""


def test_a_small_endpoint_read_alone_on_another_host_goes_over_grpc(cluster):
    """An endpoint read on its own, pickled as Dask's and Ray's tasks get it, keeps its expected
    size (half the flight's bytes), so its small half goes over DoGet; the same endpoint made from
    its ticket and locations alone knows no size and goes over UCX."""
    hosts, a, b, halves, tmp = cluster
    r = hosts["c"].run([sys.executable, "-c", LONE_ENDPOINT_READER, b.uri], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    total, *reads = r.stdout.splitlines()
    share = int(total) // 2
    assert 0 < share < 4 << 20, total
    rows = [h.num_rows for h in halves]
    assert reads == [f"grpc {share} {rows[0]}", f"ucx -1 {rows[0]}",
                     f"grpc {share} {rows[1]}", f"ucx -1 {rows[1]}"], reads


# Reads flight t's one endpoint as an engine's task does (pickled, with its size), after the test
# has killed or stopped its server: prints the endpoint's size, waits for a line, then the read's
# outcome and how long it took.
DYING_SERVER_READER = """
import pickle, sys, time, pyarrow as pa, ferry.flight
client = ferry.flight.connect(sys.argv[1], token="s3cret", timeout=float(sys.argv[2]))
[endpoint] = client.get_flight_info("t").endpoints
task = pickle.dumps(endpoint)
print("INFO", endpoint.expected_bytes, flush=True)
sys.stdin.readline()
start = time.monotonic()
try:
    print("READ", pa.table(client.do_get(pickle.loads(task))).num_rows)
except Exception as e:
    print("ERROR", round(time.monotonic() - start, 1), type(e).__name__, str(e).replace("\\n", " | "))
"""


@pytest.mark.parametrize("fault", ["killed", "stopped"])
def test_a_small_read_of_a_server_that_dies_on_another_host_fails_soon_naming_it(cluster, fault):
    """A small endpoint on another host (read over DoGet first) whose server is killed (SIGKILL)
    or stopped (SIGSTOP) after GetFlightInfo: the read fails, trying DoGet then UCX, with an error
    that names both locations, soon after a killed server (its host refuses at once) and within
    the client's timeout for each location of a stopped one, never hanging."""
    hosts, a, b, halves, tmp = cluster
    env = dict(os.environ, FERRY_TOKEN=TOKEN)
    server = ServeProcess(["--flight", f"{hosts['a'].ip}:0", f"t={tmp / 'a.arrows'}"], env=env,
                          tmp=str(tmp), wrap=hosts["a"].wrap)
    timeout = 3.0
    try:
        server.uri = server.first_line()
        reader = hosts["c"].popen([sys.executable, "-c", DYING_SERVER_READER, server.uri,
                                   str(timeout)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        info = reader.stdout.readline().split()
        assert info[0] == "INFO" and 0 < int(info[1]) < 4 << 20, (info, reader.stderr.read())
        if fault == "killed":
            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait()
        else:
            stop_process(server.proc.pid)
        out, err = reader.communicate("go\n", timeout=60)
        assert out.startswith("ERROR "), (out, err)
        _, seconds, kind, message = out.strip().split(" ", 3)
        host = hosts["a"].ip
        assert f"grpc://{host}:" in message and f"ucx://{host}:" in message, message
        assert message.index("grpc://") < message.index("ucx://"), message  # DoGet first
        if fault == "killed":
            assert float(seconds) < timeout, out  # refused at once: no location waited
        else:
            # DoGet waits out the timeout, then UCX, the last location, does: no more (the
            # connection that never wired up lets go at once).
            assert 2 * timeout - 0.5 < float(seconds) < 2 * timeout + 1.9, out
    finally:
        if server.proc.poll() is None:
            server.proc.send_signal(signal.SIGCONT)
        server.close()


PYARROW_READER = """
import sys, pyarrow as pa, pyarrow.flight as fl
auth = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer s3cret")])
info = fl.connect(sys.argv[1]).get_flight_info(fl.FlightDescriptor.for_path("t"), options=auth)
tables = []
for e in info.endpoints:
    grpc = [l.uri.decode() for l in e.locations if l.uri.decode().startswith("grpc")]
    tables.append(fl.connect(grpc[0] if grpc else sys.argv[1]).do_get(e.ticket, options=auth).read_all())
with pa.ipc.new_stream(sys.argv[2], tables[0].schema) as w:
    for t in tables:
        w.write_table(t)
"""


def test_pyarrow_flight_on_the_client_host_follows_the_locations(cluster):
    hosts, a, b, halves, tmp = cluster
    out = tmp / "pyarrow.arrows"
    r = hosts["c"].run([sys.executable, "-c", PYARROW_READER, b.uri, str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = ipc.open_stream(str(out)).read_all()
    assert _sorted(got).equals(_sorted(pa.concat_tables(halves)))


@pytest.fixture(scope="module")
def dask_cluster(cluster):
    """A scheduler here, on the bridge, and one worker on each server host."""
    distributed = pytest.importorskip("distributed", reason="distributed is not installed "
                                      "(scripts/setup.sh installs it)")
    hosts = cluster[0]
    with distributed.LocalCluster(n_workers=0, host=hosts.root_ip, scheduler_port=0,
                                  dashboard_address=":0") as local:
        workers = []
        try:
            for name in ("a", "b"):
                workers.append(hosts[name].popen(
                    [sys.executable, "-m", "distributed.cli.dask_worker", local.scheduler_address,
                     "--host", hosts[name].ip, "--nthreads", "1", "--no-nanny",
                     "--no-dashboard"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    env=dict(os.environ, FERRY_TOKEN=TOKEN)))
            with distributed.Client(local) as client:
                client.wait_for_workers(2, timeout=60)
                yield client
        finally:
            for w in workers:
                w.terminate()
                try:
                    w.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    w.kill()
                    w.wait()


def test_dask_reads_each_partition_on_its_servers_host_through_shared_memory(cluster,
                                                                            dask_cluster):
    import ferry.dask
    hosts, a, b, halves, _ = cluster
    before = {s.uri: _stats(s.uri) for s in (a, b)}
    df = ferry.dask.read_flight(b.uri, "t", token=TOKEN)
    assert df.npartitions == 2
    start = time.monotonic()
    assert df.x.sum().compute() == sum(range(100_000))
    print(f"dask: x.sum() over two hosts in {time.monotonic() - start:.2f} s")
    for s in (a, b):
        after = _stats(s.uri)
        assert after["shm"]["clients"] == before[s.uri]["shm"]["clients"] + 1, (s.uri, after)
        assert after["ucx"]["clients"] == before[s.uri]["ucx"]["clients"], (s.uri, after)
        assert after["grpc"]["do_gets"] == before[s.uri]["grpc"]["do_gets"], (s.uri, after)


def test_dask_writes_a_partitioned_flight(cluster, dask_cluster):
    import dask.dataframe as dd
    import pandas as pd

    import ferry.dask
    hosts, a, b, halves, _ = cluster
    table = pa.concat_tables(halves)
    pdf = table.to_pandas(types_mapper=pd.ArrowDtype)
    info = ferry.dask.to_flight(dd.from_pandas(pdf, npartitions=4, sort=False), a.uri, "w",
                                token=TOKEN)
    assert len(info.endpoints) == 4
    client = fl.connect(a.uri)
    pinfo = client.get_flight_info(fl.FlightDescriptor.for_path("w"), options=AUTH)
    assert pinfo.ordered
    got = pa.concat_tables([client.do_get(e.ticket, options=AUTH).read_all()
                            for e in pinfo.endpoints])
    assert got.equals(table)


def test_dask_writes_each_partition_to_the_server_on_its_workers_host(cluster, dask_cluster):
    """to_flight with both servers: each worker uploads to the server on its own host, and b,
    which lists a as its peer, answers for the whole flight."""
    import dask.dataframe as dd
    import pandas as pd

    import ferry.dask
    hosts, a, b, halves, _ = cluster
    table = pa.concat_tables(halves)
    pdf = table.to_pandas(types_mapper=pd.ArrowDtype)
    before = {s.uri: _stats(s.uri)["grpc"]["do_puts"] for s in (a, b)}
    frame = dd.from_pandas(pdf, npartitions=4, sort=False)
    info = ferry.dask.to_flight(frame, b.uri, "local", token=TOKEN, servers=[a.uri, b.uri])
    assert len(info.endpoints) == 4 and not info.ordered
    # pyarrow.flight reads it from b, following each endpoint's locations.
    pinfo = fl.connect(b.uri).get_flight_info(fl.FlightDescriptor.for_path("local"), options=AUTH)
    tables = []
    for e in pinfo.endpoints:
        grpc = [l.uri.decode() for l in e.locations if l.uri.decode().startswith("grpc")]
        client = fl.connect(grpc[0] if grpc else b.uri)
        tables.append(client.do_get(e.ticket, options=AUTH).read_all())
    got = pa.concat_tables(tables)
    assert _sorted(got).equals(_sorted(table))
    # Each upload stayed on its worker's host: the worker in b finds only b local, the worker
    # in a finds a first, and Dask spreads the four uploads over both workers, so both servers
    # were written to, each holding what it was sent (a has no peers: its listing is its own).
    own_a = len(fl.connect(a.uri).get_flight_info(fl.FlightDescriptor.for_path("local"),
                                                  options=AUTH).endpoints)
    puts = {s.uri: _stats(s.uri)["grpc"]["do_puts"] - before[s.uri] for s in (a, b)}
    assert puts[a.uri] == own_a and puts[b.uri] == 4 - own_a, puts
    assert puts[a.uri] >= 1 and puts[b.uri] >= 1, puts
