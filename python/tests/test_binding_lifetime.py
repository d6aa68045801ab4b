"""Lifetimes: owners live exactly as long as what references them, nothing leaks
(pa.total_allocated_bytes() returns to its baseline), releases from other threads are safe, and
a subprocess exits without nanobind leak warnings."""
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

from arrays import CATALOG  # noqa: E402


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


def test_every_catalog_type_round_trips_without_leaks(baseline):
    for arr in CATALOG.values():
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
