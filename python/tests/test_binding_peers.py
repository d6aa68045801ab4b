"""Real peers, each behind importorskip: nanoarrow (c_device_array, no keyword arguments),
arro3-core, polars (string views) and duckdb (a stream consumed once). pyarrow is the oracle."""
import pyarrow as pa
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry  # noqa: E402

from arrays import TYPE_CASES  # noqa: E402
from binding_support import addresses, assert_same  # noqa: E402


@pytest.mark.parametrize("name", ["int64", "string", "list", "struct", "bool", "dictionary"])
def test_nanoarrow_device_arrays_both_ways(name):
    na = pytest.importorskip("nanoarrow")
    device = pytest.importorskip("nanoarrow.device")
    arr = TYPE_CASES[name]
    f = ferry.array(arr)
    c = device.c_device_array(f)  # nanoarrow calls __arrow_c_device_array__ with no keywords
    assert c.device_type == device.DeviceType.CPU and c.device_id == -1
    assert c.array.length == len(arr)
    back = ferry.array(c)
    assert_same(pa.array(back), arr)
    assert addresses(pa.array(back)) == addresses(arr)
    assert_same(pa.array(ferry.array(na.c_array(arr))), arr)


def test_arro3_arrays_and_streams_both_ways():
    arro3 = pytest.importorskip("arro3.core")
    arr = TYPE_CASES["string"]
    a3 = arro3.Array.from_arrow(ferry.array(arr))
    back = ferry.array(a3)
    assert_same(pa.array(back), arr)
    assert addresses(pa.array(back)) == addresses(arr)
    t = pa.table({"s": arr, "i": TYPE_CASES["int32"]})
    reader = arro3.RecordBatchReader.from_arrow(ferry.stream(pa.RecordBatchReader.from_batches(t.schema, t.to_batches(7))))
    assert pa.table(reader.read_all()).equals(t)


def test_polars_string_views_round_trip():
    pl = pytest.importorskip("polars")
    arr = TYPE_CASES["string_view"]
    s = pl.Series(ferry.array(pa.array(arr.to_pylist(), pa.string())))
    assert s.to_list() == arr.to_pylist()
    # polars exports string views: ferry reads them as they are.
    f = ferry.array(s)
    assert f.type.id == ferry.TypeId.STRING_VIEW
    f.validate(ferry.ValidationLevel.FULL)
    assert pa.array(f).to_pylist() == arr.to_pylist()


def test_duckdb_consumes_a_stream_once():
    duckdb = pytest.importorskip("duckdb")
    t = pa.table({"a": TYPE_CASES["int64"], "s": TYPE_CASES["string"]})
    s = ferry.stream(pa.RecordBatchReader.from_batches(t.schema, t.to_batches(9)))
    expected = pa.compute.sum(t["a"]).as_py()
    con = duckdb.connect()
    result = con.execute("SELECT sum(a) AS total, count(s) AS n FROM s").fetchall()
    assert result == [(expected, len(t) - t["s"].null_count)]
    assert s.closed
    with pytest.raises(Exception, match="already consumed"):
        s.read_all()
    # duckdb's relations are stream producers too.
    back = ferry.stream(con.sql("SELECT * FROM t")).read_all()
    got = pa.Table.from_batches([pa.record_batch(b) for b in back])
    assert got.sort_by([("a", "ascending"), ("s", "ascending")]).equals(
        t.sort_by([("a", "ascending"), ("s", "ascending")]))
