"""pyarrow.flight's client (Arrow C++, an independent implementation of Flight) against
`ferry serve --flight`: listing, FlightInfo and its locations, GetSchema, DoGet equal to pyarrow's
own read of every arrow-testing vector, DoPut then DoGet, bearer tokens and the handshake, TLS
with a certificate made here, expiring tickets, a ticket of another server, upload limits, drop,
DoExchange, and 64 concurrent clients. (pyarrow has no PollFlightInfo: tests/flight/
server_test.cpp calls it with the generated gRPC stub.)"""
import concurrent.futures
import json
import os
import re
import subprocess
import time
import urllib.parse

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from flight_support import (MANUAL_CLOCK, Serve, advance_clock, ferry_cli, killed_at_exit,
                            mixed_table, read_pyarrow, self_signed, vector_id, vectors)

VECTORS = vectors()
# Flight errors come back as FlightError or, for NOT_FOUND, ALREADY_EXISTS, INVALID_ARGUMENT and
# UNIMPLEMENTED, as the matching Arrow error (KeyError, AlreadyExists, Invalid, NotImplemented).
ERRORS = (fl.FlightError, pa.ArrowException)


def _write(path, table, chunk=None):
    with pa.ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=chunk)
    return str(path)


def _names(client):
    return sorted(f.descriptor.path[0].decode() for f in client.list_flights())


def _stats(client):
    [result] = client.do_action(fl.Action("stats", b""))
    return result.body.to_pybytes()


@pytest.fixture(scope="module")
def vector_server(tmp_path_factory):
    """Every vector served as a flight named after its case."""
    args = [f"{os.path.basename(p)[:-len('.stream')]}={p}" for p in VECTORS]
    with Serve(*args, tmp=str(tmp_path_factory.mktemp("serve"))) as s:
        yield s


def test_list_flights_names_every_dataset(vector_server):
    client = fl.connect(vector_server.uri)
    assert _names(client) == sorted(os.path.basename(p)[:-len(".stream")] for p in VECTORS)


def test_flight_info_fields_and_locations(vector_server):
    client = fl.connect(vector_server.uri)
    path = next(p for p in VECTORS if p.endswith("generated_primitive.stream"))
    expected = read_pyarrow(path)
    info = client.get_flight_info(fl.FlightDescriptor.for_path("generated_primitive"))
    assert info.descriptor.path == [b"generated_primitive"]
    assert info.schema.equals(expected.schema, check_metadata=True)
    assert info.total_records == expected.num_rows
    assert info.total_bytes > 0
    assert info.ordered
    assert len(info.endpoints) == 1
    endpoint = info.endpoints[0]
    assert re.fullmatch(rb"[0-9a-f]{32}", endpoint.ticket.ticket)
    left = endpoint.expiration_time.value / 1e9 - time.time()
    assert 500 < left <= 601  # the default lifetime: 600 s
    uris = [loc.uri.decode() for loc in endpoint.locations]
    assert [u.split("://")[0] for u in uris] == ["shm", "ucx", "arrow-flight-reuse-connection"]
    assert uris[2] == "arrow-flight-reuse-connection://?"
    ucx = urllib.parse.urlsplit(uris[1])
    query = urllib.parse.parse_qs(ucx.query)
    assert ucx.hostname == "127.0.0.1" and ucx.port > 0
    assert int(query["want_data"][0]) > 0 and int(query["free_data"][0]) > 0
    assert query["remote_handle"][0]  # the region's packed rkey, base64
    shm = urllib.parse.urlsplit(uris[0])
    assert "want_data" in urllib.parse.parse_qs(shm.query)
    # Each GetFlightInfo issues a fresh ticket.
    again = client.get_flight_info(fl.FlightDescriptor.for_path("generated_primitive"))
    assert again.endpoints[0].ticket.ticket != endpoint.ticket.ticket
    with pytest.raises(ERRORS, match='no flight named "nope"'):
        client.get_flight_info(fl.FlightDescriptor.for_path("nope"))
    with pytest.raises(ERRORS, match="path descriptors"):
        client.get_flight_info(fl.FlightDescriptor.for_command(b"select 1"))


@pytest.mark.parametrize("path", VECTORS, ids=vector_id)
def test_do_get_equals_pyarrow_read(vector_server, path):
    client = fl.connect(vector_server.uri)
    name = os.path.basename(path)[:-len(".stream")]
    expected = read_pyarrow(path)
    descriptor = fl.FlightDescriptor.for_path(name)
    assert client.get_schema(descriptor).schema.equals(expected.schema, check_metadata=True)
    info = client.get_flight_info(descriptor)
    got = client.do_get(info.endpoints[0].ticket).read_all()
    assert got.schema.equals(expected.schema, check_metadata=True)
    assert got.num_rows == expected.num_rows
    assert got.equals(expected) or got.to_pylist() == expected.to_pylist()


def test_do_put_then_do_get(tmp_path):
    table = mixed_table(5000)
    with Serve(tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)
        writer, _ = client.do_put(fl.FlightDescriptor.for_path("up"), table.schema)
        for batch in table.to_batches(max_chunksize=700):
            writer.write_batch(batch)
        writer.close()
        info = client.get_flight_info(fl.FlightDescriptor.for_path("up"))
        assert info.total_records == 5000
        got = client.do_get(info.endpoints[0].ticket).read_all()
        assert got.equals(table)
        # The upload is served on the fast planes too: the shm location reads it with ferry.
        import ferry
        shm = info.endpoints[0].locations[0].uri.decode()
        stream = ferry.dipc.connect(shm, info.endpoints[0].ticket.ticket.decode())
        assert pa.table(stream).equals(table)
        # The same name again is refused; the first upload stays.
        writer, _ = client.do_put(fl.FlightDescriptor.for_path("up"), table.schema)
        with pytest.raises(ERRORS, match="already served"):
            writer.write_table(table.slice(0, 10))
            writer.close()
        assert client.do_get(client.get_flight_info(
            fl.FlightDescriptor.for_path("up")).endpoints[0].ticket).read_all().equals(table)


def test_upload_over_the_limit_stores_nothing(tmp_path):
    table = mixed_table(20000)
    with Serve("--max-upload-bytes", 200000, tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)
        writer, _ = client.do_put(fl.FlightDescriptor.for_path("big"), table.schema)
        with pytest.raises(ERRORS, match="limit of 200000 bytes"):
            for batch in table.to_batches(max_chunksize=1000):
                writer.write_batch(batch)
            writer.close()
        assert _names(client) == []
        with pytest.raises(ERRORS, match='no flight named "big"'):
            client.get_flight_info(fl.FlightDescriptor.for_path("big"))


def test_token_on_every_call_and_the_handshake(tmp_path):
    table = mixed_table(100)
    path = _write(tmp_path / "t.arrows", table)
    with Serve(f"t={path}", env={"FERRY_TOKEN": "s3cret"}, tmp=str(tmp_path)) as s:
        anonymous = fl.connect(s.uri)
        with pytest.raises(fl.FlightUnauthenticatedError, match="no authorization header"):
            anonymous.list_flights().__next__()
        with pytest.raises(fl.FlightUnauthenticatedError):
            anonymous.get_flight_info(fl.FlightDescriptor.for_path("t"))
        with pytest.raises(fl.FlightUnauthenticatedError):
            anonymous.do_get(fl.Ticket(b"t")).read_all()
        wrong = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer guess")])
        with pytest.raises(fl.FlightUnauthenticatedError, match="wrong authorization header"):
            anonymous.get_flight_info(fl.FlightDescriptor.for_path("t"), options=wrong)
        right = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer s3cret")])
        info = anonymous.get_flight_info(fl.FlightDescriptor.for_path("t"), options=right)
        assert anonymous.do_get(info.endpoints[0].ticket, options=right).read_all().equals(table)
        # With a token, a flight's name is no ticket.
        with pytest.raises(ERRORS, match="unknown ticket"):
            anonymous.do_get(fl.Ticket(b"t"), options=right).read_all()
        # Basic authentication with the token as the password gives the bearer header.
        header = fl.connect(s.uri).authenticate_basic_token("anyone", "s3cret")
        assert header == (b"authorization", b"Bearer s3cret")
        with pytest.raises(fl.FlightUnauthenticatedError):
            fl.connect(s.uri).authenticate_basic_token("anyone", "guess")
    assert "unauthenticated" in s.stderr()


def test_tls_with_a_certificate_made_here(tmp_path):
    table = mixed_table(300)
    path = _write(tmp_path / "t.arrows", table)
    key, cert = self_signed(tmp_path, "server")
    with Serve(f"t={path}", "--tls-cert", cert, "--tls-key", key, tmp=str(tmp_path)) as s:
        assert s.uri.startswith("grpc+tls://127.0.0.1:")
        client = fl.connect(s.uri, tls_root_certs=cert.read_bytes())
        info = client.get_flight_info(fl.FlightDescriptor.for_path("t"))
        assert client.do_get(info.endpoints[0].ticket).read_all().equals(table)
        # Without trusting the certificate the handshake of TLS fails.
        with pytest.raises(fl.FlightUnavailableError):
            fl.connect(s.uri).get_flight_info(fl.FlightDescriptor.for_path("t"))
        # Plain gRPC to a TLS port fails too.
        with pytest.raises(ERRORS):
            fl.connect(f"grpc://127.0.0.1:{s.port}").get_flight_info(
                fl.FlightDescriptor.for_path("t"))
        # ferry's own client, trusting the certificate.
        import ferry.flight
        ours = ferry.flight.connect(s.uri, tls_roots=cert.read_text())
        assert pa.table(ours.do_get("t", via="grpc")).equals(table)


def test_tls_client_certificates(tmp_path):
    table = mixed_table(10)
    path = _write(tmp_path / "t.arrows", table)
    key, cert = self_signed(tmp_path, "server")
    client_key, client_cert = self_signed(tmp_path, "client")
    with Serve(f"t={path}", "--tls-cert", cert, "--tls-key", key, "--tls-client-ca", client_cert,
               tmp=str(tmp_path)) as s:
        good = fl.connect(s.uri, tls_root_certs=cert.read_bytes(), cert_chain=client_cert.read_bytes(),
                          private_key=client_key.read_bytes())
        info = good.get_flight_info(fl.FlightDescriptor.for_path("t"))
        assert good.do_get(info.endpoints[0].ticket).read_all().equals(table)
        without = fl.connect(s.uri, tls_root_certs=cert.read_bytes())
        with pytest.raises(ERRORS):
            without.get_flight_info(fl.FlightDescriptor.for_path("t"))


def test_expired_ticket_is_refused(tmp_path):
    # The server's clock moves only when the test moves it: expiry is seen at once, no waiting.
    table = mixed_table(50)
    path = _write(tmp_path / "t.arrows", table)
    with Serve(f"t={path}", "--ticket-ttl", 1, env=MANUAL_CLOCK, tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)
        old = client.get_flight_info(fl.FlightDescriptor.for_path("t")).endpoints[0]
        kept = client.get_flight_info(fl.FlightDescriptor.for_path("t")).endpoints[0]
        assert old.expiration_time.value / 1e9 - time.time() <= 1.01
        advance_clock(client, 600)
        [refreshed] = list(client.do_action(fl.Action("refresh-ticket", kept.ticket.ticket)))
        assert re.fullmatch(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", refreshed.body.to_pybytes())
        # 999 ms after it was issued the old ticket still reads; at 1000 ms it has expired.
        advance_clock(client, 399)
        assert client.do_get(old.ticket).read_all().equals(table)
        advance_clock(client, 1)
        with pytest.raises(ERRORS, match="expired ticket"):
            client.do_get(old.ticket).read_all()
        # Refreshed at 600 ms, the other lives until 1600 ms.
        assert client.do_get(kept.ticket).read_all().equals(table)
        advance_clock(client, 600)
        with pytest.raises(ERRORS, match="expired ticket"):
            client.do_get(kept.ticket).read_all()


def test_a_ticket_of_another_server_is_refused(tmp_path):
    table = mixed_table(20)
    path = _write(tmp_path / "t.arrows", table)
    env = {"FERRY_TOKEN": "s3cret"}
    auth = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer s3cret")])
    with Serve(f"t={path}", env=env, tmp=str(tmp_path)) as a, \
            Serve(f"t={path}", env=env, tmp=str(tmp_path)) as b:
        ticket = fl.connect(a.uri).get_flight_info(fl.FlightDescriptor.for_path("t"),
                                                   options=auth).endpoints[0].ticket
        assert fl.connect(a.uri).do_get(ticket, options=auth).read_all().equals(table)
        with pytest.raises(ERRORS, match="unknown ticket"):
            fl.connect(b.uri).do_get(ticket, options=auth).read_all()


def test_stats_count_each_planes_reads(tmp_path):
    """DoAction "stats": pyarrow's DoGet counts on gRPC only, ferry's shared-memory read on shm
    only (the figures tell a caller, e.g. ferry.dask's tests, which plane its reads took)."""
    table = mixed_table(2000)
    path = _write(tmp_path / "t.arrows", table, chunk=500)
    with Serve(f"t={path}", tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)

        def stats():
            [result] = list(client.do_action(fl.Action("stats", b"")))
            return json.loads(result.body.to_pybytes())

        before = stats()
        assert {"grpc", "shm", "server", "datasets", "peers"} <= set(before)
        assert before["server"]["planes"][:2] == ["flight", "shm"]
        assert before["peers"] == []  # no federation
        # `ferry serve`'s reloads of its --config file (none here).
        assert before["config"] == {"reloads": 0, "reload_failures": 0}
        assert before["grpc"]["do_gets"] == 0 and before["shm"]["clients"] == 0
        info = client.get_flight_info(fl.FlightDescriptor.for_path("t"))
        assert client.do_get(info.endpoints[0].ticket).read_all().equals(table)
        after_grpc = stats()
        assert after_grpc["grpc"]["do_gets"] == 1
        # The bodies alone are at least the table's buffers (each padded to 8 bytes).
        assert after_grpc["grpc"]["bytes_sent"] >= table.nbytes
        assert after_grpc["shm"] == before["shm"]

        out = tmp_path / "got.arrows"
        subprocess.run([ferry_cli(), "get", s.uri, "--path", "t", "--via", "shm", "--to",
                        str(out)], check=True, capture_output=True, timeout=60)
        assert pa.ipc.open_stream(str(out)).read_all().equals(table)
        after_shm = stats()
        assert after_shm["grpc"] == after_grpc["grpc"]
        assert after_shm["shm"]["clients"] == 1
        assert after_shm["shm"]["batches_sent"] == 4
        assert after_shm["shm"]["body_bytes_sent"] + after_shm["shm"]["addresses_lent"] > 0
        if "ucx" in after_shm:
            assert after_shm["ucx"]["clients"] == 0


def test_actions_drop_and_do_exchange(tmp_path):
    table = mixed_table(20)
    path = _write(tmp_path / "t.arrows", table)
    with Serve(f"t={path}", f"u={path}", tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)
        assert [a.type for a in client.list_actions()] == [
            "drop", "refresh-ticket", "append-partition", "stats", "drain", "CancelFlightInfo",
            "RenewFlightEndpoint", "SetSessionOptions", "GetSessionOptions", "CloseSession"]
        [result] = list(client.do_action(fl.Action("drop", b"u")))
        assert result.body.to_pybytes() == b"dropped u"
        assert _names(client) == ["t"]
        with pytest.raises(ERRORS, match='no flight named "u"'):
            list(client.do_action(fl.Action("drop", b"u")))
        with pytest.raises(ERRORS, match='unknown action "nap"'):
            list(client.do_action(fl.Action("nap", b"")))
        with pytest.raises(pa.ArrowNotImplementedError, match="does not implement DoExchange"):
            writer, reader = client.do_exchange(fl.FlightDescriptor.for_path("t"))
            reader.read_all()


def test_64_concurrent_clients(tmp_path):
    table = mixed_table(20000)
    path = _write(tmp_path / "t.arrows", table, chunk=4000)
    with Serve(f"t={path}", tmp=str(tmp_path)) as s:
        def one(i):
            client = fl.connect(s.uri)
            info = client.get_flight_info(fl.FlightDescriptor.for_path("t"))
            if i % 2 == 0:
                got = client.do_get(info.endpoints[0].ticket).read_all()
                return got.equals(table)
            return info.total_records == table.num_rows
        with concurrent.futures.ThreadPoolExecutor(max_workers=64) as pool:
            results = list(pool.map(one, range(64)))
    assert results == [True] * 64
    assert "32 DoGet" in s.stderr()


def test_a_killed_uploader_stores_nothing(tmp_path):
    """A pyarrow.flight client killed in the middle of its DoPut (its process gone, so the call
    is reset rather than closed): ferry's server stores none of what it sent, says so in its log,
    and takes a whole upload of the same name afterwards."""
    table = mixed_table(3000)
    with Serve("-v", tmp=str(tmp_path)) as s:
        code = ("import sys, pyarrow as pa, pyarrow.flight as fl\n"
                f"c = fl.connect({s.uri!r})\n"
                "t = pa.table({'x': pa.array(range(1000), pa.int64())})\n"
                "w, _ = c.do_put(fl.FlightDescriptor.for_path('half'), t.schema)\n"
                "w.write_table(t)\n"
                "print('written', flush=True)\n"
                "sys.stdin.read()\n")
        with killed_at_exit(code, "written"):
            client = fl.connect(s.uri)
            deadline = time.monotonic() + 10
            while json.loads(_stats(client))["grpc"]["bytes_received"] == 0:
                assert time.monotonic() < deadline, "the server never received the batch"
                time.sleep(0.02)
        deadline = time.monotonic() + 10
        while "cancelled the upload" not in s.stderr():
            assert time.monotonic() < deadline, s.stderr()
            time.sleep(0.02)
        assert _names(client) == []
        writer, _ = client.do_put(fl.FlightDescriptor.for_path("half"), table.schema)
        writer.write_table(table)
        writer.close()
        info = client.get_flight_info(fl.FlightDescriptor.for_path("half"))
        assert client.do_get(info.endpoints[0].ticket).read_all().equals(table)
