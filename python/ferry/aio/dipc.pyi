from collections.abc import Sequence

from ferry import Device, ValidationLevel
from ferry.dipc import ConnectionPool, Uri
from ferry.aio._dispatch import AsyncStream

def connect(uri: Uri | str, ticket: str, *, device: Device | None = None,
            validation: ValidationLevel = ..., timeout: float = 30.0, reorder_window: int = 64,
            data_uri: Uri | str | None = None, max_metadata_bytes: int = ...,
            max_body_bytes: int = ..., columns: Sequence[int] | None = None,
            buffer_lists: bool = False, traceparent: str | None = None,
            tracestate: str | None = None, window: int | None = None,
            spin: int = 50, connect_timeout: float | None = None,
            pool: ConnectionPool | None = None) -> AsyncStream: ...

__all__ = ["connect"]
