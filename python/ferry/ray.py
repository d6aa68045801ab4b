"""Ray Data: a flight as a Ray Dataset, one read task per endpoint, each scheduled (softly) on the
Ray node beside the server that holds its endpoint, where it reads through shared memory; and a
Dataset written as one partitioned flight, each block from the node that holds it to the ferry
server on that node.

Needs `ray[data]`; ferry itself does not depend on it. The endpoint-to-host mapping is ferry.dask's
`endpoint_host`, shared by every engine that places reads.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa
import ray
from ray.data import Dataset, Datasource, ReadTask
from ray.data.block import BlockAccessor, BlockMetadata
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ferry import flight
from ferry._clients import client as _client
from ferry._locality import endpoint_host
from ferry._locality import local_server as _local_server

__all__ = ["FlightDatasource", "endpoint_hosts", "node_of_host", "node_runs", "placed_on",
           "read_flight", "write_flight"]


def placed_on(node):
    """The Ray remote arguments that run a task on Ray node `node` (its hex id), softly: while
    the node is busy the task waits for it, and it runs elsewhere only when the node is gone or
    cannot run it (`NodeAffinitySchedulingStrategy`, soft). A label selector on `ray.io/node-id`
    with a fallback to any node did not wait: under load a read went to the other node."""
    return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=True)}


@dataclass(frozen=True)
class EndpointRead:
    """One read task's endpoint and how to reach its server: plain values, pickled to the Ray
    worker that reads it."""

    uri: str
    token: str | None
    ticket: bytes
    locations: tuple[str, ...]
    via: str = "auto"
    #: The endpoint's expected size (its share of the flight's bytes; -1: unknown), which chooses
    #: DoGet before UCX for a small endpoint on another host.
    expected_bytes: int = -1


def endpoint_hosts(info, uri):
    """The host (an IP address where it resolves) of the server that holds each endpoint of
    FlightInfo `info`, got from `uri`, in the endpoints' order."""
    return [endpoint_host(e.locations, uri) for e in info.endpoints]


def node_of_host():
    """The live Ray nodes by IP address ({address: node id}), from `ray.nodes()`: one call to
    Ray's control store."""
    return {n["NodeManagerAddress"]: n["NodeID"] for n in ray.nodes() if n.get("Alive")}


def node_runs(hosts, nodes):
    """The endpoints (by index) in runs that share a Ray node, in order: [(node id, [index,
    ...]), ...], where `hosts` are the endpoints' hosts and `nodes` maps a host to its node (a
    host that has none runs with None)."""
    runs = []
    for i, host in enumerate(hosts):
        node = nodes.get(host)
        if runs and runs[-1][0] == node:
            runs[-1][1].append(i)
        else:
            runs.append((node, [i]))
    return runs


def _read_endpoint(part: EndpointRead, indices, limit):
    """The body of a read task: the endpoint's batches, each a one-batch Arrow table that wraps
    the received buffers (no copy), only the columns `indices` (None: all), stopping after
    `limit` rows (None: the whole stream), when the stream is closed so that its server frees
    its loans at once."""
    stream = _client(part.uri, part.token).do_get(
        flight.Endpoint(part.ticket, list(part.locations), part.expected_bytes), via=part.via,
        columns=indices)
    reader = pa.RecordBatchReader.from_stream(stream)
    rows = 0
    try:
        for batch in reader:
            if limit is not None and rows + batch.num_rows >= limit:
                # Closed before the last block is handed on: Ray stops taking blocks at the
                # limit and would leave this generator (and the session) to the collector. A
                # batch stays valid after its stream is released (the C stream interface).
                reader.close()
                stream.close()
                yield pa.Table.from_batches([batch.slice(0, limit - rows)])
                return
            rows += batch.num_rows
            yield pa.Table.from_batches([batch])
    finally:
        reader.close()
        stream.close()


class FlightDatasource(Datasource):
    """A Ray Data source of some endpoints of one flight: one ReadTask per endpoint, reading it
    through its own locations (shared memory when its server is on the task's node, UCX, then
    DoGet). Supports Ray's projection pushdown (only the columns asked for are read, and over
    type-1 bodies only their buffers fetched) and limit pushdown (a read stops early and closes
    its stream). Holds the endpoints' tickets and locations only; cheap to pickle."""

    def __init__(self, uri, endpoints, schema, token=None, *, via="auto", total_bytes=-1):
        super().__init__()
        self._projection_map = None
        self._uri = uri
        self._token = token
        self._parts = [EndpointRead(uri, token, e.ticket, tuple(e.locations), via,
                                    e.expected_bytes)
                       for e in endpoints]
        self._schema = pa.schema(schema)
        self._total_bytes = total_bytes

    def get_name(self):
        return "FerryFlight"

    def supports_projection_pushdown(self):
        return True

    def estimate_inmemory_data_size(self):
        return self._total_bytes if self._total_bytes >= 0 else None

    def _columns(self):
        """The projected column names in the schema's order, or None for all."""
        if self._projection_map is None:
            return None
        wanted = set(self._projection_map)
        missing = wanted - set(self._schema.names)
        if missing:
            raise ValueError(f"flight on {self._uri} has no column {sorted(missing)!r}; "
                             f"its columns are {self._schema.names}")
        return [n for n in self._schema.names if n in wanted]

    def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
        columns = self._columns()
        schema = self._schema
        indices = None
        if columns is not None:
            indices = [schema.get_field_index(n) for n in columns]
            schema = pa.schema([schema.field(i) for i in indices], metadata=schema.metadata)
        tasks = []
        for part in self._parts:
            def read(part=part):
                return _read_endpoint(part, indices, per_task_row_limit)
            metadata = BlockMetadata(num_rows=None, size_bytes=None, input_files=None,
                                     exec_stats=None)
            tasks.append(ReadTask(read, metadata, schema=schema,
                                  per_task_row_limit=per_task_row_limit))
        return tasks


def read_flight(uri, path, token=None, *, columns=None, via="auto", placement=True):
    """A Ray Dataset of flight `path` on the Flight server at `uri`: one read task per endpoint.
    With `placement`, each task is scheduled, softly, on the Ray node whose address is the host
    of its endpoint's server (placed_on: it waits for that node while it is busy), where
    it reads through shared memory. Endpoints that run together on one node are one Datasource;
    several such runs are their datasets' union, in the endpoints' order. `columns` selects
    columns in every read at once (Ray pushes its own projection into a read only when nothing
    stands between them, which a union does)."""
    info = _client(uri, token).get_flight_info(path)
    if not info.endpoints:
        raise ValueError(f"flight {path!r} on {uri} has no endpoint")
    schema = pa.schema(info.schema)
    if columns is not None:
        missing = [c for c in columns if c not in schema.names]
        if missing:
            raise ValueError(f"flight {path!r} on {uri} has no column {missing!r}; "
                             f"its columns are {schema.names}")
    nodes = node_of_host() if placement else {}
    hosts = endpoint_hosts(info, uri)
    runs = [(node, [info.endpoints[i] for i in indices])
            for node, indices in node_runs(hosts, nodes)]
    share = info.total_bytes // len(info.endpoints) if info.total_bytes >= 0 else -1
    datasets = []
    for node, endpoints in runs:
        source = FlightDatasource(uri, endpoints, schema, token, via=via,
                                  total_bytes=share * len(endpoints) if share >= 0 else -1)
        # One block stream per endpoint: Ray would otherwise split a few reads' blocks to reach
        # its default parallelism.
        ds = ray.data.read_datasource(source, override_num_blocks=len(endpoints),
                                      ray_remote_args=placed_on(node) if node else None)
        if columns is not None:
            ds = ds.select_columns(list(columns))
        datasets.append(ds)
    return datasets[0] if len(datasets) == 1 else datasets[0].union(*datasets[1:])


@ray.remote
def _upload_block(block, uri, servers, token, name):
    """A write task: uploads one block (DoPut) as flight `name` to the server of `servers` on
    this node, else to `uri`; returns that server, or None for an empty block (nothing sent)."""
    table = BlockAccessor.for_block(block).to_arrow()
    if table.num_rows == 0:
        return None
    server = _local_server(servers, uri)
    _client(server, token).do_put(name, table)
    return server


def write_flight(ds: Dataset, uri, path, token=None, *, servers=None):
    """Write Dataset `ds` as flight `path`: as each block is made, a task scheduled (softly) on
    the node that holds it (the node of its object store copy; a block under 100 KB lives with
    this driver, Ray's inline objects) uploads it (DoPut) to the server of `servers` (grpc://
    URIs) on that node, else to `uri`; then each server makes its uploads endpoints of `path`
    in the blocks' order (DoAction append-partition, a move without a copy). Returns the
    FlightInfo `uri` gives: every partition when the other servers are its peers (`--peer`)."""
    from ray.experimental import get_object_locations

    servers = list(servers or [])
    here = ray.get_runtime_context().get_node_id()
    uploads = []
    for bundle in ds.iter_internal_ref_bundles():
        refs = bundle.block_refs
        where = get_object_locations(refs)
        for ref in refs:
            node = (where.get(ref, {}).get("node_ids") or [here])[0]
            name = f"{path}.part-{len(uploads):06d}"
            task = _upload_block.options(**placed_on(node))
            uploads.append((name, task.remote(ref, uri, servers, token, name)))
    servers_used = ray.get([task for _, task in uploads])
    for (name, _), server in zip(uploads, servers_used):
        if server is not None:
            _client(server, token).do_action(
                "append-partition", json.dumps({"flight": path, "from": name}).encode())
    return _client(uri, token).get_flight_info(path)
