"""How long ferry's Flight client gives a location that does not answer, against a pyarrow.flight
server written here whose endpoint lists a `ucx://` location at a TCP listener that accepts and
then says nothing (a UCX endpoint that never wires up, as on a starved or stopped server):
- with another location after it, the client falls back after about 2 s and reads the table;
- as the only location, or the one `via` forces, it has nothing to fall back to and is given the
  client's whole timeout before it fails, naming the location and the timeout."""
import socket
import threading
import time

import pyarrow as pa
import pyarrow.flight as fl
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry.flight  # noqa: E402

TABLE = pa.table({"x": pa.array(range(1000), pa.int64())})
REUSE = "arrow-flight-reuse-connection://?"


class Silent:
    """A TCP listener on 127.0.0.1 that accepts every connection and never sends a byte; closed
    (with the connections) on exit."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.held = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self.thread.join(5)
        for c in self.held:
            c.close()


class Server(fl.FlightServerBase):
    """One flight, "t", whose one endpoint lists `locations`; DoGet serves the table."""

    def __init__(self, locations):
        super().__init__("grpc://127.0.0.1:0")
        self.locations = locations

    def get_flight_info(self, context, descriptor):
        return fl.FlightInfo(TABLE.schema, fl.FlightDescriptor.for_path("t"),
                             [fl.FlightEndpoint(b"t", self.locations)], TABLE.num_rows,
                             TABLE.nbytes)

    def do_get(self, context, ticket):
        return fl.RecordBatchStream(TABLE)


def ucx_location(port):
    return f"ucx://127.0.0.1:{port}?want_data=1&free_data=2&ferry=1"


def test_a_silent_fast_location_falls_back_to_the_next_after_two_seconds():
    with Silent() as silent, Server([ucx_location(silent.port), REUSE]) as server:
        client = ferry.flight.connect(f"grpc://127.0.0.1:{server.port}", timeout=10)
        start = time.monotonic()
        got = pa.table(client.do_get("t"))
        took = time.monotonic() - start
    assert got.equals(TABLE)
    # The 2 s bound, then gRPC: a connection that never wired up lets go at once (a graceful
    # close would wait up to 2 s more for a flush the silent peer never answers).
    assert 1.5 <= took < 3.9, took


@pytest.mark.parametrize("via", ["auto", "ucx"])
def test_the_last_location_gets_the_whole_timeout(via):
    timeout = 8
    with Silent() as silent, Server([ucx_location(silent.port)]) as server:
        client = ferry.flight.connect(f"grpc://127.0.0.1:{server.port}", timeout=timeout)
        start = time.monotonic()
        with pytest.raises(ferry.Error) as failed:
            pa.table(client.do_get("t", via=via))
        took = time.monotonic() - start
    message = str(failed.value)
    assert f"127.0.0.1:{silent.port}" in message, message
    assert "timed out connecting" in message, message
    # Not the 2 s meant for falling back, nor 2 s more to let go of a connection that never
    # wired up: nothing follows it.
    assert timeout - 0.5 <= took < timeout + 1.9, (took, message)
