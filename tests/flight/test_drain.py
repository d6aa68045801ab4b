"""Operating `ferry serve --flight` as a service, checked against independent clients: health
read by gRPC's own grpc.health.v1 client (PyPI's grpcio-health-checking), SERVING once listening,
per plane, and NOT_SERVING once a drain starts, also while federation peers are down; a drain
under load (SIGTERM with 8 clients mid-transfer on each plane: gRPC DoGet through pyarrow.flight,
shared memory and UCX through `ferry get`), where every client's data equals pyarrow's read of
the file, a client arriving after the drain started is refused with UNAVAILABLE saying
"draining" on every plane, and the process exits 0; a second SIGTERM ending it at once; the
drain timeout timed by the server's own clock; a draining peer left out of (or failing) a
federated answer; `ferry status` and its --drain, which needs the token, and its report of a
document from pyarrow's own Flight server; and systemd's readiness protocol read from a fake
NOTIFY_SOCKET."""
import concurrent.futures
import json
import os
import signal
import socket
import subprocess
import threading
import time

import grpc
import pyarrow as pa
import pyarrow.flight as fl
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from flight_support import MANUAL_CLOCK, Serve, advance_clock, ferry_cli, self_signed

ERRORS = (fl.FlightError, pa.ArrowException)
PLANES = ["", "flight", "shm", "ucx"]


def _write(path, table, chunk):
    with pa.ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=chunk)
    return str(path)


def _table(rows):
    return pa.table({"i": pa.array(range(rows), pa.int64()),
                     "f": pa.array([k / 3 for k in range(rows)], pa.float64())})


def _wait_until(what, predicate, timeout=30, show=None):
    """Polls `predicate` until it holds; fails naming `what` (and `show()`) after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"{what}: not within {timeout} s" + (f": {show()}" if show else ""))


def _health(uri, service):
    """The status gRPC's own health client reads for `service`: SERVING, NOT_SERVING, or the
    call's code name (NOT_FOUND for a service the server does not know)."""
    with grpc.insecure_channel(uri.split("://", 1)[1]) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            response = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
        except grpc.RpcError as e:
            return e.code().name
    return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)


def _stats(client, options=None):
    [result] = list(client.do_action(fl.Action("stats", b""), options=options))
    return json.loads(result.body.to_pybytes())


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _small_window_client(uri):
    return fl.connect(uri, generic_options=[("grpc.http2.bdp_probe", 0)])


def test_health_is_serving_per_plane_and_stays_so_with_peers_down(tmp_path):
    table = _table(1000)
    path = _write(tmp_path / "t.arrows", table, 100)
    down = f"grpc://127.0.0.1:{_free_port()}"  # nothing listens there
    with Serve(f"t={path}", "--peer", down, "--allow-partial", tmp=str(tmp_path)) as s:
        assert {p: _health(s.uri, p) for p in PLANES} == dict.fromkeys(PLANES, "SERVING")
        assert _health(s.uri, "no-such-plane") == "NOT_FOUND"
        # The peer is down, and the server still answers for itself.
        info = fl.connect(s.uri).get_flight_info(fl.FlightDescriptor.for_path("t"))
        assert down in info.app_metadata.decode()
        assert {p: _health(s.uri, p) for p in PLANES} == dict.fromkeys(PLANES, "SERVING")
    # Only the planes served have a status.
    with Serve(f"t={path}", "--transport", "shm", tmp=str(tmp_path)) as s:
        assert [_health(s.uri, p) for p in PLANES] == ["SERVING"] * 3 + ["NOT_FOUND"]
    with Serve(f"t={path}", "--transport", "grpc", tmp=str(tmp_path)) as s:
        assert [_health(s.uri, p) for p in PLANES] == ["SERVING"] * 2 + ["NOT_FOUND"] * 2


class _FifoClient:
    """`ferry get URI --path t --via PLANE --to FIFO`: blocked on the FIFO as long as the test
    does not read it, so its session stays mid-transfer; read() then takes the whole stream."""

    def __init__(self, tmp_path, uri, plane, k):
        self.fifo = tmp_path / f"{plane}-{k}.fifo"
        os.mkfifo(self.fifo)
        self.proc = subprocess.Popen(
            [ferry_cli(), "get", uri, "--path", "t", "--via", plane, "--to", str(self.fifo),
             "--no-progress", "--timeout", "120"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.pipe = open(self.fifo, "rb")  # returns once the client opened its end
        self.first = self.pipe.read(1)

    def read(self):
        data = self.first + self.pipe.read()
        self.pipe.close()
        out, err = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, err
        return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def test_a_drain_under_load_lets_every_client_finish_and_refuses_new_ones(tmp_path):
    table = _table(1 << 20)  # 16 MiB in 64 batches: more than a client's pipes and windows hold
    path = _write(tmp_path / "t.arrows", table, 1 << 14)
    expected = pa.ipc.open_stream(path).read_all()
    with Serve(f"t={path}", "--timeout", "120", "--drain-timeout", "120", "--region-bytes",
               "4MiB", "-v", tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)
        assert {p: _health(s.uri, p) for p in PLANES} == dict.fromkeys(PLANES, "SERVING")
        info = client.get_flight_info(fl.FlightDescriptor.for_path("t"))
        # 8 pyarrow.flight DoGets, each holding its stream after the first batch. Without BDP
        # probing, a stream's flow-control window stays gRPC's initial 64 KiB, so the server
        # cannot hand the whole flight to its transport and finish early.
        readers = []
        for _ in range(8):
            reader = _small_window_client(s.uri).do_get(info.endpoints[0].ticket)
            readers.append((reader, [reader.read_chunk().data]))
        fifos = [_FifoClient(tmp_path, s.uri, plane, k) for plane in ("shm", "ucx")
                 for k in range(8)]
        # An endpoint issued before the drain, to try every plane after it.
        late = client.get_flight_info(fl.FlightDescriptor.for_path("t")).endpoints[0]

        def active():
            st = _stats(client)
            return [st[p]["sessions_active"] for p in ("grpc", "shm", "ucx")]
        _wait_until("8 sessions in progress on each plane", lambda: active() == [8, 8, 8],
                    show=active)

        s.proc.send_signal(signal.SIGTERM)
        _wait_until("health NOT_SERVING",
                    lambda: all(_health(s.uri, p) == "NOT_SERVING" for p in PLANES))
        assert "draining (SIGTERM)" in s.stderr()
        assert _stats(client)["server"]["health"] == "NOT_SERVING"
        # Late clients are refused on every plane, UNAVAILABLE and saying why.
        with pytest.raises(fl.FlightUnavailableError, match="draining"):
            client.get_flight_info(fl.FlightDescriptor.for_path("t"))
        with pytest.raises(fl.FlightUnavailableError, match="draining"):
            client.do_get(late.ticket).read_all()
        for location in late.locations:
            uri = location.uri.decode()
            if not uri.startswith(("shm:", "ucx:")):
                continue
            r = subprocess.run([ferry_cli(), "get", uri, "--ticket", late.ticket.ticket.decode(),
                                "--no-progress"], capture_output=True, text=True, timeout=60)
            assert r.returncode == 2 and "draining" in r.stderr, (uri, r.stderr)
        r = subprocess.run([ferry_cli(), "get", s.uri, "--path", "t", "--no-progress"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "draining" in r.stderr, r.stderr
        assert s.proc.poll() is None, "the server left before its clients were done"
        # Every client in flight finishes with the whole table, all read at once (they share
        # the shared-memory plane's region).
        def finish(reader, chunks):
            return pa.Table.from_batches(chunks + reader.read_all().to_batches())
        with concurrent.futures.ThreadPoolExecutor(len(readers) + len(fifos)) as pool:
            tables = [pool.submit(finish, *r) for r in readers]
            tables += [pool.submit(f.read) for f in fifos]
            for got in tables:
                assert got.result(timeout=120).equals(expected)
        assert s.proc.wait(timeout=30) == 0
        assert "drained in" in s.stderr()


def test_a_second_sigterm_ends_a_drain_at_once(tmp_path):
    table = _table(1 << 20)
    path = _write(tmp_path / "t.arrows", table, 1 << 14)
    with Serve(f"t={path}", "--timeout", "120", tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)
        info = client.get_flight_info(fl.FlightDescriptor.for_path("t"))
        reader = _small_window_client(s.uri).do_get(info.endpoints[0].ticket)
        reader.read_chunk()  # held: the drain waits for it
        _wait_until("a DoGet in progress", lambda: _stats(client)["grpc"]["sessions_active"] == 1)
        s.proc.send_signal(signal.SIGTERM)
        _wait_until("the drain", lambda: "draining (SIGTERM)" in s.stderr())
        assert s.proc.poll() is None
        t0 = time.monotonic()
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(timeout=10) == 128 + signal.SIGTERM
        assert time.monotonic() - t0 < 5
        assert "drained" not in s.stderr()


def test_the_drain_timeout_is_timed_by_the_servers_clock(tmp_path):
    table = _table(1 << 20)
    path = _write(tmp_path / "t.arrows", table, 1 << 14)
    with Serve(f"t={path}", "--transport", "grpc", "--drain-timeout", "5", env=MANUAL_CLOCK,
               tmp=str(tmp_path)) as s:
        client = fl.connect(s.uri)
        info = client.get_flight_info(fl.FlightDescriptor.for_path("t"))
        reader = _small_window_client(s.uri).do_get(info.endpoints[0].ticket)
        reader.read_chunk()
        _wait_until("a DoGet in progress", lambda: _stats(client)["grpc"]["sessions_active"] == 1)
        s.proc.send_signal(signal.SIGTERM)
        # 4.9 s of the server's clock: still draining; 0.1 s more (once the drain waits): gone.
        advance_clock(client, 4900, waiters=1)
        assert s.proc.poll() is None and "timed out" not in s.stderr()
        advance_clock(client, 100, waiters=1)
        assert s.proc.wait(timeout=30) == 0
        assert "the drain timed out after" in s.stderr()


def test_status_shows_the_server_and_drains_with_the_token(tmp_path):
    table = _table(5000)
    path = _write(tmp_path / "t.arrows", table, 1000)
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    with Serve(f"t={path}", f"u={path}", env={"FERRY_TOKEN": "s3cret"}, tmp=str(tmp_path)) as s:
        auth = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer s3cret")])
        client = fl.connect(s.uri)
        info = client.get_flight_info(fl.FlightDescriptor.for_path("t"), options=auth)
        assert client.do_get(info.endpoints[0].ticket, options=auth).read_all().equals(table)
        out = tmp_path / "got.arrows"
        r = subprocess.run([ferry_cli(), "get", s.uri, "--path", "t", "--via", "shm", "--to",
                            str(out), "--token-file", str(token), "--no-progress"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        stats = _stats(client, auth)
        version = subprocess.run([ferry_cli(), "--version"], capture_output=True, text=True,
                                 check=True).stdout.split()[-1]

        def status(*args, token_file=token):
            argv = [ferry_cli(), "status", s.uri, *args]
            if token_file:
                argv += ["--token-file", str(token_file)]
            return subprocess.run(argv, capture_output=True, text=True, timeout=60)

        r = status("--json")
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert doc["server"]["version"] == version
        assert doc["server"]["health"] == "SERVING" and doc["server"]["planes"] == PLANES[1:]
        assert 0 < doc["server"]["uptime_s"] < 600
        assert [(d["name"], d["records"], d["endpoints"]) for d in doc["datasets"]] == [
            ("t", 5000, 1), ("u", 5000, 1)]
        assert doc["grpc"]["sessions_total"] == 1 and doc["grpc"]["sessions_active"] == 0
        assert doc["grpc"]["bytes_sent"] == stats["grpc"]["bytes_sent"] >= table.nbytes
        assert doc["shm"]["sessions_total"] == 1 and doc["ucx"]["sessions_total"] == 0
        assert doc["shm"]["body_bytes_sent"] >= table.nbytes

        r = status()
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert "health   SERVING" in lines and f"version  {version}" in lines
        assert "planes   flight, shm, ucx" in lines
        flight_row = next(l.split() for l in lines if l.split()[:1] == ["flight"])
        assert flight_row == ["flight", "0", "1", str(stats["grpc"]["bytes_sent"])]
        shm_row = next(l.split() for l in lines if l.split()[:1] == ["shm"])
        assert shm_row[:3] == ["shm", "0", "1"]
        assert next(l.split() for l in lines if l.split()[:1] == ["t"])[:2] == ["t", "5000"]

        # Draining needs the token: without it the call is refused and nothing changes.
        r = status("--drain", token_file=None)
        assert r.returncode == 2 and "UNAUTHENTICATED" in r.stderr.upper(), r.stderr
        assert _health(s.uri, "") == "SERVING" and s.proc.poll() is None
        r = status("--drain")
        assert r.returncode == 0, r.stderr
        assert "draining" in r.stdout
        # Idle, the server drains at once and exits 0.
        assert s.proc.wait(timeout=30) == 0
        assert "draining (asked by a client)" in s.stderr()


def test_a_draining_peer_is_left_out_or_named(tmp_path):
    table = _table(1 << 20)
    path = _write(tmp_path / "t.arrows", table, 1 << 14)
    small = _write(tmp_path / "s.arrows", _table(100), 100)
    with Serve(f"t={path}", "--timeout", "60", tmp=str(tmp_path)) as b, \
            Serve("--peer", b.uri, "--allow-partial", f"t={small}", tmp=str(tmp_path)) as a1, \
            Serve("--peer", b.uri, f"t={small}", tmp=str(tmp_path)) as a2:
        info = fl.connect(b.uri).get_flight_info(fl.FlightDescriptor.for_path("t"))
        reader = _small_window_client(b.uri).do_get(info.endpoints[0].ticket)
        reader.read_chunk()  # b stays draining while this is read
        b.proc.send_signal(signal.SIGTERM)
        _wait_until("b draining", lambda: _health(b.uri, "") == "NOT_SERVING")
        merged = fl.connect(a1.uri).get_flight_info(fl.FlightDescriptor.for_path("t"))
        assert len(merged.endpoints) == 1  # a1's own
        missing = json.loads(merged.app_metadata)["missing_peers"]
        assert [m["peer"] for m in missing] == [b.uri] and "draining" in missing[0]["error"]
        with pytest.raises(fl.FlightUnavailableError, match=f"peer {b.uri}.*draining"):
            fl.connect(a2.uri).get_flight_info(fl.FlightDescriptor.for_path("t"))
        # The servers asking it stay SERVING.
        assert _health(a1.uri, "") == _health(a2.uri, "") == "SERVING"
        reader.read_all()
        assert b.proc.wait(timeout=30) == 0


class _StatsServer(fl.FlightServerBase):
    """pyarrow's Flight server answering the stats action with a document of the test's."""

    def __init__(self, body):
        super().__init__("grpc://127.0.0.1:0")
        self.body = body

    def do_action(self, context, action):
        if action.type != "stats":
            raise fl.FlightServerError(f"no action {action.type}")
        return [self.body]


def test_status_prints_the_peers_and_refuses_what_is_not_a_document():
    doc = {"server": {"version": "9.9.9", "uptime_s": 3725.5, "health": "SERVING",
                      "planes": ["flight", "shm"]},
           "grpc": {"bytes_sent": 7, "sessions_active": 1, "sessions_total": 4},
           "shm": {"body_bytes_sent": 11, "sessions_active": 0, "sessions_total": 2},
           "datasets": [{"name": "t", "records": 5, "bytes": 40, "endpoints": 2, "readers": 1},
                        "not an object"],
           "peers": [{"uri": "grpc://a:1", "up": True, "latency_s": 0.0012},
                     {"uri": "grpc://b:2", "up": False}, 17]}
    with _StatsServer(json.dumps(doc).encode()) as server:
        uri = f"grpc://127.0.0.1:{server.port}"
        r = subprocess.run([ferry_cli(), "status", uri], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        rows = [line.split() for line in r.stdout.splitlines()]
        assert ["version", "9.9.9"] in rows and ["uptime", "0d", "01h", "02m", "05s"] in rows
        assert ["flight", "1", "4", "7"] in rows and ["shm", "0", "2", "11"] in rows
        assert ["t", "5", "40", "2", "1"] in rows
        assert ["grpc://a:1", "up", "1.2", "ms"] in rows and ["grpc://b:2", "down", "-"] in rows
        r = subprocess.run([ferry_cli(), "status", uri, "--json"], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0 and json.loads(r.stdout) == doc
    for body in (b"not json", b'["a list"]'):
        with _StatsServer(body) as server:
            r = subprocess.run([ferry_cli(), "status", f"grpc://127.0.0.1:{server.port}"],
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 2 and "is not a JSON object" in r.stderr, r.stderr


def test_status_over_tls(tmp_path):
    """`ferry status` trusts a grpc+tls:// server with --tls-roots; gRPC's health client reads
    the same server's health over TLS."""
    key, cert = self_signed(tmp_path, "server")
    path = _write(tmp_path / "t.arrows", _table(100), 100)
    with Serve("--tls-cert", cert, "--tls-key", key, f"t={path}", tmp=str(tmp_path)) as s:
        assert s.uri.startswith("grpc+tls://")
        r = subprocess.run([ferry_cli(), "status", s.uri, "--json", "--tls-roots", cert,
                            "--timeout", "30"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["server"]["health"] == "SERVING"
        credentials = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        with grpc.secure_channel(s.uri.split("://", 1)[1], credentials) as channel:
            response = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="flight"), timeout=10)
        assert response.status == health_pb2.HealthCheckResponse.SERVING
        # Without the roots, the certificate is not trusted.
        r = subprocess.run([ferry_cli(), "status", s.uri, "--timeout", "30"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2, r.stdout


class _Plain:
    """`ferry serve` without --flight (one plane), as a context like Serve."""

    def __init__(self, spec, env):
        self.proc = subprocess.Popen([ferry_cli(), "serve", spec], env={**os.environ, **env},
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=30)


@pytest.mark.parametrize("flight", [True, False], ids=["flight", "plane-only"])
def test_systemd_is_told_ready_watchdog_and_stopping(tmp_path, flight):
    table = _table(1000)
    path = _write(tmp_path / "t.arrows", table, 100)
    sock_path = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    sock.settimeout(30)
    messages = []
    done = threading.Event()

    def receive():
        while not done.is_set():
            try:
                messages.append(sock.recv(4096).decode())
            except (socket.timeout, OSError):
                return
            if "STOPPING=1" in messages[-1]:
                return

    receiver = threading.Thread(target=receive)
    receiver.start()
    try:
        env = {"NOTIFY_SOCKET": sock_path, "WATCHDOG_USEC": "200000"}
        with (Serve(f"t={path}", env=env, tmp=str(tmp_path)) if flight
              else _Plain(f"t={path}", env)) as s:
            _wait_until("READY=1", lambda: "READY=1" in messages)
            _wait_until("two WATCHDOG=1 pings", lambda: messages.count("WATCHDOG=1") >= 2)
            assert "STOPPING=1" not in messages
            s.proc.send_signal(signal.SIGTERM)
            assert s.proc.wait(timeout=30) == 0
            receiver.join(timeout=30)
            assert "STOPPING=1" in messages
            assert messages.index("READY=1") < messages.index("STOPPING=1")
    finally:
        done.set()
        sock.close()
        receiver.join(timeout=30)
