"""A batch over 2 GiB across gRPC: ferry's DoGet sends it as slices under gRPC's message limit,
which pyarrow.flight and ferry's client read as a table equal to the one served; ferry's client's
DoPut splits the same batch, and the server stores it whole. One test, about 2.5 GiB of int64s
read from a memory-mapped file (the oracle is the file itself, read by pyarrow), freed as soon as
each read is checked: it needs about 8 GiB of memory at its peak and some 20 s."""
import gc
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


def _check(table, label):
    """The table is the ROWS integers 0, 1, ... in order, in chunks each under the limit."""
    assert table.num_rows == ROWS, label
    start = 0
    for chunk in table.column("x").chunks:
        assert chunk.nbytes < LIMIT, (label, chunk.nbytes)
        values = chunk.to_numpy(zero_copy_only=True)
        assert values[0] == start and values[-1] == start + len(values) - 1, label
        assert np.array_equal(values, np.arange(start, start + len(values))), label
        start += len(values)
    return table.column("x").num_chunks


def test_a_batch_over_2_gib_crosses_grpc(tmp_path):
    t0 = time.monotonic()
    path = tmp_path / "big.arrows"
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
        assert _check(got, "pyarrow.flight DoGet") == 3
        del got
        gc.collect()

        ours = ferry.flight.connect(s.uri)
        got = pa.table(ours.do_get("big", via="grpc"))
        assert _check(got, "ferry DoGet") == 3
        del got
        gc.collect()

        # ferry's client uploads the one batch as slices; the server stores them as they came.
        ours.do_put("up", served)
        info = client.get_flight_info(fl.FlightDescriptor.for_path("up"))
        assert info.total_records == ROWS
        ticket = info.endpoints[0].ticket
        got = client.do_get(ticket).read_all()
        assert _check(got, "pyarrow.flight DoGet of ferry's DoPut") == 3
        del got, served
        gc.collect()
    print(f"2.5 GiB through DoGet twice, DoPut and DoGet: {time.monotonic() - t0:.1f} s")
