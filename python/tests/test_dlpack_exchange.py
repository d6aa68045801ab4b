"""DLPack 1.3's C exchange API (`__dlpack_c_exchange_api__`) against torch, its reference
producer and consumer: torch -> ferry -> torch through the tables on both sides, the float8 and
float4 dtypes torch has, ferry's own tables called from C (ctypes, the GIL held), ferry's C API
consumer, and the fallback to __dlpack__ when a type has no usable table."""
import ctypes
import hashlib

import numpy as np
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry  # noqa: E402

torch = pytest.importorskip("torch")

from dlpack_ctypes import (  # noqa: E402
    MT, SET_ERROR, DLDataType, DLDevice, DLTensor, capi, export, kDLCPU, kDLCUDA, kDLFloat, table,
    take)


class OnlyExchange(torch.Tensor):
    """A torch tensor whose __dlpack__ fails: only the exchange API can take it."""

    def __dlpack__(self, *args, **kwargs):
        raise AssertionError("__dlpack__ was called; the exchange API should have been used")


# -- Producer: ferry's tables ---------------------------------------------------------------


def test_memory_view_and_array_types_publish_dlpack_1_3_tables():
    for tp in (ferry.MemoryView, ferry.Array):
        api = table(tp)
        assert (api.major, api.minor, api.prev_api) == (1, 3, None)
        assert api.managed_tensor_allocator and api.managed_tensor_from_py_object_no_sync
        assert api.managed_tensor_to_py_object_no_sync and api.current_work_stream
    assert table(ferry.MemoryView).dltensor_from_py_object_no_sync  # a view lends shape and strides
    assert not table(ferry.Array).dltensor_from_py_object_no_sync  # optional, left out


def test_ferry_tables_export_views_and_arrays_zero_copy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    mv = ferry.MemoryView(a)
    api = table(ferry.MemoryView)
    t = export(api, mv)
    dl = t.contents.dl_tensor
    assert (t.contents.major, t.contents.minor) == (1, 3)
    assert dl.data == a.ctypes.data and (dl.device.device_type, dl.ndim) == (kDLCPU, 2)
    assert (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes) == (kDLFloat, 32, 1)
    assert [dl.shape[i] for i in range(2)] == [3, 2]
    assert [dl.strides[i] for i in range(2)] == [4, 2]  # elements, as NumPy's byte strides / 4
    t.contents.deleter(t)

    borrowed = DLTensor()
    assert api.dltensor_from_py_object_no_sync(mv, ctypes.byref(borrowed)) == 0
    assert borrowed.data == a.ctypes.data and [borrowed.strides[i] for i in range(2)] == [4, 2]

    arr = ferry.array(__import__("pyarrow").array([5, 6, 7], type="int16"))
    t = export(table(ferry.Array), arr)
    dl = t.contents.dl_tensor
    assert (dl.dtype.code, dl.dtype.bits, dl.shape[0]) == (0, 16, 3)
    assert ctypes.string_at(dl.data, 6) == np.array([5, 6, 7], np.int16).tobytes()
    assert t.contents.flags & 1  # Arrays are read-only
    t.contents.deleter(t)

    stream = ctypes.c_void_p(1)
    assert api.current_work_stream(kDLCPU, 0, ctypes.byref(stream)) == 0 and stream.value is None


def test_ferry_table_errors_are_python_errors():
    api = table(ferry.MemoryView)
    with pytest.raises(TypeError, match="takes ferry.MemoryView or ferry.Array objects, not int"):
        export(api, 7)
    errors = []
    set_error = SET_ERROR(lambda ctx, kind, message: errors.append((kind, message)))
    proto = DLTensor(device=DLDevice(kDLCUDA, 0), ndim=0, dtype=DLDataType(kDLFloat, 32, 1))
    out = MT()
    assert api.managed_tensor_allocator(ctypes.byref(proto), ctypes.byref(out), None, set_error) == -1
    assert errors == [(b"BufferError", b"ferry allocates DLPack tensors on the CPU only")]


def test_allocator_and_to_py_object_make_ferry_views():
    api = table(ferry.MemoryView)
    shape = (ctypes.c_int64 * 2)(2, 3)
    proto = DLTensor(device=DLDevice(kDLCPU, 0), ndim=2, dtype=DLDataType(kDLFloat, 32, 1), shape=shape)
    out = MT()
    assert api.managed_tensor_allocator(ctypes.byref(proto), ctypes.byref(out), None,
                                        SET_ERROR(lambda *a: None)) == 0
    obj = ctypes.py_object()
    assert api.managed_tensor_to_py_object_no_sync(out, ctypes.byref(obj)) == 0
    mv = take(obj)
    assert isinstance(mv, ferry.MemoryView) and mv.shape == [2, 3] and mv.format == "<f"
    assert np.array_equal(np.asarray(mv), np.zeros((2, 3), np.float32))  # zeroed, row-major

    # torch's table exports, ferry's wraps: the two tables meet without Python in between.
    t = torch.arange(4, dtype=torch.int32)
    assert api.managed_tensor_to_py_object_no_sync(export(table(torch.Tensor), t), ctypes.byref(obj)) == 0
    mv = take(obj)
    assert mv.ptr == t.data_ptr() and np.array_equal(np.asarray(mv), [0, 1, 2, 3])


# -- Consumer: torch -> ferry -> torch ------------------------------------------------------


def test_torch_to_ferry_to_torch_through_the_exchange_api():
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    t = base[1:, ::2].as_subclass(OnlyExchange)  # strided, offset: no __dlpack__ allowed
    mv = ferry.from_dlpack(t)
    assert mv.ptr == t.data_ptr() and mv.shape == [3, 3] and mv.strides == [48, 16]
    assert mv.obj is t and not mv.readonly
    assert ferry.MemoryView(t).ptr == t.data_ptr()  # the constructor takes the same path
    back = mv.export_to(torch.Tensor)
    assert type(back) is torch.Tensor and back.data_ptr() == t.data_ptr()
    assert back.stride() == (6, 2) and torch.equal(back, base[1:, ::2])
    back[0, 0] = -1.0  # one memory: torch's original sees the write
    assert base[1, 0] == -1.0
    del mv, t
    assert torch.equal(back[1], torch.tensor([12.0, 14.0, 16.0]))  # back keeps the memory alive


FLOAT8 = [(name, getattr(torch, name)) for name in
          ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu")
          if hasattr(torch, name)]


@pytest.mark.parametrize("name,dtype", FLOAT8, ids=[n for n, _ in FLOAT8])
def test_float8_round_trips_with_torch(name, dtype):
    values = torch.tensor([0.5, 1.0, 2.0, 4.0, 0.25, 8.0], dtype=torch.float32).to(dtype).reshape(2, 3)
    raw = values.view(torch.uint8).clone()
    mv = ferry.from_dlpack(values.as_subclass(OnlyExchange))  # the exchange API
    assert mv.format == "{" + name + "}" and mv.itemsize == 1 and mv.shape == [2, 3]
    back = mv.export_to(torch.Tensor)
    assert back.dtype == dtype and back.data_ptr() == values.data_ptr()
    assert torch.equal(back.view(torch.uint8), raw)
    assert torch.equal(back.float(), values.float())
    # The other way, through ferry's __dlpack__: torch reads the dtype ferry names.
    again = torch.from_dlpack(ferry.from_dlpack(values))
    assert again.dtype == dtype and torch.equal(again.view(torch.uint8), raw)
    # Without a format request the buffer protocol hands the items over as bytes; with one it
    # says that PEP 3118 has no code for them.
    flat = ferry.from_dlpack(values.reshape(-1))
    assert hashlib.sha256(flat).digest() == hashlib.sha256(raw.numpy().tobytes()).digest()
    with pytest.raises(BufferError, match=f"PEP 3118 has no code for {name}"):
        memoryview(mv)


@pytest.mark.skipif(not hasattr(torch, "float4_e2m1fn_x2"), reason="this torch has no float4")
def test_float4_pairs_round_trip_with_torch():
    packed = torch.tensor([0x21, 0xF7, 0x00, 0x3A], dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    mv = ferry.from_dlpack(packed.as_subclass(OnlyExchange))
    assert mv.format == "{float4_e2m1fn_x2}" and mv.shape == [4]
    back = mv.export_to(torch.Tensor)
    assert back.dtype == torch.float4_e2m1fn_x2 and back.data_ptr() == packed.data_ptr()
    assert torch.equal(back.view(torch.uint8), packed.view(torch.uint8))


def test_types_without_a_usable_table_fall_back_to_dunder_dlpack():
    class WrongCapsule:
        __dlpack_c_exchange_api__ = ferry.MemoryView(np.zeros(1)).__dlpack__(max_version=(1, 0))

        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kwargs):
            return self.a.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    a = np.arange(5, dtype=np.int8)
    assert ferry.from_dlpack(WrongCapsule(a)).ptr == a.ctypes.data
    assert ferry.from_dlpack(a).ptr == a.ctypes.data  # NumPy: no table, __dlpack__


def _c_api_consumer():
    """FerryMemoryViewFromDLPackExchange through ctypes, with torch's table."""
    import ferry_ctypes as fc

    lib = ctypes.PyDLL(fc.lib._name)  # PyDLL: the GIL stays held, as the exchange API requires
    fn = lib.FerryMemoryViewFromDLPackExchange
    fn.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.POINTER(fc.FerryMemoryViewStruct),
                   ctypes.POINTER(fc.FerryErrorStruct)]
    api = capi.PyCapsule_GetPointer(torch.Tensor.__dlpack_c_exchange_api__, b"dlpack_exchange_api")

    def take_view(t):
        view, error = fc.MemoryView(), fc.FerryErrorStruct()
        assert fn(api, t, ctypes.byref(view.c), ctypes.byref(error)) == 0, error.message
        return view

    return fc, fn, api, take_view


def test_c_api_consumer_takes_torch_tensors():
    fc, fn, api, take_view = _c_api_consumer()
    t = torch.arange(6, dtype=torch.int16).reshape(2, 3)
    view = take_view(t)
    assert view.data == t.data_ptr() and view.shape == (2, 3) and view.format == "s"
    view.release()
    error = fc.FerryErrorStruct()
    assert fn(None, t, ctypes.byref(view.c), ctypes.byref(error)) != 0
    assert b"the API, the object and the output must be set" in error.message


@pytest.mark.parametrize("dtype,fmt", [(torch.int8, "c"), (torch.int16, "s"), (torch.int32, "l"),
                                       (torch.int64, "q"), (torch.uint8, "C"),
                                       (torch.float32, "f"), (torch.float64, "d"),
                                       (torch.bool, "{bool}"), (torch.float16, "{float16}"),
                                       (torch.bfloat16, "{bfloat16}"), (torch.complex64, "{complex64}"),
                                       (torch.float8_e4m3fn, "{float8_e4m3fn}")])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "scalar"])
def test_c_api_consumer_describes_each_tensor_as_torch_does(dtype, fmt, layout):
    _, _, _, take_view = _c_api_consumer()
    base = torch.arange(24).reshape(4, 6).to(dtype)
    t = {"contiguous": base, "transposed": base.t(), "sliced": base[1:, ::2],
         "scalar": base[2, 3]}[layout]
    view = take_view(t)
    item = t.element_size()
    assert (view.data, view.format, view.c.item_size) == (t.data_ptr(), fmt, item)
    assert view.shape == tuple(t.shape) and view.c.byte_size == t.numel() * item
    assert view.strides in (None, tuple(s * item for s in t.stride()))
    if t.dim() and not t.is_contiguous():
        assert view.strides == tuple(s * item for s in t.stride())
    # The view's last item is where torch keeps it.
    last = tuple(n - 1 for n in t.shape)
    assert view.item_pointer(*last) == t.data_ptr() + sum(i * s for i, s in zip(last, t.stride())) * item
    view.release()


def test_c_api_views_keep_torch_tensors_for_what_is_built_over_them():
    import sys

    _, _, _, take_view = _c_api_consumer()
    t = torch.arange(12, dtype=torch.float64).reshape(3, 4).t()
    refs = sys.getrefcount(t)
    for _ in range(1000):  # each exchange gives back what it took
        take_view(t).release()
    assert sys.getrefcount(t) == refs
    view = take_view(t)
    assert sys.getrefcount(t) == refs + 1  # torch's tensor holds it
    capsule = view.__dlpack__(max_version=(1, 3))  # a DLPack export built over the C view
    view.release()
    assert sys.getrefcount(t) == refs + 1  # the export keeps torch's tensor
    back = torch.from_dlpack(capsule)
    assert back.data_ptr() == t.data_ptr() and torch.equal(back, t)
    del back, capsule
    assert sys.getrefcount(t) == refs


def test_cuda_tensors_cross_on_the_producers_stream():
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA GPU (its CUDA build cannot use the stand-in driver); "
                    "the GPU bundle runs this case on a GPU")
    t = torch.arange(8, dtype=torch.float32, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        t.add_(1)  # queued on s, which is torch's current stream here
        mv = ferry.from_dlpack(t.as_subclass(OnlyExchange))
        assert mv.device_type == ferry.DeviceType.CUDA and mv.ptr == t.data_ptr()
        back = mv.export_to(torch.Tensor)
    assert back.device.type == "cuda" and back.data_ptr() == t.data_ptr()
    assert torch.equal(back.cpu(), torch.arange(1, 9, dtype=torch.float32))
