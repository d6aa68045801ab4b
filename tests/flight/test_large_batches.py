"""A batch over 2 GiB across gRPC: ferry's DoGet sends it as slices under gRPC's message limit,
which pyarrow.flight and ferry's client read as a table equal to the one served; ferry's client's
DoPut splits the same batch, and the server stores the slices as they came. One test, about 2.5 GiB of int64s
read from a memory-mapped file (the oracle is the file itself, read by pyarrow), freed as soon as
each read is checked: it needs about 6.5 GiB of memory at its peak."""
import gc
import os
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.flight as fl
import pyarrow.ipc as ipc
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry.flight  # noqa: E402

from flight_support import Serve  # noqa: E402

ROWS = (5 << 30) // 2 // 8  # 2.5 GiB of int64
LIMIT = 1 << 30  # the largest body ferry sends in one FlightData


def _check(table, served, label):
    """The table equals `served` (the file as pyarrow maps it), in chunks each under the limit:
    how many chunks."""
    assert table.num_rows == ROWS, label
    expected = served.column("x").chunk(0)
    start = 0
    for chunk in table.column("x").chunks:
        assert chunk.nbytes < LIMIT, (label, chunk.nbytes)
        assert chunk.equals(expected.slice(start, len(chunk))), (label, start)
        start += len(chunk)
    return table.column("x").num_chunks


def test_a_batch_over_2_gib_crosses_grpc(tmp_path):
    t0 = time.monotonic()
    # In memory where /dev/shm has room (writing 2.5 GiB to a disk took a third of the test).
    shm = os.statvfs("/dev/shm") if os.path.isdir("/dev/shm") else None
    room = shm is not None and shm.f_bavail * shm.f_frsize > (4 << 30)
    directory = tempfile.mkdtemp(dir="/dev/shm") if room else str(tmp_path)
    try:
        _run(os.path.join(directory, "big.arrows"), tmp_path)
    finally:
        if room:
            shutil.rmtree(directory)
    print(f"2.5 GiB through DoGet twice, DoPut and DoGet: {time.monotonic() - t0:.1f} s")


def _run(path, tmp_path):
    schema = pa.schema([("x", pa.int64())])
    with ipc.new_stream(str(path), schema) as w:
        w.write_batch(pa.record_batch([pa.array(np.arange(ROWS, dtype=np.int64))], schema=schema))
    gc.collect()
    # The file, mapped: one batch of 2.5 GiB, which no single gRPC message can carry.
    served = ipc.open_stream(pa.memory_map(str(path))).read_all()
    assert served.column("x").num_chunks == 1 and served.nbytes > 2 << 30
    with Serve(f"big={path}", tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)
        ticket = client.get_flight_info(fl.FlightDescriptor.for_path("big")).endpoints[0].ticket
        got = client.do_get(ticket).read_all()
        assert _check(got, served, "pyarrow.flight DoGet") == 3
        del got
        gc.collect()

        ours = ferry.flight.connect(s.uri)
        got = pa.table(ours.do_get("big", via="grpc"))
        assert _check(got, served, "ferry DoGet") == 3
        del got
        gc.collect()

        # ferry's client uploads the one batch as slices; the server stores them as they came.
        ours.do_put("up", served)
        info = client.get_flight_info(fl.FlightDescriptor.for_path("up"))
        assert info.total_records == ROWS
        got = client.do_get(info.endpoints[0].ticket).read_all()
        assert _check(got, served, "ferry's DoPut, read by pyarrow.flight") == 3
        del got, served
        gc.collect()
