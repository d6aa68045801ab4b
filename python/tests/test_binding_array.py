"""ferry.Array against pyarrow: the Arrow PyCapsule interface both ways (device capsules first),
zero-copy checked by buffer address, validate/copy_to/move_to, and every error path."""
import gc

import pyarrow as pa
import pytest

ferry = pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry  # noqa: E402

from binding_support import NAMES, VARIANTS, Only, addresses, assert_same, capsule_is, variant  # noqa: E402


@pytest.fixture(params=NAMES)
def name(request):
    return request.param


@pytest.fixture(params=VARIANTS)
def arr(request, name):
    return variant(name, request.param)


@pytest.fixture(scope="module")
def guarded():
    return ferry.Device.resolve(ferry.DeviceType.EXT_DEV, 0)


def test_round_trip_through_device_capsules_is_zero_copy(arr):
    f = ferry.array(arr)
    assert f.device_type == ferry.DeviceType.CPU and f.device_id == -1
    assert len(f) == len(arr) and f.length == len(arr)
    assert f.offset == arr.offset
    assert f.null_count in (arr.null_count, -1)
    back = pa.array(f)  # pa.array tries __arrow_c_device_array__ first
    assert_same(back, arr)
    assert addresses(back) == addresses(arr)


def test_round_trip_through_host_capsules_is_zero_copy(arr):
    f = ferry.array(Only(arr, "__arrow_c_array__"))
    back = pa.array(Only(f, "__arrow_c_array__"))
    assert_same(back, arr)
    assert addresses(back) == addresses(arr)


def test_round_trip_through_a_stream_of_one_array(arr):
    reader = pa.RecordBatchReader.from_batches(pa.schema([("c", arr.type)]), [pa.record_batch([arr], names=["c"])])
    f = ferry.array(reader)
    assert_same(pa.array(f).field(0), arr)


def test_the_host_array_of_ferry_is_read_by_pyarrow_and_stays_usable(arr):
    f = ferry.array(arr)
    first = pa.array(f)
    second = pa.array(f)  # export is a shallow reference: the Array can be exported again
    assert_same(first, arr)
    assert_same(second, arr)


@pytest.mark.parametrize("how", VARIANTS)
def test_children_are_pyarrow_fields_before_the_parent_offset(how):
    arr = variant("struct", how)
    f = ferry.array(arr)
    assert f.n_children == arr.type.num_fields == len(f.children)
    for i, child in enumerate(f.children):
        # The C data interface leaves a parent's offset to the reader: apply it as pyarrow does.
        assert_same(pa.array(child).slice(arr.offset, len(arr)), arr.field(i))


def test_a_child_keeps_its_root_alive_and_shares_its_buffers():
    arr = variant("struct", "whole")
    f = ferry.array(arr)
    child = f.child(1)
    del f
    gc.collect()
    back = pa.array(child)
    assert_same(back, arr.field(1))
    assert addresses(back) == addresses(arr.field(1))


def test_dictionary_is_the_pyarrow_dictionary():
    arr = variant("dictionary", "whole")
    assert pa.array(ferry.array(arr).dictionary).equals(arr.dictionary)
    assert ferry.array(pa.array([1])).dictionary is None


def test_child_arrays_equal_pyarrow_fields():
    arr = variant("struct", "whole")
    f = ferry.array(arr)
    for i in range(arr.type.num_fields):
        assert_same(pa.array(f.child(i)), arr.field(i))
    with pytest.raises(IndexError, match=r"child 5 out of range \[0, 2\)"):
        f.child(5)


def test_schema_and_type_describe_the_array(arr):
    f = ferry.array(arr)
    assert pa.field(f.schema).type == arr.type
    assert pa.DataType._import_from_c_capsule(f.__arrow_c_schema__()) == arr.type
    assert f.type.name  # every type has a name
    if pa.types.is_timestamp(arr.type):
        assert f.type.timezone == (arr.type.tz or "")


def test_validate_at_every_level_accepts_pyarrow_arrays(arr):
    f = ferry.array(arr)
    for level in ferry.ValidationLevel.__members__.values():
        f.validate(level)


def test_validate_reports_bad_offsets():
    import numpy as np
    bad = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(np.array([0, 5, 3], np.int32)),
                                                 pa.py_buffer(b"abcde")])
    with pytest.raises(ValueError):
        bad.validate(full=True)  # the oracle: pyarrow rejects it too
    with pytest.raises(ValueError, match="offset"):
        ferry.array(bad).validate(ferry.ValidationLevel.FULL)


def test_copy_to_the_guarded_device_and_back_equals_pyarrow(arr, guarded):
    on_device = ferry.array(arr).copy_to(guarded)
    assert on_device.device_type == ferry.DeviceType.EXT_DEV and on_device.device_id == 0
    on_device.validate(ferry.ValidationLevel.MINIMAL)
    back = on_device.copy_to(ferry.Device.cpu())
    assert back.device_type == ferry.DeviceType.CPU
    back.validate(ferry.ValidationLevel.FULL)
    assert_same(pa.array(back), arr)


def test_device_data_refuses_host_capsules(guarded):
    on_device = ferry.array(pa.array([1, 2, 3])).copy_to(guarded)
    with pytest.raises(ValueError, match="on EXT_DEV, not the CPU"):
        on_device.__arrow_c_array__()
    schema, array = on_device.__arrow_c_device_array__()
    assert capsule_is(schema, "arrow_schema") and capsule_is(array, "arrow_device_array")
    # pyarrow (no CUDA, no external device) declines such data: the oracle for "not host memory".
    with pytest.raises((NotImplementedError, ValueError, ImportError, KeyError), match="not registered|CUDA|device"):
        pa.array(on_device)


def test_move_to_the_same_device_shares_buffers():
    arr = pa.array([1, None, 3])
    moved = ferry.array(arr).move_to(ferry.Device.cpu())
    assert_same(pa.array(moved), arr)
    assert addresses(pa.array(moved)) == addresses(arr)


def test_move_to_a_device_that_cannot_reach_the_memory_raises(guarded):
    with pytest.raises(NotImplementedError):
        ferry.array(pa.array([1, 2])).move_to(guarded)


def test_capsule_names_follow_the_specification():
    f = ferry.array(pa.array([1, 2]))
    s, a = f.__arrow_c_array__()
    assert capsule_is(s, "arrow_schema") and capsule_is(a, "arrow_array")
    s, d = f.__arrow_c_device_array__()
    assert capsule_is(d, "arrow_device_array")
    assert capsule_is(f.__arrow_c_schema__(), "arrow_schema")


def test_unknown_keywords_that_are_not_none_raise():
    f = ferry.array(pa.array([1, 2]))
    f.__arrow_c_device_array__(stream=None)  # None is allowed
    with pytest.raises(NotImplementedError, match="keyword argument 'stream' is not supported"):
        f.__arrow_c_device_array__(stream=7)


def test_requested_schema_relabels_when_the_layout_is_the_same():
    arr = pa.array(["a", None, "ccc"])
    back = pa.array(ferry.array(arr), type=pa.binary())
    assert back.equals(arr.cast(pa.binary()))
    assert addresses(back) == addresses(arr)


def test_requested_schema_that_needs_a_cast_is_left_to_the_consumer():
    arr = pa.array([1, None, 3], pa.int32())
    s, a = ferry.array(arr).__arrow_c_array__(pa.int64().__arrow_c_schema__())
    back = pa.Array._import_from_c_capsule(s, a)  # ferry's own schema comes back: the consumer casts
    assert back.type == pa.int32() and back.equals(arr)
    assert back.cast(pa.int64()).equals(arr.cast(pa.int64()))


def test_requested_schema_of_another_shape_raises():
    arr = pa.array([{"a": 1, "b": "x"}])
    request = pa.struct([("a", pa.int64())])
    with pytest.raises(ValueError, match="incompatible with the data: the array has 2 children, the request 1"):
        ferry.array(arr).__arrow_c_array__(request.__arrow_c_schema__())


def test_import_with_requested_schema_the_producer_honours():
    arr = pa.array([1, 2], pa.int32())
    f = ferry.array(arr, pa.int64())  # pyarrow casts on export to honour the request
    assert pa.array(f).equals(arr.cast(pa.int64()))


def test_import_of_a_non_producer_raises():
    with pytest.raises(TypeError, match="int exports none of __arrow_c_device_array__"):
        ferry.array(42)


def test_a_consumed_capsule_cannot_be_imported_twice():
    s, a = pa.array([1, 2]).__arrow_c_array__()
    holder = type("H", (), {"__arrow_c_array__": lambda self, requested_schema=None: (s, a)})()
    ferry.array(holder)
    with pytest.raises(ValueError, match="capsule was already consumed"):
        ferry.array(holder)


def test_a_capsule_of_the_wrong_name_is_refused():
    s, a = pa.array([1]).__arrow_c_array__()
    holder = type("H", (), {"__arrow_c_array__": lambda self, requested_schema=None: (a, s)})()
    with pytest.raises(TypeError, match="expected a PyCapsule named 'arrow_schema', got 'arrow_array'"):
        ferry.array(holder)


def test_repr_names_type_length_and_device():
    assert repr(ferry.array(pa.array([1, 2], pa.int16()))) == "<ferry.Array int16 length=2 device=CPU>"
