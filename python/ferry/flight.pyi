"""
Arrow Flight: a client of any Flight server, which follows a ferry server's fast locations (shared memory, UCX) before DoGet, and a server in this process.
"""

from collections.abc import Mapping, Sequence
import os

import ferry._ferry


class Endpoint:
    """
    One stream of a flight: its ticket, the URIs that redeem it (fastest first on a ferry server), its expiry and its expected size.
    """

    def __init__(self, ticket: bytes, locations: Sequence[str], expected_bytes: int = -1) -> None:
        """
        An endpoint from its ticket, locations and expected size (as another process got them from GetFlightInfo), for do_get; it has no expiry. Pickled, an endpoint keeps these three.
        """

    def __getstate__(self) -> tuple[bytes, list[str], int]: ...

    def __setstate__(self, arg: tuple, /) -> None: ...

    @property
    def ticket(self) -> bytes: ...

    @property
    def locations(self) -> list[str]: ...

    @property
    def expected_bytes(self) -> int:
        """
        The bytes it is expected to carry: its share of its flight's total_bytes, set when GetFlightInfo was decoded and kept when pickled (-1: unknown). do_get reads a small endpoint on another host over DoGet first (grpc_below).
        """

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

    def do_get(self, path_or_ticket: str | bytes | Endpoint, via: str = 'auto', device: ferry._ferry.Device | None = None, validation: ferry._ferry.ValidationLevel = ferry._ferry.ValidationLevel.FULL, parallel: int = 0, columns: Sequence[int | str] | None = None, buffer_lists: bool = False, window: int | None = None, spin: int = 50, grpc_below: int = 4194304) -> ferry._ferry.ArrayStream:
        """
        Read a flight as a ferry.ArrayStream (it has __arrow_c_stream__ and __arrow_c_device_stream__, so pyarrow, polars and DuckDB read it). A str is a path: GetFlightInfo, then its endpoints, `parallel` at once (0: up to 4; an ordered flight's batches in its order), each through its own locations in order (shared memory when its server is on this host, UCX, DoGet), or only `via`. An Endpoint is read the same way, alone. bytes are a ticket, redeemed with DoGet. `columns` (indices, or names with a path) reads only those columns, in the schema's order: over type-1 bodies only their buffers are fetched; other planes carry whole batches and decode only these. `buffer_lists` asks a server over a ucx:// location to lend buffer lists where it would send packed bodies because UCX would emulate this client's reads (over TCP, or on one host before UCX 1.16; `columns` implies it). `window` paces the read: at most that many batches are read past those taken, across the endpoints read at once, and shm:// and ucx:// servers send only what was asked of them; over DoGet gRPC's own flow control bounds the rest (None: unpaced, but for ucx:// servers, 256 batches ahead). `spin` is how many microseconds a read over shm:// or ucx:// watches for the next message on the CPU before it sleeps (0: it sleeps at once). With `via` 'auto', an endpoint on another host whose expected size (Endpoint.expected_bytes, its share of the flight) is below `grpc_below` bytes is read over DoGet before UCX, whose connection takes longer to set up (0: UCX first for every size).
        """

    def do_put(self, path: str, data: object) -> None:
        """
        Upload anything with __arrow_c_stream__ as flight [path] (DoPut); returns once the server has stored it.
        """

    def do_action(self, type: str, body: bytes = ...) -> list:
        """
        DoAction: the result bodies (a list of bytes). ferry's server has 'drop' (body: a flight's name), 'refresh-ticket' (body: a ticket), 'append-partition' (body: JSON {"flight": NAME, "from": UPLOADED}) and 'stats' (its totals per plane, JSON).
        """

    def set_session_options(self, options: Mapping[str, str]) -> dict[str, str]:
        """
        Flight's SetSessionOptions: opens a session on this server when the client holds none (its cookie is sent on every later call, DoGet's too) and sets `options`, each a str (compression, body_type, parallelism, target_device; '' removes one). Returns the options refused, {name: 'INVALID_NAME' or 'INVALID_VALUE'}. do_get then takes the session's body_type, parallelism and target_device where its own arguments are left at their defaults.
        """

    def get_session_options(self) -> dict[str, str]:
        """
        Flight's GetSessionOptions: the session's options as the server holds them, each as a str ({} without a session).
        """

    def close_session(self) -> None:
        """
        Flight's CloseSession: the server ends the session and this client forgets it.
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

def connect(uri: str, *, token: str | None = None, tls_roots: str | None = None, tls_cert: str | None = None, tls_key: str | None = None, tls_server_name: str | None = None, timeout: float = 30.0, traceparent: str | None = None, tracestate: str | None = None, keep_connections: bool = True) -> Client:
    """
    Connect to grpc://HOST:PORT, grpc+tls://HOST:PORT or grpc+unix:///PATH. `token` is sent as 'authorization: Bearer <token>' on every call; the TLS arguments are PEM text. The channel connects lazily: an absent server fails the first call. `traceparent` (and `tracestate`): a W3C Trace Context sent with every call and in the hello of every shm:// and ucx:// location a read follows, so that the servers' logs carry its trace id (ValueError if it is not valid). `keep_connections`: a UCX connection whose read ended having been lent nothing is kept (up to 10 s idle) for the next read from its server.
    """

class Server:
    """
    A Flight server in this process: gRPC and the shared-memory and UCX planes, which its FlightInfos list as locations. Serving never holds the GIL; its batches keep their producers' memory (no copy) until dropped or stopped.
    """

    @staticmethod
    def start(listen: str = '127.0.0.1:0', *, token: str | None = None, tls_cert: str | None = None, tls_key: str | None = None, planes: Sequence[str] = ['shm', 'ucx'], keep: bool = False, peers: Sequence[str] = [], peer_timeout: float = 2.0, allow_partial: bool = False, peer_tls_roots: str | None = None, max_message_bytes: int = 1073741824) -> Server:
        """
        Start serving on `listen` (HOST:PORT; port 0: a free one). `token`: the bearer token every call must carry; `tls_cert`/`tls_key`: PEM text for grpc+tls; `planes`: the fast planes beside gRPC; `keep`: each flight written once into each plane's own memory. Federation: `peers` (grpc:// or grpc+tls:// URIs) whose flights this server lists with its own, each given `peer_timeout` seconds to answer; with `allow_partial` a silent peer is left out and named in the FlightInfo's app_metadata instead of failing the call; `peer_tls_roots`: PEM certificates for grpc+tls peers; `max_message_bytes`: the largest body DoGet sends in one message (1 to 1 GiB), a larger batch going as zero-copy slices.
        """

    def add(self, name: str, data: object, *, partitioned: bool = False) -> None:
        """
        Serve `data` as flight `name` (FileExistsError if it is served): a list of record batches (any array producers), one batch, or a stream producer (a pyarrow Table or RecordBatchReader, ...; read to its end now). With partitioned=True, `data` is a list of partitions, each one of those, and the flight has one endpoint per partition in this order. No batch is copied.
        """

    def add_path(self, name: str, paths: str | os.PathLike | Sequence[str | os.PathLike], *, partition_bytes: int = 0) -> None:
        """
        Serve IPC streams or files as flight `name`: one path is one endpoint, a list one endpoint per file in this order, each file cut further into endpoints of whole batches of at most `partition_bytes` body bytes when it is positive. The files are mapped and lent, not copied.
        """

    def append_partition(self, name: str, data: object) -> int:
        """
        Serve `data` (as for add) as the next endpoint of flight `name`, made if it does not exist, so that many writers build one flight; the new endpoint's index. ValueError if its schema differs from the flight's.
        """

    def drop(self, name: str) -> None:
        """
        Stop serving flight `name` on every plane and revoke its tickets (FileNotFoundError if unknown); a client already reading it reads to the end.
        """

    @property
    def names(self) -> list[str]:
        """The flights served, sorted."""

    @property
    def uri(self) -> str:
        """
        grpc://HOST:PORT (or grpc+tls://) with the port bound; the last one once stopped.
        """

    @property
    def port(self) -> int:
        """The gRPC port bound."""

    def stats(self) -> dict:
        """
        The server's running totals: calls, do_gets, do_puts, bytes_sent, bytes_received, unauthenticated, tickets_refused, uploads_failed (each plane's own: do_action('stats') from a client).
        """

    def stop(self) -> None:
        """End every call, close the planes and drop the flights (idempotent)."""

    def __enter__(self) -> object: ...

    def __exit__(self, *args) -> None: ...

    def __repr__(self) -> str: ...
