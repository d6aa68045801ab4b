"""ferry.ray's pieces that need no Ray cluster: FlightDatasource's read tasks, run here as Ray's
workers run them, against `ferry serve --flight` and pyarrow's read of the files (one task per
endpoint, each read through shared memory by the server's counters, Arrow blocks that wrap the
received buffers, projection and limit pushed into the reads, the limited streams closed so that
no session stays open), and how endpoints are grouped by node. tests/cluster/test_ray_cluster.py
runs read_flight and write_flight on a real two-node Ray cluster."""
import json
import time

import pyarrow as pa
import pyarrow.flight as fl
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
pytest.importorskip("ray.data", reason="ray[data] is not installed (scripts/setup.sh installs it)")
import ferry.flight  # noqa: E402
import ferry.ray as fray  # noqa: E402

from flight_support import Serve, mixed_table  # noqa: E402


@pytest.fixture
def served(tmp_path):
    """Three files of one table (batches of 100 rows) served as flight t: (server, tables)."""
    table = mixed_table(900)
    directory = tmp_path / "parts"
    directory.mkdir()
    tables = []
    for i in range(3):
        tables.append(table.slice(i * 300, 300))
        with pa.ipc.new_stream(str(directory / f"part-{i}.arrows"), table.schema) as w:
            w.write_table(tables[-1], max_chunksize=100)
    with Serve(f"t={directory}", tmp=str(tmp_path)) as s:
        yield s, tables


def _stats(uri):
    return json.loads(ferry.flight.connect(uri).do_action("stats")[0])


def _source(uri, path="t"):
    info = ferry.flight.connect(uri).get_flight_info(path)
    return fray.FlightDatasource(uri, info.endpoints, pa.schema(info.schema))


def test_one_read_task_per_endpoint_read_through_shared_memory(served):
    s, tables = served
    source = _source(s.uri)
    # Each read carries its endpoint's expected size: a third of the flight's bytes as
    # pyarrow.flight reads them from the server.
    info = fl.connect(s.uri).get_flight_info(fl.FlightDescriptor.for_path("t"))
    assert info.total_bytes > 0
    assert [p.expected_bytes for p in source._parts] == [info.total_bytes // 3] * 3
    tasks = source.get_read_tasks(parallelism=8)
    assert len(tasks) == 3
    assert all(t.schema == tables[0].schema for t in tasks)
    for task, expected in zip(tasks, tables):
        blocks = list(task())
        assert all(isinstance(b, pa.Table) for b in blocks)
        assert [b.num_rows for b in blocks] == [100, 100, 100]  # one block a batch
        assert pa.concat_tables(blocks).equals(expected)
    stats = _stats(s.uri)
    assert stats["shm"]["clients"] == 3
    assert stats["grpc"]["do_gets"] == 0


def test_projection_is_pushed_into_the_reads(served):
    s, tables = served
    # What Ray's optimizer calls with the columns a query needs (here in another order).
    source = _source(s.uri).apply_projection({"s": "s", "i": "i"})
    tasks = source.get_read_tasks(parallelism=1)
    assert tasks[0].schema.names == ["i", "s"]  # the flight's order
    got = pa.concat_tables(b for t in tasks for b in t())
    assert got.equals(pa.concat_tables(tables).select(["i", "s"]))
    assert _source(s.uri).supports_projection_pushdown()
    with pytest.raises(ValueError, match="no column.*'nope'"):
        _source(s.uri).apply_projection({"nope": "nope"}).get_read_tasks(parallelism=1)


def test_a_limit_stops_each_read_early_and_closes_its_stream(served):
    s, tables = served
    tasks = _source(s.uri).get_read_tasks(parallelism=1, per_task_row_limit=150)
    for task, expected in zip(tasks, tables):
        blocks = list(task())
        assert [b.num_rows for b in blocks] == [100, 50]
        assert pa.concat_tables(blocks).equals(expected.slice(0, 150))
    # Each read stopped at its limit and closed its stream: once its blocks are dropped (as Ray
    # drops them when it has stored them), within a second no session is left open.
    del blocks
    deadline = time.monotonic() + 1
    while _stats(s.uri)["shm"]["sessions_active"] and time.monotonic() < deadline:
        time.sleep(0.02)
    stats = _stats(s.uri)
    assert stats["shm"]["sessions_active"] == 0, stats
    assert stats["shm"]["sessions_total"] == 3


def test_endpoints_run_together_by_node():
    nodes = {"10.0.0.1": "n1", "10.0.0.2": "n2"}
    hosts = ["10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.9", "10.0.0.9", "10.0.0.1"]
    assert fray.node_runs(hosts, nodes) == [("n1", [0, 1]), ("n2", [2]), (None, [3, 4]),
                                            ("n1", [5])]
    assert fray.node_runs([], nodes) == []


def test_endpoint_hosts_come_from_the_locations(served):
    s, _ = served
    info = ferry.flight.connect(s.uri).get_flight_info("t")
    assert fray.endpoint_hosts(info, s.uri) == ["127.0.0.1"] * 3


def test_a_read_task_loads_no_dask():
    """Each Ray worker imports ferry.ray to run its first read task; Dask and distributed are not
    its dependencies and took 0.2 s of that import when they came along."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c",
                        "import sys, ferry.ray; "
                        "print(sorted(m for m in ('dask', 'distributed', 'ferry.dask') "
                        "if m in sys.modules))"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", r.stdout
