"""The CUDA driver ferry loads ($FERRY_CUDA_DRIVER, else libcuda.so.1), called directly with ctypes.

It is the independent party of the CUDA interop tests: a producer that writes device memory on its
own stream and hands it over through __cuda_array_interface__ or __dlpack__, and a consumer that
reads what ferry exports on the stream ferry names. It shares no code with ferry. Where the driver
is the stand-in (tests/support/cuda_standin) its counters are read too.
"""
import ctypes
import os

import numpy as np

COUNTER_NAMES = (
    "copies_h2d", "copies_d2h", "copies_d2d", "copies_h2h", "bytes_h2d", "bytes_d2h", "bytes_d2d",
    "bytes_h2h", "pageable_copies", "synchronizations", "implicit_synchronizations",
    "allocations_device", "allocations_pinned", "allocations_managed", "frees", "event_records",
    "stream_waits", "host_funcs", "ipc_exports", "ipc_opens", "ipc_closes", "stream_errors",
)


LIVE_NAMES = ("device_allocations", "pinned_allocations", "managed_allocations", "ipc_mappings",
              "streams", "events", "context_retains")


class Counters(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int64) for name in COUNTER_NAMES]


class Live(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int64) for name in LIVE_NAMES]


class CudaError(RuntimeError):
    pass


_libc = ctypes.CDLL(None, use_errno=True)


class Driver:
    """GPU 0 through the raw driver API, its primary context pushed around every call."""

    def __init__(self):
        path = os.environ.get("FERRY_CUDA_DRIVER") or "libcuda.so.1"
        self.lib = ctypes.CDLL(path)
        self.lib.cuInit.argtypes = [ctypes.c_uint]
        self._check(self.lib.cuInit(0), "cuInit")
        self.ctx = ctypes.c_void_p()
        self._check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), 0), "retain")
        for name, args in {
            "cuCtxPushCurrent_v2": [ctypes.c_void_p],
            "cuCtxPopCurrent_v2": [ctypes.c_void_p],
            "cuMemAlloc_v2": [ctypes.c_void_p, ctypes.c_size_t],
            "cuMemFree_v2": [ctypes.c_uint64],
            "cuMemAllocHost_v2": [ctypes.c_void_p, ctypes.c_size_t],
            "cuMemFreeHost": [ctypes.c_void_p],
            "cuMemcpy": [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_size_t],
            "cuMemcpyAsync": [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p],
            "cuStreamCreate": [ctypes.c_void_p, ctypes.c_uint],
            "cuStreamDestroy_v2": [ctypes.c_void_p],
            "cuStreamSynchronize": [ctypes.c_void_p],
            "cuStreamWaitEvent": [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint],
            "cuEventCreate": [ctypes.c_void_p, ctypes.c_uint],
            "cuEventRecord": [ctypes.c_void_p, ctypes.c_void_p],
            "cuEventDestroy_v2": [ctypes.c_void_p],
            "cuEventSynchronize": [ctypes.c_void_p],
            "cuLaunchHostFunc": [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p],
        }.items():
            getattr(self.lib, name).argtypes = args
        self.standin = None
        if hasattr(self.lib, "ferry_cuda_standin_counters"):
            self.standin = self.lib
        # What the tests' producers made, freed by free_since() (kind, handle) in order.
        self.made = []
        # Pinned memory for reads, kept: freeing pinned memory waits for every stream, a gated
        # one included.
        self.scratch = self.pinned(4096)

    @staticmethod
    def _check(rc, what):
        if rc != 0:
            raise CudaError(f"{what}: CUresult {rc}")

    def call(self, name, *args):
        self._check(self.lib.cuCtxPushCurrent_v2(self.ctx), "cuCtxPushCurrent")
        try:
            self._check(getattr(self.lib, name)(*args), name)
        finally:
            self.lib.cuCtxPopCurrent_v2(None)

    def counters(self):
        out = Counters()
        self.standin.ferry_cuda_standin_counters(ctypes.byref(out))
        return out

    def live(self):
        """What the process holds on the stand-in now (FerryCudaStandinLive) as a dict."""
        out = Live()
        self.standin.ferry_cuda_standin_live(ctypes.byref(out))
        return {name: getattr(out, name) for name in LIVE_NAMES}

    def mark(self):
        return len(self.made)

    def free_since(self, mark):
        """Free what this driver made for producers since `mark`, newest first."""
        while len(self.made) > mark:
            kind, handle = self.made.pop()
            if kind == "event":
                self.call("cuEventSynchronize", handle)
                self.call("cuEventDestroy_v2", handle)
            elif kind == "device":
                self.call("cuMemFree_v2", handle)
            else:
                self.call("cuMemFreeHost", handle)

    def delta(self, before):
        after = self.counters()
        return {name: getattr(after, name) - getattr(before, name) for name in COUNTER_NAMES}

    def stream(self):
        s = ctypes.c_void_p()
        self.call("cuStreamCreate", ctypes.byref(s), 1)  # CU_STREAM_NON_BLOCKING
        return s.value

    def destroy_stream(self, s):
        self.call("cuStreamDestroy_v2", s)

    def alloc(self, n):
        p = ctypes.c_uint64()
        self.call("cuMemAlloc_v2", ctypes.byref(p), n)
        self.made.append(("device", p.value))
        return p.value

    def pinned(self, n):
        p = ctypes.c_void_p()
        self.call("cuMemAllocHost_v2", ctypes.byref(p), n)
        self.made.append(("pinned", p.value))
        return p.value

    def read(self, ptr, n, stream):
        """`n` bytes at device address `ptr`, read on `stream` (which is then synchronized)."""
        assert n <= 4096
        ctypes.memset(self.scratch, 0xEE, n)
        self.call("cuMemcpyAsync", self.scratch, ptr, n, stream)
        self.call("cuStreamSynchronize", stream)
        return ctypes.string_at(self.scratch, n)

    def event_after(self, stream):
        e = ctypes.c_void_p()
        self.call("cuEventCreate", ctypes.byref(e), 2)  # CU_EVENT_DISABLE_TIMING
        self.call("cuEventRecord", e, stream)
        self.made.append(("event", e.value))
        return e.value


class Gate:
    """Holds a stream back until open(): a host function on it (libc's sem_wait) blocks on a
    semaphore, so work queued after it has certainly not run. Works on any driver."""

    _kept = []  # a woken sem_wait still touches its semaphore: never free one

    def __init__(self, driver, stream):
        self.sem = ctypes.create_string_buffer(64)  # a sem_t is 32 bytes on x86-64
        Gate._kept.append(self.sem)
        if _libc.sem_init(self.sem, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "sem_init")
        fn = ctypes.cast(_libc.sem_wait, ctypes.c_void_p).value
        driver.call("cuLaunchHostFunc", stream, fn, ctypes.addressof(self.sem))
        self.opened = False

    def open(self):
        if not self.opened:
            self.opened = True
            _libc.sem_post(self.sem)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.open()


class Producer:
    """Four int32 values written to device memory on its own stream, from pinned memory (so the
    copy is queued behind whatever the stream holds), exported by __cuda_array_interface__ with
    that stream, or by __dlpack__, which makes the data ready on the consumer's stream."""

    values = np.array([11, 22, 33, 44], dtype=np.int32)

    def __init__(self, driver, stream, with_stream=True):
        self.driver = driver
        self.stream = stream
        self.ptr = driver.alloc(16)
        zeros = np.zeros(4, np.int32)
        driver.call("cuMemcpy", self.ptr, zeros.ctypes.data, 16)
        self.host = driver.pinned(16)  # freed after the test (free_since): freeing waits for streams
        ctypes.memmove(self.host, self.values.ctypes.data, 16)
        driver.call("cuMemcpyAsync", self.ptr, self.host, 16, stream)
        self.with_stream = with_stream
        self.dlpack_streams = []

    @property
    def __cuda_array_interface__(self):
        d = {"shape": (4,), "typestr": "<i4", "data": (self.ptr, False), "version": 3,
             "strides": None}
        if self.with_stream:
            d["stream"] = self.stream
        return d

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, GPU 0

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        self.dlpack_streams.append(stream)
        if stream is not None and stream != -1:
            # The producer's side of the protocol: an event after its work, waited on by the
            # consumer's stream.
            event = self.driver.event_after(self.stream)
            self.driver.call("cuStreamWaitEvent", stream, event, 0)
        return _dlpack_capsule(self)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def _dlpack_capsule(producer):
    """A versioned DLPack capsule of the producer's four int32 (no deleter: the producer object,
    which the consumer keeps, owns the memory)."""
    shape = (ctypes.c_int64 * 1)(4)
    t = _DLManagedTensorVersioned()
    t.major, t.minor = 1, 0
    t.dl_tensor.data = producer.ptr
    t.dl_tensor.device = _DLDevice(2, 0)
    t.dl_tensor.ndim = 1
    t.dl_tensor.dtype = _DLDataType(0, 32, 1)  # kDLInt, 32 bits
    t.dl_tensor.shape = shape
    producer._keep = (t, shape)
    return _PyCapsule_New(ctypes.addressof(t), b"dltensor_versioned", None)
