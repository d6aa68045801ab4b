"""Arrow C++'s Flight client (the pyarrow wheel's libarrow_flight, built into
tests/flight/arrow_peer/flight_standard_peer) against ferry's server: RenewFlightEndpoint,
CancelFlightInfo, SetSessionOptions, GetSessionOptions and CloseSession through Arrow's own typed
calls and cookie middleware, and a DoGet in the session (zstd bodies, which Arrow decompresses)."""
import os
import subprocess
from pathlib import Path

from flight_support import Serve, ferry_cli, mixed_table
import pyarrow.ipc as ipc


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
        run = subprocess.run([binary, s.uri, "t"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "FAILED" not in run.stdout
    assert run.stdout.count("ok: ") == 11, run.stdout
