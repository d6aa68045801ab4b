"""DoGet's slices of a batch over the message limit, for every kind of column: a ferry server
told to send bodies of at most 64 KiB sends one batch of mixed columns (ints and floats with
nulls, strings, lists, structs, a dictionary, timestamps) as slices of whole rows, whose offsets
are rebased and whose bitmaps are shifted, and pyarrow.flight (the oracle) and ferry's client each
read back a table equal to the one served. tests/flight/test_large_batches.py does the same at
gRPC's own limit, with 2.5 GiB."""
import pyarrow as pa
import pyarrow.flight as fl
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry.flight  # noqa: E402

from flight_support import mixed_table  # noqa: E402

LIMIT = 64 << 10


@pytest.fixture(scope="module")
def served():
    table = mixed_table(rows=20_000, seed=3)
    assert table.column("i").num_chunks == 1  # one batch, well over the limit
    with ferry.flight.Server.start(max_message_bytes=LIMIT) as server:
        server.add("t", table)
        yield server, table


def test_pyarrow_reads_every_type_from_slices(served):
    server, table = served
    client = fl.connect(server.uri)
    ticket = client.get_flight_info(fl.FlightDescriptor.for_path("t")).endpoints[0].ticket
    got = client.do_get(ticket).read_all()
    assert got.column("i").num_chunks > 1, "the batch was not split"
    assert sum(len(c) for c in got.column("i").chunks[:-1]) % 64 == 0
    assert got.equals(table)
    # Each slice stands alone: its arrays start at offset 0 and hold only their rows' values.
    for batch in got.to_batches():
        assert batch.validate(full=True) is None
        strings = batch.column("s")
        assert strings.offset == 0


def test_ferry_reads_every_type_from_slices(served):
    server, table = served
    got = pa.table(ferry.flight.connect(server.uri).do_get("t", via="grpc"))
    assert got.column("i").num_chunks > 1
    assert got.equals(table)


def test_a_limit_out_of_range_is_refused():
    for bad in (0, -1, (1 << 30) + 1):
        with pytest.raises(ferry.InvalidArgumentError, match="max_message_body must be 1 to"):
            ferry.flight.Server.start(max_message_bytes=bad)
