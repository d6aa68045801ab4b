"""The Flight clients of the engine integrations (ferry.dask, ferry.ray): one per server and token
in each process, kept for the process's life, so that every task a worker runs reuses its
connection. Imports no engine, so that a Ray worker does not load Dask to read."""
from __future__ import annotations

import atexit
import threading

from ferry import flight

_clients: dict[tuple[str, str | None], flight.Client] = {}
_clients_lock = threading.Lock()


@atexit.register
def _drop_clients():
    """At exit, before the extension is torn down, the cached clients go (each with its channel):
    nanobind reported the ones still held here as leaked."""
    with _clients_lock:
        _clients.clear()


def client(uri: str, token: str | None) -> flight.Client:
    """The process's Flight client of the server at `uri` with `token`, connected on first use (a
    client is a gRPC channel, safe to share between threads)."""
    key = (uri, token)
    with _clients_lock:
        if key not in _clients:
            _clients[key] = flight.connect(uri, token=token)
        return _clients[key]
