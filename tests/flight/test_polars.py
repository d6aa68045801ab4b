"""ferry.polars against `ferry serve --flight` and an in-process Dissociated IPC server, with
pyarrow.flight's read of the same flight as the oracle: a scan equal to pyarrow's read; projection
fetching only the projected columns' buffers over type-1 bodies (the client's per-plane byte
counts, the servers' own counters for the plane used); `n_rows` stopping the read and the servers
ending its sessions and freeing its loans within 1 s of the result's release; the predicate
applied per batch; `batch_size` honoured with views; batches entering Polars without a copy;
`sink_flight` read back by pyarrow.flight; the endpoint-to-host mapping a rank-aware engine
calls."""
import gc
import json
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as fl
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
pl = pytest.importorskip("polars", reason="polars is not installed (scripts/setup.sh installs it)")
import ferry.dipc  # noqa: E402
import ferry.flight  # noqa: E402
import ferry.polars as fpl  # noqa: E402

from flight_support import Serve, mixed_table  # noqa: E402

ENDPOINTS, BATCHES, ROWS = 3, 12, 4096  # rows per batch; 4 int64 columns: 128 KiB a batch
COLUMNS = ("w", "x", "y", "z")


def _parts(tmp_path):
    """ENDPOINTS stream files of BATCHES batches each, four int64 columns (one with nulls), the
    flight's endpoints in name order; returns the directory and pyarrow's table of them."""
    directory = tmp_path / "parts"
    directory.mkdir()
    tables = []
    for p in range(ENDPOINTS):
        base = np.arange(BATCHES * ROWS, dtype=np.int64) + p * BATCHES * ROWS
        table = pa.table({"w": base, "x": base * 3 - 7, "y": base % 1000,
                          "z": pa.array(base, mask=(base % 11 == 0))})
        with pa.ipc.new_stream(str(directory / f"part-{p}.arrows"), table.schema) as w:
            w.write_table(table, max_chunksize=ROWS)
        tables.append(table)
    return directory, pa.concat_tables(tables)


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("polars")
    return tmp, *_parts(tmp)


@pytest.fixture(scope="module")
def served(parts):
    """`ferry serve --flight` of the parts, with type-1 bodies."""
    tmp, directory, table = parts
    with Serve(f"t={directory}", "--body-type", "list", tmp=str(tmp)) as s:
        yield s, table


def _stats(uri):
    [body] = ferry.flight.connect(uri).do_action("stats")
    return json.loads(body)


def _oracle(uri, path="t"):
    """pyarrow.flight's read of flight `path`: every endpoint by DoGet, in order."""
    client = fl.connect(uri)
    info = client.get_flight_info(fl.FlightDescriptor.for_path(path))
    return pa.concat_tables([client.do_get(e.ticket).read_all() for e in info.endpoints])


def _wait_until(what, check, limit, show=None):
    """Polls `check` until it holds, failing after `limit` seconds (a bounded wait)."""
    deadline = time.monotonic() + limit
    while not check():
        assert time.monotonic() < deadline, f"{what} not within {limit} s: {show() if show else ''}"
        time.sleep(0.005)


def test_scan_equals_pyarrow_and_learns_the_schema_without_a_read(served):
    s, table = served
    before = _stats(s.uri)
    lf = fpl.scan_flight(s.uri, "t")
    assert lf.collect_schema() == pl.DataFrame(table.schema.empty_table()).schema
    after = _stats(s.uri)
    assert after["shm"]["batches_sent"] == before["shm"]["batches_sent"]
    assert after["grpc"]["do_gets"] == before["grpc"]["do_gets"]
    got = lf.collect()
    # Every endpoint came over shared memory, none by DoGet.
    stats = _stats(s.uri)
    assert stats["shm"]["clients"] - before["shm"]["clients"] == ENDPOINTS
    assert stats["grpc"]["do_gets"] == before["grpc"]["do_gets"]
    assert got.equals(pl.DataFrame(_oracle(s.uri)))


def test_every_kind_of_column_equals_pyarrow():
    """Strings, lists, structs, dictionaries, timestamps and nulls, over two endpoints of an
    in-process server: the scan equals Polars' conversion of pyarrow.flight's read, and a
    projection of nested columns with a predicate on one equals the same over that read."""
    table = mixed_table(2000)
    with ferry.flight.Server.start() as server:
        server.add("m", [table.slice(0, 1000).to_batches(max_chunksize=300),
                         table.slice(1000).to_batches(max_chunksize=300)], partitioned=True)
        oracle = pl.DataFrame(_oracle(server.uri, "m"))
        lf = fpl.scan_flight(server.uri, "m")
        assert lf.collect_schema() == oracle.schema
        assert lf.collect().equals(oracle)
        query = [pl.col("s").is_null() | (pl.col("i") > 0), ["st", "l", "d"]]
        assert lf.filter(query[0]).select(query[1]).collect().equals(
            oracle.filter(query[0]).select(query[1]))


@pytest.mark.parametrize("via", ["shm", "ucx"])
def test_projection_moves_only_the_projected_columns(served, via):
    """One column of four: the client fetched that column's buffers alone (its per-plane bytes:
    ROWS * 8 a batch) over type-1 bodies, from the servers' shared-memory or UCX plane, which
    lent buffer lists (addresses_lent) and served every endpoint (clients)."""
    s, table = served
    source = fpl.FlightSource(s.uri, "t", via=via)
    before = _stats(s.uri)[via]
    got = source.lazy().select(pl.col("x").sum()).collect()
    assert got.item() == pc.sum(table["x"]).as_py()
    assert source.client.plane_bytes[via] == ENDPOINTS * BATCHES * ROWS * 8
    after = _stats(s.uri)[via]
    assert after["clients"] - before["clients"] == ENDPOINTS
    assert after["addresses_lent"] > before["addresses_lent"]
    # Then all four columns: four times x's bytes more (z's validity bitmap besides; the count
    # goes on from the read above).
    source.lazy().collect()
    assert source.client.plane_bytes[via] >= 5 * ENDPOINTS * BATCHES * ROWS * 8


def test_n_rows_stops_the_read_and_frees_the_loans(served):
    """head(10): the read stops after the first batches (the client's byte count: the batches its
    streams handed out, each endpoint holding at most two ready), and the server ends its
    sessions, and with them every loan, within 1 s of the result's release."""
    s, table = served
    before = _stats(s.uri)["shm"]
    source = fpl.FlightSource(s.uri, "t")
    head = source.lazy().head(10).collect()
    assert head.equals(pl.DataFrame(table.slice(0, 10)))
    assert source.client.plane_bytes["shm"] < ENDPOINTS * BATCHES * ROWS * 32 // 2
    del head
    gc.collect()
    _wait_until("the sessions' end", lambda: _stats(s.uri)["shm"]["sessions_active"] == 0, 1.0,
                show=lambda: _stats(s.uri))
    after = _stats(s.uri)["shm"]
    assert 1 <= after["sessions_total"] - before["sessions_total"] <= ENDPOINTS


def test_predicate_is_applied_per_batch(served):
    s, table = served
    predicate = (pl.col("y") < 100) & (pl.col("z").is_not_null())
    got = fpl.scan_flight(s.uri, "t").filter(predicate).select("w", "z").collect()
    oracle = _oracle(s.uri)
    mask = pc.and_(pc.less(oracle["y"], 100), pc.is_valid(oracle["z"]))
    assert got.equals(pl.DataFrame(oracle.filter(mask).select(["w", "z"])))
    # Polars hands the predicate to the source, which filters each batch it yields.
    source = fpl.FlightSource(s.uri, "t")
    frames = list(source(None, predicate, None, None))
    assert all(f.filter(~predicate).height == 0 for f in frames)
    assert sum(f.height for f in frames) == got.height


def test_batch_size_is_honoured_with_views(served):
    s, table = served
    source = fpl.FlightSource(s.uri, "t", parallel=1)
    frames = list(source(["x"], None, 5000, 1000))
    assert all(0 < f.height <= 1000 for f in frames) and sum(f.height for f in frames) == 5000
    assert pl.concat(frames).equals(pl.DataFrame(table.select(["x"]).slice(0, 5000)))


def test_batches_enter_polars_without_a_copy(served):
    """Each frame's column is the buffer ferry's stream handed out (same address)."""
    s, _ = served
    client = ferry.flight.connect(s.uri)
    seen = []

    class Recording:
        def __init__(self, stream):
            self.stream = stream

        def __iter__(self):
            for batch in self.stream:
                seen.append(batch.child(0).buffer_addresses[1])
                yield batch

        def close(self):
            self.stream.close()

    stream = Recording(client.do_get("t", via="shm", columns=[1], parallel=1))
    frames = list(fpl._frames(stream, ["x"], None, None, None))
    assert len(frames) == ENDPOINTS * BATCHES
    assert [f["x"].to_numpy(allow_copy=False).ctypes.data for f in frames] == seen


def test_sink_flight_is_read_back_by_pyarrow(served):
    s, table = served
    frame = pl.DataFrame({"a": [1, 2, 3], "b": ["x", None, "z"]})
    info = fpl.sink_flight(frame.lazy().filter(pl.col("a") > 1), s.uri, "sunk-lazy")
    assert info.total_records == 2
    back = _oracle(s.uri, "sunk-lazy")
    assert back["a"].to_pylist() == [2, 3] and back["b"].to_pylist() == [None, "z"]
    fpl.sink_flight(frame, s.uri, "sunk")
    assert pl.DataFrame(_oracle(s.uri, "sunk")).equals(frame)
    with pytest.raises(TypeError, match="DataFrame or LazyFrame"):
        fpl.sink_flight(table, s.uri, "nope")


def test_endpoint_hosts_for_rank_aware_engines(served):
    """The source a scan registered is reachable as Polars' `scan_fn.io_source`; its endpoints'
    hosts come from the one mapping ferry.dask uses, and restrict() reads a subset."""
    s, table = served
    source = fpl.FlightSource(s.uri, "t")
    assert source.endpoint_hosts() == ["127.0.0.1"] * ENDPOINTS
    one = source.restrict([1]).lazy().collect()
    assert one.equals(pl.DataFrame(table.slice(BATCHES * ROWS, BATCHES * ROWS)))
    with pytest.raises(IndexError, match="3 endpoints"):
        source.restrict([3])
    with pytest.raises(FileNotFoundError, match="nope"):
        fpl.scan_flight(s.uri, "nope")


def test_scan_dipc(tmp_path):
    """scan_dipc against an in-process server: equal to the dataset, projected, and an early stop
    whose loans the server frees within 1 s of the result's release."""
    _, table = _parts(tmp_path)
    batches = table.to_batches(max_chunksize=ROWS)
    with ferry.dipc.Server.start() as server:
        server.add("t", batches)
        lf = fpl.scan_dipc(server.uri, "t")
        assert lf.collect_schema() == pl.DataFrame(table.schema.empty_table()).schema
        assert lf.collect().equals(pl.DataFrame(table))
        assert lf.select(pl.col("x").max()).collect().item() == pc.max(table["x"]).as_py()
        head = lf.head(3).collect()
        assert head.equals(pl.DataFrame(table.slice(0, 3)))
        del head
        gc.collect()
        _wait_until("the loans' release",
                    lambda: server.stats.clients_active == 0 and server.stats.bytes_in_flight == 0,
                    1.0, show=lambda: (server.stats, server.last_error))
        stats = server.stats
        assert stats.addresses_freed + stats.addresses_reclaimed == stats.addresses_lent
