"""`ferry convert` against pyarrow: every output format, compression and alignment reads back in
pyarrow equal to the input pyarrow wrote, with the framing the options ask for (magic, padded
metadata and bodies, compressed bodies), and a stream that replaces a dictionary cannot become a
file."""
import itertools
import math
import re
import struct

import pyarrow as pa
import pytest

from cli_support import write_ipc
from arrays import TYPE_CASES

FORMATS = ["stream", "file"]
CODECS = ["none", "lz4", "zstd"]
ALIGNMENTS = [8, 64]


def same(a, b):
    """Table equality where NaN equals NaN."""
    if a.schema != b.schema or a.num_rows != b.num_rows:
        return False
    if a.equals(b):
        return True

    def norm(v):
        return "NaN" if isinstance(v, float) and math.isnan(v) else v
    return [[norm(v) for v in c.to_pylist()] for c in a.columns] == \
        [[norm(v) for v in c.to_pylist()] for c in b.columns]


def read_back(path, fmt):
    if fmt == "file":
        r = pa.ipc.open_file(path)
        return pa.Table.from_batches([r.get_batch(i) for i in range(r.num_record_batches)], r.schema)
    return pa.ipc.open_stream(path).read_all()


def frames(data, start):
    """(metadata start, padded metadata length, body length) of each message, parsed from the
    framing (continuation, length) with pyarrow reading each message's body."""
    out = []
    pos = start
    while pos + 8 <= len(data):
        cont, length = struct.unpack_from("<Ii", data, pos)
        assert cont == 0xFFFFFFFF
        if length == 0:
            break
        msg = pa.ipc.read_message(pa.BufferReader(pa.py_buffer(data[pos:])))
        body = msg.body.size if msg.body is not None else 0
        out.append((pos, length, body, msg.type))
        pos += 8 + length + body
    return out


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    n = len(TYPE_CASES["int32"])
    table = pa.table({k: v for k, v in TYPE_CASES.items() if len(v) == n})
    return table, write_ipc(tmp_path_factory.mktemp("in") / "in.arrows", table, chunk=13)


@pytest.mark.parametrize("fmt,codec,alignment", list(itertools.product(FORMATS, CODECS, ALIGNMENTS)))
def test_every_pair_reads_back_equal_in_pyarrow(run, tmp_path, source, fmt, codec, alignment):
    table, path = source
    out = tmp_path / f"out.{fmt}"
    r = run("convert", path, out, "--format", fmt, "--compression", codec, "--alignment", alignment)
    assert r.returncode == 0, r.stderr
    assert re.match(rf"^{re.escape(path)} -> {re.escape(str(out))}: 4 batches, \d+ bytes "
                    rf"\({fmt}, {codec}, alignment {alignment}\)$", r.stdout.strip()), r.stdout
    got = read_back(str(out), fmt)
    got.validate(full=True)
    assert same(got, table)
    assert [b.num_rows for b in got.to_batches()] == [13, 13, 13, 1]
    data = out.read_bytes()
    assert (data[:8] == b"ARROW1\0\0") == (fmt == "file")
    if fmt == "file":
        assert data[-6:] == b"ARROW1"
    messages = frames(data, 8 if fmt == "file" else 0)
    assert [t for *_, t in messages][0] == "schema"
    for pos, length, body, kind in messages:
        # Each body starts at a multiple of the alignment and is padded to one.
        assert (pos + 8 + length) % alignment == 0 and body % alignment == 0, (kind, pos, length, body)


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_compression_shrinks_bodies_and_pyarrow_decompresses(run, tmp_path, codec):
    table = pa.table({"x": pa.array([i % 7 for i in range(100000)], pa.int64())})
    path = write_ipc(tmp_path / "in.arrows", table)
    plain, packed = tmp_path / "plain.arrows", tmp_path / "packed.arrows"
    assert run("convert", path, plain).returncode == 0
    assert run("convert", path, packed, "--compression", codec).returncode == 0
    plain_body = sum(b for *_, b, t in frames(plain.read_bytes(), 0) if t == "record batch")
    packed_body = sum(b for *_, b, t in frames(packed.read_bytes(), 0) if t == "record batch")
    assert plain_body >= 800000 and packed_body < plain_body // 10
    assert pa.ipc.open_stream(str(packed)).read_all().equals(table)


@pytest.mark.parametrize("fmt", FORMATS)
def test_file_input_converts_too(run, tmp_path, source, fmt):
    table, path = source
    as_file = tmp_path / "in.arrow"
    assert run("convert", path, as_file, "--format", "file").returncode == 0
    out = tmp_path / f"again.{fmt}"
    r = run("convert", as_file, out, "--format", fmt, "--compression", "zstd", "--progress")
    assert r.returncode == 0, r.stderr
    assert "ferry convert: 4 batches" in r.stderr
    assert same(read_back(str(out), fmt), table)


def test_dictionary_replacement_cannot_become_a_file(run, tmp_path):
    schema = pa.schema([("d", pa.dictionary(pa.int32(), pa.string()))])
    path = tmp_path / "replaced.arrows"
    with pa.OSFile(str(path), "wb") as sink:
        with pa.ipc.new_stream(sink, schema) as w:
            for values in (["a", "b"], ["z"]):
                w.write_batch(pa.record_batch([pa.DictionaryArray.from_arrays(pa.array([0], pa.int32()),
                                                                              pa.array(values))], schema=schema))
    r = run("convert", path, tmp_path / "out.arrow", "--format", "file")
    assert r.returncode == 1
    assert "dictionary 0 changed between batches" in r.stderr and "stream" in r.stderr
    ok = tmp_path / "out.arrows"
    assert run("convert", path, ok).returncode == 0
    assert [b.column(0).to_pylist() for b in pa.ipc.open_stream(str(ok))] == [["a"], ["z"]]


def test_bad_options_are_refused(run, tmp_path, source):
    _, path = source
    for args in (["--format", "parquet"], ["--compression", "gzip"], ["--alignment", "16"]):
        r = run("convert", path, tmp_path / "x", *args)
        assert r.returncode != 0 and r.stderr


def test_growing_dictionaries_become_deltas_a_file_accepts(run, tmp_path):
    schema = pa.schema([("d", pa.dictionary(pa.int32(), pa.string()))])
    words = ["a", "b", "c", "d"]
    batches = [pa.record_batch([pa.DictionaryArray.from_arrays(pa.array([n - 1, 0], pa.int32()),
                                                               pa.array(words[:n]))], schema=schema)
               for n in (2, 3, 4)]
    path = tmp_path / "replaced.arrows"
    with pa.OSFile(str(path), "wb") as sink:
        with pa.ipc.new_stream(sink, schema) as w:  # pyarrow sends replacements
            for b in batches:
                w.write_batch(b)
    out = tmp_path / "out.arrow"
    r = run("convert", path, out, "--format", "file", "--emit-dictionary-deltas")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("3 dictionary batches of which 2 deltas")
    reader = pa.ipc.open_file(str(out))
    got = [reader.get_batch(i) for i in range(reader.num_record_batches)]
    assert [b.column(0).to_pylist() for b in got] == [b.column(0).to_pylist() for b in batches]
    assert reader.stats.num_dictionary_deltas == 2
