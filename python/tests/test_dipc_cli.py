"""`ferry serve` and `ferry get` as separate processes, checked against pyarrow: tables cross
whole over shared memory and UCX with both body types, an unknown ticket is refused by name, a
SIGKILLed server leaves no segment behind and gives the client a clear error, and a SIGKILLed
client makes the server free what it held."""

import array
import fcntl
import os
import select
import signal
import subprocess
import sys
import termios
import time

import pyarrow as pa
import pytest
from ipc_files import mixed_table, write_stream

# The repository's shared test support (netns, imported by the one test that makes hosts: other
# modules import helpers from this one where that support is absent, as in the GPU bundle).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "support"))


def cli():
    path = os.environ.get("FERRY_CLI")
    if not path or not os.path.exists(path):
        pytest.skip("FERRY_CLI does not name a built ferry tool (scripts/test.sh sets it)")
    return path


class Server:
    def __init__(self, *args):
        self.proc = subprocess.Popen(
            [cli(), "serve", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.uris = {}
        for _ in range(len([a for a in args if "=" in a and not a.startswith("--")])):
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("ferry serve exited: " + self.proc.stderr.read())
            name, uri = line.split()
            self.uris[name] = uri

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=10)
        return self.proc.stderr.read()


def get(uri, ticket, *args, timeout=60):
    return subprocess.run(
        [cli(), "get", uri, "--ticket", ticket, "--no-progress", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


SHAPES = [
    ("shm", "list", False),
    ("shm", "list", True),
    ("shm", "packed", False),
    ("ucx", "list", False),
    ("ucx", "list", True),
    ("ucx", "packed", False),
]


@pytest.mark.parametrize("transport,body,keep", SHAPES)
def test_a_table_crosses_processes_whole(tmp_path, transport, body, keep):
    table = mixed_table(50_000)
    src = tmp_path / "t.arrows"
    write_stream(src, table, 7_000)
    keep_flag = ["--keep"] if keep else []
    server = Server("--transport", transport, "--body-type", body, *keep_flag, f"t={src}")
    try:
        out = tmp_path / "got.arrows"
        r = get(server.uris["t"], "t", "--to", str(out))
        assert r.returncode == 0, r.stderr
        assert "t: 8 batches, 50000 rows" in r.stdout
        got = pa.ipc.open_stream(str(out)).read_all()
        assert got.equals(table)
    finally:
        server.stop()


@pytest.mark.parametrize("transport", ["shm", "ucx"])
def test_metadata_and_bodies_on_two_connections(tmp_path, transport):
    table = mixed_table(20_000)
    src = tmp_path / "t.arrows"
    write_stream(src, table, 7_000)
    server = Server("--transport", transport, f"t={src}")
    try:
        line = server.proc.stderr.readline()
        assert line.startswith("ferry serve: t split: ferry get "), line
        shown = line.split("ferry get ", 1)[1].split(" --ticket")[0]
        meta_uri, data_uri = shown.split(" --data-uri ")
        assert data_uri.startswith(transport + "://") and data_uri != meta_uri
        out = tmp_path / "got.arrows"
        r = get(meta_uri, "t", "--data-uri", data_uri, "--to", str(out))
        assert r.returncode == 0, r.stderr
        assert pa.ipc.open_stream(str(out)).read_all().equals(table)
        r = get(server.uris["t"], "t", "--data-uri", "shm://x")
        assert r.returncode == 2 and "--data-uri shm://x" in r.stderr and "want_data" in r.stderr
    finally:
        server.stop()


def test_an_unknown_ticket_is_refused_by_name(tmp_path):
    src = tmp_path / "t.arrows"
    write_stream(src, mixed_table(10), 10)
    server = Server(f"alpha={src}")
    try:
        r = get(server.uris["alpha"], "beta")
        assert r.returncode == 2
        assert 'unknown ticket "beta" (this server has: alpha)' in r.stderr
    finally:
        server.stop()


def test_a_uri_given_to_listen_is_refused_by_name(tmp_path):
    src = tmp_path / "t.arrows"
    write_stream(src, mixed_table(10), 10)
    r = subprocess.run([cli(), "serve", "--listen", "ucx://127.0.0.1:0", f"t={src}"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r.stderr
    assert "--listen ucx://127.0.0.1:0" in r.stderr and "not a URI" in r.stderr, r.stderr
    # With --flight the planes' addresses are the server's own choice: --listen is refused, not
    # silently ignored.
    r = subprocess.run([cli(), "serve", "--flight", "127.0.0.1:0", "--listen", "127.0.0.1:0",
                        f"t={src}"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r.stderr
    assert "--listen 127.0.0.1:0" in r.stderr and "without --flight" in r.stderr, r.stderr


def memfd_mappings(pid):
    try:
        with open(f"/proc/{pid}/maps") as f:
            return [line for line in f if "memfd:ferry-segment" in line]
    except (FileNotFoundError, PermissionError, ProcessLookupError):
        return []  # gone, or not ours to read (and then not ours to have mapped a segment)


def descendants(root):
    """The processes below `root`, from each process's parent in /proc/PID/stat."""
    parents = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                # The field after the parenthesised command (which may hold spaces) is the state,
                # then the parent.
                parents[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            pass
    found, frontier = [], [root]
    while frontier:
        children = [p for p, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def wait_until_stalled(pipe, timeout=30):
    """Waits until the FIFO `pipe` (its read end, which the test has stopped reading) has less
    than PIPE_BUF bytes of room: the process writing into it is then blocked on it, holding what
    it has received, mid-stream. Bounded: fails after `timeout` seconds."""
    size = fcntl.fcntl(pipe.fileno(), 1032)  # F_GETPIPE_SZ
    queued = array.array("i", [0])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fcntl.ioctl(pipe.fileno(), termios.FIONREAD, queued)
        if size - queued[0] < select.PIPE_BUF:
            return
        time.sleep(0.001)
    raise AssertionError(f"the writer filled {queued[0]} of the FIFO's {size} bytes in {timeout} s")


KILL_SHAPES = [("shm", "list"), ("ucx", "list"), ("ucx", "packed")]


@pytest.mark.parametrize("transport,body", KILL_SHAPES)
def test_a_killed_server_leaves_no_segment_and_a_clear_error(tmp_path, transport, body):
    table = mixed_table(400_000)
    if body == "packed":
        # Packed bodies are not held back by a region: the client reads 64 MiB ahead, so the
        # stream must be longer than that to be mid-way.
        table = pa.concat_tables([table] * 8)
    src = tmp_path / "t.arrows"
    # Compressed, so the server reads and copies it for this client through its shared region (a
    # plain file would be lent as it is: no region to wait on, and over shared memory the client
    # keeps the file's pages after the server dies). A small region makes the server wait on the
    # client, and the client writes into a FIFO the test stops reading: the stream is surely
    # mid-way when the server is killed. (Over UCX the client talks to the server on shared
    # memory and CMA lanes that have no failure detection of their own: the socket-address
    # endpoint beside them must notice the death.)
    write_stream(src, table, 4_000, compression="lz4" if body == "list" else None)
    server = Server("--transport", transport, "--body-type", body, "--region-bytes", "1MiB",
                    f"t={src}")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    # Where this UCX would emulate the client's gets, the server would send it packed bodies
    # unless it asks for buffer lists, which is the case here (over shm it lends them anyway).
    lists = ["--buffer-lists"] if transport == "ucx" and body == "list" else []
    client = subprocess.Popen(
        [cli(), "get", server.uris["t"], "--ticket", "t", *lists, "--no-progress", "--to",
         str(fifo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    got = bytearray()
    with open(fifo, "rb") as pipe:
        got += pipe.read(1 << 20)
        assert len(got) > 0
        # The client now blocks on the FIFO, so the server waits on the client: kill it there.
        wait_until_stalled(pipe)
        if transport == "shm":
            assert memfd_mappings(server.proc.pid), "the server should map its segment"
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(timeout=10)
        while chunk := pipe.read(1 << 20):
            got += chunk
    _, err = client.communicate(timeout=60)
    if transport == "ucx" and body == "packed" and client.returncode == 0:
        # UCX's shared-memory transport may map the server's send buffers into the client, so
        # bodies the server had posted before it died can still be read: then all must arrive.
        assert pa.ipc.open_stream(pa.py_buffer(bytes(got))).read_all().equals(table)
    else:
        assert client.returncode == 2, err
        assert "closed the connection before the end of the stream" in err
    # Neither this process nor any it started maps a ferry segment any more, and memfd segments
    # have no name to leak. (Other processes may: tests beside this one run their own servers.)
    for pid in [os.getpid(), *descendants(os.getpid())]:
        assert not memfd_mappings(pid), f"process {pid} still maps a ferry segment"


@pytest.mark.parametrize("transport,body", KILL_SHAPES)
def test_a_killed_client_makes_the_server_free_what_it_held(tmp_path, transport, body):
    table = mixed_table(200_000)
    src = tmp_path / "t.arrows"
    write_stream(src, table, 2_000)
    server = Server("--transport", transport, "--body-type", body, "--region-bytes", "1MiB",
                    f"t={src}")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    try:
        client = subprocess.Popen(
            [cli(), "get", server.uris["t"], "--ticket", "t", "--no-progress", "--to", str(fifo)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # Killed where it holds what it was sent: blocked on a FIFO the test does not read.
        with open(fifo, "rb") as pipe:
            assert pipe.read(1)
            wait_until_stalled(pipe)
            client.send_signal(signal.SIGKILL)
            client.wait(timeout=10)
        # A later client still gets the whole table: nothing stayed held.
        out = tmp_path / "got.arrows"
        r = get(server.uris["t"], "t", "--to", str(out))
        assert r.returncode == 0, r.stderr
        assert pa.ipc.open_stream(str(out)).read_all().equals(table)
    finally:
        log = server.stop()
    assert "clients" in log


def test_ucx_moves_a_table_between_network_namespaces(tmp_path):
    """Two hosts of our own (network namespaces on a bridge, tests/support/netns.py): a UCX
    server in one, a client in the other, over TCP."""
    if subprocess.run(["which", "ip"], capture_output=True).returncode != 0:
        pytest.skip("iproute2's ip is not installed, so no network namespaces can be made")
    from netns import hosts_or_skip

    with hosts_or_skip(["a", "b"]) as hosts:
        a, b = hosts["a"], hosts["b"]
        table = mixed_table(30_000)
        src = tmp_path / "t.arrows"
        write_stream(src, table, 5_000)
        server = subprocess.Popen(
            [*a.wrap, cli(), "serve", "--transport", "ucx", "--listen", f"{a.ip}:0", "--insecure",
             f"t={src}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            line = server.stdout.readline()
            assert line, server.stderr.read()
            uri = line.split()[1]
            assert uri.startswith(f"ucx://{a.ip}:")
            out = tmp_path / "got.arrows"
            r = subprocess.run(
                [*b.wrap, cli(), "get", uri, "--ticket", "t", "--no-progress", "--to", str(out)],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert r.returncode == 0, r.stderr
            assert pa.ipc.open_stream(str(out)).read_all().equals(table)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=10)
