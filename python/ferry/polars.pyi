"""Polars: a flight or a Dissociated IPC stream as a polars.LazyFrame, and a frame written as a
flight (docs/polars.md)."""

from collections.abc import Iterator, Sequence
from typing import Any

import polars as pl
import pyarrow as pa

from ferry import flight

__all__ = ["FlightSource", "DipcSource", "scan_flight", "scan_dipc", "sink_flight"]

class FlightSource:
    """The IO source of scan_flight; `endpoint_hosts` and `restrict` serve rank-aware engines."""

    uri: str
    path: str
    token: str | None
    via: str
    parallel: int
    client: flight.Client
    info: flight.FlightInfo
    schema: pa.Schema
    endpoints: list[int]

    def __init__(self, uri: str, path: str, token: str | None = None, *, via: str = "auto",
                 parallel: int = 0, endpoints: Sequence[int] | None = None) -> None: ...
    def endpoint_hosts(self) -> list[str]:
        """The host of each read endpoint's server, in order."""
    def restrict(self, endpoints: Sequence[int]) -> FlightSource:
        """A source reading only `endpoints`."""
    def lazy(self) -> pl.LazyFrame:
        """This source as a LazyFrame."""
    def __call__(self, with_columns: list[str] | None, predicate: Any, n_rows: int | None,
                 batch_size: int | None) -> Iterator[pl.DataFrame]: ...

class DipcSource:
    """The IO source of scan_dipc."""

    uri: str
    ticket: str
    data_uri: str | None
    timeout: float
    schema: pa.Schema

    def __init__(self, uri: str, ticket: str, *, data_uri: str | None = None,
                 timeout: float = 30.0) -> None: ...
    def lazy(self) -> pl.LazyFrame:
        """This source as a LazyFrame."""
    def __call__(self, with_columns: list[str] | None, predicate: Any, n_rows: int | None,
                 batch_size: int | None) -> Iterator[pl.DataFrame]: ...

def scan_flight(uri: str, path: str, token: str | None = None, *, via: str = "auto",
                parallel: int = 0) -> pl.LazyFrame:
    """A LazyFrame of flight `path` on the Flight server at `uri`."""

def scan_dipc(uri: str, ticket: str, *, data_uri: str | None = None,
              timeout: float = 30.0) -> pl.LazyFrame:
    """A LazyFrame of dataset `ticket` on the Dissociated IPC server at `uri`."""

def sink_flight(frame: pl.DataFrame | pl.LazyFrame, uri: str, path: str,
                token: str | None = None) -> flight.FlightInfo:
    """Write `frame` as flight `path`; the server's FlightInfo of it."""
