"""ferry.MemoryView against NumPy (and torch on the CPU): the buffer protocol both ways, DLPack
both ways (versioned and legacy capsules, the used_ renaming, the copy and stream rules), the
CUDA Array Interface parsed by hand, and lifetimes."""
import gc
import weakref

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry  # noqa: E402

from binding_support import capsule_name  # noqa: E402

DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
          np.float16, np.float32, np.float64]
LAYOUTS = ["contiguous", "strided", "transposed", "empty", "scalar"]


def make(dtype, layout):
    a = (np.arange(24) * 3 - 7).astype(dtype).reshape(4, 6)
    if layout == "strided":
        return a[::2, 1::2]
    if layout == "transposed":
        return a.T
    if layout == "empty":
        return a[:0]
    if layout == "scalar":
        return np.array(5, dtype)
    return a


def extent(a):
    if a.size == 0:
        return 0
    return a.itemsize + sum((n - 1) * abs(s) for n, s in zip(a.shape, a.strides))


@pytest.fixture(params=DTYPES, ids=lambda d: np.dtype(d).name)
def dtype(request):
    return request.param


@pytest.fixture(params=LAYOUTS)
def a(request, dtype):
    return make(dtype, request.param)


def test_buffer_protocol_in_describes_the_array_as_numpy_does(a):
    mv = ferry.MemoryView(a)
    assert mv.ptr == a.__array_interface__["data"][0]
    assert tuple(mv.shape) == a.shape
    assert tuple(mv.strides) == a.strides
    assert mv.ndim == a.ndim and mv.itemsize == a.itemsize
    assert mv.nbytes == extent(a)
    assert mv.readonly is False
    assert mv.device_type == ferry.DeviceType.CPU and mv.device_id == -1
    assert mv.obj is a
    assert mv.c_contiguous == a.flags.c_contiguous


def test_buffer_protocol_out_is_zero_copy_and_typed_by_size(a):
    mv = ferry.MemoryView(a)
    back = np.asarray(mv)
    assert back.__array_interface__["data"][0] == a.__array_interface__["data"][0]
    assert back.dtype.itemsize == a.dtype.itemsize and back.dtype.kind == a.dtype.kind
    np.testing.assert_array_equal(back, a)
    assert memoryview(mv).format == memoryview(np.ascontiguousarray(a)).format.replace("@", "<") or \
        np.dtype(memoryview(mv).format) == a.dtype


def test_a_buffer_export_keeps_the_memory_not_the_view():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    mv = ferry.MemoryView(a)
    gone = weakref.ref(mv)
    exported = memoryview(mv)
    assert exported.obj is not mv  # a record of the export owns the memory, not the view object
    del mv
    gc.collect()
    assert gone() is None
    np.testing.assert_array_equal(np.asarray(exported), a)
    assert exported.shape == (3, 4) and exported.strides == (16, 4)


def test_pyarrow_holding_an_export_at_exit_reports_no_leak(tmp_path):
    # pyarrow never releases what it holds once the interpreter finalizes (GH-38626); the export
    # it keeps must not be a ferry.MemoryView instance, or nanobind reports it leaked at exit.
    import subprocess
    import sys

    script = tmp_path / "hold.py"
    script.write_text(
        "import pyarrow as pa, ferry\n"
        "data = ferry.ipc.write_stream(pa.table({'x': [1, 2, 3]}))\n"
        "table = pa.ipc.open_stream(pa.py_buffer(data)).read_all()\n"
        "assert table.column('x').to_pylist() == [1, 2, 3]\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "leaked" not in r.stderr, r.stderr


def test_dlpack_out_is_zero_copy(a):
    mv = ferry.MemoryView(a)
    back = np.from_dlpack(mv)
    assert back.__array_interface__["data"][0] == a.__array_interface__["data"][0]
    assert back.dtype == a.dtype
    np.testing.assert_array_equal(back, a)


def test_dlpack_in_is_zero_copy(a):
    mv = ferry.from_dlpack(a)
    assert mv.ptr == a.__array_interface__["data"][0]
    assert tuple(mv.shape) == a.shape and tuple(mv.strides) == a.strides
    np.testing.assert_array_equal(np.asarray(mv), a)


def test_readonly_arrays_give_readonly_views():
    a = np.arange(4.0)
    a.flags.writeable = False
    mv = ferry.MemoryView(a)
    assert mv.readonly
    assert memoryview(mv).readonly
    assert not np.asarray(mv).flags.writeable
    assert not np.from_dlpack(mv).flags.writeable
    import ctypes
    with pytest.raises(TypeError, match="not writable|read-only"):
        (ctypes.c_char * 32).from_buffer(mv)


def test_writable_views_write_through():
    a = np.zeros(4, np.int32)
    mv = ferry.MemoryView(a)
    np.asarray(mv)[2] = 7
    assert a[2] == 7


def test_bytes_and_bytearray_are_buffers():
    b = bytearray(b"ferry")
    mv = ferry.MemoryView(b)
    assert mv.format in ("<B", "B") and mv.nbytes == 5 and not mv.readonly
    assert bytes(mv) == b"ferry"
    assert ferry.MemoryView(b"abc").readonly


def test_slices_reference_their_parent_and_follow_numpy():
    a = np.arange(10, dtype=np.int64)
    mv = ferry.MemoryView(a)
    for key in [slice(2, 7), slice(None, None, 3), slice(8, 1, -2), slice(20, 30)]:
        s = mv[key]
        assert s.obj is mv
        np.testing.assert_array_equal(np.asarray(s), a[key])
        assert s.nbytes == extent(a[key])
    with pytest.raises(TypeError, match="indices must be integers or slices, not str"):
        mv["3"]


def test_integers_and_tuples_index_as_numpy_does(a):
    # NumPy's own indexing is the oracle: the same key gives the same items, shape and strides
    # (an integer drops its dimension; a single item is a 0-d view), and no copy.
    mv = ferry.MemoryView(a)
    keys = [0, -1, (1, 2), (slice(None, None, -1), 3), (slice(1, 3), -2), (2,), (-4, slice(1, None, 2))]
    for key in keys:
        try:
            expected = a[key]
        except IndexError:
            with pytest.raises(IndexError):
                mv[key]
            continue
        got = mv[key]
        assert got.obj is mv
        back = np.asarray(got)
        assert back.shape == np.shape(expected)
        np.testing.assert_array_equal(back, expected)
        if isinstance(expected, np.ndarray) and expected.size:
            assert got.ptr == expected.__array_interface__["data"][0]
            assert tuple(got.strides) == expected.strides or expected.size == 1


def test_bad_indices_name_what_is_wrong():
    mv = ferry.MemoryView(np.arange(12).reshape(3, 4))
    with pytest.raises(IndexError, match="index 3 is out of range for dimension 0 of extent 3"):
        mv[3]
    with pytest.raises(IndexError, match="index -5 is out of range for dimension 1 of extent 4"):
        mv[0, -5]
    with pytest.raises(IndexError, match="3 indices for a view of 2 dimensions"):
        mv[0, 0, 0]


def test_owners_live_exactly_as_long_as_the_views():
    class Owner(bytearray):
        pass

    owner = Owner(b"0123456789")
    ref = weakref.ref(owner)
    mv = ferry.MemoryView(owner)
    child = mv[2:5]
    del owner, mv
    gc.collect()
    assert ref() is not None  # the slice holds its parent, which holds the owner
    assert bytes(child) == b"234"
    del child
    gc.collect()
    assert ref() is None


def test_numpy_consumer_keeps_the_owner_alive():
    a = np.arange(6.0)
    ref = weakref.ref(a)
    mv = ferry.MemoryView(a)
    back = np.from_dlpack(mv)
    del a, mv
    gc.collect()
    assert ref() is not None  # held through the DLPack tensor's deleter
    np.testing.assert_array_equal(back, np.arange(6.0))
    del back
    gc.collect()
    assert ref() is None


def test_versioned_capsules_are_renamed_when_consumed():
    mv = ferry.MemoryView(np.arange(3))
    cap = mv.__dlpack__(max_version=(1, 0))
    assert capsule_name(cap) == "dltensor_versioned"
    view = ferry.from_dlpack(cap)
    assert capsule_name(cap) == "used_dltensor_versioned"
    np.testing.assert_array_equal(np.asarray(view), np.arange(3))
    with pytest.raises(ValueError, match="already consumed"):
        ferry.from_dlpack(cap)


def test_legacy_capsules_without_max_version():
    a = np.arange(3)
    mv = ferry.MemoryView(a)
    cap = mv.__dlpack__()
    assert capsule_name(cap) == "dltensor"
    view = ferry.from_dlpack(cap)
    assert capsule_name(cap) == "used_dltensor"
    assert view.ptr == a.__array_interface__["data"][0]


def test_legacy_producers_are_asked_again_without_max_version():
    a = np.arange(5, dtype=np.float32)

    class Legacy:
        def __dlpack__(self, stream=None):  # a pre-1.0 producer: no max_version
            return ferry.MemoryView(a).__dlpack__()

        def __dlpack_device__(self):
            return (1, 0)

    view = ferry.from_dlpack(Legacy())
    np.testing.assert_array_equal(np.asarray(view), a)


def test_read_only_views_need_versioned_capsules():
    a = np.arange(3)
    a.flags.writeable = False
    with pytest.raises(BufferError, match="read-only view needs max_version"):
        ferry.MemoryView(a).__dlpack__()


def test_unconsumed_capsules_free_their_tensor():
    a = np.arange(3)
    ref = weakref.ref(a)
    cap = ferry.MemoryView(a).__dlpack__(max_version=(1, 0))
    del a
    gc.collect()
    assert ref() is not None
    del cap
    gc.collect()
    assert ref() is None


def test_dlpack_copy_and_device_rules():
    a = np.arange(12, dtype=np.int16).reshape(3, 4)[:, ::2]
    mv = ferry.MemoryView(a)
    copied = np.from_dlpack(mv, copy=True)
    assert copied.__array_interface__["data"][0] != a.__array_interface__["data"][0]
    np.testing.assert_array_equal(copied, a)
    assert mv.__dlpack_device__() == (1, 0)
    np.from_dlpack(mv, device="cpu")
    with pytest.raises(BufferError, match="is not the view's device"):
        mv.__dlpack__(max_version=(1, 0), dl_device=(2, 0))
    with pytest.raises(ValueError, match="stream must be None for CPU memory"):
        mv.__dlpack__(stream=1)


def test_item_formats_numpy_cannot_map_by_letter_are_matched_by_size():
    # 'l' is 8 bytes in NumPy's native format strings but 4 in pack templates: sizes decide.
    a = np.arange(3, dtype=np.int_)
    assert np.asarray(ferry.MemoryView(a)).dtype == np.int64


def test_unsupported_formats_raise():
    with pytest.raises(ValueError, match="unknown format character 'O'"):
        ferry.MemoryView(np.array([object()]))


def test_objects_without_a_protocol_raise():
    with pytest.raises(TypeError, match="int exposes neither the buffer protocol"):
        ferry.MemoryView(3)


class FakeCuda:
    """An object exposing only __cuda_array_interface__ (never dereferenced on a machine
    without CUDA: ferry parses the dict and records the device)."""

    def __init__(self, host, **extra):
        self.host = host
        self.__cuda_array_interface__ = {
            "shape": host.shape, "typestr": host.dtype.str, "version": 3,
            "data": (host.__array_interface__["data"][0], False), "strides": None, **extra}


def test_cuda_array_interface_is_parsed_by_hand():
    # No stream: nothing to wait on, so no driver is needed (test_cuda.py covers streams).
    host = np.zeros((3, 4), np.float32)
    mv = ferry.MemoryView(FakeCuda(host))
    assert mv.device_type == ferry.DeviceType.CUDA
    assert mv.ptr == host.__array_interface__["data"][0]
    assert tuple(mv.shape) == (3, 4) and tuple(mv.strides) == host.strides
    assert mv.nbytes == host.nbytes and mv.stream is None
    cai = mv.__cuda_array_interface__
    assert cai["shape"] == (3, 4) and cai["typestr"] == "<f4" and cai["version"] == 3
    assert cai["data"] == (host.__array_interface__["data"][0], False)
    assert "stream" not in cai
    with pytest.raises(BufferError, match="on CUDA"):
        memoryview(mv)


@pytest.mark.parametrize("dtype,fmt", [(np.float16, "<e"), (np.bool_, "<?"), (np.complex64, "<Zf"),
                                       (np.complex128, "<Zd")])
def test_cuda_array_interface_typestrs_of_every_numpy_scalar_cross(dtype, fmt):
    host = np.zeros((2, 3), dtype)
    mv = ferry.MemoryView(FakeCuda(host))
    assert mv.format == fmt and mv.itemsize == host.itemsize
    assert mv.__cuda_array_interface__["typestr"] == host.dtype.str


def test_cuda_array_interface_errors():
    host = np.zeros(3, np.int32)
    bad = FakeCuda(host)
    del bad.__cuda_array_interface__["typestr"]
    with pytest.raises(ValueError, match="lacks the required key 'typestr'"):
        ferry.MemoryView(bad)
    with pytest.raises((ValueError, NotImplementedError), match="mask"):
        ferry.MemoryView(FakeCuda(host, mask=np.ones(3, bool)))
    with pytest.raises(AttributeError, match="not CUDA"):
        ferry.MemoryView(host).__cuda_array_interface__


def test_views_of_ferry_arrays_match_pyarrow():
    arr = pa.array([1.5, 2.5, 3.5])
    mv = ferry.MemoryView.from_array(ferry.array(arr))
    assert mv.readonly and mv.ptr == arr.buffers()[1].address
    np.testing.assert_array_equal(np.asarray(mv), arr.to_numpy())


def test_torch_cpu_tensors_cross_by_dlpack():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    mv = ferry.from_dlpack(t)
    assert mv.ptr == t.data_ptr()
    back = torch.from_dlpack(mv)
    assert back.data_ptr() == t.data_ptr() and torch.equal(back, t)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_torch_two_byte_floats_cross_by_dlpack_keeping_their_type(name):
    torch = pytest.importorskip("torch")
    t = (torch.arange(12, dtype=torch.float32) / 3 - 1).to(getattr(torch, name)).reshape(3, 4)
    mv = ferry.from_dlpack(t)
    # The struct-module code where there is one (half floats: "e"), else ferry's braced name.
    assert mv.format == {"float16": "<e", "bfloat16": "{bfloat16}"}[name]
    assert mv.itemsize == 2 and mv.ptr == t.data_ptr()
    back = torch.from_dlpack(mv)
    assert back.dtype == t.dtype and back.data_ptr() == t.data_ptr() and torch.equal(back, t)
    # Transposed: the strides cross too.
    back_t = torch.from_dlpack(ferry.from_dlpack(t.T))
    assert back_t.stride() == t.T.stride() and torch.equal(back_t, t.T)


def test_half_float_arrow_arrays_view_as_numpy_does():
    arr = pa.array(np.array([0.5, -2.0, 65504.0, np.inf], np.float16))
    mv = ferry.MemoryView.from_array(ferry.array(arr))
    assert mv.format == "<e" and mv.ptr == arr.buffers()[1].address
    np.testing.assert_array_equal(np.asarray(mv), arr.to_numpy())
    np.testing.assert_array_equal(np.from_dlpack(mv), arr.to_numpy())


def test_bfloat16_says_the_buffer_protocol_has_no_code_for_it():
    torch = pytest.importorskip("torch")
    mv = ferry.from_dlpack(torch.zeros(3, dtype=torch.bfloat16))
    with pytest.raises(BufferError, match="PEP 3118 has no code for bfloat16"):
        memoryview(mv)


def test_buffers_out_use_the_letters_python_memoryview_reads():
    # One native-order scalar goes out as NumPy writes it ("d", not "<d"), so Python's own
    # memoryview indexes and converts it.
    for a in (np.arange(6.0).reshape(2, 3), np.arange(4, dtype=np.int32), np.arange(3, dtype=np.uint8)):
        m = memoryview(ferry.MemoryView(a))
        assert m.format == memoryview(a).format
        assert m.tolist() == a.tolist()


def test_booleans_stay_booleans_across_every_protocol():
    # Not unsigned bytes: NumPy's and torch's bools come back as bools.
    torch = pytest.importorskip("torch")
    a = np.array([[True, False, True], [False, False, True]])
    mv = ferry.MemoryView(a)
    assert mv.format == "<?" and mv.itemsize == 1
    assert memoryview(mv).format == "?" and memoryview(mv).tolist() == a.tolist()
    assert np.asarray(mv).dtype == np.bool_ and np.from_dlpack(mv).dtype == np.bool_
    np.testing.assert_array_equal(np.from_dlpack(mv), a)
    t = torch.from_dlpack(mv)
    assert t.dtype == torch.bool and t.tolist() == a.tolist()
    back = torch.from_dlpack(ferry.from_dlpack(t))
    assert back.dtype == torch.bool and torch.equal(back, t)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_numbers_cross_as_complex(dtype):
    torch = pytest.importorskip("torch")
    a = (np.arange(6) + 1j * (np.arange(6) - 3)).astype(dtype).reshape(2, 3)
    mv = ferry.MemoryView(a)
    assert mv.format == ("<Zf" if dtype == np.complex64 else "<Zd")
    assert mv.itemsize == a.itemsize
    np.testing.assert_array_equal(np.asarray(mv), a)
    np.testing.assert_array_equal(np.from_dlpack(mv), a)
    t = torch.from_dlpack(mv)
    assert t.is_complex() and t.numpy().tolist() == a.tolist()
    back = torch.from_dlpack(ferry.from_dlpack(t))
    assert back.dtype == t.dtype and torch.equal(back, t)
