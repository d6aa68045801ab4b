"""One parser per name across the faces: the command line and the Python binding accept the same
compression names (ipc::ParseCompression), body types (dipc::ParseBodyType) and device names
(ParseDevice) and refuse the same ones with the same message. What a spelling means is checked against pyarrow: a stream the
CLI converts with it reads back equal to the original."""
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from cli_support import write_ipc

ferry = pytest.importorskip("ferry", reason="the ferry binding is not installed (pip install ./python)")
from ferry import dipc  # noqa: E402

COMPRESSIONS = ["none", "lz4", "lz4_frame", "zstd", "gzip", "LZ4", ""]
BODY_TYPES = ["packed", "list", "buffer_list", "tagged", "Packed", ""]
DEVICES = ["cpu", "CPU:0", "cpu:1", "guarded", "GUARDED:0", "guarded:3", "opencl:0", "cuda:",
           "cuda:-1", "tpu:0", ""]


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
    r = run("serve", f"t={tmp_path / 'missing.arrows'}", "--body-type", name, timeout=60)

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


@pytest.mark.parametrize("name", DEVICES)
def test_device_names_agree(run, name):
    # Nothing listens on port 1: a device the CLI accepts gets past its check and the command
    # fails on connecting instead.
    r = run("get", "grpc://127.0.0.1:1", "--path", "t", "--device", name, "--timeout", "2", timeout=60)
    refused = python_refusal(lambda: ferry.Device.parse(name))
    assert r.returncode != 0
    if refused is None:
        assert "--device" not in r.stderr, r.stderr
    else:
        assert refused in r.stderr, (refused, r.stderr)


def test_every_listed_device_name_parses_to_that_device(run):
    import json

    doc = json.loads(run("devices", "--all", "--json").stdout)
    named = [d for d in doc["devices"] if d["device"] is not None]
    assert {d["kind"] for d in named} >= {"cpu", "guarded"}
    for d in named:
        device = ferry.Device.parse(d["device"])
        assert (device.device_type.value, device.device_id) == (d["arrow_device_type"], d["device_id"])
        assert ferry.Device.parse(str(device)) == device
