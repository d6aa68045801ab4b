"""Support of the Flight suites: `ferry serve --flight` as a context manager (the URI it prints
first, with the port it bound), the arrow-testing vectors, and pyarrow's read of a file (the
oracle)."""
import contextlib
import glob
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.ipc as ipc

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VECTORS = os.path.join(REPO, "..", "shared", "testdata", "arrow-testing", "ipc-integration")
sys.path.insert(0, os.path.join(REPO, "tests", "interop"))
sys.path.insert(0, os.path.join(REPO, "tests", "support"))
from ferry_process import ServeProcess, ferry_cli  # noqa: E402,F401 (ferry_cli: for the suites)


def vectors():
    """Every stream of the arrow-testing vectors, newest version of each case only (the older
    versions repeat the cases); ids like cpp-21.0.0/generated_union."""
    by_case = {}
    for path in sorted(glob.glob(os.path.join(VECTORS, "*", "*.stream"))):
        by_case[os.path.basename(path)] = path  # later (sorted) versions replace earlier ones
    return sorted(by_case.values())


def vector_id(path):
    return "/".join(path.split(os.sep)[-2:]).replace(".stream", "")


def read_pyarrow(path):
    """pyarrow's own read of an IPC stream or file."""
    with open(path, "rb") as f:
        head = f.read(6)
    if head == b"ARROW1":
        return ipc.open_file(path).read_all()
    return ipc.open_stream(path).read_all()


def self_signed(tmp_path, name):
    """A key and a self-signed certificate for 127.0.0.1 and localhost, made with openssl: the
    paths of their PEM files."""
    key, cert = tmp_path / f"{name}.key", tmp_path / f"{name}.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(cert), "-subj", f"/CN={name}",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return key, cert


# The environment that starts a test tree's `ferry serve --flight` on a manual clock, which only
# advance_clock moves (docs/flight.md, "Time in tests").
MANUAL_CLOCK = {"FERRY_TEST_CLOCK": "manual"}


def advance_clock(client, ms, waiters=0, options=None):
    """Moves the manual clock of the server `client` (a pyarrow.flight client) is connected to
    forward by `ms` milliseconds, once at least `waiters` waits on it are in progress (the server
    waits up to ten seconds for them, then fails the action)."""
    import pyarrow.flight as fl
    body = f"{ms}:{waiters}".encode()
    results = list(client.do_action(fl.Action("advance-clock", body), options=options))
    assert [r.body.to_pybytes() for r in results] == [f"advanced by {ms} ms".encode()]


class Serve(ServeProcess):
    """`ferry serve --flight 127.0.0.1:0 ARGS...`: .uri is the grpc:// (or grpc+tls://) line it
    printed first. Stopped with SIGINT (its summary line is then in .stderr())."""

    def __init__(self, *args, env=None, listen="127.0.0.1:0", tmp=None):
        super().__init__(["--flight", listen, *args], env=dict(os.environ, **(env or {})),
                         tmp=tmp)
        line = self.first_line()
        if not line.startswith("grpc"):
            self.stop()
            raise AssertionError(f"ferry serve --flight printed {line!r}: {self.stderr()}")
        self.uri = line

    @property
    def port(self):
        return int(self.uri.rsplit(":", 1)[1])


def stream_file(path, table, chunk=1000):
    """Write `table` to `path` as an IPC stream of `chunk`-row batches; the path."""
    with pa.ipc.new_stream(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=chunk)
    return path


def mixed_table(rows=1000, seed=0):
    """A table of mixed columns (ints, floats, strings, lists, structs, dictionary, nulls)."""
    import random
    rng = random.Random(seed)
    ints = [None if i % 7 == 3 else rng.randrange(-10**9, 10**9) for i in range(rows)]
    return pa.table({
        "i": pa.array(ints, pa.int64()),
        "f": pa.array([None if v is None else v / 7 for v in ints], pa.float64()),
        "s": pa.array([None if v is None else f"s{v % 1000}" for v in ints]),
        "l": pa.array([None if v is None else list(range(v % 4)) for v in ints],
                      pa.list_(pa.int32())),
        "st": pa.array([{"a": i, "b": str(i)} for i in range(rows)],
                       pa.struct([("a", pa.int64()), ("b", pa.string())])),
        "d": pa.array([f"k{i % 5}" for i in range(rows)]).dictionary_encode(),
        "ts": pa.array(list(range(rows)), pa.timestamp("us", tz="UTC")),
    })


@contextlib.contextmanager
def killed_at_exit(code, ready):
    """Runs `python -c code` (a peer that shares nothing with the test's process), waits for it to
    print the line `ready`, and kills it with SIGKILL when the block ends, so that its calls are
    reset rather than closed."""
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == ready
        yield child
    finally:
        child.kill()
        child.wait()
