"""The fault matrix: `ferry serve` and `ferry get` as separate processes, and one of them killed
(SIGKILL), stopped (SIGSTOP) or closed (SIGTERM: a clean exit) at one of four phases (after
want_data, during metadata, during a body or fetch, before free_data), on five transports
(shared memory, and UCX over shared memory and over TCP only, each on the system's UCX and on
PyPI's, which ferry's wheel loads) and four kinds of bodies (type 0, type 1, and each from a kept
dataset), plus type 0 of an LZ4 file over TCP only (scattered bodies, which UCX's TCP lanes send
gathered and unwaited).

Each cell asserts that the survivor reports within the bound (a kill or a close: 1 s; a stop:
the 2 s --timeout plus 1 s), that it exits or carries on as specified (a client exits 2 with one
line naming the phase and leaves no file in the output's directory, not even a partial one,
unless it already had the whole stream; a client killed, SIGKILL included, leaves none either; a
server logs the session's end and goes on), that a surviving server is back to its file
descriptors and shared-memory segments and idle, and that the next client gets equal data.
The measured detection times go to $FERRY_FAULT_REPORT (JSON lines) when it is set, for
docs/reliability.md.
"""

import json
import os
import signal
import time

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from fault_harness import (PAUSED, Get, Serve, fault_batch, fd_count, idle_cpu, loaded_ucx,
                           pypi_ucx, segment_maps)

TIMEOUT = 2  # --timeout of both ends, seconds (of a client only where it sees a stopped server)
# --timeout of the ordinary reads around a cell (the warm-up client and the next client): they
# check that a server serves, not how fast a fault is seen, and on eight cells at once on two
# cores a read of 12 LZ4-decompressed batches gathered over TCP has gone 2 s without a message.
READ_TIMEOUT = 10
BOUND = {"kill": 1.0, "close": 1.0, "stop": TIMEOUT + 1.0}
# Room for this test's own polling and process teardown on a loaded 2-core machine.
SLACK = 0.5
PYPI_UCX = pypi_ucx()
PYPI_ENV = PYPI_UCX[0] if PYPI_UCX else {}
TRANSPORTS = {
    "shm": ("shm", {}),
    "ucx-shm": ("ucx", {}),  # the URIs carry ferry=1: the same-host fast path
    "ucx-tcp": ("ucx", {"UCX_TLS": "tcp,self"}),
    "pypi-ucx-shm": ("ucx", dict(PYPI_ENV)),
    "pypi-ucx-tcp": ("ucx", dict(PYPI_ENV, UCX_TLS="tcp,self")),
}
BODIES = {
    "packed": ["--body-type", "packed"],
    "list": ["--body-type", "list"],
    "keep": ["--body-type", "list", "--keep"],
    "keep-packed": ["--body-type", "packed", "--keep"],
    # An LZ4 file's batches are decompressed into buffers of their own, so each type-0 body is
    # scattered: over TCP lanes it is gathered and sent without waiting (the next send or the
    # end-of-stream flush reports its failure), which whole file or kept bodies never reach.
    "packed-lz4": ["--body-type", "packed"],
}


def client_args(transport, body):
    """What the client adds: over TCP, where UCX would emulate its gets, a ferry server sends
    packed bodies unless the client asks for buffer lists, which a type-1 cell does. (On one
    host the server's choice stands: packed before UCX 1.16, lent from it on.)"""
    return ["--buffer-lists"] if transport.endswith("ucx-tcp") and "list" in BODIES[body] else []


# (transport, body) pairs in the matrix: the gathered sends exist only on UCX's TCP lanes.
CELLS = [(t, b) for t in sorted(TRANSPORTS) for b in sorted(BODIES)
         if b != "packed-lz4" or t.endswith("ucx-tcp")]
FAULTS = ["kill-server", "stop-server", "close-server", "kill-client", "stop-client",
          "close-client"]
PHASES = ["want_data", "metadata", "body", "free"]
# Which arrival of a phase to stop at: the third metadata message or body is mid-stream.
NTH = {"want_data": 1, "metadata": 3, "body": 3, "free": 1}
SIGNALS = {"kill": signal.SIGKILL, "stop": signal.SIGSTOP, "close": signal.SIGTERM}
PHASE_WORDS = ("connecting", "metadata", "body", "fetch", "free")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("faults")
    batches = [fault_batch(200_000)] * 12
    paths = {}
    for name, codec in (("t.arrows", None), ("t-lz4.arrows", "lz4")):
        paths[name] = d / name
        options = ipc.IpcWriteOptions(compression=codec)
        with ipc.new_stream(str(paths[name]), batches[0].schema, options=options) as w:
            for b in batches:
                w.write_batch(b)
    return paths, pa.Table.from_batches(batches)


@pytest.fixture(scope="module")
def pypi_ucx_loads():
    """PyPI's UCX is installed and is what the processes of its cells load."""
    assert PYPI_UCX, "libucx-cu12 is not installed in this Python (scripts/setup.sh installs it)"
    env, version = PYPI_UCX
    assert loaded_ucx(env) == version


def file_for(paths, body):
    return paths["t-lz4.arrows" if body.endswith("-lz4") else "t.arrows"]


def equal_to(out, table):
    return os.path.exists(out) and ipc.open_stream(str(out)).read_all().equals(table)


def files_left(directory, before):
    """The files in `directory` that were not in `before`, the processes' logs (*.err) aside:
    what a client writing --to left there (`ferry get` writes an unnamed O_TMPFILE file and links
    it into place only when whole, so a client killed, stopped or closed mid-stream leaves
    nothing, not even a .partial file)."""
    return sorted(p.name for p in directory.iterdir()
                  if p.name not in before and not p.name.endswith(".err"))


def report(cell, **figures):
    path = os.environ.get("FERRY_FAULT_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(dict(cell=cell, **figures)) + "\n")


class Servers:
    """One long-lived server per (transport, body) for the client-side faults, with its
    baseline: file descriptors and segments once a first client was served."""

    def __init__(self):
        self.live = {}

    def get(self, tmp, transport, body, path, table):
        key = (transport, body)
        if key in self.live and self.live[key][0].proc.poll() is not None:
            # An expected failure (UCX's abort above) ended it: the next cells get a new one.
            self.live.pop(key)[0].kill()
        if key not in self.live:
            scheme, env = TRANSPORTS[transport]
            srv = Serve(tmp, scheme, BODIES[body], path, env, TIMEOUT)
            g = Get(tmp, srv.uri, tmp / "warm.arrows", env, READ_TIMEOUT,
                    args=client_args(transport, body))
            rc, _ = g.wait(60)
            log = g.log.text()  # before kill, which closes the log
            g.kill()
            assert rc == 0 and equal_to(tmp / "warm.arrows", table), (
                log + "\nserver: " + srv.log.text())
            time.sleep(0.3)
            self.live[key] = (srv, fd_count(srv.proc.pid), segment_maps(srv.proc.pid))
        return self.live[key]

    def close(self):
        for srv, _, _ in self.live.values():
            srv.kill()


@pytest.fixture(scope="module")
def servers():
    s = Servers()
    yield s
    s.close()


def next_client_gets_equal_data(tmp, srv, env, table, transport, body):
    out = tmp / "next.arrows"
    g = Get(tmp, srv.uri, out, env, READ_TIMEOUT, args=client_args(transport, body))
    offset = len(srv.log.text())
    rc, _ = g.wait(60)
    log = g.log.text()
    g.kill()
    if rc != 0:
        # What the server made of that session says which end stalled: give it its own timeout
        # to log the session's end.
        srv.log.wait_for(r"ferry serve: [^\n]*\n", TIMEOUT + 1.0, after=offset)
    assert rc == 0, log + "\nserver: " + srv.log.text()
    assert equal_to(out, table)


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("transport,body", CELLS)
def test_fault_cell(request, tmp_path, data, servers, transport, body, fault, phase):
    if transport.startswith("pypi-"):
        request.getfixturevalue("pypi_ucx_loads")
    kind, side = fault.split("-")
    scheme, env = TRANSPORTS[transport]
    paths, table = data
    path = file_for(paths, body)
    cell = f"{transport}/{body}/{fault}/{phase}"
    if (transport.endswith("ucx-tcp") and "list" in BODIES[body] and
            fault in ("stop-server", "close-client", "kill-client") and phase != "want_data"):
        # Over TCP, UCX 1.13 emulates the client's RMA gets with Active Messages that the
        # server's worker answers; one answered after the client is gone (it left while the
        # server was stopped, closed with gets in flight, or was killed with requests still in
        # the server's socket) fails, and ucp_get_req_handler treats that as fatal ("Endpoint
        # timeout": seen in close-client/body and kill-client/metadata under CI's load). It
        # depends on timing, so the mark is not strict; Servers.get replaces a server it ended.
        request.applymarker(pytest.mark.xfail(
            strict=False, reason="UCX 1.13 aborts a server whose emulated RMA get reply finds the "
            "client gone (ucp_get_req_handler)"))
    pause = f"{side}:{phase}:{NTH[phase]}"
    out = tmp_path / "out.arrows"
    bound = BOUND[kind] + SLACK
    if side == "server":
        srv = Serve(tmp_path, scheme, BODIES[body], path, env, TIMEOUT, pause=pause)
        before = {p.name for p in tmp_path.iterdir()}
        # A stopped server is seen through the client's --timeout; a killed or closed one through
        # the connection, which the longer timeout proves (and a loaded machine's starved server,
        # 2 s between two bodies before the pause, cannot end the client early).
        client_timeout = TIMEOUT if kind == "stop" else READ_TIMEOUT
        cli = Get(tmp_path, srv.uri, out, env, client_timeout,
                  args=client_args(transport, body))
        try:
            paused, _ = srv.log.wait_for(PAUSED, 30)
            assert paused, (f"the server never reached {phase}: {srv.log.text()}"
                            f"(the client: {cli.log.text()!r})")
            t0 = time.monotonic()
            srv.signal(SIGNALS[kind])
            rc, took = cli.wait(bound + 10)
            detect = time.monotonic() - t0
            assert rc is not None, f"the client did not end: {cli.log.text()}"
            message = cli.log.text().strip()
            report(cell, detect_s=round(detect, 3), exit=rc, message=message.splitlines()[-1:])
            if rc == 0:
                # It had the whole stream before the fault (a fault at free_data): whole data.
                assert equal_to(out, table)
            else:
                assert detect <= bound, f"{cell}: the client took {detect:.2f} s: {message}"
                assert rc == 2, message
                assert not os.path.exists(out), "a failed get left its output file"
                assert files_left(tmp_path, before) == [], "a failed get left a file"
                assert len(message.splitlines()) == 1, message
                assert message.startswith("ferry: ") and any(w in message for w in PHASE_WORDS)
            if kind == "stop":
                # Continued, the server has dropped that client and serves the next one.
                os.kill(srv.proc.pid, signal.SIGCONT)
                next_client_gets_equal_data(tmp_path, srv, env, table, transport, body)
                assert idle_cpu(srv.proc.pid) < 0.01
                assert srv.stop() <= 1.0 + SLACK
            elif kind == "close":
                assert srv.proc.wait(timeout=bound) == 0
            else:
                srv.proc.wait(timeout=5)
            assert segment_maps(cli.proc.pid) == 0
        finally:
            cli.kill()
            srv.kill()
        return

    srv, fds, segments = servers.get(tmp_path, transport, body, path, table)
    before = {p.name for p in tmp_path.iterdir()}
    cli = Get(tmp_path, srv.uri, out, env, TIMEOUT, pause=pause,
              args=client_args(transport, body))
    try:
        paused, _ = cli.log.wait_for(PAUSED, 30)
        assert paused, (f"the client never reached {phase}: {cli.log.text()}"
                        f"(the server: {srv.log.text()!r})")
        offset = len(srv.log.text())
        t0 = time.monotonic()
        cli.proc.send_signal(SIGNALS[kind])
        seen, line = srv.log.wait_for(r"ferry serve: [^\n]*\n", bound + 10, after=offset)
        assert seen, f"{cell}: the server logged nothing: {srv.log.text()[offset:]}"
        detect = seen - t0
        report(cell, detect_s=round(detect, 3), server_log=line.group(0).strip())
        # All the server logged since the signal: a late report may follow another session's.
        assert detect <= bound, (f"{cell}: the server took {detect:.2f} s: {line.group(0)}"
                                 f"(its log since the signal: {srv.log.text()[offset:]!r})")
        if kind == "close":
            assert cli.proc.wait(timeout=5) != 0
        elif kind == "kill":
            assert cli.proc.wait(timeout=5) == -signal.SIGKILL
        # Killed (SIGKILL included), closed, or stopped mid-stream: nothing in the directory.
        assert files_left(tmp_path, before) == [], f"{cell}: the client left a file"
        assert not os.path.exists(out)
    finally:
        cli.kill()
    assert srv.proc.poll() is None, "the server died: " + srv.log.text()
    # Everything that client held is returned: descriptors and segments back to the baseline.
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and (fd_count(srv.proc.pid) > fds or
                                           segment_maps(srv.proc.pid) > segments):
        time.sleep(0.05)
    assert fd_count(srv.proc.pid) <= fds, f"{cell}: the server keeps descriptors"
    assert segment_maps(srv.proc.pid) <= segments, f"{cell}: the server keeps segments"
    assert idle_cpu(srv.proc.pid) < 0.01, f"{cell}: the server does not fall idle"
    next_client_gets_equal_data(tmp_path, srv, env, table, transport, body)
