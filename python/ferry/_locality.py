"""Where a flight's endpoints live: the one mapping from an endpoint's locations to the host of
its server, which ferry.dask's scheduler plugin and ferry.polars' sources use, and which a
rank-aware engine can call to give each rank the endpoints on its own host."""
from __future__ import annotations

import ipaddress
import socket
import urllib.parse
from collections.abc import Sequence

_LOCATION_SCHEMES = ("ucx", "grpc", "grpc+tls")


def endpoint_host(locations: Sequence[str], uri: str) -> str:
    """The host of the server that holds an endpoint: that of its first ucx://, grpc:// or
    grpc+tls:// location (a shm:// location names none), else that of `uri` (the server that
    listed it), as an IP address where it resolves. Costs a name lookup when a location names a
    host rather than an address."""
    host = None
    for location in locations:
        parsed = urllib.parse.urlsplit(location)
        if parsed.scheme in _LOCATION_SCHEMES and parsed.hostname:
            host = parsed.hostname
            break
    if host is None:
        host = urllib.parse.urlsplit(uri).hostname or "127.0.0.1"
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        try:
            return socket.gethostbyname(host)
        except OSError:
            return host


def is_local_host(host: str) -> bool:
    """Whether `host` (a name or an IP address) is an address of this machine: one a socket can
    be bound to here."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_DGRAM)
    except OSError:
        return False
    for family, _, _, _, address in infos:
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.bind((address[0], 0))
            return True
        except OSError:
            continue
    return False


def local_server(servers: Sequence[str], default: str) -> str:
    """The first of `servers` (grpc:// URIs) whose host is this machine, else `default`: where a
    writer on this host uploads. Costs a name lookup and a bind per server it tries."""
    for server in servers:
        host = urllib.parse.urlsplit(server).hostname
        if host and is_local_host(host):
            return server
    return default


def endpoints_by_host(endpoints: Sequence, uri: str) -> dict[str, list[int]]:
    """The indices of `endpoints` (flight.Endpoint, or anything with .locations) grouped by the
    host of their servers (endpoint_host), each group in the endpoints' order: what a rank on
    host h reads when each rank reads the endpoints beside it."""
    out: dict[str, list[int]] = {}
    for i, e in enumerate(endpoints):
        out.setdefault(endpoint_host(e.locations, uri), []).append(i)
    return out
