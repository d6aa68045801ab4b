"""ferry.dipc: tables served from Python and read back in the same process, checked against
pyarrow: every kind of source (a Table, a RecordBatchReader, a list of batches, a callable, IPC
stream and file paths written by pyarrow) over shared memory and UCX with both body types; zero
copy over shared memory with buffer lists; errors with the server's message; the region and
pyarrow's pool back to where they were once everything is released."""
import gc
import os
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

ferry = pytest.importorskip("ferry", reason="the ferry binding is not installed (pip install ./python)")
dipc = ferry.dipc

from ipc_files import mixed_table  # noqa: E402

SHAPES = [("shm", "list"), ("shm", "packed"), ("ucx", "list"), ("ucx", "packed")]
SOURCES = ["table", "reader", "batches", "callable", "stream_path", "file_path"]


def needs(transport):
    if transport == "ucx" and not dipc.ucx_available():
        pytest.skip("ferry.dipc.ucx_available() is False: this build has no UCX transport")


def serve(server, name, source, table, tmp_path):
    table = pa.Table.from_batches(table.to_batches(max_chunksize=3_000))  # 4 batches from 10,000 rows
    if source == "table":
        server.add(name, table)
    elif source == "reader":
        server.add(name, pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=3_000)))
    elif source == "batches":
        server.add(name, table.to_batches(max_chunksize=3_000))
    elif source == "callable":
        server.add(name, lambda: table)
    elif source == "stream_path":
        path = tmp_path / "t.arrows"
        with pa.OSFile(str(path), "wb") as f, pa.ipc.new_stream(f, table.schema) as w:
            for b in table.to_batches(max_chunksize=3_000):
                w.write_batch(b)
        server.add_path(name, path)
    elif source == "file_path":
        path = tmp_path / "t.arrow"
        with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, table.schema) as w:
            for b in table.to_batches(max_chunksize=3_000):
                w.write_batch(b)
        server.add_path(name, str(path))
    else:
        raise AssertionError(source)


def read_back(uri, ticket, **kwargs):
    return pa.RecordBatchReader.from_stream(dipc.connect(uri, ticket, **kwargs)).read_all()


def wait_for(predicate, what, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        gc.collect()
        time.sleep(0.02)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("transport,body", SHAPES)
def test_a_table_crosses_whole(tmp_path, transport, body, source):
    needs(transport)
    table = mixed_table(10_000)
    with dipc.Server.start(transport, body_type=body, region_bytes=16 << 20) as server:
        serve(server, "t", source, table, tmp_path)
        got = read_back(server.uri, "t")
        assert got.equals(table)
        assert got.schema == table.schema
        assert server.stats.batches_sent == 4
        assert server.stats.sessions_failed == 0, server.last_error


def test_a_list_of_batches_and_a_callable_serve_every_client_at_once():
    table = mixed_table(5_000)
    with dipc.Server.start() as server:
        server.add("b", table.to_batches(max_chunksize=1_000))
        server.add("c", lambda: pa.RecordBatchReader.from_batches(table.schema, table.to_batches(1_000)))
        results, errors = [], []

        def client(ticket):
            try:
                results.append(read_back(server.uri, ticket))  # pyarrow reads without the GIL
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=client, args=(t,)) for t in ["b", "c"] * 4]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors
        assert len(results) == 8 and all(r.equals(table) for r in results)
        assert server.stats.clients_accepted == 8


def test_a_stream_is_read_once_then_refused_by_name():
    table = mixed_table(100)
    with dipc.Server.start() as server:
        server.add("once", table)
        assert read_back(server.uri, "once").equals(table)
        with pytest.raises(ferry.FailedPreconditionError,
                           match=r"one-shot stream and another client has read it \(to serve every "
                                 r"client, give the server its batches, a callable that returns a "
                                 r"stream, or Keep it\)"):
            dipc.connect(server.uri, "once")
        # Kept, it is read once, now, and every client gets it.
        server.keep("kept", table)
        for _ in range(2):
            assert read_back(server.uri_of("kept"), "kept").equals(table)


def test_a_generator_producer_needs_the_gil_on_the_server_thread():
    # The server's session thread takes the GIL for every batch; the client in this thread must
    # not hold it while it waits (ferry's own read_next and pyarrow's reader both let it go).
    table = mixed_table(2_000)

    def batches():
        for b in table.to_batches(max_chunksize=250):
            yield b

    with dipc.Server.start() as server:
        server.add("gen", pa.RecordBatchReader.from_batches(table.schema, batches()))
        server.add("gen2", lambda: pa.RecordBatchReader.from_batches(table.schema, batches()))
        arrays = dipc.connect(server.uri, "gen").read_all()
        assert pa.Table.from_batches([pa.record_batch(a) for a in arrays]).equals(table)
        assert read_back(server.uri, "gen2").equals(table)


def test_a_factory_error_reaches_the_client():
    def broken():
        raise ZeroDivisionError("no data today")

    with dipc.Server.start() as server:
        server.add("broken", broken)
        server.add("bad", lambda: 42)
        with pytest.raises(ferry.InvalidArgumentError, match="the dataset factory raised ZeroDivisionError: no data today"):
            dipc.connect(server.uri, "broken")
        with pytest.raises(ferry.InvalidArgumentError, match="the dataset factory raised TypeError"):
            dipc.connect(server.uri, "bad")
        wait_for(lambda: server.stats.sessions_failed == 2, "the failed sessions")
        assert "ZeroDivisionError" in server.last_error or "TypeError" in server.last_error


def segment_mappings():
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and "memfd:ferry-segment" in parts[5]:
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.append((lo, hi, parts[1]))
    return out


def test_buffer_lists_over_shared_memory_are_read_in_place():
    table = pa.table({"x": pa.array(np.arange(100_000, dtype=np.int64)), "y": pa.array(np.ones(100_000))})
    with dipc.Server.start(body_type="list") as server:
        server.add("t", table.to_batches(max_chunksize=50_000))
        got = read_back(server.uri, "t")
        assert got.equals(table)
        maps = segment_mappings()
        assert maps, "no memfd:ferry-segment mapping in /proc/self/maps"
        for chunk in got.column("x").chunks:
            address = chunk.buffers()[1].address
            inside = [m for m in maps if m[0] <= address < m[1]]
            assert inside, f"{address:#x} lies in no ferry segment: {maps}"
            assert inside[0][2] == "r--s"
            # the client's own copy of the server's region, not pyarrow's pool
            assert not any(m[0] <= table.column("x").chunks[0].buffers()[1].address < m[1] for m in maps)
        del got, chunk


def test_an_unknown_ticket_raises_with_the_servers_message():
    with dipc.Server.start() as server:
        server.add("t", [pa.record_batch({"x": [1, 2]})])
        with pytest.raises(OSError, match='unknown ticket "nope" \\(this server has: t\\)'):
            dipc.connect(server.uri, "nope")
        wait_for(lambda: server.stats.tickets_refused == 1, "the refusal")
        assert server.stats.sessions_failed == 0


def test_bad_uris_raise_naming_the_part_at_fault():
    with pytest.raises(ValueError, match='URI "nothing here" has no scheme'):
        dipc.connect("nothing here", "t")
    with pytest.raises(ValueError, match="want_data"):
        dipc.Uri.parse("shm://@x?want_data=many")
    with pytest.raises(ValueError, match="given twice"):
        dipc.Uri.parse("shm://@x?want_data=1&want_data=2")
    with pytest.raises(ValueError, match="remote_handle"):
        dipc.Uri.parse("ucx://h:1?want_data=1&remote_handle=!!")


def test_a_stopped_server_refuses_clients_and_keeps_its_totals():
    server = dipc.Server.start()
    server.add("t", [pa.record_batch({"x": [1, 2]})])
    assert read_back(server.uri, "t").num_rows == 2
    uri = server.uri
    server.stop()
    server.stop()  # idempotent
    assert not server.running
    assert server.uri == uri and server.stats.batches_sent == 1
    assert "stopped" in repr(server)
    with pytest.raises(ValueError, match="the server is stopped"):
        server.add("u", [pa.record_batch({"x": [1]})])
    # With no time to wait for a server still starting, the client tries once: the refusal is
    # seen at once, not after a timeout.
    with pytest.raises(ferry.UnavailableError, match="Connection refused"):
        dipc.connect(uri, "t", timeout=0)


def test_uris_parse_print_and_compare():
    text = "ucx://127.0.0.1:5000/some/path?want_data=7&free_data=9&remote_handle=AAEC&x=y"
    uri = dipc.Uri.parse(text)
    assert (uri.scheme, uri.authority, uri.path) == ("ucx", "127.0.0.1:5000", "/some/path")
    assert (uri.want_data, uri.free_data, uri.remote_handle) == (7, 9, b"\x00\x01\x02")
    assert uri.other == [("x", "y")]
    assert dipc.Uri.parse(str(uri)) == uri and str(uri) == text
    assert eval(repr(uri), {"ferry": ferry}) == uri
    built = dipc.Uri()
    built.scheme, built.path, built.want_data = "shm", "/tmp/sock", 1
    assert built.free_data is None and built.remote_handle is None
    assert dipc.Uri.parse(str(built)) == built
    assert uri != built and uri != text
    with dipc.Server.start() as server:
        parsed = dipc.Uri.parse(server.uri)
        assert parsed.scheme == "shm" and parsed.want_data == 1 << 32 and parsed.free_data == 2 << 32
        server.add("t", [pa.record_batch({"x": [1]})])
        assert read_back(parsed, "t").num_rows == 1  # a Uri works where a str does


def test_a_ucx_server_publishes_its_region_handle():
    needs("ucx")
    with dipc.Server.start("ucx", body_type="list", region_bytes=1 << 20) as server:
        uri = dipc.Uri.parse(server.uri)
        assert uri.scheme == "ucx" and uri.authority
        assert isinstance(uri.remote_handle, bytes) and uri.remote_handle


def test_batches_land_on_the_device_asked_for():
    guarded = ferry.Device.resolve(ferry.DeviceType.EXT_DEV, 0)
    table = mixed_table(1_000)
    with dipc.Server.start() as server:
        server.add("t", table.to_batches(max_chunksize=400))
        stream = dipc.connect(server.uri, "t", device=guarded, validation=ferry.ValidationLevel.DEFAULT)
        assert stream.device_type == ferry.DeviceType.EXT_DEV
        arrays = [a.copy_to(ferry.Device.cpu()) for a in stream]
        assert pa.Table.from_batches([pa.record_batch(a) for a in arrays]).equals(table)
        with pytest.raises(ValueError, match="__arrow_c_device_stream__"):
            dipc.connect(server.uri, "t", device=guarded).__arrow_c_stream__()


def test_what_cannot_be_served_is_refused_at_add():
    with dipc.Server.start() as server:
        with pytest.raises(ValueError, match="must be struct arrays"):
            server.add("x", pa.array([1, 2, 3]))
        with pytest.raises(ValueError, match="batch 1 is"):
            server.add("x", [pa.record_batch({"x": [1]}), pa.record_batch({"y": [1]})])
        with pytest.raises(ValueError, match="needs a schema"):
            server.add("x", [])
        with pytest.raises(TypeError, match="add_path"):
            server.add("x", "/some/file.arrow")
        with pytest.raises(TypeError, match="int is no list of batches"):
            server.add("x", 42)
        with pytest.raises(FileNotFoundError):
            server.add_path("x", "/nonexistent/file.arrows")
        server.add("empty", [], schema=pa.schema([("x", pa.int64())]))
        got = read_back(server.uri, "empty")
        assert got.num_rows == 0 and got.schema == pa.schema([("x", pa.int64())])
    with pytest.raises(ValueError, match=r'unknown body type "tagged" \(packed, list or buffer_list\)'):
        dipc.Server.start(body_type="tagged")
    with pytest.raises(ValueError, match="compression"):
        dipc.Server.start(compression="gzip")
    with pytest.raises(ValueError, match='unknown transport "carrier-pigeon"'):
        dipc.Server.start("carrier-pigeon")


def test_compressed_bodies_cross_too():
    table = mixed_table(3_000)
    with dipc.Server.start(body_type="packed", compression="zstd") as server:
        server.add("t", table.to_batches(max_chunksize=1_000))
        assert read_back(server.uri, "t").equals(table)


@pytest.mark.parametrize("body", ["list", "packed"])
def test_the_region_and_pyarrows_pool_are_freed(body):
    gc.collect()
    baseline = pa.total_allocated_bytes()
    table = mixed_table(20_000)
    with dipc.Server.start(body_type=body, region_bytes=8 << 20) as server:
        server.add("b", table.to_batches(max_chunksize=5_000))
        server.add("t", table)
        reader = pa.RecordBatchReader.from_stream(dipc.connect(server.uri, "b"))
        first = reader.read_next_batch()
        got = pa.Table.from_batches([first, *reader])
        assert got.equals(table)
        got2 = read_back(server.uri, "t")
        assert got2.equals(table)
        if body == "list":
            assert server.stats.bytes_in_flight > 0  # the batches still borrow the region
        del reader, first, got, got2
        wait_for(lambda: server.stats.bytes_in_flight == 0, "bytes_in_flight to return to 0")
        wait_for(lambda: server.stats.clients_active == 0, "the sessions to end")
    del table, server
    gc.collect()
    assert pa.total_allocated_bytes() == baseline


def test_a_server_in_a_cycle_with_its_factory_is_collected():
    import weakref

    table = pa.table({"x": [1, 2, 3]})
    server = dipc.Server.start()

    def factory():
        assert server.running  # the closure refers back to the server: a cycle through C++
        return table

    server.add("f", factory)
    assert read_back(server.uri, "f").equals(table)
    alive = weakref.ref(factory)
    del server, factory
    gc.collect()
    assert alive() is None, "the garbage collector did not break the server's cycle"


@pytest.mark.parametrize("transport,body", SHAPES)
def test_metadata_and_bodies_on_two_connections(transport, body):
    needs(transport)
    table = mixed_table(10_000)
    with dipc.Server.start(transport, body_type=body, region_bytes=16 << 20) as server:
        server.add("t", table.to_batches(max_chunksize=3_000))
        assert server.data_uri_of("t").startswith(transport + "://")
        assert server.data_uri_of("t") != server.metadata_uri_of("t")
        assert server.data_uri == server.data_uri_of("t")
        got = read_back(server.metadata_uri_of("t"), "t", data_uri=server.data_uri_of("t"))
        assert got.equals(table)
        assert server.stats.sessions_failed == 0, server.last_error
        with pytest.raises(ValueError, match="want_data"):
            dipc.connect(server.uri, "t", data_uri="shm:///nowhere")
    assert server.data_uri == "" and server.metadata_uri == ""


@pytest.mark.parametrize("transport", ["shm", "ucx"])
def test_connect_reads_only_the_columns_asked_for(transport):
    """columns= gives those fields, in the schema's order, equal to pyarrow's selection (a
    dictionary column included); an index past the schema or an empty list is refused by name."""
    needs(transport)
    table = mixed_table(10_000)
    with dipc.Server.start(transport) as server:
        serve(server, "t", "batches", table, None)
        for columns in ([4, 1], [2], [1, 1, 0]):
            got = read_back(server.uri, "t", columns=columns)
            assert got.equals(table.select(sorted(set(columns))))
            del got  # over shared memory its batches borrow the server's memory
        wait_for(lambda: server.stats.clients_active == 0, "the readers' sessions to end")
        assert server.stats.sessions_failed == 0, server.last_error
        # (A client that refuses the schema leaves mid-stream: its session ends as failed.)
        with pytest.raises(IndexError, match="column 9 was asked for, but the schema has 5"):
            dipc.connect(server.uri, "t", columns=[9])
        with pytest.raises(ValueError, match="non-empty list of field indices"):
            dipc.connect(server.uri, "t", columns=[])


def test_buffer_lists_asks_a_ucx_server_to_lend():
    """buffer_lists=True: a type-1 UCX server lends to this client whichever UCX is loaded (left
    to itself it sends packed bodies where UCX would emulate the client's gets)."""
    needs("ucx")
    table = mixed_table(10_000)
    with dipc.Server.start("ucx") as server:
        serve(server, "t", "batches", table, None)
        before = server.stats.addresses_lent
        assert read_back(server.uri, "t", buffer_lists=True).equals(table)
        assert server.stats.addresses_lent > before
        assert server.stats.sessions_failed == 0, server.last_error


@pytest.mark.parametrize("transport", ["shm", "ucx"])
def test_a_kept_dataset_is_lent_to_every_client(transport):
    needs(transport)
    table = mixed_table(10_000)
    with dipc.Server.start(transport, region_bytes=1 << 20) as server:
        # Kept bodies live in a region of their own, not the 1 MiB one clients share.
        server.keep("k", table.to_batches(max_chunksize=3_000))
        # Its memory has a URI of its own.
        assert server.uri_of("k") != server.uri
        for _ in range(3):
            assert read_back(server.uri_of("k"), "k").equals(table)
        assert server.stats.sessions_failed == 0, server.last_error
    # Packed bodies are written into that memory once too, and each is sent whole from it.
    with dipc.Server.start(transport, body_type="packed", region_bytes=1 << 20) as server:
        server.keep("k", table.to_batches(max_chunksize=3_000))
        for _ in range(2):
            assert read_back(server.uri_of("k"), "k").equals(table)
        stats = server.stats
        assert stats.sessions_failed == 0, server.last_error
        assert stats.addresses_lent == 0  # sent whole: nothing lent


def test_keep_takes_every_source_add_takes_and_reads_each_once():
    """keep() serves what add() would: a Table, a RecordBatchReader (readable once) and a callable
    (called once to keep it, though it would give more rows each call), each to every client."""
    table = mixed_table(10_000)
    calls = []

    def grows():
        calls.append(1)
        return table.slice(0, 1_000 * len(calls))

    with dipc.Server.start("shm") as server:
        server.keep("table", table)
        server.keep("reader", pa.RecordBatchReader.from_batches(
            table.schema, table.to_batches(max_chunksize=3_000)))
        server.keep("callable", grows)
        assert len(calls) == 1
        for _ in range(2):
            assert read_back(server.uri_of("table"), "table").equals(table)
            assert read_back(server.uri_of("reader"), "reader").equals(table)
            assert read_back(server.uri_of("callable"), "callable").equals(table.slice(0, 1_000))
        assert len(calls) == 1
        assert server.stats.sessions_failed == 0, server.last_error


def test_loaded_ucx_is_the_libucp_this_process_mapped():
    """loaded_ucx() names the libucp the process runs on: /proc/self/maps, the kernel's list of the
    process's mappings, holds exactly that file (one libucp, not two: a second UCX under the same
    soname would be a mixed process)."""
    ucx = dipc.loaded_ucx()
    assert set(ucx) == {"available", "built_against", "loaded", "path"}
    if not dipc.ucx_available():
        assert ucx == {"available": False, "built_against": None, "loaded": None, "path": None}
        pytest.skip("ferry.dipc.ucx_available() is False: this build has no UCX transport")
    with open("/proc/self/maps") as f:
        mapped = {line.split()[-1] for line in f if "libucp.so" in line}
    assert {os.path.realpath(p) for p in mapped} == {os.path.realpath(ucx["path"])}, (mapped, ucx)
    loaded = tuple(int(p) for p in ucx["loaded"].split("."))
    assert len(loaded) == 3 and loaded[:2] >= tuple(int(p) for p in ucx["built_against"].split("."))


@pytest.mark.parametrize("transport", ["shm", "ucx"])
def test_a_paced_reader_is_sent_only_what_it_asked_for(transport):
    """window=0: the server sends a batch only when pyarrow's reader asks for one, by the
    server's own count, and the table still arrives equal; unpaced, it sends all four ahead."""
    needs(transport)
    table = pa.Table.from_batches(mixed_table(10_000).to_batches(max_chunksize=3_000))
    for window, ahead in ((0, 0), (1, 1), (None, 2)):
        with dipc.Server.start(transport) as server:
            server.add("t", table.to_batches(max_chunksize=3_000))
            reader = pa.RecordBatchReader.from_stream(dipc.connect(server.uri, "t", window=window))
            first = [reader.read_next_batch(), reader.read_next_batch()]
            sent = min(4, 2 + ahead)
            wait_for(lambda: server.stats.batches_sent == sent, f"{sent} batches sent")
            time.sleep(0.1)  # a paced server has nothing more to send, however long it waits
            assert server.stats.batches_sent == sent
            got = pa.Table.from_batches(first + list(reader), schema=table.schema)
            assert got.equals(table)
            del reader, first, got
            wait_for(lambda: server.stats.clients_active == 0, "the session to end")
            assert server.stats.sessions_failed == 0, server.last_error
    with pytest.raises(ValueError, match="window must be None or a count of batches >= 0"):
        dipc.connect("shm:///nowhere?want_data=1", "t", window=-1)


@pytest.mark.parametrize("transport", ["shm", "ucx"])
def test_spin_changes_how_a_read_waits_not_what_it_reads(transport):
    """spin=0 sleeps at once; a long spin watches for each message on the caller's thread (over
    shm:// it reads the socket itself). The table arrives equal either way, paced or not, and a
    negative spin is refused."""
    needs(transport)
    table = pa.Table.from_batches(mixed_table(10_000).to_batches(max_chunksize=1_000))
    with dipc.Server.start(transport) as server:
        server.add("t", table.to_batches())  # batches: every client reads them all
        for spin in (0, 50, 20_000):
            for window in (None, 0):
                got = pa.RecordBatchReader.from_stream(
                    dipc.connect(server.uri, "t", spin=spin, window=window)).read_all()
                assert got.equals(table), (spin, window)
    with pytest.raises(ValueError, match="spin must be a number of microseconds >= 0"):
        dipc.connect("shm:///nowhere?want_data=1", "t", spin=-1)


def test_a_pool_keeps_a_ucx_connection_between_streams():
    """connect(..., pool=pool): three reads of a UCX server's packed bodies take one connection,
    the second and third on the one the read before gave back (the server's clients_accepted and
    requests_reused), and so does a read by ferry.aio; each table is pyarrow's. A read without
    the pool connects anew; clear() closes what the pool holds."""
    needs("ucx")
    import asyncio

    import ferry.aio

    table = mixed_table(10_000)
    pool = dipc.ConnectionPool()
    assert pool.idle == 0
    with dipc.Server.start("ucx", body_type="packed") as server:
        server.keep("k", table.to_batches(max_chunksize=3_000))
        uri = server.uri_of("k")
        for _ in range(3):
            assert read_back(uri, "k", pool=pool, connect_timeout=5).equals(table)
            assert pool.idle == 1
        assert (server.stats.clients_accepted, server.stats.requests_reused) == (1, 2)

        async def read_async():
            return [b async for b in ferry.aio.dipc.connect(uri, "k", pool=pool)]

        got = asyncio.run(read_async())
        assert pa.Table.from_batches([pa.record_batch(b) for b in got]).equals(table)
        assert (server.stats.clients_accepted, server.stats.requests_reused) == (1, 3)
        assert read_back(uri, "k").equals(table)
        assert server.stats.clients_accepted == 2
        assert server.stats.sessions_failed == 0, server.last_error
        pool.clear()
        assert pool.idle == 0


def test_bad_pool_and_connect_timeout_arguments_raise():
    with pytest.raises(ValueError, match="max_idle must be"):
        dipc.ConnectionPool(max_idle=-1)
    with pytest.raises(ValueError, match="per_server must be 1 or more"):
        dipc.ConnectionPool(per_server=0)
    with pytest.raises(ValueError, match="connect_timeout must be"):
        dipc.connect("shm://@ferry-nobody?want_data=1", "t", connect_timeout=float("nan"))
