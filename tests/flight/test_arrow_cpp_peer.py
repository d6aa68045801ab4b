"""Arrow C++'s Flight client (the pyarrow wheel's libarrow_flight, built into
tests/flight/arrow_peer/flight_standard_peer) against ferry's server: RenewFlightEndpoint,
CancelFlightInfo, SetSessionOptions, GetSessionOptions and CloseSession through Arrow's own typed
calls and cookie middleware, and a DoGet in the session (zstd bodies, which Arrow decompresses)."""
import json
import os
import subprocess
from pathlib import Path

import pyarrow.flight as fl
import pyarrow.ipc as ipc

from flight_support import Serve, ferry_cli, mixed_table


def peer():
    """The peer binary: FERRY_FLIGHT_ARROW_PEER, else beside the CLI in its build tree."""
    named = os.environ.get("FERRY_FLIGHT_ARROW_PEER")
    if named:
        return named
    tree = Path(ferry_cli()).resolve().parents[2]
    return str(tree / "tests" / "flight" / "arrow_peer" / "flight_standard_peer")


def test_arrow_cpp_client_standard_actions(tmp_path):
    binary = peer()
    assert os.path.exists(binary), (
        f"{binary} is not built: the test tree builds it where pyarrow (with Flight) is found")
    table = mixed_table(3000)
    path = tmp_path / "t.arrows"
    with ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=1000)
    with Serve(f"t={path}", tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)
        run = subprocess.run([binary, s.uri, "t"], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stdout + run.stderr
        # The peer's one DoGet ran in its session, whose compression is zstd: fewer bytes than the
        # same flight read plainly.
        peer_bytes = _bytes_sent(client)
        ticket = client.get_flight_info(fl.FlightDescriptor.for_path("t")).endpoints[0].ticket
        assert client.do_get(ticket).read_all().equals(table)
        plain_bytes = _bytes_sent(client) - peer_bytes
        assert peer_bytes < plain_bytes * 0.8, (peer_bytes, plain_bytes)
    assert "FAILED" not in run.stdout
    assert run.stdout.count("ok: ") == 11, run.stdout


def _bytes_sent(client):
    [r] = client.do_action(fl.Action("stats", b""))
    return json.loads(r.body.to_pybytes())["grpc"]["bytes_sent"]
