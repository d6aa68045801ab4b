"""Lifetimes: owners live exactly as long as what references them, nothing leaks
(pa.total_allocated_bytes() returns to its baseline), releases from other threads are safe, and
a subprocess exits without nanobind leak warnings."""
import ctypes
import gc
import os
import subprocess
import sys
import threading
import weakref

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry  # noqa: E402

from arrays import TYPE_CASES  # noqa: E402


@pytest.fixture
def baseline():
    gc.collect()
    before = pa.total_allocated_bytes()
    yield before
    gc.collect()
    assert pa.total_allocated_bytes() == before


def fresh(n=1000):
    # A new allocation from pyarrow's pool each call, so the bytes counted belong to this test.
    return pa.array(range(n), pa.int64())


def test_imported_arrays_are_released_with_their_last_reference(baseline):
    arr = fresh()
    assert pa.total_allocated_bytes() > baseline
    f = ferry.array(arr)
    back = pa.array(f)
    child_less = f.copy_to(ferry.Device.cpu())  # ferry's own memory, not pyarrow's
    del arr, f
    gc.collect()
    assert pa.total_allocated_bytes() > baseline  # `back` still holds the buffers
    del back, child_less
    gc.collect()
    assert pa.total_allocated_bytes() == baseline


def test_unconsumed_capsules_release_what_they_hold(baseline):
    f = ferry.array(fresh())
    caps = [f.__arrow_c_array__(), f.__arrow_c_device_array__(), f.__arrow_c_schema__()]
    del f
    gc.collect()
    assert pa.total_allocated_bytes() > baseline
    del caps
    gc.collect()
    assert pa.total_allocated_bytes() == baseline


def test_consumed_capsules_are_released_once(baseline):
    s, a = fresh().__arrow_c_array__()
    holder = type("H", (), {"__arrow_c_array__": lambda self, requested_schema=None: (s, a)})()
    f = ferry.array(holder)
    del holder, s, a  # the capsules are empty now: their destructor frees the structs only
    gc.collect()
    assert len(f) == 1000
    del f
    gc.collect()


def test_streams_release_unread_batches(baseline):
    t = pa.table({"a": np.arange(5000)})
    s = ferry.stream(pa.RecordBatchReader.from_batches(t.schema, t.to_batches(1000)))
    del t
    assert s.read_next() is not None
    del s
    gc.collect()


def test_every_type_case_round_trips_without_leaks(baseline):
    for arr in TYPE_CASES.values():
        back = pa.array(ferry.array(arr))
        del back
    gc.collect()


def test_a_child_keeps_the_root_owner_alive():
    class Producer:
        def __init__(self, arr):
            self.arr = arr

        def __arrow_c_array__(self, requested_schema=None):
            return self.arr.__arrow_c_array__(requested_schema)

    arr = pa.array([{"a": 1, "b": "x"}])
    f = ferry.array(Producer(arr))
    child = f.child(1)
    del f, arr
    gc.collect()
    assert pa.array(child).to_pylist() == ["x"]


def test_releases_from_another_thread_are_safe(baseline):
    # The owners are pyarrow buffers and a NumPy array: their references drop on a thread that
    # does not hold the GIL when the C release runs.
    arrays = [ferry.array(fresh()) for _ in range(8)]
    caps = [a.__arrow_c_device_array__() for a in arrays]
    views = [ferry.MemoryView(np.arange(100)) for _ in range(8)]
    del arrays

    def drop():
        caps.clear()
        views.clear()

    t = threading.Thread(target=drop)
    t.start()
    t.join()
    gc.collect()


def test_memory_view_owner_released_by_a_foreign_consumer_on_another_thread():
    a = np.arange(10)
    ref = weakref.ref(a)
    back = np.from_dlpack(ferry.MemoryView(a))
    del a
    out = []
    t = threading.Thread(target=lambda: out.append(back.sum()))
    t.start()
    t.join()
    del back
    gc.collect()
    assert out == [45] and ref() is None


SCRIPT = r"""
import numpy as np, pyarrow as pa, ferry
keep = [ferry.array(pa.array([1, 2, 3])), ferry.MemoryView(np.arange(4))]
caps = keep[0].__arrow_c_device_array__()
s = ferry.stream(pa.RecordBatchReader.from_batches(pa.schema([("a", pa.int64())]), []))
view = np.from_dlpack(keep[1])
# Objects left alive at exit: released after finalization must neither crash nor warn.
"""


def test_a_subprocess_exits_without_nanobind_leak_warnings():
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "nanobind" not in r.stderr and "leak" not in r.stderr.lower(), r.stderr


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_set_name = ctypes.pythonapi.PyCapsule_SetName
_set_name.restype = ctypes.c_int
_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]
_RELEASE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _call_without_gil_on_a_thread(fn, arg):
    # ctypes drops the GIL around foreign calls: the release runs on a thread without it.
    t = threading.Thread(target=fn, args=(arg,))
    t.start()
    t.join()


def test_an_arrow_release_called_without_the_gil_on_another_thread(baseline):
    f = ferry.array(fresh())
    schema, array = f.__arrow_c_array__()
    del f
    raw = _get_pointer(array, b"arrow_array")
    moved = ctypes.create_string_buffer(80)  # sizeof(ArrowArray)
    ctypes.memmove(moved, raw, 80)
    ctypes.c_void_p.from_address(raw + 64).value = None  # the capsule's struct is now released
    del array, schema
    gc.collect()
    assert pa.total_allocated_bytes() > baseline  # the moved struct still owns the buffers
    release = _RELEASE(ctypes.c_void_p.from_buffer(moved, 64).value)
    _call_without_gil_on_a_thread(release, ctypes.addressof(moved))
    gc.collect()


def test_a_dlpack_deleter_called_without_the_gil_on_another_thread():
    a = np.arange(10)
    ref = weakref.ref(a)
    cap = ferry.MemoryView(a).__dlpack__(max_version=(1, 0))
    del a
    gc.collect()
    assert ref() is not None
    tensor = _get_pointer(cap, b"dltensor_versioned")
    assert _set_name(cap, b"used_dltensor_versioned") == 0  # consumed: the capsule frees nothing
    deleter = _RELEASE(ctypes.c_void_p.from_address(tensor + 16).value)
    _call_without_gil_on_a_thread(deleter, tensor)
    gc.collect()
    assert ref() is None
