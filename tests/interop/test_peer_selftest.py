"""Self-test of the independent Dissociated IPC peer: `dipc_peer serve` -> `dipc_peer get`.

pyarrow writes the input streams and checks the output; the peer's reports are checked against
message counts pyarrow reads from the same files. Every combination runs with UCX's default
transports and again with UCX_TLS=tcp,self, so that loopback shared memory cannot hide a
TCP-only bug. Loopback (127.0.0.1) only; the servers take free ports.
"""

import base64
import decimal
import glob
import os
import subprocess
import urllib.parse

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from peer_harness import REFUSED, REPO, Server, get, peer_binary, ucx_env

TLS = {"default": None, "tcp": "tcp,self"}
VECTORS = os.path.join(REPO, "..", "shared", "testdata", "arrow-testing")


# ---- data ----


def _types_batches():
    """Batches covering the common types, nested types and dictionaries (with a delta and a
    replacement), and an empty batch in the middle."""
    n = 7

    def col(i):
        return [None if (k + i) % 3 == 0 else k for k in range(n)]

    ints = col(0)
    strs = [None if v is None else f"s{v}" * (v % 4) for v in col(1)]
    cols = {
        "i8": pa.array(ints, pa.int8()),
        "i16": pa.array(col(2), pa.int16()),
        "i32": pa.array(col(1), pa.int32()),
        "i64": pa.array(col(0), pa.int64()),
        "u8": pa.array(col(1), pa.uint8()),
        "u64": pa.array(col(2), pa.uint64()),
        "f32": pa.array([None if v is None else v / 3 for v in col(0)], pa.float32()),
        "f64": pa.array([None if v is None else v / 7 for v in col(1)], pa.float64()),
        "bool": pa.array([None if v is None else v % 2 == 0 for v in col(2)], pa.bool_()),
        "str": pa.array(strs, pa.string()),
        "lstr": pa.array(strs, pa.large_string()),
        "bin": pa.array([None if s is None else s.encode() for s in strs], pa.binary()),
        "fsb": pa.array([None if v is None else bytes([v]) * 3 for v in col(0)],
                        pa.binary(3)),
        "strview": pa.array(strs, pa.string_view()),
        "dec": pa.array([None if v is None else decimal.Decimal(v) / 100 for v in col(1)],
                        pa.decimal128(12, 2)),
        "date": pa.array(col(2), pa.date32()),
        "ts": pa.array(col(0), pa.timestamp("us", tz="UTC")),
        "t64": pa.array(col(1), pa.time64("ns")),
        "dur": pa.array(col(2), pa.duration("ms")),
        "null": pa.nulls(n),
        "list": pa.array([None if v is None else list(range(v % 3)) for v in col(0)],
                         pa.list_(pa.int32())),
        "llist": pa.array([None if s is None else [s, s] for s in strs],
                          pa.large_list(pa.string())),
        "fsl": pa.array([None if v is None else [v, v + 1] for v in col(1)],
                        pa.list_(pa.int16(), 2)),
        "struct": pa.array([None if v is None else {"a": v, "b": f"b{v}"} for v in col(2)],
                           pa.struct([("a", pa.int64()), ("b", pa.string())])),
        "map": pa.array([None if v is None else [(f"k{v}", v)] for v in col(0)],
                        pa.map_(pa.string(), pa.int32())),
        "dense": pa.UnionArray.from_dense(pa.array([0, 1, 0, 1, 0, 1, 0], pa.int8()),
                                          pa.array([0, 0, 1, 1, 2, 2, 3], pa.int32()),
                                          [pa.array([1, 2, 3, 4]), pa.array(["a", "b", "c"])]),
        "ree": pa.RunEndEncodedArray.from_arrays(pa.array([3, 7], pa.int32()),
                                                 pa.array([1, None])),
    }
    base = pa.RecordBatch.from_pydict(cols)

    def with_dict(batch, values, indices):
        d = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(values))
        ld = pa.array([[i] if i is not None else None for i in indices], pa.list_(pa.int64()))
        return batch.append_column("dict", d).append_column("ld", ld)

    first = with_dict(base, ["x", "y"], [0, 1, None, 1, 0, 0, 1])
    delta = with_dict(base, ["x", "y", "z"], [2, 1, None, 0, 2, 0, 1])  # extends: a delta
    empty = first.slice(0, 0)
    replaced = with_dict(base, ["p", "q"], [1, 0, 1, None, 0, 0, 1])  # new values: replacement
    return [first, delta, empty, replaced]


def _write(path, schema, batches, **options):
    with ipc.new_stream(str(path), schema, options=ipc.IpcWriteOptions(**options)) as w:
        for b in batches:
            w.write_batch(b)


@pytest.fixture(scope="session")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("dipc")
    sets = {}
    batches = _types_batches()
    _write(d / "types.arrows", batches[0].schema, batches, emit_dictionary_deltas=True)
    sets["types"] = (d / "types.arrows", batches)
    many = [pa.RecordBatch.from_pydict({"i": [k, k + 1], "s": [f"r{k}", None],
                                        "l": [[k], []]}) for k in range(1000)]
    _write(d / "many.arrows", many[0].schema, many)
    sets["many"] = (d / "many.arrows", many)
    schema = pa.schema([("a", pa.int64()), ("b", pa.string())], metadata={"k": "v"})
    _write(d / "schema_only.arrows", schema, [])
    sets["schema_only"] = (d / "schema_only.arrows", [])
    big = pa.RecordBatch.from_pydict({"a": pa.array(range(400_000), pa.int64()),
                                      "b": pa.array([float(k) for k in range(400_000)])})
    _write(d / "compressed.arrows", big.schema, [big, big.slice(5, 1000)], compression="zstd")
    sets["compressed"] = (d / "compressed.arrows", [big, big.slice(5, 1000)])
    # megabyte buffers: rendezvous tagged bodies and large ucp_get reads
    large = pa.RecordBatch.from_pydict({
        "a": pa.array(range(1_000_000), pa.int64()),
        "s": pa.array([f"value-{k}" for k in range(200_000)] * 5, pa.string())})
    _write(d / "large.arrows", large.schema, [large, large.slice(3, 500_000)])
    sets["large"] = (d / "large.arrows", [large, large.slice(3, 500_000)])
    return sets


def _messages(path):
    """(number of messages, number of DictionaryBatch + RecordBatch messages), by pyarrow."""
    total = bodies = 0
    with open(path, "rb") as f:
        for msg in ipc.MessageReader.open_stream(f):
            total += 1
            bodies += msg.type in ("dictionary", "record batch")
    return total, bodies


def _check_stream(inp, out, batches=None):
    """OUT holds the same messages as IN (compared by pyarrow) and reads back as the same data."""
    with open(inp, "rb") as a, open(out, "rb") as b:
        ma = list(ipc.MessageReader.open_stream(a))
        mb = list(ipc.MessageReader.open_stream(b))
    assert len(ma) == len(mb)
    for x, y in zip(ma, mb):
        assert x.type == y.type
        assert x.metadata.to_pybytes().rstrip(b"\0") == y.metadata.to_pybytes().rstrip(b"\0")
        assert (x.body is None and y.body is None) or x.body.equals(y.body)
    if batches is None:
        return
    got = list(ipc.open_stream(str(out)))
    assert len(got) == len(batches)
    for g, want in zip(got, batches):
        assert g.equals(want), f"{g}\n!=\n{want}"


def _assert_frees(srv, cli, body, any_bodies=True):
    assert srv["unknown_frees"] == 0 and srv["duplicate_frees"] == 0
    assert srv["malformed_frees"] == 0 and srv["addresses_unfreed"] == 0
    if body == 1:
        assert (srv["addresses_sent"] > 0) == any_bodies
        assert srv["addresses_freed"] == srv["addresses_sent"]
        assert cli["addresses_received"] == cli["address_pairs"] == srv["addresses_sent"]
        assert cli["addresses_freed"] == srv["addresses_sent"]
    else:
        assert srv["addresses_sent"] == 0 and cli["addresses_received"] == 0


# ---- round trips ----


@pytest.mark.parametrize("tls", sorted(TLS))
@pytest.mark.parametrize("shape", ["one", "split"])
@pytest.mark.parametrize("body", [0, 1])
@pytest.mark.parametrize("name", ["types", "many"])
def test_roundtrip(tmp_path, data, name, body, shape, tls):
    path, batches = data[name]
    env = ucx_env(TLS[tls])
    with Server(tmp_path, path, body=body, split=shape == "split", env=env) as s:
        if body == 1:
            uri = s.data_uri or s.uri
            assert "&free_data=" in uri and "&remote_handle=" in uri
        p, cli = get(tmp_path, s.get_args(), tmp_path / "out.arrows", env=env)
        assert p.returncode == 0, p.stderr
        rc, err, srv = s.finish()
    assert rc == 0, err
    # the peer sends the file's metadata bytes and pads to 8 as pyarrow does: same bytes
    assert (tmp_path / "out.arrows").read_bytes() == path.read_bytes()
    _check_stream(path, tmp_path / "out.arrows", batches)
    total, bodies = _messages(path)
    assert cli["metadata_received"] == total and cli["eos_seq"] == total
    assert cli["bodies_received"] == bodies and cli["body_types"][str(body)] == bodies
    assert srv["bodies_sent"] == bodies and srv["tickets_refused"] == 0
    assert srv["metadata_streams"] == 1 and srv["data_streams"] == 1
    _assert_frees(srv, cli, body)


@pytest.mark.parametrize("tls", sorted(TLS))
@pytest.mark.parametrize("name", ["schema_only", "compressed", "large"])
@pytest.mark.parametrize("body", [0, 1])
def test_roundtrip_edge_streams(tmp_path, data, name, body, tls):
    path, batches = data[name]
    env = ucx_env(TLS[tls])
    with Server(tmp_path, path, body=body, env=env) as s:
        p, cli = get(tmp_path, s.get_args(), tmp_path / "out.arrows", env=env)
        assert p.returncode == 0, p.stderr
        rc, err, srv = s.finish()
    assert rc == 0, err
    _check_stream(path, tmp_path / "out.arrows", batches)
    assert cli["bodies_received"] == len(batches)
    _assert_frees(srv, cli, body, any_bodies=bool(batches))


@pytest.mark.parametrize("am", ["eager", "rndv"])
def test_reordered_metadata(tmp_path, data, am):
    """Metadata sent shuffled (and forced eager or rendezvous) is reordered by sequence."""
    path, batches = data["types"]
    with Server(tmp_path, path, body=1, extra=["--shuffle", "11", "--am", am]) as s:
        p, cli = get(tmp_path, s.get_args(), tmp_path / "out.arrows")
        assert p.returncode == 0, p.stderr
        rc, err, srv = s.finish()
    assert rc == 0, err
    _check_stream(path, tmp_path / "out.arrows", batches)
    total, _ = _messages(path)
    assert cli["out_of_order"] > 0
    assert cli["am_" + am] == total + 1  # every metadata message and the end of stream
    _assert_frees(srv, cli, 1)


def test_separate_data_listener(tmp_path, data):
    """--data-listen puts the data stream on its own port: two servers in the URIs."""
    path, batches = data["types"]
    with Server(tmp_path, path, body=1, split=True,
                extra=["--data-listen", "127.0.0.1:0"]) as s:
        assert urllib.parse.urlsplit(s.meta_uri).port != urllib.parse.urlsplit(s.data_uri).port
        p, cli = get(tmp_path, s.get_args(), tmp_path / "out.arrows")
        assert p.returncode == 0, p.stderr
        rc, err, srv = s.finish()
    assert rc == 0, err
    _check_stream(path, tmp_path / "out.arrows", batches)
    _assert_frees(srv, cli, 1)


def test_server_closing_after_last_send(tmp_path, data):
    path, batches = data["many"]
    with Server(tmp_path, path, body=0, extra=["--close-after-send"]) as s:
        p, _ = get(tmp_path, s.get_args(), tmp_path / "out.arrows")
        assert p.returncode == 0, p.stderr
        assert s.finish()[0] == 0
    _check_stream(path, tmp_path / "out.arrows", batches)


def _uri_variants(uri):
    """The same URI with the remote_handle in every accepted spelling, plus ignored extras."""
    head, _, query = uri.partition("?")
    params = urllib.parse.parse_qs(query)
    raw = base64.b64decode(params["remote_handle"][0])
    std = base64.b64encode(raw).decode()
    url = base64.urlsafe_b64encode(raw).decode()
    keep = f"want_data={params['want_data'][0]}&free_data={params['free_data'][0]}"
    return [
        f"{head}?{keep}&remote_handle={std}",  # not percent-encoded
        f"{head}?{keep}&remote_handle={std.rstrip('=')}",  # unpadded
        f"{head}?{keep}&remote_handle={url}",  # URL-safe
        f"{head}?{keep}&remote_handle={urllib.parse.quote(url.rstrip('='), safe='')}",
        f"{head}/?x-ferry-extension=1&{keep}&remote_handle={urllib.parse.quote(std, safe='')}",
    ]


def test_uri_forms(tmp_path, data):
    path, batches = data["types"]
    with Server(tmp_path, path, body=1, once=False) as s:
        # printed as standard base64, percent-encoded
        printed = s.uri.rpartition("remote_handle=")[2]
        assert not set("+/=") & set(printed)
        base64.b64decode(urllib.parse.unquote(printed), validate=True)
        for k, uri in enumerate(_uri_variants(s.uri)):
            p, _ = get(tmp_path, [uri], tmp_path / f"out{k}.arrows")
            assert p.returncode == 0, (uri, p.stderr)
            _check_stream(path, tmp_path / f"out{k}.arrows", batches)
        rc, err, srv = s.finish(terminate=True)
    assert rc == 0, err
    assert srv["clients"] == 5 and srv["addresses_freed"] == srv["addresses_sent"]


# ---- clean errors ----


@pytest.mark.parametrize("shape", ["one", "split"])
def test_refused_ticket(tmp_path, data, shape):
    path, _ = data["types"]
    with Server(tmp_path, path, body=1, split=shape == "split", ticket="right") as s:
        p, _ = get(tmp_path, s.get_args(), tmp_path / "out.arrows", ticket="wrong")
        rc, err, srv = s.finish()
    assert p.returncode == 2
    assert REFUSED in p.stderr
    assert not (tmp_path / "out.arrows").exists()
    assert rc == 0 and srv["tickets_refused"] >= 1 and srv["metadata_sent"] == 0, err


def test_unreachable_server(tmp_path):
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    p, _ = get(tmp_path, [f"ucx://127.0.0.1:{port}?want_data=1"], tmp_path / "o.arrows",
               extra=["--timeout", "5"], timeout=20)
    assert p.returncode == 2 and "cannot reach" in p.stderr, p.stderr


SERVER_FAULTS = [
    ("tag-reserved", 0, "reserved bits 32-55 are not 0"),
    ("body-length", 0, "its metadata says bodyLength"),
    ("body-length", 1, "but its buffer lengths add up to"),
    ("list-length", 1, "the metadata says"),
    ("am-header", 1, "AM header"),
    ("dup-seq", 0, "arrived twice"),
    ("bad-flatbuffer", 0, "metadata seq 1: root offset"),
    ("no-eos", 0, "no end of stream"),
    ("eos-length", 0, "it must be exactly 5"),
    ("schema-late", 1, "Schema"),
    ("gap", 0, "gap: no metadata for seq 1"),
    ("close-early", 0, "before the stream was complete"),
    ("close-early", 1, "seq"),
    ("extra-body", 0, "an extra tagged message"),
    ("wrong-connection", 1, "arrived on the data connection"),
]


@pytest.mark.parametrize("fault,body,message", SERVER_FAULTS,
                         ids=[f"{f}-{b}" for f, b, _ in SERVER_FAULTS])
def test_client_rejects_a_bad_server(tmp_path, data, fault, body, message):
    path, _ = data["types"]
    split = fault == "wrong-connection"
    with Server(tmp_path, path, body=body, split=split, extra=["--fault", fault], timeout=5) as s:
        p, _ = get(tmp_path, s.get_args(), tmp_path / "out.arrows", extra=["--timeout", "2"])
        s.finish()
    assert p.returncode == 2, p.stderr
    assert message in p.stderr
    assert p.stderr.startswith("dipc_peer get: ") and p.stderr.count("\n") == 1


CLIENT_FAULTS = [
    ("free-unknown", {"unknown_frees": 1, "addresses_unfreed": 0}),
    ("free-none", {"addresses_freed": 0, "free_messages": 0}),
    ("free-malformed", {"malformed_frees": 1, "addresses_unfreed": 0}),
    ("free-twice", {"duplicate_frees": 1, "addresses_unfreed": 0}),
]


@pytest.mark.parametrize("fault,expect", CLIENT_FAULTS, ids=[f for f, _ in CLIENT_FAULTS])
def test_server_copes_with_a_bad_client(tmp_path, data, fault, expect):
    path, _ = data["types"]
    with Server(tmp_path, path, body=1) as s:
        p, _ = get(tmp_path, s.get_args(), tmp_path / "out.arrows", extra=["--fault", fault])
        assert p.returncode == 0, p.stderr
        rc, err, srv = s.finish()
    assert rc == 0, err
    for key, value in expect.items():
        assert srv[key] == value, (key, srv)
    if fault == "free-none":
        assert srv["addresses_unfreed"] == srv["addresses_sent"] > 0
    else:
        assert srv["addresses_freed"] == srv["addresses_sent"]


@pytest.mark.parametrize("uri,message", [
    ("http://127.0.0.1:1?want_data=1", "does not start with ucx://"),
    ("ucx://127.0.0.1:1", "has no want_data"),
    ("ucx://127.0.0.1:1?want_data=-1", "is not an unsigned 64-bit decimal"),
    ("ucx://127.0.0.1:1?want_data=18446744073709551616", "is not an unsigned 64-bit decimal"),
    ("ucx://127.0.0.1:1?want_data=1&want_data=2", "appears twice"),
    ("ucx://127.0.0.1:1?want_data=1&remote_handle=%ZZ", "bad percent-escape"),
    ("ucx://127.0.0.1:1?want_data=1&remote_handle=a", "is not base64"),
    ("ucx://127.0.0.1:99999?want_data=1", "bad port"),
    ("ucx://127.0.0.1:1/path?want_data=1", "has a path"),
])
def test_bad_uris(tmp_path, uri, message):
    p, _ = get(tmp_path, [uri], tmp_path / "o.arrows", timeout=20)
    assert p.returncode == 2 and message in p.stderr, p.stderr


def test_bad_input_files(tmp_path):
    """The server's stream parser refuses malformed files with a message, never a crash."""
    cases = {"empty": b"", "short": b"\xff\xff\xff\xff\x10",
             "lying-length": b"\xff\xff\xff\xff\x00\x01\x00\x00" + b"\0" * 16,
             "garbage": bytes(range(256)) * 4}
    files = []
    for name, raw in cases.items():
        (tmp_path / name).write_bytes(raw)
        files.append(tmp_path / name)
    files += sorted(glob.glob(os.path.join(VECTORS, "ipc-malformed", "*")))
    refused = 0
    for f in files:
        proc = subprocess.Popen([peer_binary(), "serve", "--listen", "127.0.0.1:0", "--file",
                                 str(f), "--ticket", "t", "--body", "1", "--once"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = proc.stdout.readline()
        if line.startswith("URI "):  # parsed: a valid stream after all
            proc.terminate()
        out, err = proc.communicate(timeout=20)
        assert proc.returncode in (0, 2), (f, proc.returncode, err)
        if proc.returncode == 2:
            refused += 1
            assert err.startswith("dipc_peer serve: ") and str(f) in err, err
    assert refused >= len(cases)


@pytest.mark.skipif(not os.path.isdir(VECTORS), reason="../shared/testdata/arrow-testing is not present")
def test_arrow_integration_vectors(tmp_path):
    """Every official IPC stream vector goes through the peer as type 1 (one server, many
    clients) and comes back with the same messages."""
    streams = sorted(glob.glob(os.path.join(VECTORS, "ipc-integration", "*", "*.stream")))
    assert streams
    for k, f in enumerate(streams):
        body = k % 2
        with Server(tmp_path, f, body=body) as s:
            p, cli = get(tmp_path, s.get_args(), tmp_path / "out.arrows")
            assert p.returncode == 0, (f, p.stderr)
            rc, err, srv = s.finish()
        assert rc == 0, (f, err)
        _check_stream(f, tmp_path / "out.arrows")
        _assert_frees(srv, cli, body, any_bodies=cli["address_pairs"] > 0)
