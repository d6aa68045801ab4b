"""CUDA IPC bodies across two processes: `ferry serve --device cuda:0` keeps a dataset's bodies in
one device allocation and offers a URI whose remote_handle is its CUDA IPC handle; `ferry get
--device cuda:0` maps that allocation and lands batches there without a copy. Checked against
pyarrow's read of the file (after `--to` copies the device batches back), against /proc (the
client maps the server's memory; nothing else does once it is gone) and against the server's
summary after a client is killed. On the stand-in driver ($FERRY_CUDA_DRIVER) device memory is
PROT_NONE to the host, so a host read of it would crash the process."""

import base64
import os
import signal
import subprocess
import time
import urllib.parse

import pyarrow as pa
import pytest

from ipc_files import mixed_table, write_stream
from test_dipc_cli import cli

STANDIN_MEMFD = "/memfd:ferry-cuda-standin"


def need_cuda():
    if os.environ.get("FERRY_CUDA_DRIVER"):
        return
    if not os.path.exists("/dev/nvidiactl"):
        pytest.skip("needs a CUDA GPU or the stand-in CUDA driver ($FERRY_CUDA_DRIVER)")


class DeviceServer:
    """`ferry serve --device cuda:0 NAME=FILE`: the CUDA URI on stdout, the host URI on stderr."""

    def __init__(self, name, path, *extra):
        self.proc = subprocess.Popen(
            [cli(), "serve", "--device", "cuda:0", *extra, f"{name}={path}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("ferry serve exited: " + self.proc.stderr.read())
        got, self.uri = line.split()
        assert got == name
        self.host_uri = None
        while self.host_uri is None:
            err = self.proc.stderr.readline()
            if not err:
                raise RuntimeError("ferry serve printed no host URI")
            if err.startswith(f"ferry serve: {name} host: ferry get "):
                self.host_uri = err.split()[6]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=20)
        return self.proc.stderr.read()


def get(uri, ticket, *args, timeout=120):
    return subprocess.run(
        [cli(), "get", uri, "--ticket", ticket, "--no-progress", *args],
        capture_output=True, text=True, timeout=timeout,
    )


def query(uri):
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(uri).query))


def memfd_inodes(pid):
    """Inodes of the stand-in's device memfds that process `pid` maps."""
    inodes = set()
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            if STANDIN_MEMFD in line:
                inodes.add(line.split()[4])
    return inodes


@pytest.fixture
def served(tmp_path):
    need_cuda()
    table = mixed_table(3000)
    path = tmp_path / "data.arrows"
    write_stream(path, table, 700)
    server = DeviceServer("d", path, "--timeout", "5")
    yield server, table, tmp_path
    server.stop()


def test_device_bodies_land_without_a_copy_and_equal_pyarrow(served):
    server, table, tmp = served
    q = query(server.uri)
    assert int(q["ferry_cuda_ipc"]) >= table.nbytes // 2
    assert len(base64.b64decode(q["remote_handle"])) == 64
    out = tmp / "out.arrows"
    r = get(server.uri, "d", "--device", "cuda:0", "--to", str(out), "-v")
    assert r.returncode == 0, r.stderr
    # The landing path copies nothing through the device layer (--to copies back afterwards).
    assert "landing on CUDA:0: 0 copies, 0 bytes copied" in r.stderr, r.stderr
    got = pa.ipc.open_stream(pa.OSFile(str(out))).read_all()
    assert got.equals(table)
    # Twice, and a host client beside it: the memory is lent, never used up.
    r = get(server.uri, "d", "--device", "cuda:0")
    assert r.returncode == 0, r.stderr
    host_out = tmp / "host.arrows"
    r = get(server.host_uri, "d", "--device", "cpu", "--to", str(host_out))
    assert r.returncode == 0, r.stderr
    assert pa.ipc.open_stream(pa.OSFile(str(host_out))).read_all().equals(table)
    summary = server.stop()
    assert "3 clients" in summary and "0 failed" in summary, summary
    assert "0 clients still connected" in summary, summary


def test_a_cpu_client_is_told_to_use_cuda_or_the_host_uri(served):
    server, _, _ = served
    r = get(server.uri, "d", "--device", "cpu")
    assert r.returncode == 2, r.stderr
    assert "CUDA device memory" in r.stderr and "ferry_cuda_ipc" in r.stderr, r.stderr


@pytest.mark.parametrize("handle", [b"short", bytes(64), bytes(range(64))])
def test_a_bad_or_foreign_remote_handle_is_a_clear_error(served, handle):
    server, _, _ = served
    q = query(server.uri)
    bad = server.uri.replace(
        "remote_handle=" + urllib.parse.quote(q["remote_handle"], safe=""),
        "remote_handle=" + urllib.parse.quote(base64.b64encode(handle).decode(), safe=""),
    )
    assert bad != server.uri
    r = get(bad, "d", "--device", "cuda:0")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "remote_handle" in r.stderr, r.stderr


def test_a_bad_allocation_size_is_a_clear_error(served):
    server, _, _ = served
    q = query(server.uri)
    bad = server.uri.replace("ferry_cuda_ipc=" + q["ferry_cuda_ipc"], "ferry_cuda_ipc=-3")
    r = get(bad, "d", "--device", "cuda:0")
    assert r.returncode == 2 and "ferry_cuda_ipc=-3" in r.stderr, r.stderr
    # Larger than the allocation: the driver's mapping says how big it really is.
    big = server.uri.replace("ferry_cuda_ipc=" + q["ferry_cuda_ipc"], "ferry_cuda_ipc=" + str(1 << 40))
    r = get(big, "d", "--device", "cuda:0")
    assert r.returncode == 2 and "remote_handle" in r.stderr, r.stderr


def test_a_killed_client_holding_the_mapping_is_cleaned_up(served):
    server, table, tmp = served
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    # Nobody reads the FIFO: the client connects, maps the server's memory and blocks in open().
    client = subprocess.Popen(
        [cli(), "get", server.uri, "--ticket", "d", "--device", "cuda:0", "--no-progress",
         "--to", str(fifo), "--force"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    standin = bool(os.environ.get("FERRY_CUDA_DRIVER"))
    # The client has landed the batches (mapped the server's memory) once it blocks opening the
    # FIFO to write them: its current system call is openat (257 on x86-64), on any driver.
    deadline = time.time() + 20
    while not _in_openat(client.pid) and time.time() < deadline:
        time.sleep(0.05)
    assert _in_openat(client.pid), "the client never reached the point of writing its output"
    if standin:
        # The client maps the very memory the server allocated (no copy of it).
        shared = memfd_inodes(client.pid) & memfd_inodes(server.proc.pid)
        assert shared, "the client does not map the server's device memory"
    client.send_signal(signal.SIGKILL)
    client.wait(timeout=10)
    # The server still serves, and nothing but itself maps its memory any more.
    out = tmp / "after.arrows"
    r = get(server.uri, "d", "--device", "cuda:0", "--to", str(out))
    assert r.returncode == 0, r.stderr
    assert pa.ipc.open_stream(pa.OSFile(str(out))).read_all().equals(table)
    if standin:
        others = [
            int(p) for p in os.listdir("/proc")
            if p.isdigit() and int(p) != server.proc.pid
            and _maps_any(int(p), memfd_inodes(server.proc.pid))
        ]
        assert others == [], others
    summary = server.stop()
    assert "2 clients" in summary and "0 clients still connected" in summary, summary


def _in_openat(pid):
    try:
        with open(f"/proc/{pid}/syscall") as f:
            return f.read().split()[0] == "257"
    except (OSError, IndexError):
        return False


def _maps_any(pid, inodes):
    try:
        return bool(memfd_inodes(pid) & inodes)
    except OSError:
        return False
