"""Arrow Flight: a client of any Flight server, and a server in this process. On a ferry server
(`ferry serve --flight` or `Server.start`) a flight's locations are its shared-memory and UCX
planes, then DoGet, and `Client.do_get` takes the fastest that works."""
from ferry._ferry.flight import Client, Endpoint, FlightInfo, Server, connect  # noqa: F401

__all__ = ["Client", "Endpoint", "FlightInfo", "Server", "connect"]
