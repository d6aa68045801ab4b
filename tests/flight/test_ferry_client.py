"""ferry's Flight client (the Python binding ferry.flight and the ferry CLI) against a
pyarrow.flight server written here (Arrow C++: an independent server), and against ferry's own
server where the fast locations matter: list, info, schema, get and put, each equal to pyarrow;
do_get's stream read by pyarrow, polars and DuckDB."""
import datetime
import json
import os
import subprocess
import threading

import pyarrow as pa
import pyarrow.flight as fl
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry  # noqa: E402
import ferry.flight  # noqa: E402

from flight_support import Serve, ferry_cli, mixed_table, self_signed, stream_file  # noqa: E402
from ferry_process import on_terminal  # noqa: E402
from pyarrow_flight_server import TableServer as PyarrowServer  # noqa: E402


@pytest.fixture
def tables():
    return {"mixed": mixed_table(3000), "small": pa.table({"x": pa.array([1, 2, 3], pa.int64())})}


@pytest.fixture
def pyarrow_server(tables):
    server = PyarrowServer(tables)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    thread.join()


class SplitServer(PyarrowServer):
    """PyarrowServer, with two more flights of `small`'s batches: "split", three endpoints whose
    FlightInfo says 3,000 bytes in all, and "unsized", two endpoints of unknown size (-1)."""

    def _info(self, name):
        if name not in ("split", "unsized"):
            return super()._info(name)
        t = self.tables["small"]
        count, size = (3, 3000) if name == "split" else (2, -1)
        return fl.FlightInfo(t.schema, fl.FlightDescriptor.for_path(name),
                             [fl.FlightEndpoint(b"small", [])] * count, count * t.num_rows, size)

    def get_flight_info(self, context, descriptor):
        return self._info(descriptor.path[0].decode())


def test_an_endpoint_expects_its_share_of_the_flight_and_pickles_it(tables):
    """Each endpoint of a decoded FlightInfo expects its share of the flight's total_bytes (as
    pyarrow's server said it, hand-divided); a pickled endpoint keeps it and still reads; one made
    from a ticket and locations alone knows no size."""
    import pickle

    server = SplitServer(tables)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        client = ferry.flight.connect(f"grpc://127.0.0.1:{server.port}")
        split = client.get_flight_info("split")
        assert split.total_bytes == 3000
        assert [e.expected_bytes for e in split.endpoints] == [1000, 1000, 1000]
        assert [e.expected_bytes for e in client.get_flight_info("unsized").endpoints] == [-1, -1]
        small = client.get_flight_info("small").endpoints[0]
        assert small.expected_bytes == tables["small"].nbytes
        copy = pickle.loads(pickle.dumps(split.endpoints[1]))
        assert (copy.ticket, copy.locations, copy.expected_bytes) == (b"small", [], 1000)
        assert pa.table(client.do_get(copy)).equals(tables["small"])
        # As 0.1.0 pickled it: the ticket and the locations.
        old = ferry.flight.Endpoint.__new__(ferry.flight.Endpoint)
        old.__setstate__((b"small", ["grpc://h:1"]))
        assert (old.ticket, old.locations, old.expected_bytes) == (b"small", ["grpc://h:1"], -1)
        assert ferry.flight.Endpoint(b"small", []).expected_bytes == -1
        assert ferry.flight.Endpoint(b"small", [], 5).expected_bytes == 5
        with pytest.raises(ValueError, match=r"expected_bytes must be 0 or more \(-1: unknown\)"):
            ferry.flight.Endpoint(b"small", [], -2)
    finally:
        server.shutdown()
        thread.join()


def test_binding_against_pyarrow_server(pyarrow_server, tables):
    uri = f"grpc://127.0.0.1:{pyarrow_server.port}"
    client = ferry.flight.connect(uri)
    flights = client.list_flights()
    assert [f.path for f in flights] == [["mixed"], ["small"]]
    assert [f.total_records for f in flights] == [3000, 3]
    info = client.get_flight_info("mixed")
    assert pa.schema(info.schema).equals(tables["mixed"].schema)
    assert info.endpoints[0].ticket == b"mixed" and info.endpoints[0].locations == []
    assert pa.schema(client.get_schema("small")).equals(tables["small"].schema)
    # A path follows the locations: none listed means DoGet on this server.
    got = pa.table(client.do_get("mixed"))
    assert got.equals(tables["mixed"])
    assert client.last_location == uri
    assert pa.table(client.do_get(b"small")).equals(tables["small"])
    with pytest.raises(Exception, match="offers no shm location"):
        client.do_get("small", via="shm")
    upload = mixed_table(777, seed=3)
    client.do_put("up", upload)
    assert pyarrow_server.tables["up"].equals(upload)
    # A RecordBatchReader (a stream producer read once) uploads too.
    reader = pa.RecordBatchReader.from_batches(upload.schema, upload.to_batches(100))
    client.do_put("up2", reader)
    assert pyarrow_server.tables["up2"].equals(upload)
    with pytest.raises(TypeError, match="has no __arrow_c_stream__"):
        client.do_put("nope", [1, 2, 3])
    assert client.do_action("echo", b"hello") == [b"olleh"]
    assert client.list_actions() == [("echo", "returns its body reversed")]
    with pytest.raises(Exception, match="no table nope"):
        client.get_flight_info("nope")


def test_token_against_pyarrow_server(tables):
    server = PyarrowServer(tables, token="s3cret")
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        uri = f"grpc://127.0.0.1:{server.port}"
        with pytest.raises(OSError, match="UNAUTHENTICATED"):
            ferry.flight.connect(uri).list_flights()
        client = ferry.flight.connect(uri, token="s3cret")
        assert pa.table(client.do_get("small")).equals(tables["small"])
    finally:
        server.shutdown()
        thread.join()


def _run(*args, env=None):
    return subprocess.run([ferry_cli(), *map(str, args)], capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})), timeout=120)


def test_cli_against_pyarrow_server(pyarrow_server, tables, tmp_path):
    uri = f"grpc://127.0.0.1:{pyarrow_server.port}"
    listed = _run("list", uri)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["FLIGHT", "RECORDS", "BYTES", "LOCATIONS"]
    assert [line.split()[:2] for line in lines[1:]] == [["mixed", "3000"], ["small", "3"]]
    out = tmp_path / "mixed.arrows"
    got = _run("get", uri, "--path", "mixed", "--to", out, "-v")
    assert got.returncode == 0, got.stderr
    assert "reading over grpc" in got.stderr
    assert pa.ipc.open_stream(str(out)).read_all().equals(tables["mixed"])
    # put: a file written by pyarrow, uploaded and stored by pyarrow's server.
    upload = mixed_table(500, seed=9)
    path = tmp_path / "up.arrow"
    with pa.ipc.new_file(str(path), upload.schema) as w:
        w.write_table(upload, max_chunksize=128)
    put = _run("put", uri, path, "--path", "up")
    assert put.returncode == 0, put.stderr
    assert "up: 4 batches, 500 rows" in put.stdout
    assert pyarrow_server.tables["up"].equals(upload)
    missing = _run("get", uri, "--path", "nope")
    assert missing.returncode == 2 and "no table nope" in missing.stderr
    listed = _run("list", uri, "--json")
    import json
    flights = json.loads(listed.stdout)
    assert [f["path"] for f in flights] == [["mixed"], ["small"], ["up"]]


def test_cli_over_tls_with_a_token_file(tmp_path):
    """list, put and get against ferry's server over grpc+tls with a token: --tls-roots trusts its
    certificate and --token-file carries the token, and without either a call fails. What went
    up and came down is what pyarrow.flight reads with the same certificate and token."""
    key, cert = self_signed(tmp_path, "server")
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    upload = mixed_table(700, seed=3)
    path = tmp_path / "up.arrows"
    with pa.ipc.new_stream(str(path), upload.schema) as w:
        w.write_table(upload, max_chunksize=200)
    auth = ["--tls-roots", cert, "--token-file", token, "--timeout", "30"]
    with Serve("--tls-cert", cert, "--tls-key", key, "--token-file", token,
               tmp=str(tmp_path)) as s:
        assert s.uri.startswith("grpc+tls://")
        put = _run("put", s.uri, path, "--path", "up", "--no-progress", *auth)
        assert put.returncode == 0, put.stderr
        assert put.stdout.startswith("up: 4 batches, 700 rows"), put.stdout
        oracle = fl.connect(s.uri, tls_root_certs=cert.read_bytes())
        options = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer s3cret")])
        info = oracle.get_flight_info(fl.FlightDescriptor.for_path("up"), options)
        assert oracle.do_get(info.endpoints[0].ticket, options).read_all().equals(upload)
        listed = _run("list", s.uri, "--json", *auth)
        assert listed.returncode == 0, listed.stderr
        assert [f["path"] for f in json.loads(listed.stdout)] == [["up"]]
        out = tmp_path / "down.arrows"
        got = _run("get", s.uri, "--path", "up", "--via", "grpc", "--to", out, *auth)
        assert got.returncode == 0, got.stderr
        assert pa.ipc.open_stream(str(out)).read_all().equals(upload)
        untrusted = _run("list", s.uri, "--token-file", token, "--timeout", "30")
        assert untrusted.returncode == 2 and "UNAVAILABLE" in untrusted.stderr, untrusted.stderr
        for command in (["list", s.uri], ["get", s.uri, "--path", "up"],
                        ["put", s.uri, path, "--path", "again"]):
            refused = _run(*command, "--tls-roots", cert, env={"FERRY_TOKEN": ""})
            assert refused.returncode == 2 and "UNAUTHENTICATED" in refused.stderr, refused.stderr


def test_put_draws_progress_on_a_terminal_unless_told_not_to(tmp_path):
    table = mixed_table(400)
    path = tmp_path / "t.arrows"
    with pa.ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=100)
    with Serve(tmp=str(tmp_path)) as s:
        bar = on_terminal([ferry_cli(), "put", s.uri, str(path), "--path", "a"])
        quiet = on_terminal([ferry_cli(), "put", s.uri, str(path), "--path", "b", "--no-progress"])
        names = [f.path for f in ferry.flight.connect(s.uri).list_flights()]
    assert "\r\x1b[Kferry put: 4 batches, 400 rows" in bar, repr(bar)
    assert "ferry put" not in quiet, repr(quiet)
    assert names == [["a"], ["b"]]


def test_columns_are_read_alone_on_every_plane(tmp_path):
    """do_get(columns=...) gives only those columns, in the schema's order, equal to pyarrow's
    selection, on every plane and for type-1 and packed bodies; names need a path."""
    table = mixed_table(3000)
    path = stream_file(tmp_path / "t.arrows", table)
    for body in ("list", "packed"):
        with Serve(f"t={path}", "--body-type", body, tmp=str(tmp_path)) as s:
            client = ferry.flight.connect(s.uri)
            for via in ("shm", "ucx", "grpc"):
                got = pa.table(client.do_get("t", via=via, columns=["s", "i"]))
                assert got.equals(table.select(["i", "s"])), (body, via)
                got = pa.table(client.do_get("t", via=via, columns=[4, 1, 4]))
                assert got.equals(table.select([1, 4])), (body, via)
            info = client.get_flight_info("t")
            endpoint = ferry.flight.Endpoint(info.endpoints[0].ticket, info.endpoints[0].locations)
            assert pa.table(client.do_get(endpoint, columns=[2])).equals(table.select([2]))
            with pytest.raises(ValueError, match="is a name, which needs a path"):
                client.do_get(endpoint, columns=["s"])
            with pytest.raises(KeyError, match='no column named "z"'):
                client.do_get("t", columns=["z"])
            with pytest.raises(IndexError, match=r"column 9 is out of range \(the schema has 7"):
                client.do_get("t", columns=[9])
            # The command line: names or indices.
            out = tmp_path / f"cols-{body}.arrows"
            r = subprocess.run([ferry_cli(), "get", s.uri, "--path", "t", "--columns", "s,0",
                                "--no-progress", "--to", str(out)],
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r.stderr
            assert pa.ipc.open_stream(str(out)).read_all().equals(table.select(["i", "s"]))
            r = subprocess.run([ferry_cli(), "get", s.uri, "--path", "t", "--columns", "zz",
                                "--no-progress"], capture_output=True, text=True, timeout=60)
            assert r.returncode == 2 and 'no column named "zz"' in r.stderr, r.stderr


def stats_of(client, plane):
    """The server's `stats` action's figures for `plane`."""
    [body] = client.do_action("stats")
    return json.loads(body)[plane]


def test_buffer_lists_asks_the_ucx_location_to_lend(tmp_path):
    """do_get(via="ucx", buffer_lists=True) against a type-1 server: the server's UCX plane lends
    (addresses_lent grows), whichever UCX is loaded; the table is pyarrow's."""
    table = mixed_table(3000)
    path = stream_file(tmp_path / "t.arrows", table)
    with Serve(f"t={path}", "--body-type", "list", tmp=str(tmp_path)) as s:
        client = ferry.flight.connect(s.uri)

        before = stats_of(client, "ucx")["addresses_lent"]
        assert pa.table(client.do_get("t", via="ucx", buffer_lists=True)).equals(table)
        assert stats_of(client, "ucx")["addresses_lent"] > before


def test_reads_over_ucx_share_one_kept_connection(tmp_path):
    """Three reads over UCX by one ferry.flight client of a server of packed bodies: one
    connection (the UCX plane's "clients"), the reads after the first on it ("requests_reused");
    each table is pyarrow's. Another client connects anew, one read it leaves before the end is
    not kept, and a client with keep_connections=False connects for every read."""
    table = mixed_table(3000)
    path = stream_file(tmp_path / "t.arrows", table)
    with Serve(f"t={path}", "--body-type", "packed", tmp=str(tmp_path)) as s:
        client = ferry.flight.connect(s.uri)

        def ucx():
            plane = stats_of(client, "ucx")
            return plane["clients"], plane["requests_reused"]

        for _ in range(3):
            assert pa.table(client.do_get("t", via="ucx")).equals(table)
        assert ucx() == (1, 2)
        other = ferry.flight.connect(s.uri)
        assert pa.table(other.do_get("t", via="ucx")).equals(table)
        assert ucx() == (2, 2)
        reader = other.do_get("t", via="ucx")  # on the kept connection
        del reader  # left before its end: closed, not kept
        assert pa.table(other.do_get("t", via="ucx")).equals(table)
        assert ucx() == (3, 3)
        fresh = ferry.flight.connect(s.uri, keep_connections=False)
        for _ in range(2):
            assert pa.table(fresh.do_get("t", via="ucx")).equals(table)
        assert ucx() == (5, 3)


def test_binding_against_ferry_server_follows_locations(tmp_path):
    table = mixed_table(4000)
    path = stream_file(tmp_path / "t.arrows", table)
    with Serve(f"t={path}", env={"FERRY_TOKEN": "s3cret"}, tmp=str(tmp_path)) as s:
        client = ferry.flight.connect(s.uri, token="s3cret")
        info = client.get_flight_info("t")
        left = info.endpoints[0].expiration - datetime.datetime.now(datetime.timezone.utc)
        assert 590 < left.total_seconds() <= 600
        assert [u.split("://")[0] for u in info.endpoints[0].locations] == [
            "shm", "ucx", "arrow-flight-reuse-connection"]
        for via, scheme in [("auto", "shm://"), ("shm", "shm://"), ("ucx", "ucx://"),
                            ("grpc", "grpc://")]:
            stream = client.do_get("t", via=via)
            assert client.last_location.startswith(scheme), (via, client.last_location)
            assert pa.table(stream).equals(table)
        # The stream is a PyCapsule producer: polars and DuckDB read it directly.
        pl = pytest.importorskip("polars")
        frame = pl.DataFrame(client.do_get("t"))
        assert frame.height == 4000 and frame["i"].to_list() == table["i"].to_pylist()
        duckdb = pytest.importorskip("duckdb")
        stream = client.do_get("t", via="grpc")
        total = duckdb.connect().execute("SELECT sum(i), count(*) FROM stream").fetchall()
        assert total == [(pa.compute.sum(table["i"]).as_py(), 4000)]
        # Upload from polars (a DataFrame has __arrow_c_stream__), served on every plane.
        client.do_put("from_polars", pl.DataFrame({"a": [1, 2, 3], "b": ["x", "y", None]}))
        back = pa.table(client.do_get("from_polars", via="shm"))
        assert back.column("a").to_pylist() == [1, 2, 3]
        assert back.column("b").to_pylist() == ["x", "y", None]
        # Dropped while batches read in place from shared memory are still held: the flight goes
        # at once, and the batches stay readable until they are released.
        assert client.do_action("drop", b"from_polars") == [b"dropped from_polars"]
        assert [f.path for f in client.list_flights()] == [["t"]]
        assert back.column("a").to_pylist() == [1, 2, 3]
        del back
        # The CLI: --via, the token from FERRY_TOKEN or --token-file, the location logged.
        out = tmp_path / "back.arrows"
        got = _run("get", s.uri, "--path", "t", "--via", "ucx", "--to", out, "-v",
                   env={"FERRY_TOKEN": "s3cret"})
        assert got.returncode == 0, got.stderr
        assert "reading over ucx from ucx://" in got.stderr
        assert pa.ipc.open_stream(str(out)).read_all().equals(table)
        token_file = tmp_path / "token"
        token_file.write_text("s3cret\n")
        listed = _run("list", s.uri, "--token-file", token_file)
        assert listed.returncode == 0 and "shm,ucx,grpc" in listed.stdout, listed.stderr
        refused = _run("list", s.uri, env={"FERRY_TOKEN": ""})
        assert refused.returncode == 2 and "UNAUTHENTICATED" in refused.stderr


def test_session_options_are_kept_and_applied(tmp_path):
    """set_session_options opens a Flight session on ferry's server, get_session_options reads it
    back as the server normalised it, close_session ends it. do_get takes the session's options:
    body_type 1 makes the UCX plane lend (addresses_lent grows) without buffer_lists=True, and
    compression zstd shrinks what DoGet sends (the server's bytes_sent); each table equals
    pyarrow's, and pyarrow.flight's own read of the same flight is unchanged."""
    table = pa.table({"x": pa.array(range(60000), pa.int64()),
                      "s": pa.array(["abc" * 5] * 60000)})
    path = tmp_path / "t.arrows"
    with pa.ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=20000)
    with Serve(f"t={path}", "--body-type", "list", tmp=str(tmp_path)) as s:
        client = ferry.flight.connect(s.uri)

        def stats():
            [body] = client.do_action("stats")
            return json.loads(body)

        assert client.get_session_options() == {}
        before = stats()["ucx"]["addresses_lent"]
        assert pa.table(client.do_get("t", via="ucx")).equals(table)
        assert stats()["ucx"]["addresses_lent"] == before  # packed bodies, without the session
        refused = client.set_session_options({"body_type": "1", "colour": "blue"})
        assert refused == {"colour": "INVALID_NAME"}
        assert client.get_session_options() == {"body_type": "1"}
        before = stats()["ucx"]["addresses_lent"]
        assert pa.table(client.do_get("t", via="ucx")).equals(table)
        assert stats()["ucx"]["addresses_lent"] > before

        plain = fl.connect(s.uri)
        ticket = plain.get_flight_info(fl.FlightDescriptor.for_path("t")).endpoints[0].ticket
        before = stats()["grpc"]["bytes_sent"]
        assert plain.do_get(ticket).read_all().equals(table)
        uncompressed = stats()["grpc"]["bytes_sent"] - before
        assert client.set_session_options({"compression": "zstd", "parallelism": "2"}) == {}
        assert client.get_session_options() == {"body_type": "1", "compression": "zstd",
                                                "parallelism": "2"}
        before = stats()["grpc"]["bytes_sent"]
        assert pa.table(client.do_get("t", via="grpc")).equals(table)
        compressed = stats()["grpc"]["bytes_sent"] - before
        assert compressed * 4 < uncompressed, (compressed, uncompressed)

        client.close_session()
        assert client.get_session_options() == {}
        before = stats()["grpc"]["bytes_sent"]
        assert pa.table(client.do_get("t", via="grpc")).equals(table)
        assert stats()["grpc"]["bytes_sent"] - before == uncompressed
