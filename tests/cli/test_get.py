"""`ferry get` from a `ferry serve` process over the Dissociated IPC planes (shm://, ucx://), with
the options that shape the read. The oracle is pyarrow: what a projected read writes equals
pyarrow's own selection of the same columns (`Table.select`) of the table the server was given."""
import os
import signal
import subprocess
import time

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from cli_support import write_ipc
from ferry_process import ServeProcess, on_terminal

# The planes and body shapes a server offers: (transport, body type, --keep).
SHAPES = [("shm", "list", False), ("shm", "list", True), ("shm", "packed", False),
          ("ucx", "list", False), ("ucx", "list", True), ("ucx", "packed", False)]
# --columns as a user writes it: one column, several out of order with a repeat, a dictionary
# column alone, a nested column beside a string one.
PROJECTIONS = ["0", "3,1,3", "4", "2,5"]


@pytest.fixture(scope="module")
def table():
    n = 5000
    return pa.table({
        "i": pa.array(range(n), pa.int64()),
        "f": pa.array([i / 7 if i % 5 else None for i in range(n)], pa.float64()),
        "l": pa.array([[i, i + 1] if i % 3 else None for i in range(n)], pa.list_(pa.int32())),
        "s": pa.array([None if i % 11 == 0 else f"row {i}" for i in range(n)]),
        "d": pa.array([["a", "b", "c"][i % 3] for i in range(n)]).dictionary_encode(),
        "st": pa.array([{"x": i, "y": str(i)} for i in range(n)]),
    })


def selected(table, columns):
    """pyarrow's own selection of what `--columns COLUMNS` names: the indices in the schema's
    order, each once."""
    return table.select(sorted({int(c) for c in columns.split(",")}))


class Served:
    """`ferry serve -v ARGS t=PATH`, started and stopped as a context manager: .uri is the URI it
    printed for t once it listened, .log() its stderr so far."""

    def __init__(self, tmp_path, path, *args):
        self.process = ServeProcess(["-v", *args, f"t={path}"], tmp=str(tmp_path))
        name, self.uri = self.process.first_line().split()[:2]
        assert name == "t"

    def log(self):
        return self.process.stderr()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.process.close()


@pytest.mark.parametrize("transport,body,keep", SHAPES)
def test_columns_read_what_pyarrow_selects(run, tmp_path, table, transport, body, keep):
    path = write_ipc(tmp_path / "t.arrows", table, chunk=1200)
    args = ["--transport", transport, "--body-type", body, *(["--keep"] if keep else [])]
    with Served(tmp_path, path, *args) as server:
        for columns in PROJECTIONS:
            out = tmp_path / f"got-{columns}.arrows"
            r = run("get", server.uri, "--ticket", "t", "--columns", columns, "--to", out,
                    "--no-progress")
            assert r.returncode == 0, r.stderr
            got = ipc.open_stream(str(out)).read_all()
            want = selected(table, columns)
            assert got.schema.equals(want.schema), (columns, got.schema, want.schema)
            assert got.equals(want), columns


@pytest.mark.parametrize("transport", ["shm", "ucx"])
def test_columns_over_the_split_shape(run, ferry_cli, tmp_path, table, transport):
    path = write_ipc(tmp_path / "t.arrows", table, chunk=1200)
    # The split shape's URIs are on stderr, the line after the URIs on stdout: read from a pipe.
    server = subprocess.Popen([ferry_cli, "serve", "--transport", transport, f"t={path}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().startswith("t "), server.stderr.read()
        words = server.stderr.readline().split()
        assert words[:5] == ["ferry", "serve:", "t", "split:", "ferry"], words
        metadata_uri, data_uri = words[6], words[8]
        out = tmp_path / "got.arrows"
        r = run("get", metadata_uri, "--data-uri", data_uri, "--ticket", "t", "--columns", "4,0",
                "--to", out, "--no-progress")
        assert r.returncode == 0, r.stderr
        assert ipc.open_stream(str(out)).read_all().equals(selected(table, "4,0"))
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=30)


def test_columns_ask_a_ucx_server_for_buffer_lists(run, tmp_path, table):
    # A type-1 server sends a ferry client packed bodies where UCX would emulate its reads (TCP,
    # or one host before UCX 1.16), and says so in its log; a projected read asks for lists, so
    # that only its columns' buffers move, as --buffer-lists does.
    path = write_ipc(tmp_path / "t.arrows", table, chunk=1200)
    with Served(tmp_path, path, "--transport", "ucx", "--body-type", "list") as server:
        plain = run("get", server.uri, "--ticket", "t", "--no-progress")
        assert plain.returncode == 0, plain.stderr
        packed_to_plain = server.log().count("sending packed bodies")
        for args in (["--columns", "1"], ["--buffer-lists"]):
            r = run("get", server.uri, "--ticket", "t", *args, "--to", tmp_path / "got.arrows",
                    "--force", "--no-progress")
            assert r.returncode == 0, r.stderr
            assert server.log().count("sending packed bodies") == packed_to_plain, (
                args, server.log())
        got = ipc.open_stream(str(tmp_path / "got.arrows")).read_all()
        assert got.equals(table)


def test_a_column_name_or_an_index_past_the_schema_is_refused(run, tmp_path, table):
    path = write_ipc(tmp_path / "t.arrows", table)
    with Served(tmp_path, path) as server:
        r = run("get", server.uri, "--ticket", "t", "--columns", "s", "--no-progress")
        assert r.returncode == 2
        assert "--columns" in r.stderr and '"s" is not a column index' in r.stderr, r.stderr
        r = run("get", server.uri, "--ticket", "t", "--columns", f"{table.num_columns}",
                "--no-progress")
        assert r.returncode == 2
        assert f"the schema has {table.num_columns} columns" in r.stderr, r.stderr


def reads_pyarrows_batches_each_way(run, tmp_path, server, table, option, values, refused):
    """`ferry get --OPTION V` for each V reads pyarrow's batches whole; `refused` is refused by
    the option's name."""
    for value in values:
        out = tmp_path / f"got{option}{value}.arrows"
        r = run("get", server.uri, "--ticket", "t", option, value, "--to", out, "--no-progress")
        assert r.returncode == 0, r.stderr
        assert ipc.open_stream(str(out)).read_all().equals(table), (option, value)
    r = run("get", server.uri, "--ticket", "t", option, refused, "--no-progress")
    assert r.returncode != 0 and option in r.stderr, r.stderr


@pytest.mark.parametrize("transport", ["shm", "ucx"])
def test_spin_changes_how_a_read_waits_not_what_it_reads(run, tmp_path, table, transport):
    # --spin 0 sleeps at once; a long spin reads the socket on the caller's thread (shm://) or
    # watches the inbox (ucx://). Either way the batches are pyarrow's, and a negative spin is
    # refused by name.
    path = write_ipc(tmp_path / "t.arrows", table, chunk=700)
    with Served(tmp_path, path, "--transport", transport) as server:
        reads_pyarrows_batches_each_way(run, tmp_path, server, table, "--spin", ("0", "5000"),
                                        "-1")


@pytest.mark.parametrize("transport", ["shm", "ucx"])
def test_window_paces_the_server_not_what_it_reads(run, tmp_path, table, transport):
    # --window 0 has the server send each batch when it is read (its credit extension); the
    # batches are still pyarrow's. Below -1 is refused by name.
    path = write_ipc(tmp_path / "t.arrows", table, chunk=700)
    with Served(tmp_path, path, "--transport", transport) as server:
        reads_pyarrows_batches_each_way(run, tmp_path, server, table, "--window",
                                        ("0", "2", "-1"), "-2")
        if transport == "ucx":  # a URI without ferry's extensions cannot be paced: refused
            bare = server.uri.replace("&ferry=1", "")
            assert bare != server.uri
            r = run("get", bare, "--ticket", "t", "--window", "1", "--no-progress")
            assert r.returncode != 0 and "needs ferry=1" in r.stderr, r.stderr


def largest_body(path):
    """The largest message body of an IPC stream, as pyarrow's own reader measures it."""
    largest = 0
    with open(path, "rb") as f:
        reader = ipc.MessageReader.open_stream(f)
        while True:
            try:
                message = reader.read_next_message()
            except StopIteration:
                return largest
            largest = max(largest, message.body.size if message.body is not None else 0)


@pytest.mark.parametrize("transport,body", [("shm", "list"), ("ucx", "packed")])
def test_max_body_bytes_refuses_a_larger_body(run, tmp_path, transport, body):
    # One int64 column without nulls, in batches of a multiple of 8 rows: a body is its values
    # alone, with no padding that a server might count apart from pyarrow.
    table = pa.table({"x": pa.array(range(300_000), pa.int64())})
    path = write_ipc(tmp_path / "t.arrows", table, chunk=100_000)
    limit = largest_body(path)
    assert limit == 100_000 * 8
    with Served(tmp_path, path, "--transport", transport, "--body-type", body) as server:
        r = run("get", server.uri, "--ticket", "t", "--max-body-bytes", limit - 1, "--no-progress")
        assert r.returncode == 2
        # The session refuses the announced body, or, over UCX when the body's bytes come first,
        # the transport refuses the message itself: either way the error names both sizes.
        assert f"{limit}-byte" in r.stderr, r.stderr
        assert f"over the limit of {limit - 1} bytes" in r.stderr, r.stderr
        out = tmp_path / "got.arrows"
        r = run("get", server.uri, "--ticket", "t", "--max-body-bytes", limit, "--to", out,
                "--no-progress")
        assert r.returncode == 0, r.stderr
        assert ipc.open_stream(str(out)).read_all().equals(table)


def _sleeping(pid):
    """Whether process `pid` sleeps on a timer now (its connect loop between two attempts)."""
    with open(f"/proc/{pid}/wchan") as f:
        return "nanosleep" in f.read()


def test_connect_timeout_waits_for_a_server_still_starting(ferry_cli, tmp_path, table):
    path = write_ipc(tmp_path / "t.arrows", table, chunk=1200)
    listen = f"@ferry-connect-timeout-{os.getpid()}"
    # The URI a server on this address prints, which stays the same when it starts again.
    with ServeProcess(["--listen", listen, f"t={path}"], tmp=str(tmp_path)) as first:
        uri = first.first_line().split()[1]
    out = tmp_path / "got.arrows"
    client = subprocess.Popen([ferry_cli, "get", uri, "--ticket", "t", "--connect-timeout", "60",
                               "--to", str(out), "--no-progress"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Nothing listens: the client was refused and waits to try again (a timer in /proc).
        deadline = time.monotonic() + 30
        while not _sleeping(client.pid):
            assert client.poll() is None, client.communicate()
            assert time.monotonic() < deadline, "the client never waited to connect again"
        with ServeProcess(["--listen", listen, f"t={path}"], tmp=str(tmp_path)) as server:
            assert server.first_line().split()[1] == uri
            stdout, stderr = client.communicate(timeout=60)
    finally:
        client.kill()
    assert client.returncode == 0, stderr
    assert ipc.open_stream(str(out)).read_all().equals(table)


def test_no_progress_leaves_a_terminal_without_a_bar(ferry_cli, tmp_path, table):
    path = write_ipc(tmp_path / "t.arrows", table, chunk=1200)
    with Served(tmp_path, path) as server:
        bar = on_terminal([ferry_cli, "get", server.uri, "--ticket", "t"])
        quiet = on_terminal([ferry_cli, "get", server.uri, "--ticket", "t", "--no-progress"])
    assert "\rferry get: " in bar or "\r\x1b[Kferry get: " in bar, repr(bar)
    assert "ferry get: " not in quiet, repr(quiet)
