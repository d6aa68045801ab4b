"""DLPack 1.3's structs and C exchange API table through ctypes, as the specification lays them
out, for tests that call a type's `__dlpack_c_exchange_api__` functions directly (PYFUNCTYPE: the
calls keep the GIL, as the exchange API requires, and a Python error the callee sets is raised)."""
import ctypes


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [
    ("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]
MT = ctypes.POINTER(DLManagedTensorVersioned)
SET_ERROR = ctypes.PYFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p)


class DLPackExchangeAPI(ctypes.Structure):
    # PYFUNCTYPE: the calls keep the GIL, as the exchange API requires, and a Python error the
    # callee sets is raised.
    _fields_ = [
        ("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("prev_api", ctypes.c_void_p),
        ("managed_tensor_allocator",
         ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.POINTER(DLTensor), ctypes.POINTER(MT),
                           ctypes.c_void_p, SET_ERROR)),
        ("managed_tensor_from_py_object_no_sync",
         ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(MT))),
        ("managed_tensor_to_py_object_no_sync",
         ctypes.PYFUNCTYPE(ctypes.c_int, MT, ctypes.POINTER(ctypes.py_object))),
        ("dltensor_from_py_object_no_sync",
         ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(DLTensor))),
        ("current_work_stream",
         ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32,
                           ctypes.POINTER(ctypes.c_void_p))),
    ]


capi = ctypes.pythonapi
capi.PyCapsule_GetName.argtypes = [ctypes.py_object]
capi.PyCapsule_GetName.restype = ctypes.c_char_p
capi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
capi.PyCapsule_GetPointer.restype = ctypes.c_void_p
capi.Py_DecRef.argtypes = [ctypes.py_object]

kDLCPU, kDLCUDA = 1, 2
kDLFloat, kDLFloat8_e4m3fn, kDLFloat4_e2m1fn = 2, 10, 17


def table(tp):
    capsule = tp.__dlpack_c_exchange_api__
    assert capi.PyCapsule_GetName(capsule) == b"dlpack_exchange_api"
    return DLPackExchangeAPI.from_address(capi.PyCapsule_GetPointer(capsule, b"dlpack_exchange_api"))


def take(slot):
    """The object a C call wrote into a ctypes py_object slot, whose new reference ctypes does not
    own: it is handed over to the returned object."""
    obj = slot.value
    capi.Py_DecRef(obj)
    return obj


def export(api, obj):
    out = MT()
    assert api.managed_tensor_from_py_object_no_sync(obj, ctypes.byref(out)) == 0
    return out
