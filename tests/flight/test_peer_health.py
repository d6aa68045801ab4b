"""What a federated `ferry serve --flight` knows of its peers, read from outside: the "stats"
action's "peers" section (pyarrow.flight's DoAction) and the ferry_peer_* metrics of
`--metrics` (parsed by prometheus_client). One peer is a running server, the other a port where
nothing listens; neither is known up or down until a caller's question makes the server ask it."""
import json
import re
import time
import urllib.request

import pyarrow as pa
import pyarrow.flight as fl
from prometheus_client.parser import text_string_to_metric_families

from flight_support import Serve, mixed_table
from test_prometheus import free_port, metrics_url


def _stats(uri):
    [result] = list(fl.connect(uri).do_action(fl.Action("stats", b"")))
    return json.loads(result.body.to_pybytes())


def _peer_metrics(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        text = r.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        if family.name.startswith("ferry_peer_"):
            for s in family.samples:
                out[(s.name, s.labels["peer"])] = s.value
    return out


def test_peers_up_down_latency_and_last_error(tmp_path):
    table = mixed_table(100)
    path = tmp_path / "t.arrows"
    with pa.ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table)
    gone = f"grpc://127.0.0.1:{free_port()}"
    with Serve(f"t={path}", tmp=str(tmp_path)) as up_peer, \
         Serve(f"u={path}", "--peer", up_peer.uri, "--peer", gone, "--allow-partial",
               "--peer-timeout", "5", "--metrics", "127.0.0.1:0", tmp=str(tmp_path)) as server:
        url = metrics_url(server)
        before = _stats(server.uri)["peers"]
        assert before == [
            {"uri": up_peer.uri, "up": None, "latency_seconds": 0, "last_error": ""},
            {"uri": gone, "up": None, "latency_seconds": 0, "last_error": ""}]
        assert _peer_metrics(url) == {
            ("ferry_peer_questions_total", up_peer.uri): 0,
            ("ferry_peer_questions_total", gone): 0,
            ("ferry_peer_failures_total", up_peer.uri): 0,
            ("ferry_peer_failures_total", gone): 0}

        start = time.monotonic()
        listed = list(fl.connect(server.uri).list_flights())
        took = time.monotonic() - start
        assert sorted(f.descriptor.path[0].decode() for f in listed) == ["t", "u"]

        peers = {p["uri"]: p for p in _stats(server.uri)["peers"]}
        assert peers[up_peer.uri]["up"] is True and peers[up_peer.uri]["last_error"] == ""
        assert peers[gone]["up"] is False
        assert re.search(r"127\.0\.0\.1|connect|unavailable", peers[gone]["last_error"], re.I), \
            peers[gone]
        for p in peers.values():
            # Each answer came within the one ListFlights the caller waited for.
            assert 0 < p["latency_seconds"] <= took, (p, took)

        m = _peer_metrics(url)
        assert m[("ferry_peer_up", up_peer.uri)] == 1 and m[("ferry_peer_up", gone)] == 0
        assert m[("ferry_peer_questions_total", up_peer.uri)] == 1
        assert m[("ferry_peer_failures_total", up_peer.uri)] == 0
        assert m[("ferry_peer_failures_total", gone)] == 1
        assert m[("ferry_peer_latency_seconds", gone)] == peers[gone]["latency_seconds"]
