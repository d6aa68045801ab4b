"""ferry.dask against a real distributed cluster (a scheduler and two worker processes, on two
loopback addresses that Dask takes for two hosts): a partitioned flight of `ferry serve --flight`
read as a Dask DataFrame, one partition per endpoint, equal to pyarrow's read of the files; every
partition read through shared memory, as the server's own counters (DoAction "stats") show, and a
federated flight's partitions each read by the worker on its own server's host; column projection
reaching the reads; a Dask DataFrame written back as a partitioned flight and read by
pyarrow.flight in order; the scheduler plugin's restrictions for endpoints on other hosts.
scripts/test.sh runs this suite on the newest and on the oldest Dask that scripts/setup.sh
allows."""
import json

import pyarrow as pa
import pyarrow.flight as fl
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry.dask as fdask  # noqa: E402
import ferry.flight  # noqa: E402

dd = pytest.importorskip("dask.dataframe", reason="dask is not installed (scripts/setup.sh installs it)")
distributed = pytest.importorskip("distributed", reason="distributed is not installed (scripts/setup.sh)")
import dask  # noqa: E402
import pandas as pd  # noqa: E402
from dask.task_spec import DataNode, Task, TaskRef  # noqa: E402
from distributed.diagnostics.plugin import SchedulerPlugin  # noqa: E402

from flight_support import Serve, mixed_table  # noqa: E402


def _write(path, table, chunk=None):
    with pa.ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=chunk)
    return str(path)


# Two hosts as Dask sees them (WorkerState.host): every 127.x.y.z address is this machine's.
HOSTS = ("127.0.0.1", "127.0.0.2")


@pytest.fixture(scope="module")
def cluster():
    """A scheduler and one single-threaded worker process on each of HOSTS. Without work
    stealing: a read placed on its server's host may otherwise be moved to an idle worker
    elsewhere (its placement is soft, allow_other_workers), and the tests here check placement."""
    workers = {host: {"cls": distributed.Nanny, "options": {"host": host, "nthreads": 1}}
               for host in HOSTS}
    scheduler = {"cls": distributed.Scheduler,
                 "options": {"host": HOSTS[0], "dashboard_address": ":0"}}
    with dask.config.set({"distributed.scheduler.work-stealing": False}), \
            distributed.SpecCluster(workers=workers, scheduler=scheduler) as c:
        with distributed.Client(c) as client:
            client.wait_for_workers(len(HOSTS))
            yield client


@pytest.fixture
def parts(tmp_path):
    """Three files of one table under tmp_path/parts: their tables in name order."""
    table = mixed_table(900)
    directory = tmp_path / "parts"
    directory.mkdir()
    tables = []
    for i in range(3):
        tables.append(table.slice(i * 300, 300))
        _write(directory / f"part-{i}.arrows", tables[-1], chunk=100)
    return directory, tables


def _reads(tasks):
    """The tasks that read an endpoint, among `tasks` and the subgraphs of fused ones."""
    for t in tasks:
        if isinstance(t, Task) and isinstance(t.func, fdask.ReadEndpoint):
            yield t
        elif isinstance(t, Task):
            for arg in t.args:
                if isinstance(arg, dict):
                    yield from _reads(arg.values())


def _parts_in(node):
    """The EndpointParts inside a task, through Dask's public task classes."""
    if isinstance(node, fdask.EndpointPart):
        yield node
    elif isinstance(node, Task):
        for arg in (*node.args, *node.kwargs.values()):
            yield from _parts_in(arg)
    elif isinstance(node, DataNode):
        yield from _parts_in(node.value)
    elif isinstance(node, (list, tuple)):
        for item in node:
            yield from _parts_in(item)
    elif isinstance(node, dict):
        for item in node.values():
            yield from _parts_in(item)


class _WhereReadsRan(SchedulerPlugin):
    """On the scheduler: for each task that read an endpoint (alone, or with what Dask fused into
    it), the host of the worker that ran it, by the endpoint's index."""

    name = "ferry-test-where-reads-ran"

    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.hosts = {}

    def transition(self, key, start, finish, *args, **kwargs):
        ts = self.scheduler.tasks.get(key)
        if finish == "memory" and ts is not None and ts.run_spec is not None:
            for part in _parts_in(ts.run_spec):
                self.hosts[part.index] = {ws.host for ws in ts.who_has}.pop()

    @classmethod
    def install(cls, dask_scheduler):
        dask_scheduler.add_plugin(cls(dask_scheduler))

    @classmethod
    def uninstall(cls, dask_scheduler):
        plugin = dask_scheduler.plugins[cls.name]
        dask_scheduler.remove_plugin(name=cls.name)
        return plugin.hosts


def _stats(uri):
    [body] = ferry.flight.connect(uri).do_action("stats")
    return json.loads(body)


def test_read_flight_is_one_partition_per_endpoint_read_through_shared_memory(tmp_path, parts,
                                                                               cluster):
    directory, tables = parts
    with Serve(f"t={directory}", tmp=str(tmp_path)) as s:
        df = fdask.read_flight(s.uri, "t")
        assert df.npartitions == 3
        assert not df.known_divisions
        expected = pa.concat_tables(tables)
        # The meta is the flight's schema, Arrow-backed, with no data read to learn it.
        assert list(df.columns) == expected.column_names
        assert all(isinstance(t, pd.ArrowDtype) for t in df.dtypes)
        assert _stats(s.uri)["shm"]["clients"] == 0
        # Each partition carries its endpoint's expected size to its task: a third of the
        # flight's bytes as pyarrow.flight reads them from the server.
        info = fl.connect(s.uri).get_flight_info(fl.FlightDescriptor.for_path("t"))
        shares = [p.expected_bytes for node in df.__dask_graph__().values()
                  for p in _parts_in(node)]
        assert info.total_bytes > 0 and shares == [info.total_bytes // 3] * 3
        got = df.compute()
        assert pa.Table.from_pandas(got, preserve_index=False).equals(expected)
        # Every worker is on the server's host: every endpoint came through shared memory.
        stats = _stats(s.uri)
        assert stats["shm"]["clients"] == 3
        assert stats["grpc"]["do_gets"] == 0
        assert stats.get("ucx", {"clients": 0})["clients"] == 0


def test_each_partition_is_read_on_its_servers_host(tmp_path, parts, cluster):
    """A flight federated over a server on each host: each partition's read runs on the worker
    on its own server's host (the scheduler says where each ran), and each server served its own
    partitions through shared memory."""
    directory, tables = parts
    with Serve(f"t={directory}", listen=f"{HOSTS[1]}:0", tmp=str(tmp_path)) as far, \
            Serve(f"t={directory}", "--peer", far.uri, listen=f"{HOSTS[0]}:0",
                  tmp=str(tmp_path)) as near:
        info = ferry.flight.connect(near.uri).get_flight_info("t")
        hosts = [fdask.endpoint_host(e.locations, near.uri) for e in info.endpoints]
        # This server's endpoints first, then its peer's.
        assert hosts == [HOSTS[0]] * 3 + [HOSTS[1]] * 3
        df = fdask.read_flight(near.uri, "t")
        cluster.run_on_scheduler(_WhereReadsRan.install)
        got = df.compute()
        ran = cluster.run_on_scheduler(_WhereReadsRan.uninstall)
        assert pa.Table.from_pandas(got, preserve_index=False).equals(
            pa.concat_tables(tables + tables))
        assert ran == dict(enumerate(hosts))
        assert _stats(near.uri)["shm"]["clients"] == 3
        assert _stats(far.uri)["shm"]["clients"] == 3


def test_projection_reaches_the_reads(tmp_path, parts, cluster):
    directory, tables = parts
    with Serve(f"t={directory}", tmp=str(tmp_path)) as s:
        df = fdask.read_flight(s.uri, "t")
        name = tables[0].column_names[0]
        projected = df[[name]]
        # The reads, inside the tasks Dask fused them into.
        readers = list(_reads(projected.optimize().__dask_graph__().values()))
        assert len(readers) == 3
        assert all(t.kwargs.get("columns") == [name] for t in readers)
        # Each read knows the flight's columns, so it asks the server for that one alone.
        assert all(t.func.names == tables[0].column_names for t in readers)
        got = projected.compute()
        assert list(got.columns) == [name]
        assert pa.Table.from_pandas(got, preserve_index=False).column(name).equals(
            pa.concat_tables(tables).column(name))


def test_numpy_dtypes_on_request(tmp_path, parts, cluster):
    directory, tables = parts
    with Serve(f"t={directory}", tmp=str(tmp_path)) as s:
        df = fdask.read_flight(s.uri, "t", dtype_backend="numpy")
        assert not any(isinstance(t, pd.ArrowDtype) for t in df.dtypes)
        assert len(df.compute()) == 900
        with pytest.raises(ValueError, match="dtype_backend"):
            fdask.read_flight(s.uri, "t", dtype_backend="arrow")


def test_an_unknown_flight_is_named(tmp_path, parts):
    directory, _ = parts
    with Serve(f"t={directory}", tmp=str(tmp_path)) as s:
        with pytest.raises(FileNotFoundError, match="nope"):
            fdask.read_flight(s.uri, "nope")


def test_to_flight_writes_partitions_in_order(tmp_path, cluster):
    table = mixed_table(600)
    pdf = table.to_pandas(types_mapper=pd.ArrowDtype)
    with Serve(tmp=str(tmp_path)) as s:
        info = fdask.to_flight(dd.from_pandas(pdf, npartitions=3, sort=False), s.uri, "w")
        assert len(info.endpoints) == 3
        client = fl.connect(s.uri)
        pinfo = client.get_flight_info(fl.FlightDescriptor.for_path("w"))
        assert pinfo.ordered
        got = pa.concat_tables([client.do_get(e.ticket).read_all() for e in pinfo.endpoints])
        assert got.equals(table)
        # And back through Dask.
        back = fdask.read_flight(s.uri, "w").compute()
        assert pa.Table.from_pandas(back, preserve_index=False).equals(table)


def test_to_flight_uploads_to_the_server_on_the_workers_host(tmp_path, cluster):
    """With `servers`, each partition goes to the server on its worker's host (here the one on
    127.0.0.1; 192.0.2.1 is a documentation address, on no host), not to `uri`, which lists that
    server as its peer and so answers for the whole flight."""
    assert fdask.is_local_host("127.0.0.1") and fdask.is_local_host("localhost")
    assert not fdask.is_local_host("192.0.2.1")
    assert not fdask.is_local_host("no-such-host.invalid")
    table = mixed_table(300)
    pdf = table.to_pandas(types_mapper=pd.ArrowDtype)
    with Serve(tmp=str(tmp_path)) as here, \
            Serve("--peer", here.uri, tmp=str(tmp_path)) as front:
        far = "grpc://192.0.2.1:8815"
        info = fdask.to_flight(dd.from_pandas(pdf, npartitions=2, sort=False), front.uri, "w",
                               servers=[far, here.uri])
        assert len(info.endpoints) == 2
        assert _stats(here.uri)["grpc"]["do_puts"] == 2
        assert _stats(front.uri)["grpc"]["do_puts"] == 0
        own = fl.connect(here.uri).get_flight_info(fl.FlightDescriptor.for_path("w"))
        assert own.ordered
        got = pa.concat_tables([fl.connect(here.uri).do_get(e.ticket).read_all()
                                for e in own.endpoints])
        assert got.equals(table)


class _Worker:
    def __init__(self, host):
        self.host = host


class _TaskState:
    def __init__(self, run_spec):
        self.run_spec = run_spec
        self.worker_restrictions = None
        self.host_restrictions = None
        self.loose_restrictions = False


class _Scheduler:
    def __init__(self, hosts, tasks):
        self.workers = {f"tcp://{h}:1": _Worker(h) for h in hosts}
        self.tasks = tasks


def _part(host, index):
    return fdask.EndpointPart("grpc://x:1", None, b"t", ("shm://x",), host, index)


def test_locality_restricts_loosely_to_the_servers_host():
    read = fdask.ReadEndpoint()
    plain = Task(("r", 0), read, _part("10.0.0.1", 0))
    # dask-expr fuses a read with what follows it: the read is then inside the fused task.
    fused = Task.fuse(Task(("r", 1), read, _part("10.0.0.2", 1)),
                      Task(("sum", 1), len, TaskRef(("r", 1))))
    elsewhere = Task(("r", 2), read, _part("10.0.0.9", 2))  # no worker on that host
    placed = Task(("r", 3), read, _part("10.0.0.1", 3))  # the caller placed it (workers=)
    tasks = {t.key: _TaskState(t) for t in (plain, fused, elsewhere, placed)}
    tasks[("r", 3)].worker_restrictions = {"tcp://10.0.0.2:1"}
    fdask.Locality().update_graph(_Scheduler(["10.0.0.1", "10.0.0.2"], tasks),
                                  tasks=list(tasks))
    assert tasks[("r", 0)].host_restrictions == {"10.0.0.1"}
    assert tasks[("r", 0)].loose_restrictions
    assert tasks[("sum", 1)].host_restrictions == {"10.0.0.2"}
    assert tasks[("r", 2)].host_restrictions is None
    assert tasks[("r", 3)].host_restrictions is None
    assert not tasks[("r", 3)].loose_restrictions


def test_endpoint_host_comes_from_the_endpoints_server():
    assert fdask.endpoint_host(["shm://?x", "ucx://10.1.2.3:4000?t=1", "grpc://h:1"],
                               "grpc://127.0.0.1:8815") == "10.1.2.3"
    assert fdask.endpoint_host(["arrow-flight-reuse-connection://?"],
                               "grpc://127.0.0.1:8815") == "127.0.0.1"
    assert fdask.endpoint_host(["grpc+tls://localhost:1"], "grpc://10.0.0.1:1") == "127.0.0.1"
