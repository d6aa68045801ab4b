"""ferry's Python client passes a W3C trace on: `ferry.flight.connect(uri, traceparent=...)` sends
it on every Flight call and in the hello of the shared-memory and UCX sessions a read follows,
across a federation; `ferry.dipc.connect(..., traceparent=...)` sends it in the hello, where it
wins over the trace kept with the ticket. The trace ids come from opentelemetry-sdk spans; the
servers' JSON logs (--log-format json) are the oracle."""
import json

import pyarrow as pa
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry.dipc  # noqa: E402
import ferry.flight  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator  # noqa: E402

from flight_support import Serve, mixed_table  # noqa: E402


def _write(path, table):
    with pa.ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=100)
    return str(path)


def _span(tracer, name):
    """A span's traceparent and its trace id (hex)."""
    with tracer.start_as_current_span(name) as span:
        carrier = {}
        TraceContextTextMapPropagator().inject(carrier)
    return carrier["traceparent"], format(span.get_span_context().trace_id, "032x")


def _traced(server, trace_id):
    server.close()
    records = [json.loads(line) for line in server.final_stderr.splitlines() if line.strip()]
    return [(r["plane"], r["event"]) for r in records if r.get("trace_id") == trace_id]


@pytest.mark.parametrize("via", ["shm", "ucx"])
def test_ferrys_client_carries_the_trace_to_every_server_and_plane(tmp_path, via):
    table = mixed_table(300)
    a, b = table.slice(0, 150), table.slice(150, 150)
    a_path, b_path = _write(tmp_path / "a.arrows", a), _write(tmp_path / "b.arrows", b)
    tracer = TracerProvider().get_tracer("ferry-client-trace-test")
    traceparent, trace_id = _span(tracer, "read")
    with Serve(f"t={a_path}", "--log-format", "json", tmp=str(tmp_path)) as A, \
            Serve(f"t={b_path}", "--peer", A.uri, "--log-format", "json", tmp=str(tmp_path)) as B:
        client = ferry.flight.connect(B.uri, traceparent=traceparent)
        got = pa.table(client.do_get("t", via=via, parallel=1))
        assert got.equals(pa.concat_tables([b, a]))
        a_traced, b_traced = _traced(A, trace_id), _traced(B, trace_id)
    for traced in (a_traced, b_traced):
        assert ("grpc", "flight_call") in traced, traced
        assert (via, "session_end") in traced, traced


def test_the_hellos_trace_wins_over_the_tickets(tmp_path):
    path = _write(tmp_path / "t.arrows", mixed_table(100))
    tracer = TracerProvider().get_tracer("ferry-client-trace-test")
    issuing, issuing_id = _span(tracer, "get the flight info")
    reading, reading_id = _span(tracer, "read it elsewhere")
    assert issuing_id != reading_id
    with Serve(f"t={path}", "--log-format", "json", tmp=str(tmp_path)) as S:
        info = ferry.flight.connect(S.uri, traceparent=issuing).get_flight_info("t")
        endpoint = info.endpoints[0]
        shm = next(l for l in endpoint.locations if l.startswith("shm://"))
        assert pa.table(ferry.dipc.connect(shm, endpoint.ticket.decode(),
                                           traceparent=reading)).num_rows == 100
        with pytest.raises(ValueError, match="traceparent"):
            ferry.dipc.connect(shm, endpoint.ticket.decode(), traceparent="00-not-a-trace")
        S.close()
        records = [json.loads(line) for line in S.final_stderr.splitlines() if line.strip()]
    sessions = [r for r in records if r["event"] == "session_end"]
    assert len(sessions) == 1 and sessions[0]["trace_id"] == reading_id
    calls = [r for r in records if r["event"] == "flight_call"]
    assert [r["trace_id"] for r in calls] == [issuing_id]


def test_a_bad_traceparent_is_refused_by_connect():
    with pytest.raises(ValueError, match="all-zero trace-id"):
        ferry.flight.connect("grpc://127.0.0.1:1",
                             traceparent="00-00000000000000000000000000000000-b7ad6b7169203331-01")
