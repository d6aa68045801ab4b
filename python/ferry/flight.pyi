"""
Arrow Flight: a client of any Flight server, which follows a ferry server's fast locations (shared memory, UCX) before DoGet.
"""

from collections.abc import Sequence

import ferry._ferry


class Endpoint:
    """
    One stream of a flight: its ticket, the URIs that redeem it (fastest first on a ferry server) and its expiry.
    """

    def __init__(self, ticket: bytes, locations: Sequence[str]) -> None:
        """
        An endpoint from its ticket and locations (as another process got them from GetFlightInfo), for do_get; it has no expiry. Pickled, an endpoint keeps these two.
        """

    def __getstate__(self) -> tuple[bytes, list[str]]: ...

    def __setstate__(self, arg: tuple[bytes, Sequence[str]], /) -> None: ...

    @property
    def ticket(self) -> bytes: ...

    @property
    def locations(self) -> list[str]: ...

    @property
    def expiration(self) -> object:
        """
        When the ticket expires (a datetime in UTC), or None when the server did not say.
        """

    def __repr__(self) -> str: ...

class FlightInfo:
    """
    What GetFlightInfo says about a flight: its path, schema, endpoints and size (-1: unknown).
    """

    @property
    def path(self) -> list[str]: ...

    @property
    def command(self) -> bytes: ...

    @property
    def endpoints(self) -> list[Endpoint]: ...

    @property
    def total_records(self) -> int: ...

    @property
    def total_bytes(self) -> int: ...

    @property
    def ordered(self) -> bool: ...

    @property
    def schema(self) -> ferry._ferry.Schema:
        """The schema, decoded (a ferry.Schema)."""

    def __repr__(self) -> str: ...

class Client:
    """A connection to one Flight server."""

    def list_flights(self) -> list[FlightInfo]:
        """Every flight the server lists."""

    def get_flight_info(self, path: str) -> FlightInfo:
        """GetFlightInfo for the path descriptor [path]."""

    def get_schema(self, path: str) -> ferry._ferry.Schema:
        """GetSchema for [path], as a ferry.Schema."""

    def do_get(self, path_or_ticket: str | bytes | Endpoint, via: str = 'auto', device: ferry._ferry.Device | None = None, validation: ferry._ferry.ValidationLevel = ferry._ferry.ValidationLevel.FULL, parallel: int = 0) -> ferry._ferry.ArrayStream:
        """
        Read a flight as a ferry.ArrayStream (it has __arrow_c_stream__ and __arrow_c_device_stream__, so pyarrow, polars and DuckDB read it). A str is a path: GetFlightInfo, then its endpoints, `parallel` at once (0: up to 4; an ordered flight's batches in its order), each through its own locations in order (shared memory when its server is on this host, UCX, DoGet), or only `via`. An Endpoint is read the same way, alone. bytes are a ticket, redeemed with DoGet.
        """

    def do_put(self, path: str, data: object) -> None:
        """
        Upload anything with __arrow_c_stream__ as flight [path] (DoPut); returns once the server has stored it.
        """

    def do_action(self, type: str, body: bytes = ...) -> list:
        """
        DoAction: the result bodies (a list of bytes). ferry's server has 'drop' (body: a flight's name), 'refresh-ticket' (body: a ticket), 'append-partition' (body: JSON {"flight": NAME, "from": UPLOADED}) and 'stats' (its totals per plane, JSON).
        """

    def list_actions(self) -> list[tuple[str, str]]:
        """The server's actions as (type, description) pairs."""

    @property
    def uri(self) -> str:
        """The URI this client connected to."""

    @property
    def last_location(self) -> str:
        """The URI the last do_get read from (a shm://, ucx:// or grpc:// URI)."""

    @property
    def plane_bytes(self) -> dict:
        """
        Bytes this client's reads received through each plane so far, {'shm', 'ucx', 'grpc'}, counted as batches in host memory come out of the streams.
        """

    def __repr__(self) -> str: ...

def connect(uri: str, *, token: str | None = None, tls_roots: str | None = None, tls_cert: str | None = None, tls_key: str | None = None, tls_server_name: str | None = None, timeout: float = 30.0) -> Client:
    """
    Connect to grpc://HOST:PORT, grpc+tls://HOST:PORT or grpc+unix:///PATH. `token` is sent as 'authorization: Bearer <token>' on every call; the TLS arguments are PEM text. The channel connects lazily: an absent server fails the first call.
    """
