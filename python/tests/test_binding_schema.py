"""ferry.Schema, ferry.DataType and ferry.Device against pyarrow's own types."""
import pyarrow as pa
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry  # noqa: E402

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
