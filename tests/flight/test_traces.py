"""One trace across a federation and every plane: a span started with opentelemetry-sdk (an
independent implementation of W3C Trace Context) gives its `traceparent` to pyarrow.flight's
GetFlightInfo on a server that federates a second `ferry serve --flight`, both logging with
--log-format json; its endpoints are then followed to the shared-memory plane (`ferry get` with
the ticket alone: the session takes the trace kept with the ticket), to the UCX plane (`ferry get
--traceparent`: the trace travels in ferry's hello) and to DoGet (pyarrow with the header). The
span's trace id must then appear in both servers' logs: the GetFlightInfo call on each (the peer's
from the federated call), each session on each plane, each DoGet; every span id the servers log is
their own; every line of their logs parses as JSON. A bad traceparent is ignored and logged."""
import json
import os
import subprocess

import pyarrow as pa
import pyarrow.flight as fl
import pyarrow.ipc as ipc
import pytest

from flight_support import Serve, ferry_cli, mixed_table

otel_trace = pytest.importorskip("opentelemetry.trace")
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator  # noqa: E402


def _write(path, table):
    with pa.ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=100)
    return str(path)


def _records(server):
    """Every line of a server's stderr as JSON (each must parse), after it stopped."""
    server.close()
    lines = [line for line in server.final_stderr.splitlines() if line.strip()]
    assert lines, "the server logged nothing"
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            pytest.fail(f"a log line is not JSON: {line!r}")
    for r in records:
        assert {"time", "level", "event", "message"} <= r.keys(), r
        assert r["time"].endswith("Z") and "." in r["time"], r
    return records


def _get(uri, ticket, to, *extra):
    subprocess.run([ferry_cli(), "get", uri, "--ticket", ticket, "--to", str(to), "--no-progress",
                    *extra], check=True, capture_output=True, text=True)
    return ipc.open_stream(str(to)).read_all()


def _location(endpoint, scheme):
    return next(l.uri.decode() for l in endpoint.locations if l.uri.decode().startswith(scheme))


def test_one_trace_id_across_a_federation_and_every_plane(tmp_path):
    table = mixed_table(400)
    a, b = table.slice(0, 200), table.slice(200, 200)
    a_path, b_path = _write(tmp_path / "a.arrows", a), _write(tmp_path / "b.arrows", b)

    tracer = TracerProvider().get_tracer("ferry-trace-test")
    with tracer.start_as_current_span("read the flight") as span:
        carrier = {}
        TraceContextTextMapPropagator().inject(carrier)
    context = span.get_span_context()
    trace_id = format(context.trace_id, "032x")
    caller_span = format(context.span_id, "016x")
    assert carrier["traceparent"].startswith(f"00-{trace_id}-{caller_span}-")
    headers = fl.FlightCallOptions(headers=[(b"traceparent", carrier["traceparent"].encode())])

    with Serve(f"t={a_path}", "--log-format", "json", tmp=str(tmp_path)) as A, \
            Serve(f"t={b_path}", "--peer", A.uri, "--log-format", "json", tmp=str(tmp_path)) as B:
        info = fl.connect(B.uri).get_flight_info(fl.FlightDescriptor.for_path("t"), headers)
        assert len(info.endpoints) == 2  # B's own, then A's
        owners = [B.uri, A.uri]
        expected = [b, a]
        for n, (endpoint, owner, want) in enumerate(zip(info.endpoints, owners, expected)):
            ticket = endpoint.ticket.ticket.decode()
            # Shared memory with the ticket alone: the session takes the ticket's trace.
            got = _get(_location(endpoint, "shm://"), ticket, tmp_path / f"shm{n}.arrows")
            assert got.equals(want)
            # UCX with the trace in ferry's hello.
            got = _get(_location(endpoint, "ucx://"), ticket, tmp_path / f"ucx{n}.arrows",
                       "--traceparent", carrier["traceparent"])
            assert got.equals(want)
            # DoGet on the endpoint's owner, the header on the call.
            got = fl.connect(owner).do_get(endpoint.ticket, options=headers).read_all()
            assert got.equals(want)
        a_records, b_records = _records(A), _records(B)

    for name, records in (("the answering server", b_records), ("its peer", a_records)):
        traced = [r for r in records if r.get("trace_id") == trace_id]
        calls = [r["message"].split()[0] for r in traced if r["event"] == "flight_call"]
        assert "GetFlightInfo" in calls, (name, records)
        assert "DoGet" in calls, (name, records)
        sessions = {r["plane"]: r for r in traced if r["event"] == "session_end"}
        assert set(sessions) == {"shm", "ucx"}, (name, records)
        for r in traced:
            # Each call and session is a span of the server's own: never the caller's.
            assert len(r["span_id"]) == 16 and r["span_id"] != caller_span, r
        assert all(r["session"].startswith(r["plane"] + "-") for r in sessions.values())
        # Records of a session share its span; sessions and calls each have their own.
        spans = [r["span_id"] for r in traced if r["event"] in ("flight_call", "session_end")]
        assert len(set(spans)) == len(spans), traced
    # The peer's GetFlightInfo came from the answering server's call: its parent is that call's
    # span, a new parent-id of the same trace (not visible in the logs, which hold only spans).
    peer_call = [r for r in a_records if r.get("trace_id") == trace_id and
                 r["event"] == "flight_call" and r["message"].startswith("GetFlightInfo")]
    assert len(peer_call) == 1


def test_a_bad_traceparent_is_ignored_and_logged(tmp_path):
    path = _write(tmp_path / "t.arrows", mixed_table(50))
    bad = "00-00000000000000000000000000000000-b7ad6b7169203331-01"
    with Serve(f"t={path}", "--log-format", "json", tmp=str(tmp_path)) as S:
        options = fl.FlightCallOptions(headers=[(b"traceparent", bad.encode())])
        info = fl.connect(S.uri).get_flight_info(fl.FlightDescriptor.for_path("t"), options)
        assert info.total_records == 50  # the call goes on
        records = _records(S)
    bad_ones = [r for r in records if r["event"] == "bad_traceparent"]
    assert len(bad_ones) == 1 and bad_ones[0]["level"] == "warning"
    assert "all-zero trace-id" in bad_ones[0]["message"]
    assert not any("trace_id" in r for r in records)


def test_the_text_format_keeps_its_lines(tmp_path):
    path = _write(tmp_path / "t.arrows", mixed_table(50))
    with Serve(f"t={path}", tmp=str(tmp_path)) as S:
        fl.connect(S.uri).get_flight_info(fl.FlightDescriptor.for_path("t"))
        S.close()
        lines = S.final_stderr.splitlines()
    assert lines[0].startswith("ferry serve: flight [t]: 50 records"), lines
    assert lines[-1].startswith("ferry serve: "), lines
    assert not any(line.startswith("{") for line in lines)
