"""Flight's standard actions on ferry's server, sent by pyarrow.flight's do_action with the
bodies the Flight specification gives them: RenewFlightEndpoint, CancelFlightInfo and the
session options (SetSessionOptions, GetSessionOptions, CloseSession, kept by the
arrow_flight_session_id cookie), and DoGet's compressed bodies, which pyarrow reads."""
import json
import time

import numpy as np
import pyarrow as pa
import pyarrow.flight as fl
import pyarrow.ipc as ipc
import pytest

from flight_bodies import (CookieMiddlewareFactory, action, cancel_request, get_options,
                           renew_request, set_options_errors, set_options_request, status_of)
from flight_support import MANUAL_CLOCK, Serve, advance_clock, killed_at_exit, mixed_table

ERRORS = (fl.FlightError, pa.ArrowException)
CANCELLED, NOT_CANCELLABLE = 1, 3
INVALID_NAME, INVALID_VALUE = 1, 2
CLOSED = 1


def _write(path, table, max_chunksize=None):
    with ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=max_chunksize)
    return str(path)


def _stats(client):
    return json.loads(action(client, "stats"))


def _readers_within(client, name, seconds):
    """The readers of flight `name` by the server's stats, once they are 0 or `seconds` passed."""
    deadline = time.monotonic() + seconds
    while True:
        [flight] = [d for d in _stats(client)["datasets"] if d["name"] == name]
        if flight["readers"] == 0 or time.monotonic() > deadline:
            return flight["readers"]
        time.sleep(0.01)


def test_renew_flight_endpoint_extends_the_ticket(tmp_path):
    table = mixed_table(50)
    path = _write(tmp_path / "t.arrows", table)
    with Serve(f"t={path}", "--ticket-ttl", 1, env=MANUAL_CLOCK, tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)
        endpoint = client.get_flight_info(fl.FlightDescriptor.for_path("t")).endpoints[0]
        advance_clock(client, 600)
        renewed = fl.FlightEndpoint.deserialize(
            action(client, "RenewFlightEndpoint", renew_request(endpoint)))
        # The same endpoint, its expiry moved by the 600 ms the clock went on.
        assert renewed.ticket == endpoint.ticket
        assert renewed.locations == endpoint.locations
        moved = renewed.expiration_time.value - endpoint.expiration_time.value
        assert moved == 600_000_000
        # Past its first expiry (1000 ms), the renewed ticket still reads; at 1600 ms it expires.
        advance_clock(client, 500)
        assert client.do_get(endpoint.ticket).read_all().equals(table)
        advance_clock(client, 500)
        with pytest.raises(ERRORS, match="expired ticket"):
            client.do_get(endpoint.ticket).read_all()
        with pytest.raises(ERRORS, match="unknown or expired ticket"):
            action(client, "RenewFlightEndpoint", renew_request(endpoint))
        with pytest.raises(ERRORS, match="not a RenewFlightEndpointRequest"):
            action(client, "RenewFlightEndpoint", b"\xff\xff")
        # The deprecated alias still answers.
        fresh = client.get_flight_info(fl.FlightDescriptor.for_path("t")).endpoints[0]
        [body] = [r.body.to_pybytes() for r in
                  client.do_action(fl.Action("refresh-ticket", fresh.ticket.ticket))]
        assert body.endswith(b"Z")


def test_cancel_flight_info_ends_the_read_and_frees_it(tmp_path):
    # 128 MiB in 16 batches: far more than gRPC's and the sockets' buffers hold, so the read is
    # still in progress on the server when the client stops reading after one batch.
    rng = np.random.default_rng(1)
    table = pa.table({"x": rng.random(16 * 1024 * 1024)})
    path = _write(tmp_path / "big.arrows", table, max_chunksize=1024 * 1024)
    with Serve(f"big={path}", tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)
        info = client.get_flight_info(fl.FlightDescriptor.for_path("big"))
        reader = client.do_get(info.endpoints[0].ticket)
        first = reader.read_chunk()
        assert first.data.num_rows == 1024 * 1024
        [big] = [d for d in _stats(client)["datasets"] if d["name"] == "big"]
        assert big["readers"] == 1
        result = action(client, "CancelFlightInfo", cancel_request(info))
        assert status_of(result) == CANCELLED
        # The server's stream ends and lets go of the flight within a second.
        assert _readers_within(client, "big", 1.0) == 0
        # (read_chunk: pyarrow's read_all turns CANCELLED into a KeyboardInterrupt.)
        with pytest.raises(fl.FlightCancelledError):
            while True:
                reader.read_chunk()
        # The ticket redeems nothing now; a second cancel has nothing left to cancel.
        with pytest.raises(ERRORS, match="unknown ticket"):
            client.do_get(info.endpoints[0].ticket).read_all()
        assert status_of(action(client, "CancelFlightInfo", cancel_request(info))) == \
            NOT_CANCELLABLE
        with pytest.raises(ERRORS, match="not a CancelFlightInfoRequest"):
            action(client, "CancelFlightInfo", b"\x0a\x05ab")


def test_cancel_flight_info_after_its_reader_was_killed(tmp_path):
    """A pyarrow.flight reader killed in the middle of its DoGet, then CancelFlightInfo for its
    flight: the action answers at once (the dead reader's stream is ended, not waited on), the
    server lets go of the flight within a second, and the ticket redeems nothing after."""
    rng = np.random.default_rng(2)
    table = pa.table({"x": rng.random(16 * 1024 * 1024)})
    path = _write(tmp_path / "big.arrows", table, max_chunksize=1024 * 1024)
    with Serve(f"big={path}", tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)
        info = client.get_flight_info(fl.FlightDescriptor.for_path("big"))
        ticket = info.endpoints[0].ticket.ticket
        code = ("import sys, pyarrow.flight as fl\n"
                f"c = fl.connect({s.uri!r})\n"
                f"r = c.do_get(fl.Ticket({ticket!r}))\n"
                "r.read_chunk()\n"
                "print('read', flush=True)\n"
                "sys.stdin.read()\n")
        with killed_at_exit(code, "read"):
            pass  # killed once it has read its first batch
        start = time.monotonic()
        status = status_of(action(client, "CancelFlightInfo", cancel_request(info)))
        assert time.monotonic() - start < 2.0
        # Cancelled while the server still serves the dead reader, or nothing left to cancel
        # if it had noticed the death first; the ticket is revoked either way.
        assert status in (CANCELLED, NOT_CANCELLABLE)
        assert _readers_within(client, "big", 1.0) == 0
        with pytest.raises(ERRORS, match="unknown ticket"):
            client.do_get(info.endpoints[0].ticket).read_all()


def test_session_options_kept_by_cookie(tmp_path):
    table = mixed_table(20)
    path = _write(tmp_path / "t.arrows", table)
    with Serve(f"t={path}", tmp=str(tmp_path)) as s:
        cookies = CookieMiddlewareFactory()
        client = fl.connect(s.uri, middleware=[cookies])
        # No session yet: no options.
        assert get_options(action(client, "GetSessionOptions")) == {}
        errors = set_options_errors(action(client, "SetSessionOptions", set_options_request({
            "compression": "ZSTD", "parallelism": 4, "body_type": "1", "target_device": "cuda:1",
            "colour": "blue", "nope": 3})))
        assert errors == {"colour": INVALID_NAME, "nope": INVALID_NAME}
        session = cookies.cookies["arrow_flight_session_id"]
        assert len(session) == 32
        assert get_options(action(client, "GetSessionOptions")) == {
            "compression": "zstd", "parallelism": 4, "body_type": 1, "target_device": "cuda:1"}
        # Values of the wrong type or range are refused by name and change nothing.
        errors = set_options_errors(action(client, "SetSessionOptions", set_options_request({
            "parallelism": 0, "body_type": 2, "compression": "brotli", "target_device": True})))
        assert errors == {"parallelism": INVALID_VALUE, "body_type": INVALID_VALUE,
                          "compression": INVALID_VALUE, "target_device": INVALID_VALUE}
        # An option without a value is removed; the session keeps its cookie.
        assert set_options_errors(action(client, "SetSessionOptions", set_options_request({
            "target_device": None, "parallelism": 2.0}))) == {}
        assert cookies.cookies["arrow_flight_session_id"] == session
        assert get_options(action(client, "GetSessionOptions")) == {
            "compression": "zstd", "parallelism": 2, "body_type": 1}
        # Another client has a session of its own.
        other = fl.connect(s.uri, middleware=[CookieMiddlewareFactory()])
        assert get_options(action(other, "GetSessionOptions")) == {}
        # Closing forgets the cookie; the old cookie names nothing now.
        assert status_of(action(client, "CloseSession")) == CLOSED
        assert "arrow_flight_session_id" not in cookies.cookies
        stale = fl.FlightCallOptions(headers=[(b"cookie",
                                               f"arrow_flight_session_id={session}".encode())])
        with pytest.raises(ERRORS, match="names no open session"):
            action(fl.connect(s.uri), "GetSessionOptions", options=stale)
        with pytest.raises(ERRORS, match="no session to close"):
            action(client, "CloseSession")


def _compressible(rows):
    words = ["alpha", "beta", "gamma", "delta", "epsilon"]
    return pa.table({"s": [f"{words[i % 5]}-{i % 100}" for i in range(rows)],
                     "i": pa.array(np.arange(rows) % 7, pa.int64())})


def test_do_get_compresses_by_session_or_header(tmp_path):
    table = _compressible(200_000)
    path = _write(tmp_path / "t.arrows", table, max_chunksize=50_000)
    with Serve(f"t={path}", tmp=str(tmp_path)) as s:
        plain = fl.connect(s.uri)

        def read(client, options=None):
            ticket = client.get_flight_info(fl.FlightDescriptor.for_path("t")).endpoints[0].ticket
            before = _stats(plain)["grpc"]["bytes_sent"]
            got = client.do_get(ticket, options=options).read_all()
            return got, _stats(plain)["grpc"]["bytes_sent"] - before

        got, uncompressed = read(plain)
        assert got.equals(table)
        for codec in ["lz4_frame", "zstd"]:
            header = fl.FlightCallOptions(headers=[(b"ferry-compression", codec.encode())])
            got, sent = read(plain, header)
            assert got.equals(table)
            assert sent < uncompressed / 3, (codec, sent, uncompressed)
        cookies = CookieMiddlewareFactory()
        client = fl.connect(s.uri, middleware=[cookies])
        assert set_options_errors(action(client, "SetSessionOptions",
                                         set_options_request({"compression": "lz4"}))) == {}
        got, sent = read(client)
        assert got.equals(table)
        assert sent < uncompressed / 3
        # The header wins over the session's option.
        got, sent = read(client, fl.FlightCallOptions(headers=[(b"ferry-compression", b"none")]))
        assert got.equals(table) and sent == uncompressed
        with pytest.raises(ERRORS, match="unknown compression \"gzip\""):
            read(plain, fl.FlightCallOptions(headers=[(b"ferry-compression", b"gzip")]))
