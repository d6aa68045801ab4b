"""`ferry serve`'s options that decide whom it serves and where, each seen from `ferry get`: how
many clients at once, the tickets it prints, where a Flight server's UCX plane listens. What a
client reads is compared with the table pyarrow wrote."""
import json
import os
import re
import socket
import subprocess

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from cli_support import write_ipc
from ferry_process import ServeProcess


@pytest.fixture(scope="module")
def table():
    # 8 MB in 10 batches: far more than a pipe holds, so a client writing into one that is not
    # read is still mid-stream.
    return pa.table({"x": pa.array(range(1_000_000), pa.int64())})


@pytest.mark.parametrize("limit", [1, 2])
def test_max_clients_refuses_a_client_beyond_the_limit(ferry_cli, run, tmp_path, table, limit):
    path = write_ipc(tmp_path / "t.arrows", table, chunk=100_000)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with ServeProcess(["--max-clients", limit, f"t={path}"], tmp=str(tmp_path)) as server:
        uri = server.first_line().split()[1]
        first = subprocess.Popen([ferry_cli, "get", uri, "--ticket", "t", "--to", str(fifo),
                                  "--no-progress"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        with open(fifo, "rb") as pipe:
            # The first client has written into the pipe, which is full: it is being served.
            got = bytearray(pipe.read(1 << 16))
            second = run("get", uri, "--ticket", "t", "--no-progress")
            while chunk := pipe.read(1 << 20):
                got += chunk
        assert first.wait(timeout=60) == 0, first.stderr.read()
    assert ipc.open_stream(pa.py_buffer(bytes(got))).read_all().equals(table)
    if limit == 1:
        assert second.returncode == 2
        assert "the server is serving its most clients (1)" in second.stderr, second.stderr
    else:
        assert second.returncode == 0, second.stderr
        assert f"t: 10 batches, {table.num_rows} rows" in second.stdout


def test_print_ticket_prints_what_a_client_needs(run, tmp_path, table):
    path = write_ipc(tmp_path / "t.arrows", table, chunk=100_000)
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    # With a token only issued tickets are honoured: the printed one, not the dataset's name.
    with ServeProcess(["--print-ticket", "--token-file", token, f"t={path}"],
                      tmp=str(tmp_path)) as server:
        name, uri, ticket = server.first_line().split()
        assert name == "t" and re.fullmatch(r"[0-9a-f]{32}", ticket), ticket
        out = tmp_path / "got.arrows"
        r = run("get", uri, "--ticket", ticket, "--to", out, "--no-progress")
        assert r.returncode == 0, r.stderr
        assert ipc.open_stream(str(out)).read_all().equals(table)
        r = run("get", uri, "--ticket", "t", "--no-progress")
        assert r.returncode == 2 and "ticket" in r.stderr, r.stderr
    # Without one a ticket is the dataset's name.
    with ServeProcess(["--print-ticket", f"t={path}"], tmp=str(tmp_path)) as server:
        name, uri, ticket = server.first_line().split()
        assert ticket == name == "t"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ucx_listen_places_a_flight_servers_ucx_plane(run, tmp_path, table):
    path = write_ipc(tmp_path / "t.arrows", table, chunk=100_000)
    # A port nothing listens on a moment ago; should another process take it first, the server
    # fails to start naming it, and a fresh one is tried.
    for _ in range(3):
        port = _free_port()
        server = ServeProcess(["--flight", "127.0.0.1:0", "--ucx-listen", f"127.0.0.1:{port}",
                               f"t={path}"], tmp=str(tmp_path))
        line = server.proc.stdout.readline().strip()
        if line:
            break
        server.close()
        assert "ucx" in server.final_stderr.lower(), server.final_stderr
    assert line, server.final_stderr
    with server:
        listed = run("list", line, "--json")
        assert listed.returncode == 0, listed.stderr
        (flight,) = json.loads(listed.stdout)
        ucx = [loc for e in flight["endpoints"] for loc in e["locations"]
               if loc.startswith("ucx://")]
        assert ucx and all(loc.startswith(f"ucx://127.0.0.1:{port}?") for loc in ucx), ucx
        out = tmp_path / "got.arrows"
        r = run("get", line, "--path", "t", "--via", "ucx", "--to", out, "--no-progress", "-v")
        assert r.returncode == 0, r.stderr
        assert f"reading over ucx from ucx://127.0.0.1:{port}?" in r.stderr, r.stderr
        assert ipc.open_stream(str(out)).read_all().equals(table)


def _shmem_huge_pages():
    """The kernel's choice for shared memory's huge pages (the bracketed word), or None."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/shmem_enabled") as f:
            words = f.read().split()
    except OSError:
        return None
    return next((w[1:-1] for w in words if w.startswith("[")), None)


@pytest.mark.parametrize("flight", [False, True])
def test_keep_tells_once_where_shared_memory_gets_no_huge_pages(run, tmp_path, table, flight):
    # The oracle is the kernel's own setting: a hint naming it where it gives shared memory no
    # huge pages, none where it does; a server that keeps nothing says nothing of it.
    path = write_ipc(tmp_path / "t.arrows", table, chunk=100_000)
    setting = _shmem_huge_pages()
    plane = ["--flight", "127.0.0.1:0"] if flight else []
    for keep in (["--keep"], []):
        with ServeProcess([*plane, *keep, f"t={path}"], tmp=str(tmp_path)) as server:
            uri = server.first_line().split()[-1]
            r = run("get", uri, *(["--path"] if flight else ["--ticket"]), "t", "--no-progress")
            assert r.returncode == 0, r.stderr
        told = [line for line in server.final_stderr.splitlines() if "huge" in line.lower()]
        if keep and setting in ("never", "deny"):
            assert len(told) == 1, server.final_stderr
            assert f"shmem_enabled is {setting}" in told[0] and "advise" in told[0], told
        else:
            assert told == [], server.final_stderr
