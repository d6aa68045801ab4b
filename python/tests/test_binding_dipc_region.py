"""ferry.dipc.RegionAllocator and RegionBuffer: a Python producer that builds its batches in the
server's shared region (numpy writes, pyarrow wraps the blocks without a copy) has them lent to
type-1 clients in place, and every block comes back to the region once its client frees the
batch or dies. Oracles: pyarrow tables built from Python lists, and the server's accounting."""
import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pyarrow as pa
import pytest

from test_binding_dipc import needs, read_back, wait_for

ferry = pytest.importorskip("ferry", reason="the ferry binding is not installed (pip install ./python)")
dipc = ferry.dipc

SCHEMA = pa.schema([("x", pa.int64()), ("s", pa.string())])


def text(i, r):
    return f"b{i}r{r}"


def expected_batch(i, rows):
    """Batch i as pyarrow builds it from Python lists: the oracle."""
    return pa.record_batch([pa.array([i * 1000 + r for r in range(rows)], pa.int64()),
                            pa.array([text(i, r) for r in range(rows)], pa.string())], schema=SCHEMA)


def region_batch(allocator, i, rows):
    """Batch i with every buffer in a block of the region: numpy writes the values there, and
    pyarrow wraps the blocks (pyarrow.py_buffer) without copying them."""
    xb = allocator.allocate(8 * rows)
    np.frombuffer(xb, dtype=np.int64)[:] = np.arange(rows, dtype=np.int64) + i * 1000
    texts = [text(i, r).encode() for r in range(rows)]
    ob = allocator.allocate(4 * (rows + 1))
    offsets = np.frombuffer(ob, dtype=np.int32)
    offsets[0] = 0
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    data = b"".join(texts)
    db = allocator.allocate(len(data))
    np.frombuffer(db, dtype=np.uint8)[:] = np.frombuffer(data, dtype=np.uint8)
    x = pa.Array.from_buffers(pa.int64(), rows, [None, pa.py_buffer(xb)])
    s = pa.Array.from_buffers(pa.string(), rows, [None, pa.py_buffer(ob), pa.py_buffer(db)])
    assert x.buffers()[1].address == xb.address  # wrapped, not copied
    return pa.RecordBatch.from_arrays([x, s], schema=SCHEMA)


def region_stream(allocator, batches, rows):
    def produce():
        for i in range(batches):
            yield region_batch(allocator, i, rows)

    return pa.RecordBatchReader.from_batches(SCHEMA, produce())


@pytest.mark.parametrize("transport", ["shm", "ucx"])
def test_batches_built_in_the_region_are_lent_in_place(transport):
    needs(transport)
    batches, rows = 12, 500
    with dipc.Server.start(transport, body_type="list", region_bytes=16 << 20) as server:
        allocator = server.region_allocator()
        assert isinstance(allocator, dipc.RegionAllocator)
        server.add("t", lambda: region_stream(allocator, batches, rows))
        # Over UCX on one host a ferry server sends packed bodies unless asked to lend (UCX would
        # emulate the client's gets): buffer_lists asks.
        got = read_back(server.uri, "t", buffer_lists=transport == "ucx")
        assert got.equals(pa.Table.from_batches([expected_batch(i, rows) for i in range(batches)]))
        stats = server.stats
        assert stats.bodies_lent_in_place == batches
        assert stats.batches_sent == batches
        if transport == "shm":
            assert stats.bytes_in_flight > 0  # the read table still borrows the producer's blocks
        del got
        # Every block the producer took goes back to the region once its batch is freed.
        wait_for(lambda: server.stats.bytes_in_flight == 0, "the producer's blocks to return")
        assert server.stats.sessions_failed == 0, server.last_error


def test_batches_in_pyarrows_pool_are_copied_as_before():
    with dipc.Server.start(body_type="list") as server:
        server.add("t", lambda: pa.RecordBatchReader.from_batches(
            SCHEMA, (expected_batch(i, 100) for i in range(3))))
        assert read_back(server.uri, "t").equals(
            pa.Table.from_batches([expected_batch(i, 100) for i in range(3)]))
        assert server.stats.bodies_lent_in_place == 0
        assert server.stats.batches_sent == 3


def test_a_region_buffer_is_writable_memory_that_goes_back_when_dropped():
    with dipc.Server.start(body_type="list", region_bytes=1 << 20) as server:
        allocator = server.region_allocator()
        block = allocator.allocate(1000)
        assert len(block) == 1000
        assert block.address % 64 == 0
        assert repr(block) == "RegionBuffer(size=1000)"
        view = memoryview(block)
        assert (view.readonly, view.nbytes, view.format, view.strides) == (False, 1000, "B", (1,))
        values = np.frombuffer(block, dtype=np.uint8)
        values[:] = 7
        assert bytes(view[:3]) == b"\x07\x07\x07"
        assert server.stats.bytes_in_flight >= 1000
        del block, view
        assert server.stats.bytes_in_flight >= 1000  # the numpy array still holds the block
        del values
        assert server.stats.bytes_in_flight == 0


def test_what_the_region_cannot_give_is_refused_naming_why():
    with dipc.Server.start(body_type="list", region_bytes=1 << 20, timeout=0.2) as server:
        allocator = server.region_allocator()
        with pytest.raises(ValueError, match="size must be >= 0, not -1"):
            allocator.allocate(-1)
        with pytest.raises(MemoryError, match="allocating 2097152 bytes in the server's shared region"):
            allocator.allocate(2 << 20)
        held = allocator.allocate(900 << 10)
        with pytest.raises(TimeoutError, match="no room for a body of 204800 bytes"):
            allocator.allocate(200 << 10)
        del held
        assert len(allocator.allocate(200 << 10)) == 200 << 10
    with dipc.Server.start(body_type="packed") as packed:
        assert packed.region_allocator() is None  # packed bodies have no region
    with pytest.raises(ValueError, match="the server is stopped"):
        packed.region_allocator()


def test_an_allocation_waits_for_room_without_the_gil():
    # The waiting thread lets the GIL go, so this thread can free the block it waits for.
    with dipc.Server.start(body_type="list", region_bytes=1 << 20, timeout=30) as server:
        allocator = server.region_allocator()
        held = allocator.allocate(900 << 10)
        got = []
        waiter = threading.Thread(target=lambda: got.append(allocator.allocate(600 << 10)))
        waiter.start()
        del held
        waiter.join(timeout=30)
        assert not waiter.is_alive()
        assert len(got) == 1 and len(got[0]) == 600 << 10


CLIENT = """
import sys, pyarrow as pa, ferry
reader = pa.RecordBatchReader.from_stream(ferry.dipc.connect(sys.argv[1], "t"))
held = [reader.read_next_batch() for _ in range(3)]
print(held[2].column(0)[0].as_py(), flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("how", ["SIGKILL", "SIGSTOP"])
def test_a_killed_or_stopped_client_gives_every_lent_block_back(how):
    # A client killed holding lent batches frees nothing itself, and a stopped one frees nothing
    # within the server's timeout: the server reclaims each address and releases each batch to
    # its producer, so the blocks return to the region.
    batches, rows = 40, 200
    with dipc.Server.start(body_type="list", region_bytes=16 << 20, timeout=1.0) as server:
        allocator = server.region_allocator()
        server.add("t", lambda: region_stream(allocator, batches, rows))
        client = subprocess.Popen([sys.executable, "-c", CLIENT, server.uri], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=dict(os.environ))
        try:
            assert client.stdout.readline().strip() == "2000"  # x[0] of batch 2, read in place
            assert server.stats.bytes_in_flight > 0
            client.send_signal(getattr(signal, how))
            wait_for(lambda: server.stats.bytes_in_flight == 0, "the client's blocks to return")
            wait_for(lambda: server.stats.clients_active == 0, "the session to end")
        finally:
            client.kill()
            client.wait()
        stats = server.stats
        assert stats.addresses_reclaimed > 0
        assert stats.addresses_freed + stats.addresses_reclaimed == stats.addresses_lent
        assert stats.bodies_lent_in_place == stats.batches_sent
