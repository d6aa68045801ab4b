"""Memory views through ferry's C surface, against NumPy's DLPack producer and consumer.

NumPy is the independent oracle: its arrays go into ferry views by DLPack (no copy: the data
address is NumPy's), and ferry's views come back out into NumPy by DLPack (again, no copy)."""
import ctypes
import sys

import numpy as np
import pytest

import ferry_ctypes as fc

# NumPy dtype -> the pack-template letter ferry gives it (matched by size and kind).
DTYPES = {
    np.int8: "c", np.uint8: "C", np.int16: "s", np.uint16: "S", np.int32: "l", np.uint32: "L",
    np.int64: "q", np.uint64: "Q", np.float32: "f", np.float64: "d", np.float16: "{float16}",
    np.complex64: "{complex64}", np.complex128: "{complex128}",
}


@pytest.mark.parametrize("dtype", list(DTYPES), ids=lambda d: np.dtype(d).name)
def test_dlpack_round_trip_every_dtype_without_copies(dtype):
    a = np.arange(12).astype(dtype).reshape(3, 4)
    view = fc.from_dlpack(a)
    assert view.data == a.ctypes.data
    assert view.shape == (3, 4)
    assert view.format == DTYPES[dtype]
    assert view.c.item_size == a.itemsize
    assert not view.readonly
    # The item at [2, 3] is where NumPy says it is.
    assert view.item_pointer(2, 3) == a.ctypes.data + 2 * a.strides[0] + 3 * a.strides[1]
    back = np.from_dlpack(view)
    assert back.ctypes.data == a.ctypes.data
    assert back.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(back, a)


def test_bool_arrives_as_bool():
    a = np.array([True, False, True])
    view = fc.from_dlpack(a)
    assert view.format == "{bool}" and view.data == a.ctypes.data
    back = np.from_dlpack(view)
    assert back.dtype == np.bool_
    np.testing.assert_array_equal(back, a)


def test_strided_slices_keep_numpy_strides():
    a = np.arange(24, dtype=np.int32).reshape(4, 6)[1:, ::2]
    view = fc.from_dlpack(a)
    assert view.shape == (3, 3)
    assert view.strides == a.strides  # bytes, from DLPack's element strides
    assert view.data == a.ctypes.data
    np.testing.assert_array_equal(np.from_dlpack(view), a)


def test_legacy_capsules_both_ways():
    a = np.arange(5, dtype=np.float64)
    view = fc.from_dlpack(a, versioned=False)
    assert view.data == a.ctypes.data
    capsule = view.__dlpack__()  # no max_version: the legacy struct
    assert fc._api.PyCapsule_IsValid(capsule, b"dltensor")
    np.testing.assert_array_equal(fc.consume_dlpack_capsule(capsule).shape, (5,))


def test_a_capsule_is_consumed_once():
    a = np.arange(4, dtype=np.int64)
    capsule = a.__dlpack__(max_version=(1, 0))
    view = fc.consume_dlpack_capsule(capsule)
    assert view.data == a.ctypes.data
    assert fc._api.PyCapsule_IsValid(capsule, b"used_dltensor_versioned")
    with pytest.raises(ValueError, match="consumed only once"):
        fc.consume_dlpack_capsule(capsule)


def test_unconsumed_capsules_and_released_views_free_the_tensor():
    a = np.arange(4, dtype=np.int64)
    base = sys.getrefcount(a)
    view = fc.from_dlpack(a)
    assert sys.getrefcount(a) == base + 1  # NumPy's tensor holds the array
    view.release()
    view.release()  # a second release is a no-op
    assert sys.getrefcount(a) == base
    capsule = a.__dlpack__(max_version=(1, 0))
    assert sys.getrefcount(a) == base + 1
    del capsule  # never consumed: the capsule's destructor calls the deleter
    assert sys.getrefcount(a) == base
    # A ferry capsule nobody consumes frees ferry's side too.
    view = fc.from_dlpack(a)
    capsule = view.__dlpack__(max_version=(1, 0))
    view.release()
    assert sys.getrefcount(a) == base + 1  # the unconsumed ferry capsule still holds the export
    del capsule
    assert sys.getrefcount(a) == base


def test_read_only_data_stays_read_only():
    a = np.arange(6, dtype=np.int16)
    a.flags.writeable = False
    view = fc.from_dlpack(a)
    assert view.readonly
    back = np.from_dlpack(view)
    assert not back.flags.writeable
    assert back.ctypes.data == a.ctypes.data
    with pytest.raises(fc.FerryError, match="cannot mark data read-only"):
        view.__dlpack__()  # the legacy struct cannot say read-only


def test_major_version_mismatch_only_calls_the_deleter():
    deleted = []
    holder = fc.DLManagedTensorVersionedHead()
    holder.major, holder.minor = 2, 0

    @fc._DELETER
    def deleter(ptr):
        deleted.append(ptr)

    holder.deleter = deleter
    # Room for the DLTensor that follows the head; ferry must not read it.
    buf = (ctypes.c_uint8 * 128)()
    ctypes.memmove(buf, ctypes.addressof(holder), ctypes.sizeof(holder))
    view = fc.MemoryView()
    error = fc.FerryErrorStruct()
    code = fc.lib.FerryMemoryViewFromDLPack(ctypes.addressof(buf), ctypes.byref(view.c),
                                            ctypes.byref(error))
    assert code != 0
    assert b"major version 2 is not supported" in error.message
    assert deleted == [ctypes.addressof(buf)]


def test_views_become_arrow_arrays_that_pyarrow_reads():
    pa = pytest.importorskip("pyarrow")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    view = fc.from_dlpack(a)
    schema = fc.ArrowSchema()
    out = fc.ArrowDeviceArray()
    error = fc.FerryErrorStruct()
    fc.check(fc.lib.FerryMemoryViewToDeviceArray(ctypes.byref(view.c), None, 0, ctypes.byref(schema),
                                                 ctypes.byref(out), ctypes.byref(error)), error)
    view.release()  # the Arrow array keeps NumPy's memory alive from here
    assert out.device_type == fc.ARROW_DEVICE_CPU
    arr = pa.Array._import_from_c(ctypes.addressof(out.array), ctypes.addressof(schema))
    assert arr.type == pa.list_(pa.field("item", pa.float32(), nullable=False), 3)
    assert arr.to_pylist() == [[0, 1, 2], [3, 4, 5]]
    assert arr.values.buffers()[1].address == a.ctypes.data  # zero-copy into pyarrow
