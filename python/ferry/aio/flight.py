"""An asyncio Arrow Flight client: `client = await ferry.aio.flight.connect(uri)`, then awaited
calls and `async for batch in client.do_get(path)`. It reads as ferry.flight.Client does
(shared memory when the server is on this host, UCX, then DoGet); the calls run on ferry.aio's
worker pool, and their results reach the loop through the client's one eventfd."""
import asyncio

from ferry import ValidationLevel
from ferry._ferry import _aio
from ferry.aio._dispatch import AsyncStream, Dispatcher


class Client:
    """A connection to one Flight server, bound to the event loop that connected it. Close it
    with `await client.close()` or `async with`."""

    def __init__(self, dispatcher, client):
        self._dispatcher = dispatcher
        self._client = client

    @property
    def uri(self):
        """The URI this client connected to."""
        return self._client.uri

    @property
    def plane_bytes(self):
        """Bytes this client's reads received through each plane so far, {'shm', 'ucx', 'grpc'}."""
        return self._client.plane_bytes

    async def list_flights(self):
        """Every flight the server lists (ferry.flight.FlightInfo)."""
        return await self._dispatcher.submit(self._client.list_flights)

    async def get_flight_info(self, path):
        """GetFlightInfo for the path descriptor [path]."""
        return await self._dispatcher.submit(self._client.get_flight_info, path)

    async def get_schema(self, path):
        """GetSchema for [path], as a ferry.Schema."""
        return await self._dispatcher.submit(self._client.get_schema, path)

    def do_get(self, path_or_ticket, *, via="auto", device=None, validation=ValidationLevel.FULL,
               parallel=0, columns=None, buffer_lists=False, window=None, spin=50,
               grpc_below=None):
        """Read a flight as an AsyncStream of batches: `async for batch in client.do_get(path)`.
        The arguments are ferry.flight.Client.do_get's (grpc_below None: its default). The read
        starts now, on the pool."""
        opening = self._dispatcher.submit(self._client.do_get, path_or_ticket, via, device,
                                          validation, parallel, columns, buffer_lists, window,
                                          spin, grpc_below)
        return AsyncStream(self._dispatcher, opening, owns_dispatcher=False, spin_us=spin)

    async def do_put(self, path, data):
        """Upload anything with __arrow_c_stream__ as flight [path] (DoPut); returns once the
        server has stored it. The stream is taken now and read on the pool (a producer written
        in Python takes the GIL there for each batch)."""
        await self._dispatcher.submit(self._client.do_put, path, data)

    async def do_action(self, type, body=b""):
        """DoAction: the result bodies (a list of bytes)."""
        return await self._dispatcher.submit(self._client.do_action, type, body)

    async def list_actions(self):
        """The server's actions as (type, description) pairs."""
        return await self._dispatcher.submit(self._client.list_actions)

    async def close(self):
        """Cancel the calls in flight and stop watching the client's eventfd (idempotent). The
        connection closes once no stream of it remains."""
        self._dispatcher.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    def __repr__(self):
        return f"ferry.aio.flight.Client({self.uri})"


async def connect(uri, *, token=None, tls_roots=None, tls_cert=None, tls_key=None,
                  tls_server_name=None, timeout=30.0, traceparent=None, tracestate=None):
    """Connect to a Flight server, as ferry.flight.connect does (the same arguments), on the
    running event loop: the returned client is used from that loop."""
    dispatcher = Dispatcher(asyncio.get_running_loop())
    try:
        return Client(dispatcher, await dispatcher.submit(
            _aio.flight_connect, dispatcher.queue, uri, token, tls_roots, tls_cert, tls_key,
            tls_server_name, timeout, traceparent, tracestate))
    except BaseException:
        dispatcher.close()
        raise


__all__ = ["Client", "connect"]
