"""Shared fixtures of the command-line suite: the `ferry` executable (FERRY_CLI, as scripts/test.sh
sets it, or the newest build/*/tools/ferry/ferry), a runner, and pyarrow-written inputs. The
catalog of every type and its JSON rendering come from python/tests (pyarrow only)."""
import glob
import os
import subprocess
import sys

import pyarrow as pa
import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python", "tests"))
VECTORS = os.path.join(REPO, "..", "shared", "testdata", "arrow-testing")


def _find_cli():
    path = os.environ.get("FERRY_CLI")
    if path:
        return path
    found = sorted(glob.glob(os.path.join(REPO, "build", "*", "tools", "ferry", "ferry")), key=os.path.getmtime)
    return found[-1] if found else None


@pytest.fixture(scope="session")
def ferry_cli():
    path = _find_cli()
    if not path or not os.path.exists(path):
        pytest.fail("no ferry executable: build ferry_cli or set FERRY_CLI")
    return path


@pytest.fixture(scope="session")
def run(ferry_cli):
    """Run `ferry ARGS...`; returns the CompletedProcess (text mode), never raises on exit codes."""
    def go(*args, env=None, timeout=120):
        full_env = dict(os.environ, **(env or {}))
        return subprocess.run([ferry_cli, *map(str, args)], capture_output=True, text=True,
                              env=full_env, timeout=timeout)
    return go


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
