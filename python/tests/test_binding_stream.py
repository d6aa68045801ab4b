"""ferry.ArrayStream against pyarrow's RecordBatchReader (host streams both ways, consumed once),
and device streams, which no peer implements yet, against ferry's own C producer."""
import pyarrow as pa
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry  # noqa: E402

from arrays import TYPE_CASES  # noqa: E402
from binding_support import addresses, assert_same, capsule_is  # noqa: E402


def table():
    names = ["int32", "string", "list", "struct", "dictionary", "string_view"]
    return pa.table({n: TYPE_CASES[n] for n in names})


def reader(t, max_chunksize=7):
    return pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=max_chunksize))


def test_pyarrow_reader_into_ferry_yields_the_same_batches_without_copies():
    t = table()
    batches = t.to_batches(max_chunksize=7)
    s = ferry.stream(reader(t))
    assert pa.schema(s.schema) == t.schema
    got = list(s)
    assert len(got) == len(batches)
    for f, b in zip(got, batches):
        back = pa.record_batch(f)
        assert back.equals(b)
        assert addresses(back.column(1)) == addresses(b.column(1))
    assert s.read_next() is None


def test_ferry_stream_into_pyarrow_is_consumed_once():
    t = table()
    s = ferry.stream(reader(t))
    back = pa.RecordBatchReader.from_stream(s).read_all()
    assert back.equals(t)
    assert s.closed
    with pytest.raises(ValueError, match="already consumed"):
        s.__arrow_c_stream__()
    with pytest.raises(ValueError, match="already consumed"):
        s.read_all()


def test_arrays_become_a_stream():
    arrs = [pa.array([1, 2]), pa.array([None, 4])]
    s = ferry.ArrayStream.from_arrays([ferry.array(a) for a in arrs])
    back = pa.RecordBatchReader.from_stream(
        ferry.ArrayStream.from_arrays([ferry.array(pa.record_batch({"x": a})) for a in arrs])).read_all()
    assert back.column("x").chunks == arrs
    assert [pa.array(a) for a in s.read_all()] == arrs


def test_from_arrays_checks_schema_and_device():
    with pytest.raises(ValueError, match="array 1 is int64, the stream's schema int32"):
        ferry.ArrayStream.from_arrays([ferry.array(pa.array([1], pa.int32())), ferry.array(pa.array([1]))])
    with pytest.raises(ValueError, match="an empty list needs a schema"):
        ferry.ArrayStream.from_arrays([])
    guarded = ferry.Device.resolve(ferry.DeviceType.EXT_DEV, 0)
    with pytest.raises(ValueError, match="another device"):
        ferry.ArrayStream.from_arrays([ferry.array(pa.array([1])), ferry.array(pa.array([1])).copy_to(guarded)])
    empty = ferry.ArrayStream.from_arrays([], schema=pa.int8())
    assert empty.read_all() == [] and pa.field(empty.schema).type == pa.int8()


def test_device_streams_from_ferrys_producer_round_trip():
    guarded = ferry.Device.resolve(ferry.DeviceType.EXT_DEV, 0)
    batches = table().to_batches(max_chunksize=9)
    on_device = [ferry.array(b).copy_to(guarded) for b in batches]
    s = ferry.ArrayStream.from_arrays(on_device)
    assert s.device_type == ferry.DeviceType.EXT_DEV
    cap = s.__arrow_c_device_stream__()
    assert capsule_is(cap, "arrow_device_array_stream")
    holder = type("P", (), {"__arrow_c_device_stream__": lambda self, requested_schema=None, **kw: cap})()
    s2 = ferry.stream(holder)
    got = s2.read_all()
    assert [a.device_type for a in got] == [ferry.DeviceType.EXT_DEV] * len(batches)
    for a, b in zip(got, batches):
        assert pa.record_batch(a.copy_to(ferry.Device.cpu())).equals(b)


def test_device_streams_refuse_host_export_and_unknown_keywords():
    guarded = ferry.Device.resolve(ferry.DeviceType.EXT_DEV, 0)
    s = ferry.ArrayStream.from_arrays([ferry.array(pa.array([1])).copy_to(guarded)])
    with pytest.raises(ValueError, match="the stream is on EXT_DEV; use __arrow_c_device_stream__"):
        s.__arrow_c_stream__()
    with pytest.raises(NotImplementedError, match="keyword argument 'sync' is not supported"):
        s.__arrow_c_device_stream__(sync=True)


def test_cpu_device_streams_are_read_by_host_consumers():
    t = table()
    s = ferry.ArrayStream.from_arrays([ferry.array(b) for b in t.to_batches(max_chunksize=5)])
    assert pa.RecordBatchReader.from_stream(s).read_all().equals(t)


def test_stream_errors_carry_the_producers_message():
    def gen():
        yield pa.record_batch({"a": [1]})
        raise ValueError("the producer broke")
    r = pa.RecordBatchReader.from_batches(pa.schema([("a", pa.int64())]), gen())
    s = ferry.stream(r)
    assert s.read_next() is not None
    with pytest.raises(Exception, match="the producer broke"):
        s.read_next()


def test_stream_of_several_arrays_is_not_one_array():
    with pytest.raises(ValueError, match="the stream holds 3 arrays, not one"):
        ferry.array(reader(table(), max_chunksize=15))


def test_requested_schema_of_another_shape_raises_on_streams():
    s = ferry.stream(reader(table()))
    with pytest.raises(ValueError, match="incompatible"):
        s.__arrow_c_stream__(pa.schema([("a", pa.int64())]).__arrow_c_schema__())


def test_record_batch_readers_round_trip_every_type():
    t = pa.table({name: arr for name, arr in TYPE_CASES.items() if len(arr) == len(TYPE_CASES["int8"])})
    back = pa.RecordBatchReader.from_stream(ferry.stream(reader(t, 13))).read_all()
    for name in t.column_names:
        assert_same(back.column(name).combine_chunks(), t.column(name).combine_chunks())
