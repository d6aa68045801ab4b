"""asyncio faces of ferry's Flight and dissociated-IPC clients.

`await ferry.aio.flight.connect(uri)` gives a client whose calls are awaited and whose reads are
iterated with `async for`; `async for batch in ferry.aio.dipc.connect(uri, ticket)` reads a
dataset. The blocking C++ calls run on a small fixed pool of worker threads, shared by every
client of the process (`workers()`, one unless `set_workers` said otherwise before the first
call), with the GIL released; each client's results reach its event loop through one eventfd
watched with `loop.add_reader`. No thread is made per call or per client.
"""
from ferry._ferry import _aio
from ferry.aio import dipc, flight
from ferry.aio._dispatch import AsyncStream


def set_workers(workers: int) -> None:
    """Size the worker pool (1-64). Only before the process's first ferry.aio call: the pool
    starts then and keeps its threads (ferry.FailedPreconditionError afterwards)."""
    _aio.set_workers(workers)


def workers() -> int:
    """How many worker threads the pool has, or will have once it starts."""
    return _aio.workers()


__all__ = ["AsyncStream", "dipc", "flight", "set_workers", "workers"]
