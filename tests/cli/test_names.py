"""One parser per name across the faces: the command line and the Python binding accept the same
compression names (ipc::ParseCompression) and body types (dipc::ParseBodyType) and refuse the
same ones with the same message. What a spelling means is checked against pyarrow: a stream the
CLI converts with it reads back equal to the original."""
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from cli_support import write_ipc

ferry = pytest.importorskip("ferry", reason="the ferry binding is not installed (pip install ./python)")
from ferry import dipc  # noqa: E402

COMPRESSIONS = ["none", "lz4", "lz4_frame", "zstd", "gzip", "LZ4", ""]
BODY_TYPES = ["packed", "list", "buffer_list", "tagged", "Packed", ""]


def python_refusal(call):
    """None when `call()` succeeds, else the ValueError's message."""
    try:
        call()
    except ValueError as e:
        return str(e)
    return None


@pytest.fixture(scope="module")
def table():
    return pa.table({"x": pa.array(range(1000), pa.int64()), "s": pa.array([f"v{i % 7}" for i in range(1000)])})


@pytest.mark.parametrize("name", COMPRESSIONS)
def test_compression_names_agree(run, tmp_path, table, name):
    src = write_ipc(tmp_path / "in.arrows", table)
    out = tmp_path / "out.arrows"
    r = run("convert", src, out, "--compression", name)
    refused = python_refusal(lambda: ferry.ipc.write_stream(table, compression=name))
    if refused is None:
        assert r.returncode == 0, r.stderr
        assert ipc.open_stream(str(out)).read_all().equals(table)
    else:
        assert r.returncode != 0
        assert f'unknown compression "{name}"' in refused
        assert refused in r.stderr, (refused, r.stderr)


@pytest.mark.parametrize("name", BODY_TYPES)
def test_body_type_names_agree(run, tmp_path, name):
    # The dataset's file does not exist: a body type the CLI accepts gets past its check and the
    # command fails on the file instead.
    r = run("serve", f"t={tmp_path / 'missing.arrows'}", "--body", name, timeout=60)

    def start():
        with dipc.Server.start(body_type=name):
            pass

    refused = python_refusal(start)
    assert r.returncode != 0
    if refused is None:
        assert "unknown body type" not in r.stderr, r.stderr
    else:
        assert f'unknown body type "{name}"' in refused
        assert refused in r.stderr, (refused, r.stderr)
