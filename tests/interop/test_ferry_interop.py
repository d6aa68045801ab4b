"""ferry against the independent Dissociated IPC peer (dipc_peer, which shares no code with src/):
`ferry get` reads from the peer's server and the peer's client reads from `ferry serve`, for
both body types, one connection and the split shape, and `ferry serve --keep` (both types).
pyarrow checks every table; the peer's reports and ferry's server totals check that every type-1 address lent
was freed. The peer refuses anything the protocol does not define (an unknown tag, an Active
Message header, metadata type 0xFF), so a clean run proves the wire is the bare protocol.

Every case runs with UCX's own transport choice and again with UCX_TLS=tcp,self, so that loopback
shared memory cannot hide a TCP-only bug. Loopback only; servers take free ports.
"""

import os
import re
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from peer_harness import REFUSED, Server, get, ucx_env

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from ferry_process import ferry_cli  # noqa: E402
from netns import hosts_or_skip  # noqa: E402

TLS = {"default": None, "tcp": "tcp,self"}


def _write(path, schema, batches, **options):
    with ipc.new_stream(str(path), schema, options=ipc.IpcWriteOptions(**options)) as w:
        for b in batches:
            w.write_batch(b)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Streams: nested and dictionary types with a delta, a replacement and an empty batch;
    1,000 small batches; and batches of several megabytes (rendezvous bodies, large gets)."""
    d = tmp_path_factory.mktemp("interop")
    sets = {}
    n = 9
    vals = [None if k % 4 == 0 else k for k in range(n)]
    strs = [None if v is None else f"v{v}" * (v % 3) for v in vals]
    base = pa.RecordBatch.from_pydict({
        "i64": pa.array(vals, pa.int64()),
        "f64": pa.array([None if v is None else v / 3 for v in vals]),
        "str": pa.array(strs),
        "bool": pa.array([None if v is None else v % 2 == 0 for v in vals]),
        "dec": pa.array([None if v is None else v * 100 for v in vals], pa.decimal128(10, 2)),
        "ts": pa.array(vals, pa.timestamp("ms")),
        "list": pa.array([None if v is None else list(range(v % 3)) for v in vals],
                         pa.list_(pa.int32())),
        "struct": pa.array([None if v is None else {"a": v, "b": str(v)} for v in vals],
                           pa.struct([("a", pa.int64()), ("b", pa.string())])),
        "map": pa.array([None if v is None else [(f"k{v}", v)] for v in vals],
                        pa.map_(pa.string(), pa.int64())),
    })

    def with_dict(values, indices):
        return base.append_column(
            "dict", pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(values)))

    first = with_dict(["x", "y"], [0, 1, None, 1, 0, 0, 1, 1, 0])
    delta = with_dict(["x", "y", "z"], [2, 1, None, 0, 2, 0, 1, 2, 2])
    replaced = with_dict(["p", "q"], [1, 0, 1, None, 0, 0, 1, 0, 0])
    types = [first, delta, first.slice(0, 0), replaced]
    _write(d / "types.arrows", first.schema, types, emit_dictionary_deltas=True)
    sets["types"] = (d / "types.arrows", types)
    many = [pa.RecordBatch.from_pydict({"i": [k, k + 1], "s": [f"r{k}", None]})
            for k in range(1000)]
    _write(d / "many.arrows", many[0].schema, many)
    sets["many"] = (d / "many.arrows", many)
    large = pa.RecordBatch.from_pydict({
        "a": pa.array(range(600_000), pa.int64()),
        "s": pa.array([f"value-{k}" for k in range(100_000)] * 6)})
    _write(d / "large.arrows", large.schema, [large, large.slice(7, 300_000)])
    sets["large"] = (d / "large.arrows", [large, large.slice(7, 300_000)])
    return sets


def _read(path):
    return list(ipc.open_stream(str(path)))


def _equal(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.equals(w), f"{g}\n!=\n{w}"


class FerryServe:
    """`ferry serve` as a context manager: .uris by name (stdout) and the split shape's
    metadata and data URIs by name (stderr)."""

    def __init__(self, tmp, datasets, *args, env=None, listen="127.0.0.1:0", wrap=()):
        self.err_path = os.path.join(tmp, f"serve-{time.monotonic_ns()}.err")
        self.err = open(self.err_path, "w+")
        # Beyond loopback (between the namespaces) a listener needs a token or --insecure; the peer
        # sends dataset names as tickets, so this test serves without one.
        beyond = [] if listen.startswith("127.") else ["--insecure"]
        argv = [*wrap, ferry_cli(), "serve", "--transport", "ucx", "--listen", listen,
                "--timeout", "10", *beyond, *args, *[f"{k}={v}" for k, v in datasets.items()]]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.err, text=True,
                                     env=env)
        self.uris = {}
        for _ in datasets:
            line = self.proc.stdout.readline()
            assert line, f"ferry serve exited: {self.stderr()}"
            name, uri = line.split()
            self.uris[name] = uri
        self.split = {}
        deadline = time.monotonic() + 10
        while len(self.split) < len(datasets) and time.monotonic() < deadline:
            for m in re.finditer(r"ferry serve: (\S+) split: ferry get (\S+) --data-uri (\S+)",
                                 self.stderr()):
                self.split[m.group(1)] = (m.group(2), m.group(3))
            time.sleep(0.02)
        assert len(self.split) == len(datasets), self.stderr()

    def stderr(self):
        self.err.flush()
        with open(self.err_path) as f:
            return f.read()

    def stop(self):
        """SIGTERM, then the totals ferry serve prints as it exits."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=15) == 0, self.stderr()
        m = re.search(r"(\d+) failed, (\d+) refused; addresses lent (\d+), freed (\d+), "
                      r"reclaimed (\d+), unknown frees (\d+)", self.stderr())
        assert m, self.stderr()
        keys = ["failed", "refused", "lent", "freed", "reclaimed", "unknown"]
        return dict(zip(keys, map(int, m.groups())))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.err.close()


def ferry_get(uri_args, ticket, out, env=None, wrap=()):
    return subprocess.run([*wrap, ferry_cli(), "get", *uri_args, "--ticket", ticket, "--to", str(out),
                           "--no-progress", "--timeout", "20"],
                          capture_output=True, text=True, env=env, timeout=90)


# ---- ferry get <- the peer's server ----


@pytest.mark.parametrize("tls", sorted(TLS))
@pytest.mark.parametrize("shape", ["one", "split"])
@pytest.mark.parametrize("body", [0, 1])
@pytest.mark.parametrize("name", ["types", "many", "large"])
def test_ferry_get_from_the_peer(tmp_path, data, name, body, shape, tls):
    path, batches = data[name]
    env = ucx_env(TLS[tls])
    with Server(tmp_path, path, body=body, split=shape == "split", env=env) as s:
        assert "ferry=" not in (s.uri or s.meta_uri)
        p = ferry_get(s.get_args("--data-uri"), "ticket-1", tmp_path / "out.arrows", env=env)
        assert p.returncode == 0, p.stderr
        rc, err, srv = s.finish()
    assert rc == 0, err
    _equal(_read(tmp_path / "out.arrows"), batches)
    assert srv["tickets_refused"] == 0 and srv["unknown_frees"] == 0
    if body == 1:
        assert srv["addresses_sent"] > 0
        assert srv["addresses_freed"] == srv["addresses_sent"], srv


@pytest.mark.parametrize("columns", [[0], [9, 2]], ids=["i64", "dict-and-str"])
@pytest.mark.parametrize("body", [0, 1])
def test_ferry_reads_some_columns_from_the_peer(tmp_path, data, body, columns):
    """ferry's client asked for some columns (ferry.dipc.connect(columns=...)) reads the peer's
    stream, dictionary deltas and replacements included: only those columns, equal to pyarrow's
    selection of the file. Over type-1 bodies it fetches only their buffers, and still frees every
    address the peer lent."""
    import ferry.dipc

    path, batches = data["types"]
    with Server(tmp_path, path, body=body) as s:
        stream = ferry.dipc.connect(s.uri, "ticket-1", columns=columns, timeout=20)
        got = pa.RecordBatchReader.from_stream(stream).read_all()
        del stream
        rc, err, srv = s.finish()
    assert rc == 0, err
    want = pa.Table.from_batches(batches).select(sorted(columns))
    assert got.equals(want), f"{got}\n!=\n{want}"
    assert srv["tickets_refused"] == 0 and srv["unknown_frees"] == 0
    if body == 1:
        assert srv["addresses_freed"] == srv["addresses_sent"] > 0, srv


def test_ferry_get_refused_by_the_peer(tmp_path, data):
    path, _ = data["types"]
    with Server(tmp_path, path, body=1, ticket="right") as s:
        p = ferry_get(s.get_args("--data-uri"), "wrong", tmp_path / "out.arrows")
        s.finish()
    assert p.returncode != 0
    assert REFUSED in p.stderr
    assert not (tmp_path / "out.arrows").exists()


# ---- the peer's client <- ferry serve ----


@pytest.mark.parametrize("tls", sorted(TLS))
@pytest.mark.parametrize("shape", ["one", "split"])
@pytest.mark.parametrize("mode", ["packed", "list", "keep", "keep-packed"])
@pytest.mark.parametrize("name", ["types", "many", "large"])
def test_the_peer_gets_from_ferry_serve(tmp_path, data, name, mode, shape, tls):
    path, batches = data[name]
    env = ucx_env(TLS[tls])
    packed = mode in ("packed", "keep-packed")
    args = ["--body-type", "packed"] if packed else ["--body-type", "list"]
    if mode.startswith("keep"):
        args.append("--keep")
    with FerryServe(tmp_path, {"t": path}, *args, env=env) as srv:
        uri = srv.uris["t"]
        assert "ferry=1" in uri  # spec peers ignore it
        uri_args = [uri] if shape == "one" else [srv.split["t"][0], "--data", srv.split["t"][1]]
        if not packed:
            data_uri = uri_args[-1]
            assert "&free_data=" in data_uri and "&remote_handle=" in data_uri
        p, cli = get(tmp_path, uri_args, tmp_path / "out.arrows", ticket="t", env=env)
        assert p.returncode == 0, p.stderr + srv.stderr()
        totals = srv.stop()
    _equal(_read(tmp_path / "out.arrows"), batches)
    assert totals["failed"] == 0 and totals["unknown"] == 0, srv.stderr()
    if packed:
        assert cli["body_types"].get("0", 0) == cli["bodies_received"]
        assert totals["lent"] == 0
    else:
        assert cli["body_types"].get("1", 0) == cli["bodies_received"]
        assert cli["addresses_received"] > 0
        assert cli["addresses_freed"] == cli["addresses_received"]
        assert totals["lent"] == cli["addresses_received"]
        assert totals["freed"] == totals["lent"] and totals["reclaimed"] == 0


def test_the_peer_is_refused_by_ferry_serve(tmp_path, data):
    path, _ = data["types"]
    with FerryServe(tmp_path, {"t": path}, "--body-type", "list", "-v") as srv:
        p, _ = get(tmp_path, [srv.uris["t"]], tmp_path / "out.arrows", ticket="nope")
        totals = srv.stop()
        log = srv.stderr()
    assert p.returncode == 2
    assert REFUSED in p.stderr
    assert totals["refused"] == 1 and totals["failed"] == 0
    assert 'unknown ticket "nope"' in log


def test_the_peer_reads_a_kept_dataset_only_with_its_own_uri(tmp_path, data):
    """A kept dataset's memory has its own remote_handle: asked for with another dataset's
    URI, ferry refuses (closes) instead of lending addresses the client cannot read."""
    path, batches = data["types"]
    with FerryServe(tmp_path, {"k": path, "f": path}, "--body-type", "list", "--keep") as srv:
        p, _ = get(tmp_path, [srv.uris["f"]], tmp_path / "bad.arrows", ticket="k")
        assert p.returncode == 2 and REFUSED in p.stderr
        p, _ = get(tmp_path, [srv.uris["k"]], tmp_path / "out.arrows", ticket="k")
        assert p.returncode == 0, p.stderr
        srv.stop()
    _equal(_read(tmp_path / "out.arrows"), batches)


# ---- across two network namespaces on a bridge: a real TCP link, no loopback ----


@pytest.fixture(scope="module")
def namespaces():
    """Two network namespaces (tests/support/netns.py) on one bridge, each given as (the prefix
    that runs a command there, its address); skips with the reason where the sandbox forbids
    them."""
    with hosts_or_skip(["a", "b"]) as hosts:
        yield (hosts["a"].wrap, hosts["a"].ip), (hosts["b"].wrap, hosts["b"].ip)


@pytest.mark.parametrize("body", [0, 1])
def test_across_namespaces_ferry_get_from_the_peer(tmp_path, data, namespaces, body):
    (wrap_a, host_a), (wrap_b, _) = namespaces
    path, batches = data["large"]
    with Server(tmp_path, path, body=body, listen=f"{host_a}:0", wrap=wrap_a) as s:
        assert s.uri.startswith(f"ucx://{host_a}:")
        p = ferry_get([s.uri], "ticket-1", tmp_path / "out.arrows", wrap=wrap_b)
        assert p.returncode == 0, p.stderr
        rc, err, srv = s.finish()
    assert rc == 0, err
    _equal(_read(tmp_path / "out.arrows"), batches)
    if body == 1:
        assert srv["addresses_freed"] == srv["addresses_sent"] > 0


@pytest.mark.parametrize("mode", ["packed", "list"])
def test_across_namespaces_the_peer_gets_from_ferry_serve(tmp_path, data, namespaces, mode):
    (wrap_a, host_a), (wrap_b, _) = namespaces
    path, batches = data["large"]
    with FerryServe(tmp_path, {"t": path}, "--body-type", mode, listen=f"{host_a}:0",
                    wrap=wrap_a) as srv:
        p, cli = get(tmp_path, [srv.uris["t"]], tmp_path / "out.arrows", ticket="t", wrap=wrap_b)
        assert p.returncode == 0, p.stderr + srv.stderr()
        totals = srv.stop()
    _equal(_read(tmp_path / "out.arrows"), batches)
    assert totals["failed"] == 0
    if mode == "list":
        assert totals["freed"] == totals["lent"] == cli["addresses_received"] > 0
        assert totals["reclaimed"] == 0
