"""`ferry validate` against pyarrow: what pyarrow reads and fully validates passes (with the
batch and row counts pyarrow sees), and every malformed vector of arrow-testing, which pyarrow
also refuses, fails with exit status 1 and a message naming the input."""
import glob
import os
import re
import struct

import pyarrow as pa
import pytest

from cli_support import VECTORS, integration_vectors, vector_id, write_ipc
from arrays import TYPE_CASES

MALFORMED = sorted(glob.glob(os.path.join(VECTORS, "ipc-malformed", "*")))
SUMMARY = re.compile(r"^(.*): valid \((\w+)\): (\d+) batches, (\d+) rows$")


def pyarrow_counts(path):
    if path.endswith(".arrow_file") or open(path, "rb").read(6) == b"ARROW1":
        r = pa.ipc.open_file(path)
        batches = [r.get_batch(i) for i in range(r.num_record_batches)]
    else:
        batches = list(pa.ipc.open_stream(path))
    return len(batches), sum(b.num_rows for b in batches)


@pytest.mark.parametrize("path", integration_vectors(".stream") + integration_vectors(".arrow_file"), ids=vector_id)
def test_good_vectors_pass(run, path):
    r = run("validate", path)
    assert r.returncode == 0, r.stderr
    m = SUMMARY.match(r.stdout.strip())
    assert m and m.group(1) == path and m.group(2) == "full"
    assert (int(m.group(3)), int(m.group(4))) == pyarrow_counts(path)


@pytest.mark.parametrize("level", ["none", "minimal", "default", "full"])
@pytest.mark.parametrize("fmt", ["stream", "file"])
def test_pyarrow_output_of_every_type_passes(run, tmp_path, fmt, level):
    n = len(TYPE_CASES["int32"])
    table = pa.table({k: v for k, v in TYPE_CASES.items() if len(v) == n})
    table.validate(full=True)
    path = write_ipc(tmp_path / f"t.{fmt}", table, fmt=fmt, chunk=7)
    r = run("validate", "--validation", level, path)
    assert r.returncode == 0, r.stderr
    m = SUMMARY.match(r.stdout.strip())
    assert m and m.group(2) == level
    assert (int(m.group(3)), int(m.group(4))) == pyarrow_counts(path)


@pytest.mark.skipif(not MALFORMED, reason="../shared/testdata/arrow-testing/ipc-malformed is missing")
@pytest.mark.parametrize("path", MALFORMED, ids=os.path.basename)
def test_malformed_vectors_fail_with_a_message(run, path):
    with pytest.raises(Exception):  # the oracle: pyarrow refuses it too
        t = pa.ipc.open_stream(pa.memory_map(path)).read_all()
        t.validate(full=True)
    r = run("validate", path)
    assert r.returncode == 1, (r.returncode, r.stderr)  # an error, never a crash (signal)
    assert r.stdout == ""
    assert r.stderr.startswith(f"ferry: {path}: ") and len(r.stderr.strip()) > len(f"ferry: {path}: ") + 10


def test_invalid_utf8_fails_full_but_passes_default(run, tmp_path):
    """A string whose bytes are not UTF-8: pyarrow's full validation refuses it, its default
    validation does not; ferry's levels say the same, and the message names the field."""
    good = pa.array(["ok", "fine", "bad!"])
    offsets, data = good.buffers()[1], bytearray(good.buffers()[2].to_pybytes())
    data[-1] = 0xFF
    bad = pa.Array.from_buffers(pa.string(), 3, [None, offsets, pa.py_buffer(bytes(data))])
    with pytest.raises(pa.ArrowInvalid):
        bad.validate(full=True)
    bad.validate()
    path = write_ipc(tmp_path / "bad.arrows", pa.table({"text": bad}))
    r = run("validate", path)
    assert r.returncode == 1 and '"text"' in r.stderr and "UTF-8" in r.stderr, r.stderr
    assert run("validate", "--validation", "default", path).returncode == 0


def test_offsets_past_the_data_fail_at_default_level(run, tmp_path):
    path = write_ipc(tmp_path / "t.arrows", pa.table({"s": pa.array(["a", "bb", "ccc"])}))
    data = open(path, "rb").read()
    offsets = struct.pack("<4i", 0, 1, 3, 6)
    assert data.count(offsets) == 1
    bad = tmp_path / "bad.arrows"
    bad.write_bytes(data.replace(offsets, struct.pack("<4i", 0, 1, 3, 1000)))
    with pytest.raises(pa.ArrowInvalid):
        pa.ipc.open_stream(str(bad)).read_all().validate()
    r = run("validate", "--validation", "default", bad)
    assert r.returncode == 1 and '"s"' in r.stderr, r.stderr


def test_missing_input_and_bad_level_are_usage_errors(run, tmp_path):
    r = run("validate", tmp_path / "nope.arrows")
    assert r.returncode != 0 and "nope.arrows" in r.stderr
    path = write_ipc(tmp_path / "t.arrows", pa.table({"x": [1]}))
    assert run("validate", "--validation", "paranoid", path).returncode != 0
