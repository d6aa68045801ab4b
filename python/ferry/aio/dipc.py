"""Read a dissociated-IPC dataset on an event loop: `async for batch in
ferry.aio.dipc.connect(uri, ticket)`. The session runs on ferry.aio's worker pool; its batches
reach the loop through one eventfd per stream."""
import asyncio

from ferry import ValidationLevel
from ferry._ferry import _aio
from ferry.aio._dispatch import AsyncStream, Dispatcher


def connect(uri, ticket, *, device=None, validation=ValidationLevel.FULL, timeout=30.0,
            reorder_window=64, data_uri=None, max_metadata_bytes=64 << 20,
            max_body_bytes=4 << 30, columns=None, buffer_lists=False, traceparent=None,
            tracestate=None, window=None, spin=50, connect_timeout=None, pool=None):
    """Connect to a server and read dataset `ticket` as an AsyncStream of record batches; the
    arguments are ferry.dipc.connect's. Called on a running event loop: the connect starts now,
    on the pool, and a refused ticket or a dead server raises from the first `async for` step
    (or `await stream.open()`)."""
    dispatcher = Dispatcher(asyncio.get_running_loop())
    try:
        opening = dispatcher.submit(
            _aio.dipc_connect, dispatcher.queue, uri, ticket, device, validation, timeout,
            reorder_window, data_uri, max_metadata_bytes, max_body_bytes, columns, buffer_lists,
            traceparent, tracestate, window, spin, connect_timeout, pool)
    except BaseException:
        dispatcher.close()
        raise
    return AsyncStream(dispatcher, opening, owns_dispatcher=True, spin_us=spin)


__all__ = ["connect"]
