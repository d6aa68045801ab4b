"""ferry.Schema, ferry.DataType and ferry.Device against pyarrow's own types; ferry.Schema.equals
(the C++ SchemaEquals) against pyarrow.Schema.equals on every pair of many schemas."""
import itertools

import pyarrow as pa
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry  # noqa: E402

from arrays import TYPE_CASES  # noqa: E402
from binding_support import NAMES, variant  # noqa: E402


@pytest.mark.parametrize("name", NAMES)
def test_schemas_round_trip_every_type(name):
    typ = variant(name, "whole").type
    s = ferry.schema(pa.field("col", typ, nullable=True))
    assert s.name == "col" and s.nullable
    back = pa.field(s)
    assert back.type == typ and back.name == "col"
    assert ferry.schema(typ).n_children == typ.num_fields
    assert pa.DataType._import_from_c_capsule(s.type.__arrow_c_schema__()) == typ


def test_data_type_properties_match_pyarrow():
    t = ferry.schema(pa.timestamp("ns", tz="UTC")).type
    assert t.id == ferry.TypeId.TIMESTAMP and t.time_unit == ferry.TimeUnit.NANO and t.timezone == "UTC"
    d = ferry.schema(pa.decimal128(38, 10)).type
    assert (d.decimal_precision, d.decimal_scale, d.decimal_bitwidth) == (38, 10, 128)
    assert ferry.schema(pa.binary(16)).type.fixed_size == 16
    dic = ferry.schema(pa.dictionary(pa.int8(), pa.string())).type
    assert dic.id == ferry.TypeId.DICTIONARY and dic.storage_id == ferry.TypeId.INT8
    assert str(ferry.schema(pa.list_(pa.int32())).type).startswith("list<")


def test_built_schemas_are_read_by_pyarrow():
    s = ferry.Schema("+s", "row", [ferry.Schema("l", "a", nullable=False), ferry.Schema("u", "b")],
                     metadata={"k": "v"})
    field = pa.field(s)
    assert field.type == pa.struct([pa.field("a", pa.int64(), nullable=False), pa.field("b", pa.string())])
    assert field.metadata == {b"k": b"v"} and s.metadata == {b"k": b"v"}
    assert [c.name for c in s.children] == ["a", "b"]
    assert s == ferry.schema(field) and s != ferry.schema(pa.field("row", pa.int8()))
    with pytest.raises(ValueError):
        ferry.Schema("not a format")


def _schemas_to_compare():
    """Schemas that differ from one another in one way each: every type case's type, and beside it
    the same column renamed, not nullable, with field or schema metadata; then pairs that differ
    where Arrow's equality has rules of its own (names a type fixes, flags, zones, extensions)."""
    out = []
    types = {str(a.type): a.type for a in TYPE_CASES.values()}  # one of each
    for t in types.values():
        out += [pa.schema([("c", t)]), pa.schema([("d", t)]),
                pa.schema([pa.field("c", t, metadata={"k": "v"})]),
                pa.schema([("c", t)], metadata={"k": "v"}),
                pa.schema([("c", t), ("e", pa.int8())])]
        if t != pa.null():  # a null column is nullable
            out.append(pa.schema([pa.field("c", t, nullable=False)]))
    i32 = pa.int32()
    for t in [pa.list_(pa.field("item", i32)), pa.list_(pa.field("element", i32)),
              pa.list_(pa.field("item", i32, nullable=False)),
              pa.list_(pa.field("item", i32, metadata={"k": "v"})),
              pa.large_list(pa.field("element", i32)), pa.list_view(pa.field("x", i32)),
              pa.list_(pa.field("a", i32), 2), pa.list_(pa.field("b", i32), 2),
              pa.map_(pa.string(), i32), pa.map_(pa.string(), i32, keys_sorted=True),
              pa.map_(pa.field("k", pa.string(), nullable=False), pa.field("v", i32)),
              pa.map_(pa.string(), pa.field("value", i32, nullable=False)),
              pa.dictionary(pa.int8(), pa.string()), pa.dictionary(pa.int16(), pa.string()),
              pa.dictionary(pa.int8(), pa.string(), ordered=True),
              pa.dictionary(pa.int8(), pa.large_string()),
              pa.timestamp("us", "UTC"), pa.timestamp("us", "+00:00"), pa.timestamp("us"),
              pa.timestamp("ns", "UTC"), pa.decimal128(10, 2), pa.decimal128(10, 3),
              pa.decimal256(10, 2), pa.struct([("a", i32)]), pa.struct([("b", i32)]),
              pa.struct([pa.field("a", i32, nullable=False)]),
              pa.sparse_union([pa.field("a", i32)], [3]), pa.sparse_union([pa.field("a", i32)], [4]),
              pa.dense_union([pa.field("a", i32)], [3]),
              pa.run_end_encoded(pa.int32(), i32), pa.run_end_encoded(pa.int16(), i32),
              pa.binary(16), pa.uuid()]:
        out.append(pa.schema([("c", t)]))
    return out


def test_schema_equality_is_pyarrows_on_every_pair():
    schemas = _schemas_to_compare()
    ours = [ferry.schema(s) for s in schemas]
    for (i, a), (j, b) in itertools.product(enumerate(schemas), repeat=2):
        for check_metadata in (False, True):
            assert ours[i].equals(ours[j], check_metadata=check_metadata) == \
                a.equals(b, check_metadata=check_metadata), (a, b, check_metadata)
        assert (ours[i] == ours[j]) == (a == b), (a, b)
    # Any __arrow_c_schema__ producer is taken, and the default leaves metadata out as pyarrow's.
    tagged = pa.schema([("c", pa.int8())], metadata={"k": "v"})
    assert ferry.schema(tagged).equals(pa.schema([("c", pa.int8())]))
    assert not ferry.schema(tagged).equals(pa.schema([("c", pa.int8())]), check_metadata=True)
    assert ferry.schema(tagged) != tagged  # == compares ferry.Schema objects only


def test_schema_errors():
    with pytest.raises(TypeError, match="expected an object with __arrow_c_schema__, got int"):
        ferry.schema(1)
    with pytest.raises(IndexError, match="out of range"):
        ferry.schema(pa.int8()).child(0)


def test_devices():
    cpu = ferry.Device.cpu()
    assert cpu.device_type == ferry.DeviceType.CPU and cpu.device_id == -1 and cpu.host_accessible
    assert ferry.Device.resolve(ferry.DeviceType.CPU, -1) == cpu
    devices = ferry.devices()
    assert devices[0] == cpu
    guarded = ferry.Device.resolve(ferry.DeviceType.EXT_DEV, 0)
    assert guarded in devices and not guarded.host_accessible
    assert repr(cpu) == "<ferry.Device CPU>"
    with pytest.raises(ValueError):
        ferry.Device.resolve(ferry.DeviceType.EXT_DEV, 7)
    with pytest.raises(ValueError):
        ferry.Device.resolve(ferry.DeviceType.METAL, 0)
