"""ferry's core against pyarrow: reading pyarrow arrays, building arrays pyarrow reads, and
rejecting corrupted arrays at the right validation level."""
import ctypes
import json
import re

import numpy as np
import pyarrow as pa
import pytest

import ferry_ctypes as fc
from arrays import TYPE_CASES
from render import render

NAMES = sorted(TYPE_CASES)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("sliced", [False, True], ids=["whole", "sliced"])
def test_pyarrow_arrays_cross_into_ferry(name, sliced):
    arr = TYPE_CASES[name]
    if sliced:
        arr = arr.slice(3, max(len(arr) - 7, 0))  # an offset that is not a multiple of 8
    assert fc.to_json(arr) == render(arr)


@pytest.mark.parametrize("name", NAMES)
def test_empty_arrays_cross_into_ferry(name):
    arr = TYPE_CASES[name].slice(0, 0)
    assert fc.to_json(arr) == []


# Types whose pyarrow arrays ferry's builders rebuild exactly (union children differ in the
# unselected slots, so those are compared value by value instead).
BUILDABLE = [n for n in NAMES if n not in ("sparse_union", "dense_union")]


@pytest.mark.parametrize("name", BUILDABLE)
def test_arrays_built_by_ferry_equal_pyarrow(name):
    expected = TYPE_CASES[name]
    built = fc.array_from_json(expected.type, render(expected))
    built.validate(full=True)
    assert built.type == expected.type
    if name == "float64_special":  # NaN != NaN for equals(): compare the rendering instead
        assert render(built) == render(expected)
    else:
        assert built.equals(expected), f"{built}\n!=\n{expected}"


@pytest.mark.parametrize("name", ["sparse_union", "dense_union"])
def test_unions_built_by_ferry_read_back_in_pyarrow(name):
    expected = TYPE_CASES[name]
    built = fc.array_from_json(expected.type, render(expected))
    built.validate(full=True)
    assert built.type == expected.type
    assert render(built) == render(expected)


def test_schema_to_string_names_nested_types():
    typ = pa.list_(pa.struct([("a", pa.int32()), ("b", pa.timestamp("us", tz="UTC"))]))
    assert fc.schema_to_string(typ) == "list<item: struct<a: int32, b: timestamp[us, tz=UTC]>>"


def _buf(values, dtype):
    return pa.py_buffer(np.array(values, dtype=dtype).tobytes())


def _level_of_failure(arr, patch=None):
    """The lowest level at which ferry rejects `arr` (after `patch` edits its exported C struct),
    with the message; (None, None) if every level passes."""
    with fc.Exported(arr) as exported:
        if patch is not None:
            patch(exported.array)
        for level in (fc.MINIMAL, fc.DEFAULT, fc.FULL):
            try:
                with fc.View(exported) as view:
                    view.validate(level)
            except fc.FerryError as e:
                return level, e.message
    return None, None


def _poke(dtype, index, value, buffer=1, child=None):
    """A patch writing `value` at `index` of a buffer of the exported array (or of a child)."""

    def patch(c_array):
        target = c_array.children[child].contents if child is not None else c_array
        ptr = ctypes.cast(target.buffers[buffer], ctypes.POINTER(dtype))
        ptr[index] = value

    return patch


CORRUPT = {
    "offsets_backwards": (
        lambda: pa.Array.from_buffers(pa.string(), 3, [None, _buf([0, 4, 2, 5], np.int32), pa.py_buffer(b"abcde")]),
        None, fc.FULL, r"element 1: offset 2 < previous offset 4"),
    "offset_past_data": (
        lambda: pa.Array.from_buffers(pa.binary(), 2, [None, _buf([0, 9, 5], np.int32), pa.py_buffer(b"abcde")]),
        None, fc.FULL, r"element 0: offset 9 > data size 5"),
    "list_offset_past_child": (
        lambda: pa.array([[1], [2, 3]], pa.list_(pa.int32())), _poke(ctypes.c_int32, 2, 4),
        fc.DEFAULT, r"last offset 4 > child length 3"),
    "negative_first_offset": (
        lambda: pa.array(["ab"], pa.large_string()), _poke(ctypes.c_int64, 0, -1),
        fc.DEFAULT, r"first offset -1 is negative"),
    "bad_union_type_id": (
        lambda: pa.UnionArray.from_buffers(
            pa.sparse_union([pa.field("a", pa.int32()), pa.field("b", pa.string())]), 2,
            [None, _buf([0, 5], np.int8)], children=[pa.array([1, 2], pa.int32()), pa.array(["x", "y"])]),
        None, fc.FULL, r"element 1: union type id 5 is not declared"),
    "dictionary_index_out_of_range": (
        lambda: pa.DictionaryArray.from_buffers(
            pa.dictionary(pa.int16(), pa.string()), 3, [None, _buf([0, 1, 7], np.int16)],
            dictionary=pa.array(["a", "b"])),
        None, fc.FULL, r"element 2: dictionary index 7 is outside \[0, 2\)"),
    "run_ends_not_increasing": (
        lambda: pa.RunEndEncodedArray.from_arrays(pa.array([2, 3, 5], pa.int32()), pa.array(["a", "b", "c"])),
        _poke(ctypes.c_int32, 1, 2, child=0), fc.FULL, r"run end 2 does not increase"),
    "invalid_utf8": (
        lambda: pa.Array.from_buffers(pa.string(), 2, [None, _buf([0, 2, 4], np.int32), pa.py_buffer(b"ok\xc3(")]),
        None, fc.FULL, r"element 1: invalid UTF-8"),
    "invalid_utf8_view": (
        lambda: pa.array([b"fine", b"\xed\xa0\x80 a surrogate in a long value"], pa.binary_view()).view(pa.string_view()),
        None, fc.FULL, r"element 1: invalid UTF-8"),
    "null_count_mismatch": (
        lambda: pa.Array.from_buffers(pa.int32(), 4, [_buf([0b1011], np.uint8), _buf([1, 2, 3, 4], np.int32)],
                                      null_count=3),
        None, fc.FULL, r"null_count is 3 but the validity buffer has 1 nulls"),
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_corrupted_arrays_are_rejected_at_the_right_level(case):
    make, patch, want_level, pattern = CORRUPT[case]
    level, message = _level_of_failure(make(), patch)
    assert level == want_level, message
    assert re.search(pattern, message), message


def test_wrong_n_buffers_is_a_clear_error():
    with fc.Exported(pa.array(["a", "b"])) as exported:
        exported.array.n_buffers = 2
        with pytest.raises(fc.FerryError, match=r"n_buffers is 2 but string needs 3"):
            fc.View(exported)
        exported.array.n_buffers = 3


def test_buffer_too_short_is_caught_before_reading():
    # A NULL data buffer where 12 bytes are required fails minimal validation; nothing is read.
    arr = pa.array([1, 2, 3], pa.int32())
    with fc.Exported(arr) as exported:
        saved = exported.array.buffers[1]
        exported.array.buffers[1] = None
        with fc.View(exported, minimal=True) as view:
            with pytest.raises(fc.FerryError, match=r"buffer 1 is NULL but 12 bytes are required"):
                view.validate(fc.MINIMAL)
        exported.array.buffers[1] = saved


def test_released_array_is_an_error_not_a_crash():
    with fc.Exported(pa.array([1, 2])) as exported:
        fc.release(exported.array)
        with pytest.raises(fc.FerryError, match="array is released"):
            fc.View(exported)


def test_stream_of_ferry_arrays_reads_in_pyarrow():
    typ = pa.struct([("a", pa.int64()), ("b", pa.string())])
    schema = fc.ArrowSchema()
    pa.field("", typ)._export_to_c(ctypes.addressof(schema))
    batches = [[{"a": 1, "b": "x"}, {"a": 2, "b": None}], [{"a": 3, "b": "z"}]]
    arrays = (fc.ArrowArray * 2)()
    err = fc.FerryErrorStruct()
    for i, rows in enumerate(batches):
        fc.check(fc.lib.FerryArrayFromJson(ctypes.byref(schema), json.dumps(rows).encode(),
                                           ctypes.byref(arrays[i]), ctypes.byref(err)), err)
    stream = fc.ArrowArrayStream()
    fc.check(fc.lib.FerryArrayStreamInit(ctypes.byref(stream), ctypes.byref(schema), 2, arrays,
                                         ctypes.byref(err)), err)
    assert not schema.release and not arrays[0].release  # moved into the stream
    reader = pa.RecordBatchReader._import_from_c(ctypes.addressof(stream))
    table = reader.read_all()
    assert table.to_pylist() == [{"a": 1, "b": "x"}, {"a": 2, "b": None}, {"a": 3, "b": "z"}]
