"""`ferry serve --flight ... --metrics` (and `ferry serve --metrics` without Flight, below),
scraped by a real Prometheus server (Debian's
`prometheus`, installed by scripts/setup.sh) every second: a known number of bytes read over the
shared-memory and UCX planes must come back from Prometheus' HTTP API as ferry_sent_bytes_total
by plane, and the exposition text must pass Prometheus' own parsers (the server's, whose target
stays "up", and prometheus_client's). The page's example alert rules (docs/operations_metrics.md)
are loaded into that Prometheus, which must evaluate each without error, and its metrics reference
must name every ferry_ family the server exposes, with its type.

The expected bytes are computed without ferry: the sum of the record batches' message bodies in
the IPC stream file, as pyarrow reads them (pyarrow.ipc.MessageReader). That is what a plane
sends, because the data is one int64 column without nulls in batches of 4,096 rows: each body is
the column's 32,768-byte value buffer (a multiple of 64, so no alignment ferry or pyarrow might
choose pads it differently; no validity buffer, as there are no nulls), and the ferry client's own
count of the buffers it received (`ferry get`'s summary line) must say the same."""
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from flight_support import Serve, ServeProcess, ferry_cli

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PAGE = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "operations_metrics.md")
ROWS, BATCH_ROWS = 1 << 17, 4096
SCRAPE_LIMIT_S = 60  # bounded waits on Prometheus: its start, and a scrape after the transfers


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def body_bytes(path):
    """The record batches' message body bytes of an IPC stream, by pyarrow; and their number."""
    total, batches = 0, 0
    with pa.OSFile(path, "rb") as f:
        for message in ipc.MessageReader.open_stream(f):
            if message.type == "record batch":
                total += message.body.size
                batches += 1
    return total, batches


def wait_until(what, check, limit=SCRAPE_LIMIT_S):
    """Poll `check` every 0.2 s until it returns something true, for at most `limit` seconds."""
    deadline = time.monotonic() + limit
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"no {what} within {limit} s"
        time.sleep(0.2)


def page_alert_rules():
    """The text block after the page's `<!-- alert-rules -->` marker."""
    with open(PAGE) as f:
        text = f.read()
    m = re.search(r"<!-- alert-rules -->\n```text\n(.*?)```", text, re.S)
    assert m, "docs/operations_metrics.md has no alert-rules block"
    return m.group(1)


def page_reference():
    """The page's reference table: {metric name: type}."""
    with open(PAGE) as f:
        return dict(re.findall(r"^\| `([a-z_]+)` \| (counter|gauge|histogram) \|", f.read(), re.M))


class Prometheus:
    """Debian's prometheus scraping `target` (HOST:PORT) every second and evaluating the page's
    alert rules every second, its data in `tmp`."""

    def __init__(self, tmp, target):
        self.port = free_port()
        config = tmp / "prometheus.yml"
        (tmp / "rules.yml").write_text(page_alert_rules())
        config.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
            f"rule_files: ['{tmp / 'rules.yml'}']\n"
            "scrape_configs:\n  - job_name: ferry\n"
            f"    static_configs:\n      - targets: ['{target}']\n")
        self.log = open(tmp / "prometheus.log", "w+")
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{self.port}"

        def ready():
            assert self.proc.poll() is None, f"prometheus exited: {self.output()}"
            try:
                return http_get(self.base + "/-/ready")[0] == 200
            except OSError:
                return False
        wait_until("ready Prometheus", ready)

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def api(self, path, **params):
        status, text = http_get(f"{self.base}/api/v1/{path}?{urllib.parse.urlencode(params)}")
        doc = json.loads(text)
        assert status == 200 and doc["status"] == "success", text
        return doc["data"]

    def query(self, expr):
        """An instant query's vector as {label values joined by ',': float value}."""
        data = self.api("query", query=expr)
        assert data["resultType"] == "vector", data
        return {",".join(r["metric"].values()): float(r["value"][1]) for r in data["result"]}

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture
def dataset(tmp_path):
    path = tmp_path / "ints.arrows"
    table = pa.table({"x": pa.array(range(ROWS), pa.int64())})
    with ipc.new_stream(str(path), table.schema) as w:
        for batch in table.to_batches(max_chunksize=BATCH_ROWS):
            w.write_batch(batch)
    return path


def metrics_url(server):
    """The URL `ferry serve` printed for --metrics on stderr."""
    found = wait_until("metrics line on ferry serve's stderr",
                       lambda: re.search(r"metrics on (http://\S+)", server.stderr()), limit=10)
    return found.group(1)


def read_via(uri, via):
    """`ferry get --path ints --via VIA`: the bytes its summary line says it received."""
    r = subprocess.run([ferry_cli(), "get", uri, "--path", "ints", "--via", via],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    summary = r.stdout + r.stderr  # without --to, the summary lines go to stdout
    m = re.search(r"(\d+) batches, (\d+) rows, (\d+) bytes", summary)
    assert m and re.search(rf"by plane:.*\b{via} {m.group(3)} bytes", summary), summary
    return int(m.group(3))


def test_prometheus_scrapes_the_bytes_each_plane_moved(tmp_path, dataset):
    expected, batches = body_bytes(str(dataset))
    assert expected == ROWS * 8 and batches == ROWS // BATCH_ROWS  # the claim of the docstring
    started = time.time()
    with Serve("--metrics", "127.0.0.1:0", f"ints={dataset}", tmp=str(tmp_path)) as server:
        url = metrics_url(server)
        target = urllib.parse.urlparse(url).netloc
        prometheus = Prometheus(tmp_path, target)
        try:
            # One read over shared memory, two over UCX: the planes' figures must not mix.
            assert read_via(server.uri, "shm") == expected
            assert read_via(server.uri, "ucx") == expected
            assert read_via(server.uri, "ucx") == expected
            moved = time.time()

            # A scrape that began after the transfers: its samples carry its start time.
            wait_until("scrape after the transfers", lambda: prometheus.query(
                f"timestamp(ferry_sent_bytes_total) > {moved}"))
            sent = prometheus.query("sum by (plane) (ferry_sent_bytes_total)")
            assert sent == {"grpc": 0, "shm": expected, "ucx": 2 * expected}
            sent_batches = prometheus.query("sum by (plane) (ferry_sent_batches_total)")
            assert sent_batches == {"grpc": 0, "shm": batches, "ucx": 2 * batches}
            sessions = prometheus.query("sum by (plane) (ferry_sessions_total)")
            assert sessions == {"grpc": 0, "shm": 1, "ucx": 2}
            # Each read asked GetFlightInfo once, which Prometheus holds as a histogram.
            calls = prometheus.query('sum(ferry_rpc_duration_seconds_count{rpc="GetFlightInfo"})')
            assert list(calls.values()) == [3]

            targets = prometheus.api("targets")["activeTargets"]
            assert [(t["health"], t["lastError"]) for t in targets] == [("up", "")], targets

            # Every example rule evaluated, without error, after the transfers' scrape.
            def evaluated():
                rules = [r for g in prometheus.api("rules")["groups"] for r in g["rules"]]
                return rules if all(r["lastEvaluation"] > "2000" for r in rules) else None
            rules = wait_until("evaluation of the page's alert rules", evaluated)
            assert len(rules) == page_alert_rules().count("- alert:")
            assert [(r["name"], r["health"], r.get("lastError", "")) for r in rules] == \
                [(r["name"], "ok", "") for r in rules]
        finally:
            prometheus.close()

        # Prometheus' own Python parser, which raises on any line the format does not allow.
        status, text = http_get(url)
        assert status == 200
        families = {f.name: f for f in text_string_to_metric_families(text)}
        # prometheus_client names a counter's family without its _total suffix.
        assert families["ferry_sent_bytes"].type == "counter"
        assert families["ferry_rpc_duration_seconds"].type == "histogram"
        assert families["ferry_sessions_active"].type == "gauge"
        # The page's reference names every family exposed, with its type (prometheus_client
        # drops a counter's _total suffix from the family's name).
        reference = page_reference()
        for f in families.values():
            if f.name.startswith(("ferry_", "process_")):
                name = f.name + "_total" if f.type == "counter" else f.name
                assert reference.get(name) == f.type, (name, f.type)
        by_plane = {}
        for s in families["ferry_sent_bytes"].samples:
            by_plane[s.labels["plane"]] = by_plane.get(s.labels["plane"], 0) + s.value
        assert by_plane == {"grpc": 0, "shm": expected, "ucx": 2 * expected}
        for name in ("ferry_sent_bytes", "ferry_sent_batches", "ferry_errors",
                     "ferry_tickets_refused"):
            if name in families:
                for s in families[name].samples:
                    # Bounded labels only: no ticket, client address or dataset name.
                    assert set(s.labels) <= {"plane", "body_type", "code"}, s
        # The process collector, against what the kernel and this test saw.
        start = families["process_start_time_seconds"].samples[0].value
        assert started - 1 <= start <= time.time(), (started, start)
        fds = families["process_open_fds"].samples[0].value
        assert abs(fds - len(os.listdir(f"/proc/{server.proc.pid}/fd"))) <= 4
        with open(f"/proc/{server.proc.pid}/statm") as f:
            resident = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        rss = families["process_resident_memory_bytes"].samples[0].value
        assert 0.5 * resident <= rss <= 2 * resident, (rss, resident)


@pytest.mark.parametrize("transport", ["shm", "ucx"])
def test_prometheus_scrapes_a_server_without_flight(tmp_path, dataset, transport):
    """`ferry serve --metrics` without --flight: Prometheus scrapes the one plane's figures, the
    transport's, after two `ferry get` reads (bodies and batches by pyarrow, as above), and every
    buffer lent is freed once the reads end; the heap in use is reported beside the process's."""
    expected, batches = body_bytes(str(dataset))
    with ServeProcess(["--transport", transport, "--metrics", "127.0.0.1:0", f"ints={dataset}"],
                      tmp=str(tmp_path)) as server:
        name, uri = server.first_line().split()[:2]
        assert name == "ints" and uri.startswith(f"{transport}://"), (name, uri)
        url = metrics_url(server)
        prometheus = Prometheus(tmp_path, urllib.parse.urlparse(url).netloc)
        try:
            for _ in range(2):
                r = subprocess.run([ferry_cli(), "get", uri, "--ticket", "ints", "--no-progress"],
                                   capture_output=True, text=True, timeout=120)
                assert r.returncode == 0 and f"{batches} batches, {ROWS} rows" in r.stdout, \
                    r.stdout + r.stderr
            moved = time.time()
            wait_until("scrape after the reads", lambda: prometheus.query(
                f"timestamp(ferry_sent_bytes_total) > {moved}"))
            assert prometheus.query("sum by (plane) (ferry_sent_bytes_total)") == \
                {transport: 2 * expected}
            assert prometheus.query("sum by (plane) (ferry_sent_batches_total)") == \
                {transport: 2 * batches}
            assert prometheus.query("sum by (plane) (ferry_sessions_total)") == {transport: 2}
            # The frees come after each read's end: wait for a scrape that counted them (over UCX
            # the server may choose packed bodies, which lend nothing).
            wait_until("every lent buffer freed", lambda: prometheus.query(
                "sum by (plane) (ferry_lent_buffers_outstanding) == 0"))
            if transport == "shm":
                assert prometheus.query("sum by (plane) (ferry_lent_buffers_total)")[transport] > 0
            # A server without Flight issues no tickets with a lifetime: no such families.
            assert prometheus.query("ferry_tickets_issued_total") == {}
            heap = list(prometheus.query("ferry_heap_in_use_bytes").values())
            assert len(heap) == 1 and (64 << 10) < heap[0] < (1 << 30), heap
            targets = prometheus.api("targets")["activeTargets"]
            assert [(t["health"], t["lastError"]) for t in targets] == [("up", "")], targets
        finally:
            prometheus.close()


def test_a_bad_or_taken_metrics_address_is_refused_by_name(tmp_path, dataset):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = f"127.0.0.1:{taken.getsockname()[1]}"
        for address, why in (("garbage", "is not HOST:PORT"), (busy, "cannot listen for metrics")):
            r = subprocess.run([ferry_cli(), "serve", "--flight", "127.0.0.1:0", "--metrics",
                                address, f"ints={dataset}"], capture_output=True, text=True,
                               timeout=60)
            assert r.returncode == 2, r.stderr
            assert f"ferry: --metrics {address}: " in r.stderr and why in r.stderr, r.stderr


def test_doget_and_doput_calls_are_timed_and_their_failures_counted(tmp_path, dataset):
    """DoGet and DoPut time themselves in their reactors (gRPC would otherwise run the metrics
    interceptor on each of their messages): every call, refused or not, is in the histogram, and
    the refused ones in the grpc plane's errors, by pyarrow.flight's calls counted here."""
    import pyarrow.flight as fl
    with Serve("--metrics", "127.0.0.1:0", f"ints={dataset}", tmp=str(tmp_path)) as server:
        url = metrics_url(server)
        client = fl.connect(server.uri)
        info = client.get_flight_info(fl.FlightDescriptor.for_path("ints"))
        for _ in range(2):
            assert client.do_get(info.endpoints[0].ticket).read_all().num_rows == ROWS
        with pytest.raises(KeyError, match="unknown ticket"):  # NOT_FOUND
            client.do_get(fl.Ticket(b"no-such-ticket")).read_all()
        table = pa.table({"y": pa.array([1, 2, 3], pa.int64())})
        writer, _ = client.do_put(fl.FlightDescriptor.for_path("up"), table.schema)
        writer.write_table(table)
        writer.close()
        # A command descriptor names no flight: the upload is refused (INVALID_ARGUMENT).
        with pytest.raises(pa.ArrowException):
            writer, _ = client.do_put(fl.FlightDescriptor.for_command(b"x"), table.schema)
            writer.write_table(table)
            writer.close()
        client.close()

        def counted():
            _, text = http_get(url)
            families = {f.name: f for f in text_string_to_metric_families(text)}
            calls = {s.labels["rpc"]: s.value
                     for s in families["ferry_rpc_duration_seconds"].samples
                     if s.name == "ferry_rpc_duration_seconds_count"}
            errors = {s.labels["code"]: s.value for s in families["ferry_errors"].samples
                      if s.labels.get("plane") == "grpc"}
            return (calls, errors) if calls.get("DoPut") == 2 else None
        calls, errors = wait_until("both uploads in the histogram", counted, limit=10)
        assert calls["GetFlightInfo"] == 1 and calls["DoGet"] == 3 and calls["DoPut"] == 2, calls
        assert sum(errors.values()) == 2, errors
