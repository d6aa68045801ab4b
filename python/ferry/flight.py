"""Arrow Flight: a client of any Flight server. On a ferry server (`ferry serve --flight`) a flight's
locations are its shared-memory and UCX planes, then DoGet, and `Client.do_get` takes the fastest
that works."""
from ferry._ferry.flight import Client, Endpoint, FlightInfo, connect  # noqa: F401

__all__ = ["Client", "Endpoint", "FlightInfo", "connect"]
