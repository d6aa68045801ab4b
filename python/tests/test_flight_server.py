"""ferry.flight.Server: a Flight server in this process, checked from pyarrow.flight (the oracle):
tables, batches and streams served as flights, partitioned flights (in memory, from files, cut by
bytes, appended), tokens, federation with a live and a dead peer, its totals, and its errors."""
import gc

import pyarrow as pa
import pyarrow.flight as fl
import pyarrow.ipc as ipc
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry.flight  # noqa: E402
from ferry.flight import Server  # noqa: E402


def table(rows, start=0):
    return pa.table({"x": pa.array(range(start, start + rows), pa.int64()),
                     "s": pa.array([f"v{i}" for i in range(start, start + rows)])})


def read(client, path):
    """Every endpoint of flight `path`, in order, read with pyarrow's DoGet where its locations
    say (a peer's endpoint names the peer's grpc:// URI; this server's, reuse-connection):
    (info, tables)."""
    info = client.get_flight_info(fl.FlightDescriptor.for_path(path))
    tables = []
    for e in info.endpoints:
        grpc = [l.uri.decode() for l in e.locations if l.uri.decode().startswith("grpc://")]
        tables.append((fl.connect(grpc[0]) if grpc else client).do_get(e.ticket).read_all())
    return info, tables


def test_a_table_batches_and_a_stream_served_as_flights():
    t = table(1000)
    with Server.start() as server:
        server.add("table", t)
        server.add("batches", t.to_batches(max_chunksize=300))
        server.add("reader", pa.RecordBatchReader.from_batches(t.schema, t.to_batches(250)))
        server.add("one", t.to_batches()[0])
        del t
        gc.collect()  # the server keeps its batches' memory alive
        assert server.names == ["batches", "one", "reader", "table"]
        client = fl.connect(server.uri)
        assert sorted(f.descriptor.path[0].decode() for f in client.list_flights()) == \
            server.names
        for name in server.names:
            info, parts = read(client, name)
            assert len(info.endpoints) == 1
            assert info.total_records == 1000
            assert parts[0].equals(table(1000)), name
        got = pa.table(ferry.flight.connect(server.uri).do_get("batches", via="shm"))
        assert got.equals(table(1000))


def test_batches_that_share_a_dictionary_are_served_whole_over_every_path(tmp_path):
    """Batches in memory that share one dictionary (the server writes it once, knowing it by its
    memory), then one with another dictionary and one with the first's values in other memory:
    pyarrow.flight's DoGet, and ferry's client over shared memory and UCX, read back what was
    added. The same batches served from an IPC stream file (re-encoded for shared memory and UCX,
    each batch held by the writer until the next, so that the decoded dictionary the batches share
    is known by its memory) read back as pyarrow reads the file."""
    shared = pa.array(["red", "green", None, "blue"])
    col = pa.DictionaryArray.from_arrays(pa.array([0, 1, 3, 2, None], pa.int32()), shared)
    other = pa.DictionaryArray.from_arrays(pa.array([1, 0], pa.int32()), pa.array(["x", "y"]))
    again = pa.DictionaryArray.from_arrays(pa.array([3], pa.int32()),
                                           pa.array(["red", "green", None, "blue"]))
    batches = [pa.record_batch([col], names=["c"])] * 20 + \
        [pa.record_batch([c], names=["c"]) for c in (other, again, col)]
    expected = pa.Table.from_batches(batches)
    with Server.start() as server:
        server.add("shared", batches)
        info, parts = read(fl.connect(server.uri), "shared")
        assert parts[0].equals(expected)
        got = pa.table(ferry.flight.connect(server.uri).do_get("shared", via="shm"))
        assert got.equals(expected)
        path = tmp_path / "shared.arrows"
        with ipc.new_stream(str(path), batches[0].schema) as w:
            for b in batches:
                w.write_batch(b)
        server.add_path("file", path)
        from_file = ipc.open_stream(str(path)).read_all()
        assert from_file.equals(expected)
        client = ferry.flight.connect(server.uri)
        for via in ("shm", "ucx", "grpc"):
            assert pa.table(client.do_get("file", via=via)).equals(from_file), via


def test_partitioned_flights_in_memory_from_files_and_appended(tmp_path):
    parts = [table(100, 0), table(200, 100), table(50, 300)]
    files = []
    for i, p in enumerate(parts):
        files.append(tmp_path / f"part-{i}.arrows")
        with ipc.new_stream(str(files[-1]), p.schema) as w:
            w.write_table(p, max_chunksize=25)
    with Server.start() as server:
        # One partition a table, one a list of batches, one a stream.
        server.add("mem", [parts[0], parts[1].to_batches(), parts[2].to_reader()],
                   partitioned=True)
        server.add_path("files", files)
        server.add_path("cut", files[1], partition_bytes=1)  # one endpoint per batch
        server.add_path("whole", files[2])
        assert server.append_partition("appended", parts[0]) == 0
        assert server.append_partition("appended", parts[1]) == 1
        client = fl.connect(server.uri)
        for name, want in (("mem", parts), ("files", parts), ("appended", parts[:2])):
            info, got = read(client, name)
            assert len(info.endpoints) == len(want), name
            assert info.ordered, name
            assert info.total_records == sum(p.num_rows for p in want)
            assert [g.equals(w) for g, w in zip(got, want)] == [True] * len(want), name
        info, got = read(client, "cut")
        assert len(info.endpoints) == 8
        assert pa.concat_tables(got).equals(parts[1])
        info, got = read(client, "whole")
        assert len(info.endpoints) == 1 and got[0].equals(parts[2])
        # ferry's own client reads a partitioned flight's endpoints in parallel, in order.
        both = pa.table(ferry.flight.connect(server.uri).do_get("mem"))
        assert both.equals(pa.concat_tables(parts))


def test_errors_name_what_was_wrong(tmp_path):
    with Server.start() as server:
        server.add("t", table(10))
        with pytest.raises(FileExistsError, match="t"):
            server.add("t", table(10))
        with pytest.raises(ValueError, match="partition 1 is .*partition 0's schema"):
            server.add("p", [table(10), pa.table({"y": [1.5]})], partitioned=True)
        with pytest.raises(ValueError, match="record batches"):
            server.add("a", pa.array([1, 2, 3]))
        with pytest.raises(TypeError, match="no list of batches"):
            server.add("n", 42)
        with pytest.raises(TypeError, match="list of partitions"):
            server.add("n", table(3), partitioned=True)
        with pytest.raises(ValueError, match="empty list"):
            server.add("e", [])
        with pytest.raises(FileNotFoundError):
            server.add_path("f", tmp_path / "missing.arrows")
        with pytest.raises(FileNotFoundError):
            server.drop("nope")
        with pytest.raises(ValueError, match="schema"):
            server.append_partition("t", pa.table({"y": [1]}))
        server.drop("t")
        assert server.names == []
    assert server.uri.startswith("grpc://127.0.0.1:")  # kept once stopped
    with pytest.raises(ValueError, match="stopped"):
        server.add("t", table(1))
    with pytest.raises(ValueError, match="peer_timeout"):
        Server.start(peer_timeout=0)
    with pytest.raises(ValueError, match="http://nowhere"):
        Server.start(peers=["http://nowhere"])


def test_a_token_is_required_of_every_call():
    with Server.start(token="s3cret") as server:
        server.add("t", table(5))
        with pytest.raises(fl.FlightUnauthenticatedError):
            fl.connect(server.uri).get_flight_info(fl.FlightDescriptor.for_path("t"))
        options = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer s3cret")])
        client = fl.connect(server.uri)
        info = client.get_flight_info(fl.FlightDescriptor.for_path("t"), options)
        assert client.do_get(info.endpoints[0].ticket, options).read_all().equals(table(5))
        assert server.stats()["unauthenticated"] == 1


def test_federation_lists_a_peers_flights_and_names_a_missing_peer():
    with Server.start() as first, Server.start(peers=[first.uri]) as second, \
            Server.start(peers=["grpc://127.0.0.1:1"], allow_partial=True,
                         peer_timeout=0.5) as partial:
        first.add("t", table(10, 0))
        second.add("t", table(20, 10))
        second.add("own", table(3))
        partial.add("t", table(5))
        client = fl.connect(second.uri)
        assert sorted(f.descriptor.path[0].decode() for f in client.list_flights()) == \
            ["own", "t"]
        info, got = read(client, "t")
        assert len(info.endpoints) == 2 and not info.ordered
        assert got[0].equals(table(20, 10)) and got[1].equals(table(10, 0))
        assert info.total_records == 30
        info = fl.connect(partial.uri).get_flight_info(fl.FlightDescriptor.for_path("t"))
        assert len(info.endpoints) == 1
        assert b"grpc://127.0.0.1:1" in info.app_metadata


def test_its_totals_count_what_it_served():
    with Server.start() as server:
        server.add("t", table(1000))
        before = server.stats()
        client = fl.connect(server.uri)
        info, got = read(client, "t")
        after = server.stats()
        assert after["do_gets"] == before["do_gets"] + 1
        assert after["bytes_sent"] > table(1000).nbytes
        assert after["calls"] >= before["calls"] + 2
        assert repr(server).startswith("ferry.flight.Server(grpc://")
