"""Federation of `ferry serve --flight --peer ...`, read by pyarrow.flight (an independent Flight
client): a server answers ListFlights and GetFlightInfo for the union of its flights and its
peers'; a flight on several servers is one FlightInfo whose endpoints carry the tickets and
locations their owner issued (a client that follows locations reads each from its owner); the
caller's token is forwarded; a TLS peer; a peer down or stopped fails the call with UNAVAILABLE
naming it, or with --allow-partial is named in app_metadata; two servers that list each other
answer once; and ferry's own client reads a federated flight whole. Every read is compared with
pyarrow's read of the files."""
import concurrent.futures
import json
import os
import re
import signal
import socket
import subprocess
import time

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from flight_support import MANUAL_CLOCK, Serve, advance_clock, ferry_cli, mixed_table
from ferry_process import stop_process

ERRORS = (fl.FlightError, pa.ArrowException)


def _write(path, table):
    with pa.ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=100)
    return str(path)


def _tables(tmp_path):
    """Two halves of one table (a's rows, then b's), each written to a file."""
    table = mixed_table(600)
    a, b = table.slice(0, 300), table.slice(300, 300)
    return table, (a, _write(tmp_path / "a.arrows", a)), (b, _write(tmp_path / "b.arrows", b))


def _info(client, name, **kw):
    return client.get_flight_info(fl.FlightDescriptor.for_path(name), **kw)


def _grpc_location(endpoint):
    return next(l.uri.decode() for l in endpoint.locations
                if l.uri.decode().startswith("grpc"))


def _read_following_locations(endpoint, default, options=None):
    """An endpoint read where its locations say: its grpc location when it has one (another
    server), else on the server asked."""
    uris = [l.uri.decode() for l in endpoint.locations]
    grpc_uris = [u for u in uris if u.startswith("grpc")]
    target = grpc_uris[0] if grpc_uris else default
    return fl.connect(target).do_get(endpoint.ticket, options=options).read_all()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_flight_on_two_servers_is_one_flight_info(tmp_path):
    table, (a, a_path), (b, b_path) = _tables(tmp_path)
    with Serve(f"t={a_path}", f"only_a={a_path}", tmp=str(tmp_path)) as A:
        with Serve(f"t={b_path}", f"only_b={b_path}", "--peer", A.uri, tmp=str(tmp_path)) as B:
            client = fl.connect(B.uri)
            names = sorted(f.descriptor.path[0].decode() for f in client.list_flights())
            assert names == ["only_a", "only_b", "t"]
            info = _info(client, "t")
            # This server's endpoint first, then the peer's; rows of two servers have no order.
            assert len(info.endpoints) == 2
            assert not info.ordered
            assert info.total_records == 600
            assert info.schema.equals(table.schema)
            own, forwarded = info.endpoints
            assert "arrow-flight-reuse-connection://?" in [l.uri.decode() for l in own.locations]
            forwarded_uris = [l.uri.decode() for l in forwarded.locations]
            assert A.uri in forwarded_uris
            assert "arrow-flight-reuse-connection://?" not in forwarded_uris
            assert _read_following_locations(own, B.uri).equals(b)
            assert _read_following_locations(forwarded, B.uri).equals(a)
            # The forwarded ticket is the peer's own: this server never minted it.
            with pytest.raises(ERRORS, match="unknown ticket"):
                client.do_get(forwarded.ticket).read_all()
            # A flight only the peer has comes whole from the peer.
            only_a = _info(client, "only_a")
            assert len(only_a.endpoints) == 1
            assert _read_following_locations(only_a.endpoints[0], B.uri).equals(a)
            # The peer itself answers for itself alone.
            assert len(_info(fl.connect(A.uri), "t").endpoints) == 1
            with pytest.raises(ERRORS, match="no flight"):
                _info(fl.connect(A.uri), "only_b")
            # ferry's client follows every endpoint's locations: both halves, each once.
            out = tmp_path / "got.arrows"
            subprocess.run([ferry_cli(), "get", B.uri, "--path", "t", "--to", str(out)],
                           check=True, capture_output=True, timeout=60)
            got = pa.ipc.open_stream(str(out)).read_all()
            assert got.num_rows == 600
            assert sorted(got.column("st").to_pylist(), key=lambda r: r["a"]) == \
                table.column("st").to_pylist()


def test_servers_that_list_each_other_answer_once(tmp_path):
    _, (a, a_path), (b, b_path) = _tables(tmp_path)
    # A names B's port before B listens. A port found free may be taken by another test before
    # B binds it: then both start again, on another.
    for attempt in range(5):
        port_b = _free_port()
        A = Serve(f"t={a_path}", "--peer", f"grpc://127.0.0.1:{port_b}", tmp=str(tmp_path))
        try:
            B = Serve(f"t={b_path}", "--peer", A.uri, listen=f"127.0.0.1:{port_b}",
                      tmp=str(tmp_path))
        except AssertionError as e:
            A.close()
            if "in use" not in str(e) or attempt == 4:
                raise
            continue
        with A, B:
            for server in (A, B):
                client = fl.connect(server.uri)
                [listed] = list(client.list_flights())
                assert len(listed.endpoints) == 2
                assert len(_info(client, "t").endpoints) == 2
        return


def test_the_callers_token_is_forwarded(tmp_path):
    _, (a, a_path), (b, b_path) = _tables(tmp_path)
    env = {"FERRY_TOKEN": "s3cret"}
    auth = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer s3cret")])
    with Serve(f"t={a_path}", env=env, tmp=str(tmp_path)) as A:
        with Serve(f"t={b_path}", "--peer", A.uri, env=env, tmp=str(tmp_path)) as B:
            info = _info(fl.connect(B.uri), "t", options=auth)
            assert len(info.endpoints) == 2
            assert _read_following_locations(info.endpoints[1], B.uri, auth).equals(a)
            with pytest.raises(fl.FlightUnauthenticatedError):
                _info(fl.connect(B.uri), "t")
        # A server whose callers hold another token than the peer's: the peer refuses, named.
        with Serve(f"t={b_path}", "--peer", A.uri, env={"FERRY_TOKEN": "other"},
                   tmp=str(tmp_path)) as C:
            other = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer other")])
            with pytest.raises(ERRORS, match=f"peer {re.escape(A.uri)}.*UNAUTHENTICATED"):
                _info(fl.connect(C.uri), "t", options=other)


def test_a_tls_peer(tmp_path):
    _, (a, a_path), (b, b_path) = _tables(tmp_path)
    key, cert = tmp_path / "a.key", tmp_path / "a.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=a",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    with Serve(f"t={a_path}", "--tls-cert", cert, "--tls-key", key, tmp=str(tmp_path)) as A:
        assert A.uri.startswith("grpc+tls://")
        with Serve(f"t={b_path}", "--peer", A.uri, "--peer-tls-roots", cert,
                   tmp=str(tmp_path)) as B:
            info = _info(fl.connect(B.uri), "t")
            assert len(info.endpoints) == 2
            forwarded = info.endpoints[1]
            assert A.uri in [l.uri.decode() for l in forwarded.locations]
            peer = fl.connect(A.uri, tls_root_certs=cert.read_bytes())
            assert peer.do_get(forwarded.ticket).read_all().equals(a)
        # Without trusting its certificate the peer is unavailable, and named.
        with Serve(f"t={b_path}", "--peer", A.uri, tmp=str(tmp_path)) as B:
            with pytest.raises(fl.FlightUnavailableError, match=f"peer {re.escape(A.uri)}"):
                _info(fl.connect(B.uri), "t")


def test_a_peer_down_fails_the_call_naming_it_or_is_named_with_allow_partial(tmp_path):
    _, (a, a_path), (b, b_path) = _tables(tmp_path)
    gone = f"grpc://127.0.0.1:{_free_port()}"
    with Serve(f"t={b_path}", "--peer", gone, tmp=str(tmp_path)) as B:
        start = time.monotonic()
        with pytest.raises(fl.FlightUnavailableError, match=f"peer {re.escape(gone)}"):
            _info(fl.connect(B.uri), "t")
        with pytest.raises(fl.FlightUnavailableError, match=f"peer {re.escape(gone)}"):
            list(fl.connect(B.uri).list_flights())
        assert time.monotonic() - start < 2 * 2 + 1
    with Serve(f"t={b_path}", "--peer", gone, "--allow-partial", tmp=str(tmp_path)) as B:
        info = _info(fl.connect(B.uri), "t")
        assert len(info.endpoints) == 1
        assert fl.connect(B.uri).do_get(info.endpoints[0].ticket).read_all().equals(b)
        missing = json.loads(info.app_metadata)["missing_peers"]
        assert [m["peer"] for m in missing] == [gone]
        [listed] = list(fl.connect(B.uri).list_flights())
        assert json.loads(listed.app_metadata)["missing_peers"][0]["peer"] == gone


def test_a_stopped_peer_fails_the_call_at_the_peer_timeout(tmp_path):
    # B runs on a manual clock: its question to the stopped peer ends when the test moves the clock
    # to the peer timeout (30 s, which no wall clock waits out here), and not a tick before.
    _, (a, a_path), (b, b_path) = _tables(tmp_path)
    with Serve(f"t={a_path}", tmp=str(tmp_path)) as A:
        with Serve(f"t={b_path}", "--peer", A.uri, "--peer-timeout", "30", env=MANUAL_CLOCK,
                   tmp=str(tmp_path)) as B:
            client = fl.connect(B.uri)
            assert len(_info(client, "t").endpoints) == 2
            stop_process(A.proc.pid)
            try:
                start = time.monotonic()
                with concurrent.futures.ThreadPoolExecutor(1) as pool:
                    asked = pool.submit(_info, client, "t")
                    # Each move waits for the question's wait on the clock: after the first, the
                    # question is still waiting for the peer; the second ends it.
                    advance_clock(client, 29_999, waiters=1)
                    advance_clock(client, 1, waiters=1)
                    with pytest.raises(fl.FlightUnavailableError,
                                       match=f"peer {re.escape(A.uri)} is unavailable"):
                        asked.result(timeout=20)
                assert time.monotonic() - start < 20
            finally:
                os.kill(A.proc.pid, signal.SIGCONT)
            assert len(_info(client, "t").endpoints) == 2


def test_peers_file_and_bad_peers(tmp_path):
    _, (a, a_path), (b, b_path) = _tables(tmp_path)
    with Serve(f"t={a_path}", tmp=str(tmp_path)) as A:
        peers = tmp_path / "peers"
        peers.write_text(f"# the other half\n  {A.uri}  \n\n")
        with Serve(f"t={b_path}", "--peers-file", str(peers), tmp=str(tmp_path)) as B:
            assert len(_info(fl.connect(B.uri), "t").endpoints) == 2
    bad = subprocess.run([ferry_cli(), "serve", "--flight", "127.0.0.1:0", "--peer",
                          "ucx://127.0.0.1:1", f"t={b_path}"],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode != 0
    assert 'peer "ucx://127.0.0.1:1" is not a grpc://' in bad.stderr


class _CountingProxy:
    """A TCP relay on 127.0.0.1 to `port` that counts the connections it accepted, so that a test
    sees how often a server connects to its peer."""

    def __init__(self, port):
        import threading
        self.target = port
        self.accepted = 0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        import threading
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                conn.close()
                continue
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        try:
            while data := src.recv(1 << 16):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.listener.close()


def test_a_peer_connection_is_kept_and_made_afresh_after_the_peer_restarts(tmp_path):
    _, (a, a_path), (b, b_path) = _tables(tmp_path)
    port = _free_port()
    A = Serve(f"t={a_path}", listen=f"127.0.0.1:{port}", tmp=str(tmp_path))
    proxy = _CountingProxy(port)
    try:
        with Serve(f"t={b_path}", "--peer", f"grpc://127.0.0.1:{proxy.port}",
                   tmp=str(tmp_path)) as B:
            client = fl.connect(B.uri)
            for _ in range(5):
                assert len(_info(client, "t").endpoints) == 2
            assert len(list(client.list_flights())) == 1
            # Six questions, one connection to the peer.
            assert proxy.accepted == 1
            A.close()
            A = Serve(f"t={a_path}", listen=f"127.0.0.1:{port}", tmp=str(tmp_path))
            # The kept connection died with the old peer: the next question connects afresh.
            info = _info(client, "t")
            assert len(info.endpoints) == 2
            assert _read_following_locations(info.endpoints[1], B.uri).equals(a)
            assert proxy.accepted >= 2
    finally:
        proxy.close()
        A.close()
