"""An idle server and an idle client stay idle: `ferry serve` on shared memory and on UCX, and a
client process holding a read open on each (a batch taken, the rest waiting), each use at most 1%
of a core over 5 s. CPU time is the sum of the threads' run time in /proc/PID/task/*/schedstat
(nanoseconds: /proc/PID/stat's clock ticks, 10 ms each, are sampled and miss or over-count short
wake-ups). Nothing here is timed for speed: the 5 s is the window over which a poll loop or a
spinning progress thread would show, so it is real time by necessity.

A Flight server (`--flight`) is not held to this: gRPC's own timer and completion-queue threads
wake on their own schedule, about 0.5% of a core on this project's 2-core VM when it is quiet and
more when other work shares the cores, as it does in CI (docs/operations.md, "Idle cost")."""
import os
import subprocess
import sys
import time

import pyarrow as pa
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry.dipc  # noqa: E402

from flight_support import ServeProcess  # noqa: E402

WINDOW_S = 5.0
BUDGET = 0.01  # of one core

CLIENT = r"""
import sys
import ferry.dipc
held = []
for uri in sys.argv[1:]:
    s = ferry.dipc.connect(uri, "t")
    first = s.read_next()
    assert first is not None, uri
    held.append((s, first))
print("holding", flush=True)
sys.stdin.readline()  # until the test is done with us
"""


def _run_ns(pid):
    """Nanoseconds every thread of `pid` has spent on a CPU."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:  # a thread that ended meanwhile
            pass
    return total


def _share_of_a_core(pids):
    """Each pid's CPU time over WINDOW_S of wall time, as a share of one core."""
    before = {p: _run_ns(p) for p in pids}
    start = time.monotonic()
    time.sleep(WINDOW_S)
    wall = time.monotonic() - start
    return {p: (_run_ns(p) - before[p]) / 1e9 / wall for p in pids}


@pytest.fixture
def servers(tmp_path):
    if not ferry.dipc.ucx_available():
        pytest.fail("this build has no UCX")
    table = pa.table({"x": pa.array(range(400_000), pa.int64())})
    path = tmp_path / "t.arrows"
    with pa.ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=1000)
    started = []
    try:
        for transport in ("shm", "ucx"):
            s = ServeProcess(["--transport", transport, f"t={path}"], tmp=str(tmp_path))
            started.append(s)
            name, s.uri = s.first_line().split(" ", 1)
            assert name == "t"
        yield started
    finally:
        for s in started:
            s.close()


def test_idle_servers_stay_idle(servers):
    time.sleep(0.5)  # start-up (UCX's worker, the listeners) settles before the window opens
    shares = _share_of_a_core([s.proc.pid for s in servers])
    for s in servers:
        share = shares[s.proc.pid]
        assert share <= BUDGET, f"an idle `ferry serve` ({s.uri}) used {share:.2%} of a core"


def test_a_client_holding_reads_and_its_servers_stay_idle(servers):
    client = subprocess.Popen([sys.executable, "-c", CLIENT, *(s.uri for s in servers)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        line = client.stdout.readline().strip()
        assert line == "holding", f"the client did not start its reads: {client.stderr.read()}"
        time.sleep(0.5)  # the servers send ahead until their credit or region is spent
        pids = [s.proc.pid for s in servers] + [client.pid]
        shares = _share_of_a_core(pids)
        for s in servers:
            share = shares[s.proc.pid]
            assert share <= BUDGET, (
                f"`ferry serve` ({s.uri}) used {share:.2%} of a core while its client held a read")
        assert shares[client.pid] <= BUDGET, (
            f"a client holding a read on shared memory and one on UCX used "
            f"{shares[client.pid]:.2%} of a core")
    finally:
        client.stdin.close()
        client.wait(timeout=30)
