"""Dask: a flight as a Dask DataFrame, one partition per endpoint, each read on a worker on the
host of the server that holds it when there is one (through shared memory there); and a Dask
DataFrame written as one partitioned flight.

Needs `dask[dataframe]` (and `distributed` for locality); ferry itself does not depend on them.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import pyarrow as pa

from ferry import flight
from ferry._clients import client as _client
from ferry._locality import endpoint_host, is_local_host  # noqa: F401 (ferry.dask's own names)
from ferry._locality import local_server as _local_server

__all__ = ["read_flight", "to_flight"]


@dataclass(frozen=True)
class EndpointPart:
    """One partition of `read_flight`: where its endpoint is and how to reach its server. Plain
    values, so that it pickles to the worker that reads it."""

    uri: str
    token: str | None
    ticket: bytes
    locations: tuple[str, ...]
    #: The address of the server that holds the endpoint (from its ucx:// or grpc:// location,
    #: else the server `read_flight` asked), resolved to an IP address as Dask names workers.
    host: str
    index: int = field(default=0)
    #: The endpoint's expected size (its share of the flight's bytes; -1: unknown), which chooses
    #: DoGet before UCX for a small endpoint on another host.
    expected_bytes: int = field(default=-1)


def _to_pandas(table, dtype_backend):
    import pandas as pd

    if dtype_backend not in ("pyarrow", "numpy"):
        raise ValueError(f"dtype_backend must be 'pyarrow' or 'numpy', not {dtype_backend!r}")
    if dtype_backend == "pyarrow":
        # pandas' Arrow-backed columns wrap the table's arrays: no copy.
        return table.to_pandas(types_mapper=pd.ArrowDtype)
    return table.to_pandas()


class ReadEndpoint:
    """The function of `read_flight`'s tasks: reads one endpoint through its own locations (shared
    memory when its server is on this worker's host, UCX, then DoGet) into a pandas frame of the
    `columns` Dask asks for (its column projection: the `columns=` argument). Only those columns
    are decoded, and over type-1 bodies only their buffers are fetched; `names` are the flight's
    column names, in its schema's order."""

    def __init__(self, dtype_backend="pyarrow", via="auto", names=None):
        self.dtype_backend = dtype_backend
        self.via = via
        self.names = list(names) if names is not None else None

    def __call__(self, part: EndpointPart, columns=None):
        client = _client(part.uri, part.token)
        endpoint = flight.Endpoint(part.ticket, list(part.locations), part.expected_bytes)
        indices = None
        if columns is not None and self.names is not None:
            indices = sorted({self.names.index(c) for c in columns})
        stream = client.do_get(endpoint, via=self.via, columns=indices)
        table = pa.RecordBatchReader.from_stream(stream).read_all()
        if columns is not None:
            table = table.select(list(columns))  # in the order Dask asked for
        return _to_pandas(table, self.dtype_backend)

    def __dask_tokenize__(self):
        return ("ferry-read-endpoint", self.dtype_backend, self.via, self.names)


def _restrict_reads_to_their_hosts(scheduler, keys):
    """The one place where ferry.dask reaches into Dask's scheduler, and why it must.

    Dask's public ways to place tasks cannot say "partition i on host h_i" for a DataFrame:
    `dask.annotate(workers=..., allow_other_workers=True)` is dropped by dask-expr's query
    planning (Dask warns "Annotations will be ignored"), and `workers=` of `Client.compute` and
    `Client.persist` gives one set of workers to every task of the graph. So, as each graph
    reaches the scheduler, this finds the EndpointParts in each task's run_spec (in tasks Dask
    fused too) through `dask.task_spec`, Dask's public task classes, and sets what those
    annotations would have set: the task's `host_restrictions` to its server's host, where a
    worker runs, and `loose_restrictions`, so a worker elsewhere takes it when none is there. A
    task the caller placed (annotations, `workers=`) keeps its placement. Costs one walk of each
    new task's arguments. Tested over the oldest and newest Dask that scripts/setup.sh allows.
    """
    from dask.task_spec import DataNode, Task

    def parts_of(node, depth=0):
        if depth > 8:
            return
        if isinstance(node, EndpointPart):
            yield node
        elif isinstance(node, Task):  # a fused task holds its tasks in its arguments
            yield from parts_of(node.args, depth + 1)
            yield from parts_of(node.kwargs, depth + 1)
        elif isinstance(node, DataNode):
            yield from parts_of(node.value, depth + 1)
        elif isinstance(node, (list, tuple, set, frozenset)):
            for item in node:
                yield from parts_of(item, depth + 1)
        elif isinstance(node, dict):
            for item in node.values():
                yield from parts_of(item, depth + 1)

    hosts = {ws.host for ws in scheduler.workers.values()}
    for key in keys or ():
        ts = scheduler.tasks.get(key)
        if ts is None or ts.run_spec is None or ts.worker_restrictions or ts.host_restrictions:
            continue
        wanted = {p.host for p in parts_of(ts.run_spec)} & hosts
        if wanted:
            ts.host_restrictions = wanted
            ts.loose_restrictions = True


try:
    from distributed.diagnostics.plugin import SchedulerPlugin as _PluginBase
except ImportError:  # without distributed there is no scheduler to plug into
    _PluginBase = object


class Locality(_PluginBase):
    """A scheduler plugin that restricts each task reading an endpoint to the workers on its
    server's host, loosely (as Dask's allow_other_workers=True does): any worker takes it when
    none is there. Stateless: the host travels with the task's EndpointPart. Dask's public API
    cannot say this of a DataFrame's partitions; `_restrict_reads_to_their_hosts` says why."""

    name = "ferry-locality"

    def update_graph(self, scheduler, *, tasks=None, **kwargs):
        _restrict_reads_to_their_hosts(scheduler, tasks)


def _register_locality():
    """Installs Locality on the current distributed client's scheduler, if there is one."""
    try:
        from distributed import default_client
    except ImportError:
        return False
    try:
        client = default_client()
    except ValueError:
        return False  # no distributed client: the local schedulers run everything here
    scheduler = client.scheduler_info().get("id")
    if scheduler not in _registered:
        client.register_plugin(Locality(), name=Locality.name)
        _registered.add(scheduler)
    return True


_registered: set = set()  # the schedulers (by id) that have the plugin


def read_flight(uri, path, token=None, *, columns=None, dtype_backend="pyarrow", via="auto"):
    """A Dask DataFrame of flight `path` on the Flight server at `uri`, one partition per
    endpoint, in the endpoints' order. Its meta comes from the flight's schema (no data is read to
    learn it); its divisions are unknown. With a distributed client, each partition's task is
    restricted (loosely) to the workers on the host of its endpoint's server, which read it
    through shared memory. Partitions have Arrow-backed dtypes (`pd.ArrowDtype`, no copy); with
    `dtype_backend="numpy"` they have pandas' default NumPy dtypes (a copy). `columns` selects
    columns at once; Dask's own projection (`df[["x"]]`) reaches the reads the same way."""
    import dask.dataframe as dd

    info = _client(uri, token).get_flight_info(path)
    if not info.endpoints:
        raise ValueError(f"flight {path!r} on {uri} has no endpoint")
    schema = pa.schema(info.schema)
    meta = _to_pandas(schema.empty_table(), dtype_backend)
    parts = [EndpointPart(uri, token, e.ticket, tuple(e.locations),
                          endpoint_host(e.locations, uri), i, e.expected_bytes)
             for i, e in enumerate(info.endpoints)]
    digest = hashlib.sha1(json.dumps([uri, path]).encode()).hexdigest()[:8]
    _register_locality()
    df = dd.from_map(ReadEndpoint(dtype_backend, via, schema.names), parts, meta=meta,
                     divisions=None,
                     label=f"ferry-read-flight-{digest}", enforce_metadata=False)
    if columns is not None:
        df = df[list(columns)]
    return df


def _upload(pdf, uri, servers, token, path, partition_info=None):
    """Uploads one partition as a flight of its own (DoPut), to the server on this worker's host
    when `servers` has one (else to `uri`), and says where it went."""
    import pandas as pd

    index = partition_info["number"] if partition_info else 0
    name = f"{path}.part-{index:06d}"
    server = _local_server(servers, uri)
    table = pa.Table.from_pandas(pdf, preserve_index=False)
    _client(server, token).do_put(name, table)
    return pd.DataFrame({"index": [index], "upload": [name], "server": [server]})


def to_flight(df, uri, path, token=None, *, servers=None):
    """Write Dask DataFrame `df` as flight `path`: each partition is uploaded (DoPut) from the
    worker that holds it, to the server of `servers` (grpc:// URIs) on that worker's host when
    there is one, else to `uri`; then each server makes its uploads endpoints of `path` in the
    partitions' order (DoAction append-partition, a move without a copy). Returns the FlightInfo
    `uri` gives: all the partitions when the other servers are its peers (`--peer`), the
    server's own partitions first (then not `ordered`)."""
    import pandas as pd

    servers = list(servers or [])
    meta = pd.DataFrame({"index": pd.Series([], dtype="int64"),
                         "upload": pd.Series([], dtype="object"),
                         "server": pd.Series([], dtype="object")})
    uploads = df.map_partitions(_upload, uri, servers, token, path, meta=meta).compute()
    for row in uploads.sort_values("index").itertuples():
        _client(row.server, token).do_action(
            "append-partition", json.dumps({"flight": path, "from": row.upload}).encode())
    return _client(uri, token).get_flight_info(path)
