"""Dissociated IPC: a server of named datasets over shared memory or UCX, and its clients, which
read a dataset as a stream of record batches (in place over shared memory)."""
from ferry._ferry.dipc import (  # noqa: F401
    ConnectionPool,
    RegionAllocator,
    RegionBuffer,
    Server,
    ServerStats,
    Uri,
    connect,
    loaded_ucx,
    ucx_available,
)

__all__ = ["ConnectionPool", "RegionAllocator", "RegionBuffer", "Server", "ServerStats", "Uri",
           "connect", "loaded_ucx", "ucx_available"]
