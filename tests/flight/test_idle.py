"""An idle server and an idle client stay idle: `ferry serve --flight` with its shared-memory and
UCX planes, and a client process holding a read open on each plane (a batch taken, the rest
waiting), each use at most 1% of a core over 5 s, read from /proc/PID/stat. Nothing here is timed
for speed: the 5 s is the window over which a poll loop or a spinning progress thread would show,
so it is real time by necessity."""
import os
import subprocess
import sys
import time

import pyarrow as pa
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")

from flight_support import Serve  # noqa: E402

WINDOW_S = 5.0
BUDGET = 0.01  # of one core

CLIENT = r"""
import sys
import ferry.flight
client = ferry.flight.connect(sys.argv[1])
streams = []
for via in ("shm", "ucx"):
    s = client.do_get("t", via=via)
    first = s.read_next()
    assert first is not None, via
    streams.append((s, first))
print("holding", flush=True)
sys.stdin.readline()  # until the test is done with us
"""


def _cpu_seconds(pid):
    """User plus system CPU time of every thread of `pid`, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _share_of_a_core(pids):
    """Each pid's CPU time over WINDOW_S of wall time, as a share of one core."""
    before = {p: _cpu_seconds(p) for p in pids}
    start = time.monotonic()
    time.sleep(WINDOW_S)
    wall = time.monotonic() - start
    return {p: (_cpu_seconds(p) - before[p]) / wall for p in pids}


@pytest.fixture
def served(tmp_path):
    table = pa.table({"x": pa.array(range(400_000), pa.int64())})
    path = tmp_path / "t.arrows"
    with pa.ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=1000)
    with Serve(f"t={path}", tmp=str(tmp_path)) as server:
        yield server


def test_an_idle_server_stays_idle(served):
    # Let start-up (the planes' listeners, gRPC's threads) settle before the window opens.
    time.sleep(0.5)
    share = _share_of_a_core([served.proc.pid])[served.proc.pid]
    assert share <= BUDGET, f"an idle ferry serve used {share:.1%} of a core over {WINDOW_S} s"


def test_a_client_holding_reads_and_its_server_stay_idle(served):
    client = subprocess.Popen([sys.executable, "-c", CLIENT, served.uri], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = client.stdout.readline().strip()
        assert line == "holding", f"the client did not start its reads: {client.stderr.read()}"
        time.sleep(0.5)  # the server sends ahead until its credit or region is spent
        shares = _share_of_a_core([served.proc.pid, client.pid])
        assert shares[served.proc.pid] <= BUDGET, (
            f"ferry serve used {shares[served.proc.pid]:.1%} of a core over {WINDOW_S} s while its "
            "clients held their reads")
        assert shares[client.pid] <= BUDGET, (
            f"a client holding a read on each plane used {shares[client.pid]:.1%} of a core over "
            f"{WINDOW_S} s")
    finally:
        client.stdin.close()
        client.wait(timeout=30)
