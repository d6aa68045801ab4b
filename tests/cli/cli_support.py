"""Helpers of the command-line suite: paths, pyarrow-written inputs and the arrow-testing vectors.
The type cases (every type) and their JSON rendering come from python/tests (pyarrow only)."""
import glob
import os
import sys

import pyarrow as pa

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python", "tests"))
sys.path.insert(0, os.path.join(REPO, "tests", "support"))
from ferry_process import find_cli  # noqa: E402,F401 (the suite's conftest uses it)
VECTORS = os.path.join(REPO, "..", "shared", "testdata", "arrow-testing")


def write_ipc(path, table, fmt="stream", chunk=None, **options):
    """Write `table` with pyarrow's writer as a stream or a file; returns the path."""
    opts = pa.ipc.IpcWriteOptions(**options)
    with pa.OSFile(str(path), "wb") as sink:
        new = pa.ipc.new_stream if fmt == "stream" else pa.ipc.new_file
        with new(sink, table.schema, options=opts) as w:
            w.write_table(table, max_chunksize=chunk)
    return str(path)


def integration_vectors(suffix):
    return sorted(glob.glob(os.path.join(VECTORS, "ipc-integration", "*", "*" + suffix)))


def vector_id(path):
    return "/".join(path.split(os.sep)[-2:])
