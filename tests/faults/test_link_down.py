"""A link that goes down mid-transfer (`ip link set ... down` between two network namespaces): no
reset reaches either end, so only the idle timeout can find it. Both the client and the server
must report within --timeout plus a second. Skipped, with the reason, where the sandbox forbids
network namespaces."""

import os
import signal
import subprocess
import time

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from fault_harness import PAUSED
from netns import hosts_or_skip  # noqa: E402 (fault_harness puts tests/support on the path)

TIMEOUT = 2


@pytest.fixture
def namespaces():
    """Hosts a and b (tests/support/netns.py); skips with the reason where the sandbox forbids
    network namespaces."""
    with hosts_or_skip(["a", "b"]) as hosts:
        yield hosts["a"], hosts["b"]


@pytest.mark.parametrize("body", ["packed", "list"])
def test_a_link_down_mid_transfer_is_found_within_the_timeout(tmp_path, namespaces, body):
    a, b = namespaces
    batch = pa.record_batch({"i": pa.array(range(300_000), pa.int64())})
    path = tmp_path / "t.arrows"
    with ipc.new_stream(str(path), batch.schema) as w:
        for _ in range(20):
            w.write_batch(batch)
    # Both ends in their namespaces: `ip netns exec` runs the ferry tool there.
    serve_log = tmp_path / "serve.err"
    with open(serve_log, "w") as err:
        proc = subprocess.Popen(
            [*a.wrap, os.environ["FERRY_CLI"], "serve", "-v", "--transport",
             "ucx", "--listen", f"{a.ip}:0", "--insecure", "--timeout", str(TIMEOUT),
             "--body-type", body, f"t={path}"],
            stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        uri = proc.stdout.readline().split()[1]
        client_log = tmp_path / "get.err"
        with open(client_log, "w") as err:
            client = subprocess.Popen(
                # A type-1 client asks for buffer lists: over TCP the server would otherwise
                # send it packed bodies. A window of one batch keeps most of the stream on the
                # server: unpaced, a loaded host could take it all into UCX's buffers before the
                # link goes down, and the read would rightly end well.
                [*b.wrap, os.environ["FERRY_CLI"], "get", uri, "--ticket", "t",
                 "--no-progress", "--timeout", str(TIMEOUT), "--window", "1",
                 *(["--buffer-lists"] if body == "list" else [])],
                stdout=subprocess.DEVNULL, stderr=err,
                env=dict(os.environ, FERRY_FAULT_PAUSE="client:body:3"))
        deadline = time.monotonic() + 30
        while PAUSED not in client_log.read_text() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert PAUSED in client_log.read_text(), client_log.read_text()
        down = subprocess.run(["ip", "-n", a.name, "link", "set", a.link, "down"],
                              capture_output=True, text=True)
        assert down.returncode == 0, down.stderr
        # Release the client from its pause (a stop and a continue): it reads on, into silence.
        os.kill(client.pid, signal.SIGSTOP)
        time.sleep(0.3)
        t0 = time.monotonic()
        os.kill(client.pid, signal.SIGCONT)
        rc = client.wait(timeout=TIMEOUT + 10)
        took = time.monotonic() - t0
        message = client_log.read_text().strip().splitlines()[-1]
        print(f"link down ({body}): the client reported after {took:.2f} s: {message}")
        assert rc == 2 and took <= TIMEOUT + 1.5, message
        assert "the server sent nothing for 2000 ms" in message or "took nothing" in message
        # The server's session ends too (its sends or its wait for the client time out).
        deadline = time.monotonic() + TIMEOUT + 5
        while "ferry serve: client" not in serve_log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "ferry serve: client" in serve_log.read_text(), serve_log.read_text()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
