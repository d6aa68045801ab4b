"""
Dissociated IPC: a server of named datasets and its clients, over shared memory or UCX.
"""

from collections.abc import Sequence
import os

import ferry._ferry


def ucx_available() -> bool:
    """Whether this build has the UCX transport."""

def loaded_ucx() -> dict:
    """
    The UCX this process loaded, as `ferry devices --json` reports it: available, built_against (the UCP API version of ferry's build), loaded (the libucp version) and path (that libucp's file). Both ends of a UCX connection need wire-compatible UCX builds.
    """

class Uri:
    """
    A dissociated-IPC URI: scheme://authority/path?want_data=N&free_data=N&remote_handle=BASE64; the scheme names the transport.
    """

    def __init__(self) -> None: ...

    @staticmethod
    def parse(text: str) -> Uri:
        """Parse; ValueError naming the part at fault."""

    @property
    def scheme(self) -> str: ...

    @scheme.setter
    def scheme(self, arg: str, /) -> None: ...

    @property
    def authority(self) -> str:
        """host[:port], or empty."""

    @authority.setter
    def authority(self, arg: str, /) -> None: ...

    @property
    def path(self) -> str:
        """From the first '/' after the authority, or empty."""

    @path.setter
    def path(self, arg: str, /) -> None: ...

    @property
    def want_data(self) -> int:
        """The tag the ticket is sent with."""

    @want_data.setter
    def want_data(self, arg: int, /) -> None: ...

    @property
    def free_data(self) -> int | None:
        """The tag of the client's frees, or None."""

    @free_data.setter
    def free_data(self, arg: int | None, /) -> None: ...

    @property
    def remote_handle(self) -> bytes | None:
        """The decoded remote handle (a packed UCX rkey, ...), or None."""

    @remote_handle.setter
    def remote_handle(self, arg: bytes | None, /) -> None: ...

    @property
    def other(self) -> list[tuple[str, str]]:
        """Unknown query parameters, in order."""

    @other.setter
    def other(self, arg: Sequence[tuple[str, str]], /) -> None: ...

    def __str__(self) -> str: ...

    def __repr__(self) -> str: ...

    def __eq__(self, arg: object, /) -> bool: ...

class ServerStats:
    """A server's running totals."""

    @property
    def clients_accepted(self) -> int: ...

    @property
    def clients_active(self) -> int: ...

    @property
    def batches_sent(self) -> int: ...

    @property
    def body_bytes_sent(self) -> int: ...

    @property
    def bytes_in_flight(self) -> int:
        """Body bytes in the shared region that clients have not freed yet."""

    @property
    def sessions_failed(self) -> int:
        """Sessions that ended with an error (a bad peer, a dataset error)."""

    @property
    def tickets_refused(self) -> int:
        """
        Requests refused: an unknown ticket, one asked for under another URI, too many clients.
        """

    @property
    def addresses_lent(self) -> int:
        """Type-1 addresses lent to clients."""

    @property
    def addresses_freed(self) -> int:
        """Type-1 addresses the clients freed."""

    @property
    def addresses_reclaimed(self) -> int:
        """
        Lent addresses the server freed itself: their client closed, failed or was cut off holding them.
        """

    @property
    def unknown_frees(self) -> int:
        """Addresses in free_data the client did not hold (logged, then ignored)."""

    @property
    def bodies_lent_in_place(self) -> int:
        """
        Type-1 bodies a producer wrote in the shared region itself (Server.region_allocator()), lent to their client as they are: no copy.
        """

    @property
    def requests_reused(self) -> int:
        """
        Requests served on a connection that had served a stream before: a ferry client keeps a connection whose stream lent it nothing for its next stream.
        """

    def __repr__(self) -> str: ...

class ConnectionPool:
    """
    UCX connections kept between streams: connect(..., pool=pool) looks here first for a connection to the same server with the same options, and a stream read to its end that was lent nothing (a ucx:// URI with ferry=1, packed bodies) gives its connection back for the next. Each idle connection holds a UCX worker and a sleeping thread until it is taken, is idle for longer than `max_idle` seconds, or the pool and every stream given it are gone; at most `per_server` are kept for each server and options.
    """

    def __init__(self, max_idle: float = 10.0, per_server: int = 4) -> None: ...

    @property
    def idle(self) -> int:
        """Idle connections held now (those idle past max_idle are closed first)."""

    def clear(self) -> None:
        """Close every idle connection."""

    def __repr__(self) -> str: ...

class RegionBuffer:
    """
    A writable block of a server's shared region (RegionAllocator.allocate), exported through the buffer protocol: numpy.frombuffer and pyarrow.py_buffer wrap it without a copy. The block goes back to the region once this object and every export of it are gone.
    """

    def __len__(self) -> int: ...

    @property
    def address(self) -> int:
        """The block's first byte's address in this process (64-byte aligned)."""

    def __repr__(self) -> str: ...

class RegionAllocator:
    """
    Memory of a server's shared region (Server.region_allocator()), for a producer that builds its batches where clients read them: a type-1 batch whose every buffer lies in such blocks is lent to its client in place, not copied, and released once that client frees it or goes. It keeps the region mapped while held, also after the server stops.
    """

    def allocate(self, size: int) -> RegionBuffer:
        """
        A RegionBuffer of `size` bytes, 64-byte aligned. Blocks count against the server's region_bytes until freed: this waits (the GIL released) up to the server's timeout for room (TimeoutError), and a size that can never fit raises MemoryError at once.
        """

class Server:
    """
    A server of named datasets: a thread accepts clients and each client gets a session thread. Serving never holds the GIL except to call a Python producer.
    """

    @staticmethod
    def start(transport: str = 'shm', listen: str = '', *, body_type: str = 'list', region_bytes: int = 268435456, timeout: float = 30.0, max_clients: int = 256, compression: str | None = None, alignment: int = 8, want_data_tag: int = 4294967296, free_data_tag: int = 8589934592) -> Server:
        """
        Start serving. transport: 'shm' or 'ucx'; listen: a socket path, '@name' (an abstract socket) or host:port, empty for a fresh one; body_type: 'list' (clients read bodies in place from the shared region) or 'packed' (each body one message); region_bytes: the most body bytes in flight, all clients together; timeout: seconds the server waits on a client (its request, room for its bodies, its frees, each send); max_clients: the most clients served at once; compression: None, 'lz4' or 'zstd'.
        """

    def add(self, name: str, data: object, schema: object | None = None) -> None:
        """
        Serve `data` under the ticket `name` (replacing an earlier dataset of that name): a list of record batches (any array producers; `schema` for an empty list) or one batch, served to every client without a copy; a stream producer (a pyarrow Table or RecordBatchReader, ferry.ArrayStream, ...), read once by the first client; or a callable returning a stream producer, called for each client.
        """

    def region_allocator(self) -> RegionAllocator | None:
        """
        Memory of the shared region (a RegionAllocator), for a producer that builds its batches where clients read them: numpy or pyarrow buffers on its RegionBuffers make batches that are lent to type-1 clients in place, not copied. None where bodies are packed.
        """

    def keep(self, name: str, data: object, schema: object | None = None) -> None:
        """
        Serve `data` (as for add) under the ticket `name` from a region of its own: its bodies are written there once, now, and every client gets them without a copy: lent (body_type 'list') or sent whole from there ('packed'); memory: the dataset's body bytes, until replaced or stopped.
        """

    def add_path(self, name: str, path: str | os.PathLike) -> None:
        """
        Serve an IPC stream or file (told apart by its magic) under the ticket `name`: mapped once, decoded zero-copy for each client; a file that is not IPC fails here.
        """

    @property
    def uri(self) -> str:
        """
        The URI (str) clients read the server's datasets with, both streams on one connection (the last one once stopped). A kept dataset has its own: uri_of(name).
        """

    def uri_of(self, name: str) -> str:
        """
        The URI (str) clients read dataset `name` with: the server's uri, or for a kept dataset its own, carrying its memory's remote_handle.
        """

    @property
    def metadata_uri(self) -> str:
        """
        The split shape's metadata URI (str): connect(metadata_uri, ticket, data_uri=data_uri). Empty once stopped.
        """

    def metadata_uri_of(self, name: str) -> str:
        """
        The split shape's metadata URI (str) for dataset `name`. Empty once stopped.
        """

    @property
    def data_uri(self) -> str:
        """
        The split shape's data URI (str): bodies and free_data. Empty once stopped.
        """

    def data_uri_of(self, name: str) -> str:
        """
        The split shape's data URI (str) for dataset `name`. Empty once stopped.
        """

    @property
    def stats(self) -> ServerStats:
        """The running totals (the last ones once stopped)."""

    @property
    def last_error(self) -> str:
        """The last session error, or ''."""

    @property
    def running(self) -> bool: ...

    def stop(self) -> None:
        """
        Close the listener and every session, and drop the datasets (idempotent).
        """

    def __enter__(self) -> object: ...

    def __exit__(self, *args) -> None: ...

    def __repr__(self) -> str: ...

def connect(uri: Uri | str, ticket: str, device: ferry._ferry.Device | None = None, validation: ferry._ferry.ValidationLevel = ferry._ferry.ValidationLevel.FULL, timeout: float = 30.0, reorder_window: int = 64, data_uri: Uri | str | None = None, max_metadata_bytes: int = 67108864, max_body_bytes: int = 4294967296, columns: Sequence[int] | None = None, buffer_lists: bool = False, traceparent: str | None = None, tracestate: str | None = None, window: int | None = None, spin: int = 50, connect_timeout: float | None = None, pool: ConnectionPool | None = None) -> ferry._ferry.ArrayStream:
    """
    Connect to a server and read the dataset named `ticket` as an ArrayStream of record batches. The schema arrives before this returns, so a refused ticket or a dead server raises here with the server's message. device: where batches land (None: the CPU, read in place over shared memory; another device gets one copy of each batch); validation: checks on what arrives; timeout: seconds the server may stay silent; data_uri: the server's data_uri(name), with `uri` its metadata_uri(name), to take metadata and bodies from separate servers; max_metadata_bytes, max_body_bytes: the largest message of each kind taken from the server; columns: the field indices to read (None: all), whose buffers alone are fetched from a type-1 body; buffer_lists: ask a ferry server to lend buffer lists where it would send packed bodies because UCX would emulate this client's reads (over TCP, or on one host before UCX 1.16; columns implies it); traceparent, tracestate: a W3C Trace Context sent to a ferry server in its hello, so that the session's log records carry its trace id (None: the server uses the trace its ticket was issued with); window: pace a ferry server (shm://, or ucx:// with ferry=1), which then sends at most this many batches beyond those read (None: over shm:// it sends ahead as far as its shared region allows, over ucx:// with ferry=1 up to 256 batches); spin: microseconds a read watches for the next message on the CPU before it sleeps (0: it sleeps at once); connect_timeout: seconds connecting may take (None: timeout), and on a connection from `pool` the wait for the schema; pool: a ConnectionPool to take a kept connection from and give this one back to at the stream's end.
    """
