"""A network interface that goes away while a UCX server runs (a bridge, a VPN or a container's
veth taken down). UCX opens every device its context found at its start on each worker, and the
server makes a worker for each connection, so such a server fails every later connection:

- a loopback listener leaves other interfaces out of its context, so it keeps serving;
- any other listener refuses the client at once, and its log names the cause, where the
  connection request used to be dropped and the client left waiting out its connect timeout.

Each case runs in a network namespace of its own, so the interface that goes away is no other
test's. Skipped, with the reason, where the sandbox forbids network namespaces."""

import os
import subprocess
import time

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from fault_harness import ferry_cli
from ferry_process import ServeProcess

# Long, so that a client left waiting shows as a timeout and not as a quick refusal.
CONNECT_TIMEOUT = 20


def ip(*args):
    return subprocess.run(["ip", *args], capture_output=True, text=True)


@pytest.fixture
def namespace():
    """A namespace with its loopback up, an interface that stays (10.205.0.1) and one that will
    go (10.206.0.1), each one end of a veth pair whose both ends are in the namespace; yields the
    namespace and the name of the one that goes (deleting it deletes its pair)."""
    tag = str(os.getpid() % 100000)
    ns, stays, goes = f"ferry-vi{tag}", f"vs{tag}", f"vg{tag}"
    made = ip("netns", "add", ns)
    if made.returncode != 0:
        pytest.skip(f"this sandbox forbids network namespaces: {made.stderr.strip()}")
    try:
        for step in [("-n", ns, "link", "set", "lo", "up"),
                     ("-n", ns, "link", "add", stays, "type", "veth", "peer", "name", f"{stays}p"),
                     ("-n", ns, "addr", "add", "10.205.0.1/24", "dev", stays),
                     ("-n", ns, "link", "set", stays, "up"),
                     ("-n", ns, "link", "set", f"{stays}p", "up"),
                     ("-n", ns, "link", "add", goes, "type", "veth", "peer", "name", f"{goes}p"),
                     ("-n", ns, "addr", "add", "10.206.0.1/24", "dev", goes),
                     ("-n", ns, "link", "set", goes, "up"),
                     ("-n", ns, "link", "set", f"{goes}p", "up")]:
            r = ip(*step)
            if r.returncode != 0:
                pytest.skip(f"this sandbox forbids veth links in a namespace: {r.stderr}")
        yield ns, goes
    finally:
        ip("netns", "del", ns)


@pytest.fixture
def dataset(tmp_path):
    batch = pa.record_batch({"i": pa.array(range(100_000), pa.int64()),
                             "s": pa.array([f"row {i}" for i in range(100_000)])})
    path = tmp_path / "t.arrows"
    with ipc.new_stream(str(path), batch.schema) as w:
        for _ in range(3):
            w.write_batch(batch)
    return path


def serve(ns, listen, path, tmp):
    """`ferry serve` over UCX in `ns`, started while both interfaces are up (a context manager:
    leaving stops it)."""
    return ServeProcess(["-v", "--transport", "ucx", "--listen", listen, "--insecure",
                         "--body-type", "list", f"t={path}"],
                        tmp=str(tmp), wrap=("ip", "netns", "exec", ns))


def get(ns, uri, to):
    start = time.monotonic()
    r = subprocess.run(
        ["ip", "netns", "exec", ns, ferry_cli(), "get", uri, "--ticket", "t", "--no-progress",
         "--connect-timeout", str(CONNECT_TIMEOUT), "--timeout", str(CONNECT_TIMEOUT),
         "--to", str(to)],
        capture_output=True, text=True, timeout=CONNECT_TIMEOUT * 3)
    return r, time.monotonic() - start


def read_after_it_goes(namespace, listen, dataset, tmp):
    """Serve `dataset` on `listen`, take the interface away, then read it with `ferry get` in the
    same namespace: the server (stopped), the get's result, its seconds and its output path."""
    ns, goes = namespace
    with serve(ns, listen, dataset, tmp) as server:
        uri = server.first_line().split()[1]
        assert ip("-n", ns, "link", "del", goes).returncode == 0
        got = tmp / "got.arrows"
        r, elapsed = get(ns, uri, got)
    return server, r, elapsed, got


def test_a_loopback_listener_keeps_serving_when_another_interface_goes(tmp_path, namespace,
                                                                       dataset):
    _, r, _, got = read_after_it_goes(namespace, "127.0.0.1:0", dataset, tmp_path)
    assert r.returncode == 0, r.stderr
    assert ipc.open_stream(str(got)).read_all().equals(ipc.open_stream(str(dataset)).read_all())


def test_another_listener_refuses_at_once_naming_the_cause(tmp_path, namespace, dataset):
    server, r, elapsed, got = read_after_it_goes(namespace, "10.205.0.1:0", dataset, tmp_path)
    assert r.returncode != 0
    assert "the server refused the connection" in r.stderr, r.stderr
    # Refused, not left waiting: well within the connect timeout.
    assert elapsed < CONNECT_TIMEOUT / 2, (elapsed, r.stderr)
    assert not got.exists()
    # The server's log names the client and the cause: the device UCX can no longer open.
    text = server.final_stderr
    assert "refused the UCX connection from 10.205.0.1:" in text, text
    assert "cannot create a UCX worker" in text and "No such device" in text, text
