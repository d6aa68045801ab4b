"""Polars: a flight or a Dissociated IPC stream as a `polars.LazyFrame` (an IO source registered
with `polars.io.plugins.register_io_source`), and a frame written as a flight.

The source takes what Polars pushes down: the projected columns (only they are fetched: over
type-1 bodies only their buffers move), `n_rows` (the read stops and closes its sessions), the
predicate (applied to each batch) and `batch_size` (batches re-sliced without a copy). Batches
enter Polars through the Arrow PyCapsule interface, without a copy where Polars' memory layout is
Arrow's. Needs `polars` (docs/polars.md gives the range); ferry itself does not depend on it.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ferry import dipc, flight
from ferry._locality import endpoint_host

if TYPE_CHECKING:
    import polars as pl

__all__ = ["FlightSource", "DipcSource", "scan_flight", "scan_dipc", "sink_flight"]


def _polars_schema(schema: pa.Schema) -> dict:
    """The Polars schema of frames converted from batches of Arrow `schema` (Polars' own mapping,
    from an empty table: no data involved)."""
    import polars as pl

    frame = pl.DataFrame(schema.empty_table())
    return dict(frame.schema)


def _frames(stream: Any, names: list[str] | None, predicate: Any, n_rows: int | None,
            batch_size: int | None) -> Iterator[pl.DataFrame]:
    """The batches of ferry stream `stream` as Polars frames of columns `names` (None: all),
    filtered by `predicate`, at most `batch_size` rows each and `n_rows` in all. The stream is
    closed when this ends, early or not, which ends its sessions."""
    import polars as pl

    remaining = n_rows
    try:
        if remaining is not None and remaining <= 0:
            return
        for batch in stream:
            if names == []:
                # Nothing projected (a row count): a frame of the batch's height and no column.
                frame = pl.DataFrame(height=batch.length)
            else:
                frame = pl.DataFrame(batch)  # the PyCapsule interface: Polars wraps the buffers
                if names is not None and frame.columns != names:
                    frame = frame.select(names)
            if predicate is not None:
                frame = frame.filter(predicate)
            if remaining is not None and frame.height > remaining:
                frame = frame.slice(0, remaining)
            step = batch_size if batch_size and batch_size > 0 else frame.height
            for offset in range(0, frame.height, max(step, 1)):
                yield frame.slice(offset, step)  # a view: no copy
            if remaining is not None:
                remaining -= frame.height
                if remaining <= 0:
                    return
    finally:
        stream.close()


class FlightSource:
    """The IO source of `scan_flight`, which Polars calls with what it pushes down; an engine that
    holds a scan's function finds it as `scan_fn.io_source` (Polars' `IOSourceScanFunction`).
    Holds the flight's FlightInfo (schema and endpoints) from when it was made; each call asks for
    the flight's endpoints again (their tickets expire) and reads them. `endpoint_hosts()` and `restrict()` let a rank-aware engine read on each
    rank the endpoints whose server is on that rank's host."""

    def __init__(self, uri: str, path: str, token: str | None = None, *, via: str = "auto",
                 parallel: int = 0, endpoints: Sequence[int] | None = None) -> None:
        self.uri = uri
        self.path = path
        self.token = token
        self.via = via
        self.parallel = parallel
        self.client = flight.connect(uri, token=token)
        self.info = self.client.get_flight_info(path)
        self.schema = pa.schema(self.info.schema)
        count = len(self.info.endpoints)
        chosen = list(range(count)) if endpoints is None else list(endpoints)
        for i in chosen:
            if not 0 <= i < count:
                raise IndexError(f"flight {path!r} on {uri} has {count} endpoints, not {i + 1}")
        #: The indices of the flight's endpoints this source reads, in the flight's order.
        self.endpoints = chosen

    def endpoint_hosts(self) -> list[str]:
        """The host (an IP address where it resolves) of the server of each endpoint this source
        reads, in order: ferry._locality.endpoint_host, as ferry.dask places its reads."""
        return [endpoint_host(self.info.endpoints[i].locations, self.uri) for i in self.endpoints]

    def restrict(self, endpoints: Sequence[int]) -> FlightSource:
        """A source reading only `endpoints` (indices into the flight's endpoints): what a rank
        reads when each rank reads the endpoints on its own host."""
        other = object.__new__(FlightSource)
        other.__dict__.update(self.__dict__)
        count = len(self.info.endpoints)
        for i in endpoints:
            if not 0 <= i < count:
                raise IndexError(f"flight {self.path!r} on {self.uri} has {count} endpoints, "
                                 f"not {i + 1}")
        other.endpoints = list(endpoints)
        return other

    def lazy(self) -> pl.LazyFrame:
        """This source as a LazyFrame."""
        from polars.io.plugins import register_io_source

        return register_io_source(self, schema=_polars_schema(self.schema),
                                  explain_name="ferry.flight",
                                  explain_detail=f"{self.uri} {self.path!r}, "
                                                 f"{len(self.endpoints)} endpoints")

    def _columns(self, with_columns: list[str] | None) -> list[int] | None:
        if with_columns is None:
            return None
        names = self.schema.names
        missing = [c for c in with_columns if c not in names]
        if missing:
            raise KeyError(f"flight {self.path!r} has no column {missing[0]!r}")
        # One column at least reaches the read, so that a row count has its rows.
        return sorted({names.index(c) for c in with_columns}) or [0]

    def _stream(self, columns: list[int] | None) -> Any:
        if len(self.endpoints) == len(self.info.endpoints):
            # Every endpoint: the client reads them `parallel` at once, each on its fastest plane.
            return self.client.do_get(self.path, via=self.via, parallel=self.parallel,
                                      columns=columns)
        # Some endpoints: their tickets afresh (a ticket expires), by index into the flight's.
        info = self.client.get_flight_info(self.path)
        if len(info.endpoints) != len(self.info.endpoints):
            raise RuntimeError(f"flight {self.path!r} on {self.uri} has {len(info.endpoints)} "
                               f"endpoints now, {len(self.info.endpoints)} when scanned")
        return _Chain([info.endpoints[i] for i in self.endpoints], self.client, self.via,
                      columns)

    def __call__(self, with_columns: list[str] | None, predicate: Any, n_rows: int | None,
                 batch_size: int | None) -> Iterator[pl.DataFrame]:
        """The batches Polars asked for (register_io_source's protocol)."""
        if n_rows is not None and n_rows <= 0:
            return iter(())
        stream = self._stream(self._columns(with_columns))
        return _frames(stream, with_columns, predicate, n_rows, batch_size)


class _Chain:
    """Some of a flight's endpoints read one after the other, as one stream (iterate, close)."""

    def __init__(self, endpoints: list, client: Any, via: str, columns: list[int] | None) -> None:
        self._pending = list(endpoints)
        self._client = client
        self._via = via
        self._columns = columns
        self._current: Any = None

    def __iter__(self) -> Iterator[Any]:
        while self._pending or self._current is not None:
            if self._current is None:
                self._current = self._client.do_get(self._pending.pop(0), via=self._via,
                                                    columns=self._columns)
            yield from self._current
            self._current.close()
            self._current = None

    def close(self) -> None:
        self._pending = []
        if self._current is not None:
            self._current.close()
            self._current = None


class DipcSource:
    """The IO source of `scan_dipc`: dataset `ticket` of the Dissociated IPC server at `uri`.
    Made with the stream's schema (its first message: connect, take the schema, close); each call
    connects again and reads the columns Polars asks for."""

    def __init__(self, uri: str, ticket: str, *, data_uri: str | None = None,
                 timeout: float = 30.0) -> None:
        self.uri = uri
        self.ticket = ticket
        self.data_uri = data_uri
        self.timeout = timeout
        probe = dipc.connect(uri, ticket, data_uri=data_uri, timeout=timeout)
        try:
            self.schema = pa.schema(probe.schema)
        finally:
            probe.close()

    def lazy(self) -> pl.LazyFrame:
        """This source as a LazyFrame."""
        from polars.io.plugins import register_io_source

        return register_io_source(self, schema=_polars_schema(self.schema),
                                  explain_name="ferry.dipc",
                                  explain_detail=f"{self.uri} {self.ticket!r}")

    def __call__(self, with_columns: list[str] | None, predicate: Any, n_rows: int | None,
                 batch_size: int | None) -> Iterator[pl.DataFrame]:
        """The batches Polars asked for (register_io_source's protocol)."""
        if n_rows is not None and n_rows <= 0:
            return iter(())
        columns = None
        if with_columns is not None:
            names = self.schema.names
            missing = [c for c in with_columns if c not in names]
            if missing:
                raise KeyError(f"dataset {self.ticket!r} has no column {missing[0]!r}")
            columns = sorted({names.index(c) for c in with_columns}) or [0]
        stream = dipc.connect(self.uri, self.ticket, data_uri=self.data_uri,
                              timeout=self.timeout, columns=columns)
        return _frames(stream, with_columns, predicate, n_rows, batch_size)


def scan_flight(uri: str, path: str, token: str | None = None, *, via: str = "auto",
                parallel: int = 0) -> pl.LazyFrame:
    """A LazyFrame of flight `path` on the Flight server at `uri`. Its schema is the FlightInfo's
    (one GetFlightInfo now, no batch read); each collect reads the endpoints `parallel` at once
    (0: up to 4), each on its fastest plane (shared memory when its server is on this host, UCX,
    DoGet), or only `via`."""
    return FlightSource(uri, path, token, via=via, parallel=parallel).lazy()


def scan_dipc(uri: str, ticket: str, *, data_uri: str | None = None,
              timeout: float = 30.0) -> pl.LazyFrame:
    """A LazyFrame of dataset `ticket` on the Dissociated IPC server at `uri` (with `data_uri`:
    the split shape's metadata and data URIs). The schema is the stream's first message; each
    collect connects again."""
    return DipcSource(uri, ticket, data_uri=data_uri, timeout=timeout).lazy()


def sink_flight(frame: pl.DataFrame | pl.LazyFrame, uri: str, path: str,
                token: str | None = None) -> flight.FlightInfo:
    """Write `frame` (a LazyFrame is collected first) as flight `path` on the Flight server at
    `uri` (DoPut, through the frame's __arrow_c_stream__), and return the server's FlightInfo of
    it. FileExistsError if the server already has `path`."""
    import polars as pl

    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    if not isinstance(frame, pl.DataFrame):
        raise TypeError(f"sink_flight writes a polars DataFrame or LazyFrame, not "
                        f"{type(frame).__name__}")
    client = flight.connect(uri, token=token)
    client.do_put(path, frame)
    return client.get_flight_info(path)
