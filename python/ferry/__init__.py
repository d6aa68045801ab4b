"""ferry: move Arrow data and N-d arrays between devices, libraries and processes without copying.

A thin binding of the C++ library: every class and function lives in the extension module
`ferry._ferry` and is re-exported here, with `ferry.Error` and its subclasses, one per error code; `ferry.ipc` holds the IPC readers and writers,
`ferry.dipc` the dissociated-IPC server and client, and `ferry.flight` the Arrow Flight client.
"""
try:
    from ferry._build_config import UCX as _UCX
except ImportError:  # the package's sources, with an extension built apart (the GPU bundle)
    _UCX = "system"

if _UCX == "libucx":
    # The extension links the libucp.so.0 of PyPI's libucx package; loading that package's
    # libraries first (as ucxx and dask-cuda do) makes the loader resolve it there, so every
    # library in the process shares one UCX.
    import libucx

    libucx.load_library()

from ferry._ferry import (  # noqa: E402, F401
    AlreadyExistsError,
    Array,
    ArrayStream,
    CancelledError,
    DataLossError,
    DataType,
    DeadlineExceededError,
    Device,
    DeviceType,
    Error,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    IOError,
    MemoryView,
    NotFoundError,
    OutOfRangeError,
    PermissionDeniedError,
    ResourceExhaustedError,
    Schema,
    TimeUnit,
    TypeId,
    UnauthenticatedError,
    UnavailableError,
    UnimplementedError,
    ValidationLevel,
    array,
    devices,
    from_dlpack,
    schema,
    stream,
)
from ferry import dipc, flight, ipc  # noqa: E402, F401
from ferry._ferry import version as _version  # noqa: E402

#: The version of the ferry library in the extension; the package metadata, `ferry --version`, the
#: gem and the CMake and pkg-config packages report the same (the repository's VERSION file).
__version__: str = _version()

__all__ = [
    "Array", "ArrayStream", "DataType", "Device", "DeviceType", "MemoryView", "Schema", "TimeUnit",
    "TypeId", "ValidationLevel", "array", "devices", "from_dlpack", "dipc", "flight", "ipc", "schema", "stream",
    # Errors: ferry.Error and one subclass per error code (docs/architecture.md, "Errors").
    "Error", "AlreadyExistsError", "CancelledError", "DataLossError", "DeadlineExceededError",
    "FailedPreconditionError", "InternalError", "InvalidArgumentError", "IOError", "NotFoundError",
    "OutOfRangeError", "PermissionDeniedError", "ResourceExhaustedError", "UnauthenticatedError",
    "UnavailableError", "UnimplementedError",
]
