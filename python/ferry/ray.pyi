"""
Ray Data: a flight as a Ray Dataset, one read task per endpoint placed softly on its server's node (shared memory there); a Dataset written as one partitioned flight, each block from its own node.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ray.data import Dataset, Datasource, ReadTask
from ray.data.context import DataContext

from ferry.flight import Endpoint, FlightInfo

__all__ = ["FlightDatasource", "endpoint_hosts", "node_of_host", "node_runs", "placed_on",
           "read_flight", "write_flight"]

def placed_on(node: str) -> dict[str, Any]:
    """The Ray remote arguments that run a task on Ray node `node`, softly: it waits for the node while it is busy, and runs elsewhere only when the node is gone or cannot run it."""

@dataclass(frozen=True)
class EndpointRead:
    """One read task's endpoint and how to reach its server (plain values, pickled to the worker)."""

    uri: str
    token: str | None
    ticket: bytes
    locations: tuple[str, ...]
    via: str = ...
    expected_bytes: int = ...

def endpoint_hosts(info: FlightInfo, uri: str) -> list[str]:
    """The host (an IP address where it resolves) of the server holding each endpoint of `info`, in order."""

def node_of_host() -> dict[str, str]:
    """The live Ray nodes by IP address: {address: node id}."""

def node_runs(hosts: Sequence[str], nodes: Mapping[str, str]) -> list[tuple[str | None, list[int]]]:
    """The endpoints (by index) in runs that share a Ray node, in order; a host without a node runs with None."""

class FlightDatasource(Datasource):
    """
    A Ray Data source of some endpoints of one flight: one ReadTask per endpoint, read through its own locations; projection and limit pushdown.
    """

    def __init__(self, uri: str, endpoints: Sequence[Endpoint], schema: object, token: str | None = None, *, via: str = 'auto', total_bytes: int = -1) -> None: ...

    def get_name(self) -> str: ...

    def supports_projection_pushdown(self) -> bool: ...

    def estimate_inmemory_data_size(self) -> int | None: ...

    def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None, data_context: DataContext | None = None) -> list[ReadTask]: ...

def read_flight(uri: str, path: str, token: str | None = None, *, columns: Sequence[str] | None = None, via: str = 'auto', placement: bool = True) -> Dataset:
    """
    A Ray Dataset of flight `path` on `uri`, one read task per endpoint, each placed softly on the node of its endpoint's server; `columns` selects columns in every read.
    """

def write_flight(ds: Dataset, uri: str, path: str, token: str | None = None, *, servers: Sequence[str] | None = None) -> FlightInfo:
    """
    Write `ds` as flight `path`: each block uploaded from the node that holds it to the server of `servers` on that node (else `uri`), then appended as the flight's partitions; returns `uri`'s FlightInfo.
    """
