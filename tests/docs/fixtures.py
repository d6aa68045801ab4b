"""What the pages' code blocks read and talk to: data files written with pyarrow (the oracle, not
ferry) and servers started with the `ferry` CLI. A page names them in its blocks' directives
(tests/docs/doc_blocks.py); each block runs in a directory of its own."""
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.ipc as ipc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from ferry_process import ServeProcess  # noqa: E402


def _write_stream(path, batches, schema=None, options=None):
    schema = schema or batches[0].schema
    with ipc.new_stream(str(path), schema, options=options) as w:
        for b in batches:
            w.write_batch(b)


def _write_file(path, batches):
    with ipc.new_file(str(path), batches[0].schema) as w:
        for b in batches:
            w.write_batch(b)


def _weather_batches():
    kind = pa.dictionary(pa.int32(), pa.string())
    schema = pa.schema([("id", pa.int64()), ("city", pa.string()), ("temps", pa.list_(pa.float64())),
                        ("kind", kind)])
    rows = [
        [(0, "Oslo", [1.5, 2.0], "rain"), (1, "Lima", [], "sun"), (2, "Kyiv", [0.5], "rain"),
         (3, "Lima", [20.0, 21.5], "sun")],
        [(4, "Oslo", [-4.0, -3.5, -1.0], "rain"), (5, "Kyiv", [12.0], "sun")],
    ]
    dictionary = pa.array(["rain", "sun"])
    out = []
    for part in rows:
        ids, cities, temps, kinds = zip(*part)
        indices = pa.array([dictionary.to_pylist().index(k) for k in kinds], pa.int32())
        out.append(pa.record_batch([pa.array(ids, pa.int64()), pa.array(cities),
                                    pa.array(temps, pa.list_(pa.float64())),
                                    pa.DictionaryArray.from_arrays(indices, dictionary)],
                                   schema=schema))
    return out


def _table(rows, seed=0):
    return pa.table({
        "id": pa.array(range(seed, seed + rows), pa.int64()),
        "fare": pa.array([(i % 97) * 0.25 for i in range(rows)], pa.float64()),
        "zone": pa.array([f"zone-{i % 13}" for i in range(rows)]),
    })


def _files():
    """name -> a function writing that fixture's files into a directory."""
    def weather(d):
        batches = _weather_batches()
        _write_stream(d / "weather.arrows", batches)
        # A stream cut inside its second message: every reader must refuse it.
        data = (d / "weather.arrows").read_bytes()
        (d / "broken.arrows").write_bytes(data[:len(data) // 3])

    def growing(d):
        schema = pa.schema([("k", pa.dictionary(pa.int32(), pa.string()))])
        batches = []
        for values in (["a"], ["a", "b"], ["a", "b", "c"]):
            dictionary = pa.array(values)
            indices = pa.array(range(len(values)), pa.int32())
            batches.append(pa.record_batch(
                [pa.DictionaryArray.from_arrays(indices, dictionary)], schema=schema))
        _write_stream(d / "growing.arrows", batches, schema)

    def flights(d):
        _write_stream(d / "primitive.arrows", _table(37).to_batches(max_chunksize=20))
        nested = pa.table({"xs": pa.array([[i, i + 1] for i in range(17)]),
                           "s": pa.array([{"a": i, "b": str(i)} for i in range(17)])})
        _write_stream(d / "nested.arrows", nested.to_batches(max_chunksize=10))

    def taxi(d):
        _write_stream(d / "taxi.arrows", _table(5000).to_batches(max_chunksize=1000))
        _write_file(d / "zones.arrow", _table(13).to_batches())

    def data(d):
        # A file of ten batches: the pages read batch 7 of it.
        _write_file(d / "data.arrow", _table(1000).to_batches(max_chunksize=100))
        _write_file(d / "big.arrow", _table(20000).to_batches(max_chunksize=5000))
        _write_file(d / "t.arrow", _table(10).to_batches())

    def token(d):
        (d / "token").write_text("s3cret\n")

    def parts(d):
        # A partitioned flight's files: three of 1,000 rows, written out of name order.
        (d / "parts").mkdir()
        for i in (2, 0, 1):
            _write_stream(d / "parts" / f"part-{i}.arrows",
                          _table(1000, seed=i).to_batches(max_chunksize=500))

    return {"weather": weather, "growing": growing, "flights": flights, "taxi": taxi,
            "data": data, "token": token, "parts": parts}


FILES = _files()


def make_files(names, directory):
    for name in names:
        if name not in FILES:
            raise KeyError(f"no docs fixture {name!r} (tests/docs/fixtures.py has "
                           f"{', '.join(sorted(FILES))})")
        FILES[name](directory)


class Server(ServeProcess):
    """`ferry serve ARGS...` in `directory`; .uri is the first line it printed (the last word of
    it: dipc prints NAME URI)."""

    def __init__(self, cli, args, directory, env):
        super().__init__(args, env=env, cwd=directory, cli=cli)
        self.uri = self.first_line().split()[-1]


def _self_signed(directory):
    key, cert = directory / "server.key", directory / "ca.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return key, cert


# name -> (files it serves, a function returning (server args, the URI the page shows)).
SERVERS = {
    # The Flight examples' server: taxi and the small files, no token.
    "flight": (["taxi", "flights"], lambda d: (
        ["--flight", "127.0.0.1:0", "taxi=taxi.arrows", "prim=primitive.arrows",
         "nested=nested.arrows"], "grpc://127.0.0.1:42871")),
    # The same with the token the pages use.
    "flight-token": (["taxi", "flights", "token"], lambda d: (
        ["--flight", "127.0.0.1:0", "--token-file", "token", "taxi=taxi.arrows",
         "prim=primitive.arrows", "nested=nested.arrows"], "grpc://127.0.0.1:42871")),
    # A partitioned flight: one endpoint per file of parts/.
    "flight-parts": (["parts"], lambda d: (
        ["--flight", "127.0.0.1:0", "taxi=parts/"], "grpc://host1:8815")),
    # TLS with a certificate made here (ca.pem) and the token.
    "flight-tls": (["taxi", "token"], lambda d: (
        ["--flight", "127.0.0.1:0", "--token-file", "token", "--tls-cert", str(d / "ca.pem"),
         "--tls-key", str(d / "server.key"), "taxi=taxi.arrows"], "grpc+tls://host:8815")),
}


def start_server(name, cli, directory, env):
    """Start fixture server `name`; returns (Server, {URI the page shows: the server's URI})."""
    files, args_of = SERVERS[name]
    make_files(files, directory)
    if name == "flight-tls":
        _self_signed(directory)
    args, shown = args_of(directory)
    server = Server(cli, args, directory, env)
    uri = server.uri
    if name == "flight-tls":
        uri = uri.replace("127.0.0.1", "localhost")
    return server, {shown: uri}

