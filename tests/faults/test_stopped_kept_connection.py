"""A ferry.flight client that keeps its UCX connection between reads, and a server stopped
(SIGSTOP) between two of them: the second read gives the kept connection the connect timeout a
fresh UCX connection gets (2 s where another location follows), not the client's whole timeout,
then goes on to DoGet, which waits out the timeout; the error names both. Continued (SIGCONT), the
server serves the next read of the same client whole, over a new UCX connection: the silent one
was closed, not kept.

The client's timeout is 6 s: with the kept connection given the whole timeout, the read took
12 s (6 on UCX, 6 on DoGet); now it takes 8.
"""

import os
import signal
import sys
import time

import pyarrow as pa
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry.flight  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "flight"))
from flight_support import Serve, mixed_table, stream_file  # noqa: E402
from ferry_process import stop_process  # noqa: E402

TIMEOUT = 6.0  # the client's timeout, seconds
CONNECT = 2.0  # what the Flight client gives a UCX location with another one after it
SLACK = 1.5


def ucx_plane(client):
    import json
    for body in client.do_action("stats"):
        return json.loads(body)["ucx"]
    raise AssertionError("the stats action returned nothing")


def test_a_stopped_server_fails_a_kept_connection_at_the_connect_timeout(tmp_path):
    table = mixed_table(3000)
    path = stream_file(tmp_path / "t.arrows", table)
    # UCX and DoGet only, packed bodies: a read lends this client nothing, so its connection is
    # kept.
    with Serve(f"t={path}", "--transport", "ucx", "--body-type", "packed",
               tmp=str(tmp_path)) as s:
        client = ferry.flight.connect(s.uri, timeout=TIMEOUT)
        endpoint = client.get_flight_info("t").endpoints[0]
        assert [u.split("://")[0] for u in endpoint.locations] == [
            "ucx", "arrow-flight-reuse-connection"]
        assert pa.table(client.do_get(endpoint)).equals(table)
        assert client.last_location.startswith("ucx://")
        assert ucx_plane(client)["clients"] == 1
        # Every thread stopped before the request: a server thread still running on the other
        # core under load could otherwise send the schema first.
        stop_process(s.proc.pid)
        try:
            start = time.monotonic()
            with pytest.raises(Exception) as failed:
                pa.table(client.do_get(endpoint))
            took = time.monotonic() - start
        finally:
            os.kill(s.proc.pid, signal.SIGCONT)
        message = str(failed.value)
        assert "every location of the endpoint" in message, message
        assert "2000 ms (the connect timeout) on the connection kept" in message, message
        assert CONNECT + TIMEOUT - SLACK <= took <= CONNECT + TIMEOUT + SLACK, (took, message)
        # The silent connection was closed: the next read connects anew, over UCX.
        assert pa.table(client.do_get(endpoint)).equals(table)
        assert client.last_location.startswith("ucx://")
        plane = ucx_plane(client)
        assert plane["clients"] == 2, plane
