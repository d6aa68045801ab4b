"""
ferry's C++ core: devices, schemas, arrays, streams, memory views and IPC.
"""

from collections.abc import Sequence
import enum


def version() -> str:
    """
    The version of the ferry library built into this extension (ferry.__version__).
    """

class Error(Exception):
    """
    The base of every exception ferry raises for a failed operation; its subclasses, one per error code, also derive from the builtin that fits (ferry.NotFoundError is a FileNotFoundError).
    """

class InvalidArgumentError(Error, ValueError):
    """
    Raised for ferry's InvalidArgument code: C return code 22, gRPC status 3.
    """

    code: str = 'InvalidArgument'

class NotFoundError(Error, FileNotFoundError):
    """Raised for ferry's NotFound code: C return code 2, gRPC status 5."""

    code: str = 'NotFound'

class AlreadyExistsError(Error, FileExistsError):
    """
    Raised for ferry's AlreadyExists code: C return code 17, gRPC status 6.
    """

    code: str = 'AlreadyExists'

class FailedPreconditionError(Error, RuntimeError):
    """
    Raised for ferry's FailedPrecondition code: C return code 16, gRPC status 9.
    """

    code: str = 'FailedPrecondition'

class OutOfRangeError(Error, IndexError):
    """Raised for ferry's OutOfRange code: C return code 34, gRPC status 11."""

    code: str = 'OutOfRange'

class UnavailableError(Error, ConnectionError):
    """
    Raised for ferry's Unavailable code: C return code 111, gRPC status 14.
    """

    code: str = 'Unavailable'

class DeadlineExceededError(Error, TimeoutError):
    """
    Raised for ferry's DeadlineExceeded code: C return code 110, gRPC status 4.
    """

    code: str = 'DeadlineExceeded'

class CancelledError(Error):
    """Raised for ferry's Cancelled code: C return code 125, gRPC status 1."""

    code: str = 'Cancelled'

class PermissionDeniedError(Error, PermissionError):
    """
    Raised for ferry's PermissionDenied code: C return code 13, gRPC status 7.
    """

    code: str = 'PermissionDenied'

class UnauthenticatedError(Error, PermissionError):
    """
    Raised for ferry's Unauthenticated code: C return code 1, gRPC status 16.
    """

    code: str = 'Unauthenticated'

class ResourceExhaustedError(Error, MemoryError):
    """
    Raised for ferry's ResourceExhausted code: C return code 12, gRPC status 8.
    """

    code: str = 'ResourceExhausted'

class DataLossError(Error):
    """Raised for ferry's DataLoss code: C return code 74, gRPC status 15."""

    code: str = 'DataLoss'

class UnimplementedError(Error, NotImplementedError):
    """
    Raised for ferry's Unimplemented code: C return code 95, gRPC status 12.
    """

    code: str = 'Unimplemented'

class InternalError(Error, RuntimeError):
    """Raised for ferry's Internal code: C return code 131, gRPC status 13."""

    code: str = 'Internal'

class IOError(Error, OSError):
    """Raised for ferry's IOError code: C return code 5, gRPC status 2."""

    code: str = 'IOError'

def status_codes() -> list:
    """
    The error table: one dict per code (name, error_class, c_code, grpc_code, python_base), the same rows the C, gRPC and Ruby faces map from.
    """

class DeviceType(enum.Enum):
    """Device types, numbered as in the Arrow C Device interface."""

    CPU = 1

    CUDA = 2

    CUDA_HOST = 3

    OPENCL = 4

    VULKAN = 7

    METAL = 8

    VPI = 9

    ROCM = 10

    ROCM_HOST = 11

    EXT_DEV = 12

    CUDA_MANAGED = 13

    ONEAPI = 14

    WEBGPU = 15

    HEXAGON = 16

class Device:
    """
    A memory space: the CPU, a GPU ordinal, an OpenCL device or the guarded test device. ferry owns every device; they live until the process exits.
    """

    @staticmethod
    def cpu() -> Device:
        """The CPU device (id -1)."""

    @staticmethod
    def resolve(device_type: DeviceType, device_id: int) -> Device:
        """The device of a type and id; ValueError naming why when there is none."""

    @staticmethod
    def parse(name: str) -> Device:
        """
        The device a name spells: 'cpu', 'cuda:0', 'cuda_host:0', 'cuda_managed:0', 'opencl:0' or 'guarded:0' (any case; str(device) reads back). The same parser as the CLI's --device; ValueError naming why when the name is bad or the device absent.
        """

    def release_cached(self) -> int:
        """
        Free what this device keeps for reuse and no work uses now (CUDA's pinned staging blocks), as torch.cuda.empty_cache does; returns the bytes freed.
        """

    @property
    def device_type(self) -> DeviceType: ...

    @property
    def device_id(self) -> int: ...

    @property
    def host_accessible(self) -> bool:
        """Whether the host may read this device's memory."""

    def __eq__(self, arg: object, /) -> bool: ...

    def __hash__(self) -> int: ...

    def __repr__(self) -> str: ...

    def __str__(self) -> str: ...

def devices() -> list[Device]:
    """
    Every device this machine has: the CPU, each CUDA and OpenCL device, the guarded device.
    """

class TypeId(enum.Enum):
    """Every Arrow type ferry knows."""

    UNINITIALIZED = 0

    NULL = 1

    BOOL = 2

    INT8 = 3

    UINT8 = 4

    INT16 = 5

    UINT16 = 6

    INT32 = 7

    UINT32 = 8

    INT64 = 9

    UINT64 = 10

    HALF_FLOAT = 11

    FLOAT = 12

    DOUBLE = 13

    DECIMAL32 = 14

    DECIMAL64 = 15

    DECIMAL128 = 16

    DECIMAL256 = 17

    FIXED_SIZE_BINARY = 18

    BINARY = 19

    LARGE_BINARY = 20

    STRING = 21

    LARGE_STRING = 22

    BINARY_VIEW = 23

    STRING_VIEW = 24

    DATE32 = 25

    DATE64 = 26

    TIME32 = 27

    TIME64 = 28

    TIMESTAMP = 29

    DURATION = 30

    INTERVAL_MONTHS = 31

    INTERVAL_DAY_TIME = 32

    INTERVAL_MONTH_DAY_NANO = 33

    LIST = 34

    LARGE_LIST = 35

    LIST_VIEW = 36

    LARGE_LIST_VIEW = 37

    FIXED_SIZE_LIST = 38

    STRUCT = 39

    MAP = 40

    SPARSE_UNION = 41

    DENSE_UNION = 42

    RUN_END_ENCODED = 43

    DICTIONARY = 44

    EXTENSION = 45

class TimeUnit(enum.Enum):
    """The unit of time, timestamp and duration types."""

    SECOND = 0

    MILLI = 1

    MICRO = 2

    NANO = 3

class DataType:
    """The parsed type of one schema node (see Schema.type)."""

    @property
    def id(self) -> TypeId: ...

    @property
    def storage_id(self) -> TypeId:
        """
        The physical type: a dictionary's index type, an extension's storage type.
        """

    @property
    def name(self) -> str: ...

    @property
    def fixed_size(self) -> int:
        """Byte width of fixed_size_binary, list size of fixed_size_list, else 0."""

    @property
    def decimal_bitwidth(self) -> int: ...

    @property
    def decimal_precision(self) -> int: ...

    @property
    def decimal_scale(self) -> int: ...

    @property
    def time_unit(self) -> TimeUnit: ...

    @property
    def timezone(self) -> str: ...

    @property
    def extension_name(self) -> str: ...

    @property
    def extension_metadata(self) -> bytes: ...

    @property
    def union_type_ids(self) -> list[int]: ...

    def __arrow_c_schema__(self) -> object: ...

    def __str__(self) -> str: ...

    def __repr__(self) -> str: ...

class Schema:
    """
    An Arrow schema tree (or one node of it), owned by ferry or moved in from any producer of __arrow_c_schema__.
    """

    def __init__(self, format: str, name: str = '', children: Sequence[Schema] = [], nullable: bool = True, metadata: dict | None = None) -> None:
        """A schema node of an Arrow C format string ("l", "+s", "tsu:UTC", ...)."""

    @staticmethod
    def from_arrow(obj: object) -> Schema:
        """Move in the schema of any object with __arrow_c_schema__."""

    @property
    def format(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def flags(self) -> int: ...

    @property
    def nullable(self) -> bool: ...

    @property
    def metadata(self) -> dict: ...

    @property
    def n_children(self) -> int: ...

    def child(self, i: int) -> Schema: ...

    @property
    def children(self) -> list[Schema]: ...

    @property
    def dictionary(self) -> Schema | None: ...

    @property
    def type(self) -> DataType: ...

    def __arrow_c_schema__(self) -> object:
        """A capsule owning a deep copy of this schema node."""

    def equals(self, other: object, check_metadata: bool = False) -> bool:
        """
        Whether `other` (any __arrow_c_schema__ producer) describes the same data, as pyarrow.Schema.equals decides: types, names, nullability, children, dictionaries and extension types; with check_metadata, every node's key-value metadata too.
        """

    def __eq__(self, arg: object, /) -> bool: ...

    def __str__(self) -> str: ...

    def __repr__(self) -> str: ...

def schema(obj: object) -> Schema:
    """
    Move in the schema of any object with __arrow_c_schema__ (as pa.schema(obj) does).
    """

class ValidationLevel(enum.Enum):
    """How much Array.validate checks."""

    NONE = 0

    MINIMAL = 1
    """Structure and sizes; reads no buffer."""

    DEFAULT = 2
    """Adds O(1) reads (first and last offsets)."""

    FULL = 3
    """Checks every element."""

class Array:
    """
    An Arrow array on any device: owned by ferry or moved in from any producer of the Arrow PyCapsule interface. Children share the root's buffers.
    """

    @staticmethod
    def from_arrow(obj: object, requested_schema: object | None = None) -> Array:
        """See ferry.array."""

    def __len__(self) -> int: ...

    @property
    def length(self) -> int: ...

    @property
    def offset(self) -> int: ...

    @property
    def null_count(self) -> int:
        """The null count the producer declared (-1 when unknown)."""

    @property
    def n_buffers(self) -> int: ...

    @property
    def buffer_addresses(self) -> list[int]:
        """The address of each buffer (0 for an absent one)."""

    @property
    def device_type(self) -> DeviceType: ...

    @property
    def device_id(self) -> int: ...

    @property
    def device(self) -> Device: ...

    @property
    def schema(self) -> Schema: ...

    @property
    def type(self) -> DataType: ...

    @property
    def n_children(self) -> int: ...

    def child(self, i: int) -> Array: ...

    @property
    def children(self) -> list[Array]: ...

    @property
    def dictionary(self) -> Array | None: ...

    def validate(self, level: ValidationLevel = ValidationLevel.FULL) -> None:
        """
        Check the array at `level`; ValueError naming the path and element when it is not valid.
        """

    def copy_to(self, device: Device) -> Array:
        """
        A copy of the visible part of the array on `device` (offset 0), complete on return.
        """

    def move_to(self, device: Device) -> Array:
        """
        The same buffers seen from `device`, without a copy (CUDA_HOST or managed memory, or the same device); NotImplementedError when no zero-copy path exists (use copy_to).
        """

    def __arrow_c_schema__(self) -> object: ...

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple:
        """
        (schema, array) capsules sharing this array's buffers; host-accessible data only.
        """

    def __arrow_c_device_array__(self, requested_schema: object | None = None, **kwargs) -> tuple:
        """
        (schema, device array) capsules sharing this array's buffers, on its device.
        """

    def __repr__(self) -> str: ...

    __dlpack_c_exchange_api__: object

def array(obj: object, requested_schema: object | None = None) -> Array:
    """
    Move in the array of any Arrow PyCapsule producer, trying __arrow_c_device_array__, __arrow_c_device_stream__, __arrow_c_array__ and __arrow_c_stream__ in that order (a stream must hold one array). No buffer is copied.
    """

class ArrayStream:
    """
    A stream of arrays on one device, read once: iterate it, read_all(), or hand it on through __arrow_c_stream__ / __arrow_c_device_stream__.
    """

    @staticmethod
    def from_arrow(obj: object, requested_schema: object | None = None) -> ArrayStream:
        """See ferry.stream."""

    @staticmethod
    def from_arrays(arrays: Sequence[Array], schema: object | None = None) -> ArrayStream:
        """
        A device stream (ferry's own producer) yielding `arrays`, which share one schema and one device; no buffer is copied.
        """

    @property
    def schema(self) -> Schema: ...

    @property
    def device_type(self) -> DeviceType: ...

    @property
    def closed(self) -> bool: ...

    def read_next(self) -> Array | None:
        """The next array, or None at the end."""

    def read_all(self) -> list[Array]:
        """Every remaining array."""

    def close(self) -> None:
        """Release the stream now."""

    def __iter__(self) -> object: ...

    def __next__(self) -> Array: ...

    def __enter__(self) -> object: ...

    def __exit__(self, *args) -> None: ...

    def __arrow_c_schema__(self) -> object: ...

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """
        Move the stream into a capsule (host-readable streams only); this object is consumed.
        """

    def __arrow_c_device_stream__(self, requested_schema: object | None = None, **kwargs) -> object:
        """Move the device stream into a capsule; this object is consumed."""

    def __repr__(self) -> str: ...

def stream(obj: object, requested_schema: object | None = None) -> ArrayStream:
    """
    Move in any stream producer, trying __arrow_c_device_stream__ then __arrow_c_stream__ (an array producer becomes a stream of one array).
    """

class MemoryView:
    """
    A typed N-d view of memory on any device (pylibcudf's gpumemoryview, for every device): built from the buffer protocol, __cuda_array_interface__ or __dlpack__, and exported through each. Holds a strong reference to `obj`.
    """

    def __init__(self, obj: object) -> None: ...

    @staticmethod
    def from_array(array: Array) -> MemoryView:
        """
        A read-only view of a fixed-width (1-d), fixed-size list (2-d) or fixed_shape_tensor (N-d) ferry.Array's values, on its device, sharing its buffers.
        """

    @property
    def obj(self) -> object:
        """The object that owns the memory (a slice's parent view for slices)."""

    @property
    def ptr(self) -> int: ...

    @property
    def nbytes(self) -> int:
        """Bytes spanned from the first to the last item, following the strides."""

    @property
    def shape(self) -> list[int]: ...

    @property
    def strides(self) -> list[int]:
        """In bytes."""

    @property
    def ndim(self) -> int: ...

    @property
    def itemsize(self) -> int: ...

    @property
    def format(self) -> str:
        """
        The item format as the struct module spells it; ferry's own braced name for low-precision floats, which the struct module has no code for ('{float8_e4m3fn}').
        """

    @property
    def readonly(self) -> bool: ...

    @property
    def device_type(self) -> DeviceType: ...

    @property
    def device_id(self) -> int: ...

    @property
    def stream(self) -> int | None:
        """The producer's stream (from __cuda_array_interface__), or None."""

    @property
    def c_contiguous(self) -> bool: ...

    @property
    def f_contiguous(self) -> bool: ...

    def __len__(self) -> int: ...

    def __getitem__(self, key: object) -> object:
        """
        A view that references this one, indexed as NumPy indexes: one slice or integer per leading dimension (a tuple for several); a slice keeps its dimension, an integer drops it (an item is a 0-d view: np.asarray(view[i])[()] reads it). No copy.
        """

    @property
    def __cuda_array_interface__(self) -> dict:
        """Version 3, for CUDA memory only."""

    def __dlpack__(self, *, stream: object | None = None, max_version: object | None = None, dl_device: object | None = None, copy: object | None = None) -> object: ...

    def __dlpack_device__(self) -> tuple: ...

    def export_to(self, tensor_type: object) -> object:
        """
        A new `tensor_type` object (torch.Tensor, say) sharing this view's memory, made by that type's DLPack C exchange API; on a device its current stream waits on the view.
        """

    def __repr__(self) -> str: ...

    __dlpack_c_exchange_api__: object

def from_dlpack(obj: object) -> MemoryView:
    """
    A MemoryView of any DLPack producer (or a DLPack capsule), zero-copy: through the producer type's C exchange API (__dlpack_c_exchange_api__) when it has one, else __dlpack__.
    """
