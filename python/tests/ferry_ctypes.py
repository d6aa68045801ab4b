# Over 600 lines: the ctypes declaration of every C function, kept in one table for the tests.
"""A ctypes loader for ferry's C surface (libferry.so's Ferry* functions, declared from
include/ferry/capi/ferry.h). The suites that use it (test_core, test_device, test_ipc, test_memview)
test the C surface itself from Python, against pyarrow as the oracle: C users call these functions,
and the nanobind binding does not go through them. The binding's own suites are test_binding_*."""
import ctypes
import glob
import json
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class ArrowSchema(ctypes.Structure):
    pass


ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p),
    ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_char_p),
    ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("children", ctypes.POINTER(ctypes.POINTER(ArrowSchema))),
    ("dictionary", ctypes.POINTER(ArrowSchema)),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]


class ArrowArray(ctypes.Structure):
    pass


ArrowArray._fields_ = [
    ("length", ctypes.c_int64),
    ("null_count", ctypes.c_int64),
    ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("buffers", ctypes.POINTER(ctypes.c_void_p)),
    ("children", ctypes.POINTER(ctypes.POINTER(ArrowArray))),
    ("dictionary", ctypes.POINTER(ArrowArray)),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]


class ArrowArrayStream(ctypes.Structure):
    _fields_ = [
        ("get_schema", ctypes.c_void_p),
        ("get_next", ctypes.c_void_p),
        ("get_last_error", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    ]


class FerryErrorStruct(ctypes.Structure):
    _fields_ = [("message", ctypes.c_char * 1024)]


class FerryArrayView(ctypes.Structure):
    _fields_ = [
        ("length", ctypes.c_int64),
        ("offset", ctypes.c_int64),
        ("null_count", ctypes.c_int64),
        ("n_buffers", ctypes.c_int64),
        ("n_children", ctypes.c_int64),
        ("storage_type", ctypes.c_int32),
        ("private_data", ctypes.c_void_p),
    ]


MINIMAL, DEFAULT, FULL = 1, 2, 3


class FerryError(Exception):
    """An error code and message from ferry's C surface."""

    def __init__(self, code, message):
        super().__init__(f"[errno {code}] {message}")
        self.code = code
        self.message = message


def _find_library():
    path = os.environ.get("FERRY_LIBRARY")
    if path:
        return path
    found = sorted(glob.glob(os.path.join(REPO, "build", "*", "libferry.so")), key=os.path.getmtime)
    if not found:
        raise RuntimeError("libferry.so not found: build ferry or set FERRY_LIBRARY")
    return found[-1]


lib = ctypes.CDLL(_find_library())
_P = ctypes.POINTER
lib.FerryArrayViewInitFromSchema.argtypes = [_P(FerryArrayView), _P(ArrowSchema), _P(FerryErrorStruct)]
lib.FerryArrayViewSetArray.argtypes = [_P(FerryArrayView), _P(ArrowArray), _P(FerryErrorStruct)]
lib.FerryArrayViewSetArrayMinimal.argtypes = [_P(FerryArrayView), _P(ArrowArray), _P(FerryErrorStruct)]
lib.FerryArrayViewValidate.argtypes = [_P(FerryArrayView), ctypes.c_int, _P(FerryErrorStruct)]
lib.FerryArrayViewReset.argtypes = [_P(FerryArrayView)]
lib.FerryArrayViewReset.restype = None
lib.FerryArrayViewToJson.argtypes = [_P(FerryArrayView), _P(ctypes.c_void_p), _P(FerryErrorStruct)]
lib.FerryFree.argtypes = [ctypes.c_void_p]
lib.FerryFree.restype = None
lib.FerrySchemaToString.argtypes = [_P(ArrowSchema), ctypes.c_char_p, ctypes.c_size_t,
                                    _P(ctypes.c_size_t), _P(FerryErrorStruct)]
lib.FerryArrayFromJson.argtypes = [_P(ArrowSchema), ctypes.c_char_p, _P(ArrowArray), _P(FerryErrorStruct)]
lib.FerrySchemaDeepCopy.argtypes = [_P(ArrowSchema), _P(ArrowSchema), _P(FerryErrorStruct)]
lib.FerryArrayStreamInit.argtypes = [_P(ArrowArrayStream), _P(ArrowSchema), ctypes.c_int64,
                                     _P(ArrowArray), _P(FerryErrorStruct)]
lib.FerryErrorCodeName.argtypes = [ctypes.c_int]
lib.FerryErrorCodeName.restype = ctypes.c_char_p


def check(code, error):
    if code != 0:
        raise FerryError(code, error.message.decode("utf-8", "replace"))


def release(struct):
    """Call a C struct's release callback if it is still live."""
    if struct.release:
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(struct.release)(ctypes.addressof(struct))


class Exported:
    """A pyarrow array exported through the C data interface; releases what it holds."""

    def __init__(self, arr):
        self.schema = ArrowSchema()
        self.array = ArrowArray()
        arr._export_to_c(ctypes.addressof(self.array), ctypes.addressof(self.schema))

    def close(self):
        release(self.array)
        release(self.schema)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class View:
    """A FerryArrayView over an exported array."""

    def __init__(self, exported, minimal=False):
        self.view = FerryArrayView()
        error = FerryErrorStruct()
        check(lib.FerryArrayViewInitFromSchema(ctypes.byref(self.view), ctypes.byref(exported.schema),
                                               ctypes.byref(error)), error)
        setter = lib.FerryArrayViewSetArrayMinimal if minimal else lib.FerryArrayViewSetArray
        code = setter(ctypes.byref(self.view), ctypes.byref(exported.array), ctypes.byref(error))
        if code != 0:
            lib.FerryArrayViewReset(ctypes.byref(self.view))
            check(code, error)

    def validate(self, level):
        error = FerryErrorStruct()
        check(lib.FerryArrayViewValidate(ctypes.byref(self.view), level, ctypes.byref(error)), error)

    def to_json(self):
        error = FerryErrorStruct()
        out = ctypes.c_void_p()
        check(lib.FerryArrayViewToJson(ctypes.byref(self.view), ctypes.byref(out), ctypes.byref(error)),
              error)
        try:
            return json.loads(ctypes.string_at(out.value).decode("utf-8"))
        finally:
            lib.FerryFree(out)

    def close(self):
        lib.FerryArrayViewReset(ctypes.byref(self.view))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def validate(arr, level=FULL, minimal=False):
    """Validate a pyarrow array with ferry at `level`; raises FerryError."""
    with Exported(arr) as exported, View(exported, minimal=minimal) as view:
        view.validate(level)


def to_json(arr):
    """ferry's JSON rendering of a pyarrow array, after full validation."""
    with Exported(arr) as exported, View(exported) as view:
        view.validate(FULL)
        return view.to_json()


def schema_to_string(pa_type):
    import pyarrow as pa

    schema = ArrowSchema()
    pa.field("", pa_type)._export_to_c(ctypes.addressof(schema))
    try:
        out = ctypes.create_string_buffer(4096)
        error = FerryErrorStruct()
        check(lib.FerrySchemaToString(ctypes.byref(schema), out, 4096, None, ctypes.byref(error)), error)
        return out.value.decode()
    finally:
        release(schema)


def array_from_json(pa_type, values):
    """Build an array of `pa_type` with ferry's builders and import it into pyarrow."""
    import pyarrow as pa

    schema = ArrowSchema()
    pa.field("", pa_type)._export_to_c(ctypes.addressof(schema))
    array = ArrowArray()
    error = FerryErrorStruct()
    try:
        check(lib.FerryArrayFromJson(ctypes.byref(schema), json.dumps(values).encode(),
                                     ctypes.byref(array), ctypes.byref(error)), error)
        return pa.Array._import_from_c(ctypes.addressof(array), ctypes.addressof(schema))
    except Exception:
        release(schema)
        raise


# -- The device layer (docs/device.md) ------------------------------------------------------------

ARROW_DEVICE_CPU = 1
ARROW_DEVICE_CUDA = 2
ARROW_DEVICE_CUDA_HOST = 3
ARROW_DEVICE_EXT_DEV = 12
ARROW_DEVICE_CUDA_MANAGED = 13


class ArrowDeviceArray(ctypes.Structure):
    _fields_ = [
        ("array", ArrowArray),
        ("device_id", ctypes.c_int64),
        ("device_type", ctypes.c_int32),
        ("sync_event", ctypes.c_void_p),
        ("reserved", ctypes.c_int64 * 3),
    ]


class FerryDeviceArrayView(ctypes.Structure):
    _fields_ = [("device", ctypes.c_void_p), ("array_view", FerryArrayView)]


lib.FerryDeviceResolve.argtypes = [ctypes.c_int32, ctypes.c_int64]
lib.FerryDeviceResolve.restype = ctypes.c_void_p
lib.FerryDeviceResolveError.restype = ctypes.c_char_p
lib.FerryDeviceCpu.restype = ctypes.c_void_p
lib.FerryDeviceArrayInit.argtypes = [ctypes.c_void_p, _P(ArrowDeviceArray), _P(ArrowArray), ctypes.c_void_p,
                                     _P(FerryErrorStruct)]
lib.FerryDeviceArrayViewInit.argtypes = [_P(FerryDeviceArrayView)]
lib.FerryDeviceArrayViewInit.restype = None
lib.FerryDeviceArrayViewReset.argtypes = [_P(FerryDeviceArrayView)]
lib.FerryDeviceArrayViewReset.restype = None
lib.FerryDeviceArrayViewSetArray.argtypes = [_P(FerryDeviceArrayView), _P(ArrowDeviceArray),
                                             _P(FerryErrorStruct)]
lib.FerryDeviceArrayViewCopy.argtypes = [_P(FerryDeviceArrayView), ctypes.c_void_p, _P(ArrowDeviceArray),
                                         _P(FerryErrorStruct)]


def resolve_device(device_type, device_id):
    """A ferry device, or FerryError(ENOENT/ENOTSUP) with the reason there is none."""
    device = lib.FerryDeviceResolve(device_type, device_id)
    if not device:
        raise FerryError(2, lib.FerryDeviceResolveError().decode())
    return device


def device_copy(schema, device_array, device):
    """Copy `device_array` (of `schema`) to `device` with ferry; returns a new ArrowDeviceArray."""
    view = FerryDeviceArrayView()
    lib.FerryDeviceArrayViewInit(ctypes.byref(view))
    error = FerryErrorStruct()
    out = ArrowDeviceArray()
    try:
        check(lib.FerryArrayViewInitFromSchema(ctypes.byref(view.array_view), ctypes.byref(schema),
                                               ctypes.byref(error)), error)
        check(lib.FerryDeviceArrayViewSetArray(ctypes.byref(view), ctypes.byref(device_array),
                                               ctypes.byref(error)), error)
        check(lib.FerryDeviceArrayViewCopy(ctypes.byref(view), device, ctypes.byref(out),
                                           ctypes.byref(error)), error)
        return out
    finally:
        lib.FerryDeviceArrayViewReset(ctypes.byref(view))


def deep_copy_schema(schema):
    out = ArrowSchema()
    error = FerryErrorStruct()
    check(lib.FerrySchemaDeepCopy(ctypes.byref(schema), ctypes.byref(out), ctypes.byref(error)), error)
    return out


# -- Memory views and DLPack ------------------------------------------------------------------


class FerryMemoryViewStruct(ctypes.Structure):
    _fields_ = [
        ("obj", ctypes.c_void_p),
        ("data", ctypes.c_void_p),
        ("byte_size", ctypes.c_int64),
        ("readonly", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("item_size", ctypes.c_int64),
        ("ndim", ctypes.c_int64),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("sub_offsets", ctypes.POINTER(ctypes.c_int64)),
        ("device_type", ctypes.c_int32),
        ("device_id", ctypes.c_int64),
        ("sync_event", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
        ("reserved", ctypes.c_void_p),
    ]


DLPACK_FLAG_READ_ONLY = 1
_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensorVersionedHead(ctypes.Structure):
    """The leading fields of DLManagedTensorVersioned (enough to call its deleter)."""
    _fields_ = [
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", _DELETER),
        ("flags", ctypes.c_uint64),
    ]


_MV = _P(FerryMemoryViewStruct)
_E = _P(FerryErrorStruct)
lib.FerryMemoryViewRelease.argtypes = [_MV, _E]
lib.FerryMemoryViewGetItemPointer.argtypes = [_MV, _P(ctypes.c_int64), _P(ctypes.c_void_p), _E]
lib.FerryMemoryViewToDLPack.argtypes = [_MV, _P(ctypes.c_void_p), _E]
lib.FerryMemoryViewToDLPackLegacy.argtypes = [_MV, _P(ctypes.c_void_p), _E]
lib.FerryMemoryViewFromDLPack.argtypes = [ctypes.c_void_p, _MV, _E]
lib.FerryMemoryViewFromDLPackLegacy.argtypes = [ctypes.c_void_p, _MV, _E]
lib.FerryMemoryViewExportCount.argtypes = [ctypes.c_void_p]
lib.FerryMemoryViewExportCount.restype = ctypes.c_int64
lib.FerryMemoryViewToDeviceArray.argtypes = [_MV, ctypes.c_void_p, ctypes.c_int, _P(ArrowSchema),
                                             _P(ArrowDeviceArray), _E]

# The CPython capsule API, in two flavours: on live objects, and on a capsule being destroyed
# (whose destructor must not take a new reference to it).
_api = ctypes.pythonapi
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_New.restype = ctypes.py_object
_raw_get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.c_void_p)(("PyCapsule_GetName", _api))
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))

# Capsule names live as module constants: PyCapsule_SetName keeps the pointer, not a copy.
_VERSIONED, _USED_VERSIONED = b"dltensor_versioned", b"used_dltensor_versioned"
_LEGACY, _USED_LEGACY = b"dltensor", b"used_dltensor"


@ctypes.PYFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule):
    # An unconsumed capsule still owns its tensor: delete it (the DLPack capsule rule).
    name = _raw_get_name(capsule)
    if name in (_VERSIONED, _LEGACY):
        tensor = _raw_get_pointer(capsule, name)
        if name == _VERSIONED:
            head = DLManagedTensorVersionedHead.from_address(tensor)
            if head.deleter:
                head.deleter(tensor)
        else:
            # DLManagedTensor: the deleter follows the DLTensor and manager_ctx.
            deleter = _DELETER.from_address(tensor + _LEGACY_DELETER_OFFSET)
            if deleter:
                deleter(tensor)


# sizeof(DLTensor) on 64-bit: data, device(8), ndim(4)+dtype(4), shape, strides, byte_offset.
_LEGACY_DELETER_OFFSET = 48 + 8


class MemoryView:
    """A ferry memory view held by ferry (released on release() or garbage collection)."""

    def __init__(self):
        self.c = FerryMemoryViewStruct()

    @property
    def data(self):
        return self.c.data or 0

    @property
    def shape(self):
        return tuple(self.c.shape[i] for i in range(self.c.ndim))

    @property
    def strides(self):
        if not self.c.strides:
            return None
        return tuple(self.c.strides[i] for i in range(self.c.ndim))

    @property
    def format(self):
        return (self.c.format or b"C").decode()

    @property
    def readonly(self):
        return bool(self.c.readonly)

    def item_pointer(self, *indices):
        error = FerryErrorStruct()
        idx = (ctypes.c_int64 * max(1, len(indices)))(*indices)
        out = ctypes.c_void_p()
        check(lib.FerryMemoryViewGetItemPointer(ctypes.byref(self.c), idx, ctypes.byref(out),
                                                ctypes.byref(error)), error)
        return out.value

    def release(self):
        error = FerryErrorStruct()
        check(lib.FerryMemoryViewRelease(ctypes.byref(self.c), ctypes.byref(error)), error)

    def __del__(self):
        if self.c.reserved:
            self.release()

    def __dlpack_device__(self):
        return (self.c.device_type, 0 if self.c.device_type == ARROW_DEVICE_CPU else self.c.device_id)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export as a DLPack capsule: versioned when the consumer allows (1, x), else legacy."""
        if copy:
            raise BufferError("ferry exports DLPack without copying")
        error = FerryErrorStruct()
        tensor = ctypes.c_void_p()
        if max_version is not None and max_version[0] >= 1:
            check(lib.FerryMemoryViewToDLPack(ctypes.byref(self.c), ctypes.byref(tensor),
                                              ctypes.byref(error)), error)
            return _api.PyCapsule_New(tensor, _VERSIONED, ctypes.cast(_capsule_destructor, ctypes.c_void_p))
        check(lib.FerryMemoryViewToDLPackLegacy(ctypes.byref(self.c), ctypes.byref(tensor),
                                                ctypes.byref(error)), error)
        return _api.PyCapsule_New(tensor, _LEGACY, ctypes.cast(_capsule_destructor, ctypes.c_void_p))


def consume_dlpack_capsule(capsule):
    """Take the tensor out of a DLPack capsule into a ferry MemoryView, renaming the capsule to
    used_* first, so that it is consumed once and its destructor no longer deletes the tensor."""
    for name, used, take in ((_VERSIONED, _USED_VERSIONED, lib.FerryMemoryViewFromDLPack),
                             (_LEGACY, _USED_LEGACY, lib.FerryMemoryViewFromDLPackLegacy)):
        if _api.PyCapsule_IsValid(capsule, name):
            tensor = _api.PyCapsule_GetPointer(capsule, name)
            _api.PyCapsule_SetName(capsule, used)
            view = MemoryView()
            error = FerryErrorStruct()
            check(take(tensor, ctypes.byref(view.c), ctypes.byref(error)), error)
            return view
    raise ValueError("not an unconsumed DLPack capsule (a capsule can be consumed only once; "
                     "its name is now used_dltensor*)")


def from_dlpack(obj, versioned=True):
    """A ferry MemoryView over any __dlpack__ exporter's memory (zero-copy)."""
    capsule = obj.__dlpack__(max_version=(1, 1)) if versioned else obj.__dlpack__()
    return consume_dlpack_capsule(capsule)


# -- Arrow IPC -------------------------------------------------------------------------------


class FerryIpcReadOptions(ctypes.Structure):
    _fields_ = [("validation", ctypes.c_int32), ("max_decompressed_bytes", ctypes.c_int64)]


class FerryIpcWriteOptions(ctypes.Structure):
    _fields_ = [("format", ctypes.c_int32), ("compression", ctypes.c_int32),
                ("compression_level", ctypes.c_int32), ("alignment", ctypes.c_int32),
                ("big_endian", ctypes.c_int32), ("emit_dictionary_deltas", ctypes.c_int32)]


class FerryBuffer(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("size", ctypes.c_int64),
                ("release", ctypes.c_void_p), ("private_data", ctypes.c_void_p)]


_RELEASE_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_held_inputs = {}


@_RELEASE_CB
def _release_input(key):
    _held_inputs.pop(key, None)


lib.FerryIpcReadPath.argtypes = [ctypes.c_char_p, _P(FerryIpcReadOptions), _P(ArrowArrayStream),
                                 _P(FerryErrorStruct)]
lib.FerryIpcReadBuffer.argtypes = [ctypes.c_void_p, ctypes.c_int64, _RELEASE_CB, ctypes.c_void_p,
                                   _P(FerryIpcReadOptions), _P(ArrowArrayStream), _P(FerryErrorStruct)]
lib.FerryIpcWritePath.argtypes = [_P(ArrowArrayStream), ctypes.c_char_p, _P(FerryIpcWriteOptions),
                                  _P(FerryErrorStruct)]
lib.FerryIpcWriteBuffer.argtypes = [_P(ArrowArrayStream), _P(FerryIpcWriteOptions), _P(FerryBuffer),
                                    _P(FerryErrorStruct)]
lib.FerryIpcFileReaderOpen.argtypes = [ctypes.c_char_p, _P(FerryIpcReadOptions), _P(ctypes.c_void_p),
                                       _P(FerryErrorStruct)]
lib.FerryIpcFileReaderNumRecordBatches.argtypes = [ctypes.c_void_p]
lib.FerryIpcFileReaderNumRecordBatches.restype = ctypes.c_int64
lib.FerryIpcFileReaderSchema.argtypes = [ctypes.c_void_p, _P(ArrowSchema), _P(FerryErrorStruct)]
lib.FerryIpcFileReaderRead.argtypes = [ctypes.c_void_p, ctypes.c_int64, _P(ArrowArray), _P(FerryErrorStruct)]
lib.FerryIpcFileReaderRelease.argtypes = [ctypes.c_void_p]
lib.FerryIpcFileReaderRelease.restype = None

COMPRESSION = {None: 0, "lz4": 1, "zstd": 2}


def _read_options(validation):
    return FerryIpcReadOptions(validation, 0)


def _import_stream(stream):
    import pyarrow as pa
    return pa.RecordBatchReader._import_from_c(ctypes.addressof(stream))


def ipc_read_path(path, validation=FULL):
    """Read an IPC stream or file with ferry; returns a pyarrow RecordBatchReader over it."""
    stream = ArrowArrayStream()
    error = FerryErrorStruct()
    opts = _read_options(validation)
    check(lib.FerryIpcReadPath(str(path).encode(), ctypes.byref(opts), ctypes.byref(stream),
                               ctypes.byref(error)), error)
    return _import_stream(stream)


_kept_forever = []


def ipc_read_buffer(data, validation=FULL, track=True):
    """Read IPC bytes in place: `data` (any buffer-protocol object) is held until ferry releases it.

    With track=False the bytes are kept for the life of the process instead: use it where the
    stream fails inside pyarrow, whose error path releases arrays while a Python exception is
    pending, which a ctypes callback cannot run under."""
    import pyarrow as pa
    buf = pa.py_buffer(data)
    key = ctypes.c_void_p(id(buf))
    if track:
        _held_inputs[key.value] = buf
        release_cb = _release_input
    else:
        _kept_forever.append(buf)
        release_cb = _RELEASE_CB()
    stream = ArrowArrayStream()
    error = FerryErrorStruct()
    opts = _read_options(validation)
    check(lib.FerryIpcReadBuffer(buf.address, buf.size, release_cb, key, ctypes.byref(opts),
                                 ctypes.byref(stream), ctypes.byref(error)), error)
    return _import_stream(stream)


def held_input_count():
    return len(_held_inputs)


def _export_reader(data):
    import pyarrow as pa
    if isinstance(data, pa.Table):
        data = pa.RecordBatchReader.from_batches(data.schema, data.to_batches())
    elif isinstance(data, pa.RecordBatch):
        data = pa.RecordBatchReader.from_batches(data.schema, [data])
    stream = ArrowArrayStream()
    data._export_to_c(ctypes.addressof(stream))
    return stream


def _write_options(file, compression, alignment, level, big_endian=False, deltas=False):
    return FerryIpcWriteOptions(1 if file else 0, COMPRESSION[compression], level, alignment,
                                1 if big_endian else 0, 1 if deltas else 0)


def ipc_write_path(data, path, file=False, compression=None, alignment=8, level=0):
    """Write a pyarrow Table, RecordBatch or RecordBatchReader with ferry."""
    stream = _export_reader(data)
    error = FerryErrorStruct()
    opts = _write_options(file, compression, alignment, level)
    check(lib.FerryIpcWritePath(ctypes.byref(stream), str(path).encode(), ctypes.byref(opts),
                                ctypes.byref(error)), error)


def ipc_write_bytes(data, file=False, compression=None, alignment=8, level=0, big_endian=False,
                    emit_dictionary_deltas=False):
    stream = _export_reader(data)
    error = FerryErrorStruct()
    out = FerryBuffer()
    opts = _write_options(file, compression, alignment, level, big_endian, emit_dictionary_deltas)
    check(lib.FerryIpcWriteBuffer(ctypes.byref(stream), ctypes.byref(opts), ctypes.byref(out),
                                  ctypes.byref(error)), error)
    try:
        return ctypes.string_at(out.data, out.size)
    finally:
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(out.release)(ctypes.addressof(out))


class IpcFileReader:
    """ferry's random-access reader of the IPC file format."""

    def __init__(self, path, validation=FULL):
        self._handle = ctypes.c_void_p()
        error = FerryErrorStruct()
        opts = _read_options(validation)
        check(lib.FerryIpcFileReaderOpen(str(path).encode(), ctypes.byref(opts), ctypes.byref(self._handle),
                                         ctypes.byref(error)), error)

    @property
    def num_record_batches(self):
        return lib.FerryIpcFileReaderNumRecordBatches(self._handle)

    def schema(self):
        import pyarrow as pa
        s = ArrowSchema()
        error = FerryErrorStruct()
        check(lib.FerryIpcFileReaderSchema(self._handle, ctypes.byref(s), ctypes.byref(error)), error)
        return pa.Schema._import_from_c(ctypes.addressof(s))

    def read(self, i):
        import pyarrow as pa
        s = ArrowSchema()
        error = FerryErrorStruct()
        check(lib.FerryIpcFileReaderSchema(self._handle, ctypes.byref(s), ctypes.byref(error)), error)
        a = ArrowArray()
        code = lib.FerryIpcFileReaderRead(self._handle, i, ctypes.byref(a), ctypes.byref(error))
        if code != 0:
            release(s)
            check(code, error)
        return pa.RecordBatch._import_from_c(ctypes.addressof(a), ctypes.addressof(s))

    def close(self):
        if self._handle:
            lib.FerryIpcFileReaderRelease(self._handle)
            self._handle = ctypes.c_void_p()

    def __del__(self):
        self.close()
