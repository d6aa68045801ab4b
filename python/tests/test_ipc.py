"""Arrow IPC against pyarrow (Arrow C++): ferry reads what pyarrow writes and the official vectors,
pyarrow reads what ferry writes, and reading from memory is zero-copy."""
import decimal
import glob
import math
import os
import struct

import pyarrow as pa
import pyarrow.ipc
import pytest

import ferry_ctypes as F
import integration_json
from arrays import TYPE_CASES

VECTORS = os.path.join(F.REPO, "..", "shared", "testdata", "arrow-testing")
INTEGRATION = sorted(glob.glob(os.path.join(VECTORS, "ipc-integration", "*", "*.stream")) +
                     glob.glob(os.path.join(VECTORS, "ipc-integration", "*", "*.arrow_file")))


def _same(a, b):
    """Table equality where NaN equals NaN (pyarrow's equals says NaN != NaN)."""
    if a.schema != b.schema or a.num_rows != b.num_rows:
        return False
    if a.equals(b):
        return True

    def norm(v):
        if isinstance(v, float) and math.isnan(v):
            return "NaN"
        return v
    return [[norm(v) for v in c.to_pylist()] for c in a.columns] == \
        [[norm(v) for v in c.to_pylist()] for c in b.columns]


def _batches(reader):
    return [b for b in reader]


# -- ferry reads what Arrow C++ wrote -----------------------------------------------------------

@pytest.mark.skipif(not INTEGRATION, reason="../shared/testdata/arrow-testing is not present")
@pytest.mark.parametrize("path", INTEGRATION, ids=lambda p: "/".join(p.split(os.sep)[-2:]))
def test_integration_vectors_read_like_pyarrow(path):
    if path.endswith(".stream"):
        expected = _batches(pa.ipc.open_stream(path))
    else:
        r = pa.ipc.open_file(path)
        expected = [r.get_batch(i) for i in range(r.num_record_batches)]
    got = F.ipc_read_path(path)
    got_batches = _batches(got)
    assert got.schema.equals(expected[0].schema if expected else got.schema, check_metadata=True)
    assert len(got_batches) == len(expected)
    for g, e in zip(got_batches, expected):
        # Not full validation: old vectors hold date64 values that are not whole days, which
        # today's Arrow C++ full validation rejects in its own reading too.
        g.validate()
        assert _same(pa.Table.from_batches([g]), pa.Table.from_batches([e]))


def _storage(arr):
    return arr.storage if isinstance(arr, pa.ExtensionArray) else arr


@pytest.mark.skipif(not INTEGRATION, reason="../shared/testdata/arrow-testing is not present")
@pytest.mark.parametrize("path", INTEGRATION, ids=lambda p: "/".join(p.split(os.sep)[-2:]))
def test_integration_vectors_match_their_json(path):
    """Value by value against the vector's own .json.gz, read by integration_json (no IPC
    reader involved), then ferry's re-write must read in pyarrow like the original."""
    base = path.rsplit(".", 1)[0]
    fields, expected = integration_json.load(base + ".json.gz")
    got = _batches(F.ipc_read_path(path))
    assert len(got) == len(expected)
    compared = 0
    for batch, cols in zip(got, expected):
        assert batch.num_columns == len(fields)
        for i, want in enumerate(cols):
            if isinstance(want, NotImplementedError):
                continue  # month and day-time intervals: pyarrow cannot build them
            have = _storage(batch.column(i))
            assert len(have) == len(want), fields[i]["name"]
            assert _same(pa.table({"c": have}), pa.table({"c": want})), fields[i]["name"]
            compared += 1
    if expected and any(not isinstance(c, NotImplementedError) for c in expected[0]):
        assert compared > 0
    # ferry writes it back; pyarrow reads ferry's bytes like it reads the original.
    if got:
        original = (pa.ipc.open_stream(path) if path.endswith(".stream") else pa.ipc.open_file(path)).read_all()
        rewritten = pa.ipc.open_stream(F.ipc_write_bytes(pa.Table.from_batches(got))).read_all()
        assert _same(rewritten, original)


def _ferry_cli():
    path = os.environ.get("FERRY_CLI")
    if path:
        return path
    found = sorted(glob.glob(os.path.join(F.REPO, "build", "*", "tools", "ferry", "ferry")), key=os.path.getmtime)
    return found[-1] if found else None


@pytest.mark.skipif(not INTEGRATION or _ferry_cli() is None, reason="needs the vectors and a built ferry CLI")
@pytest.mark.parametrize("path", [p for p in INTEGRATION if p.endswith(".arrow_file")],
                         ids=lambda p: "/".join(p.split(os.sep)[-2:]))
def test_cat_json_is_integration_json(path, tmp_path):
    """`ferry cat --json` writes Arrow integration JSON: read back by the independent reader, it
    holds the values pyarrow reads from the vector."""
    import gzip
    import subprocess
    out = subprocess.run([_ferry_cli(), "cat", "--json", path], capture_output=True, check=True)
    doc = tmp_path / "doc.json.gz"
    with gzip.open(doc, "wb") as fh:
        fh.write(out.stdout)
    fields, batches = integration_json.load(str(doc))
    r = pa.ipc.open_file(path)
    assert len(batches) == r.num_record_batches
    for i, cols in enumerate(batches):
        expected = r.get_batch(i)
        assert [f["name"] for f in fields] == expected.schema.names
        for j, want in enumerate(cols):
            if isinstance(want, NotImplementedError):
                continue
            have = _storage(expected.column(j))
            assert _same(pa.table({"c": want}), pa.table({"c": have})), fields[j]["name"]


@pytest.mark.skipif(not INTEGRATION, reason="../shared/testdata/arrow-testing is not present")
def test_file_reader_random_access_matches_pyarrow():
    path = os.path.join(VECTORS, "ipc-integration", "cpp-21.0.0", "generated_nested.arrow_file")
    ours = F.IpcFileReader(path)
    theirs = pa.ipc.open_file(path)
    assert ours.num_record_batches == theirs.num_record_batches
    assert ours.schema().equals(theirs.schema, check_metadata=True)
    for i in reversed(range(ours.num_record_batches)):
        assert ours.read(i).equals(theirs.get_batch(i))
    with pytest.raises(F.FerryError, match="outside"):
        ours.read(ours.num_record_batches)
    ours.close()


@pytest.mark.parametrize("compression", [None, "lz4", "zstd"])
@pytest.mark.parametrize("fmt", ["stream", "file"])
def test_ferry_reads_pyarrow_output(tmp_path, compression, fmt):
    n = len(TYPE_CASES["int32"])
    table = pa.table({name: arr for name, arr in TYPE_CASES.items() if len(arr) == n})
    options = pa.ipc.IpcWriteOptions(compression=compression)
    path = tmp_path / f"t.{fmt}"
    with pa.OSFile(str(path), "wb") as sink:
        writer = (pa.ipc.new_stream if fmt == "stream" else pa.ipc.new_file)(sink, table.schema, options=options)
        writer.write_table(table, max_chunksize=15)
        writer.close()
    got = F.ipc_read_path(path).read_all()
    assert _same(got, table)


def test_dictionary_replacement_and_deltas_from_pyarrow():
    schema = pa.schema([("d", pa.dictionary(pa.int32(), pa.string()))])
    b1 = pa.record_batch([pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int32()), pa.array(["a", "b"]))],
                         schema=schema)
    b2 = pa.record_batch([pa.DictionaryArray.from_arrays(pa.array([2, 0], pa.int32()), pa.array(["a", "b", "c"]))],
                         schema=schema)
    b3 = pa.record_batch([pa.DictionaryArray.from_arrays(pa.array([0], pa.int32()), pa.array(["z"]))],
                         schema=schema)
    for deltas in [False, True]:
        sink = pa.BufferOutputStream()
        options = pa.ipc.IpcWriteOptions(emit_dictionary_deltas=deltas)
        with pa.ipc.new_stream(sink, schema, options=options) as w:
            for b in (b1, b2, b3):
                w.write_batch(b)
        data = sink.getvalue()
        got = _batches(F.ipc_read_buffer(data))
        assert [b.column(0).to_pylist() for b in got] == [["a", "b", "a"], ["c", "a"], ["z"]]


DELTA_VALUES = {
    "string": (pa.string(), ["a", "b", "c", "d", "z"]),
    "binary": (pa.binary(), [b"\x00", b"", b"\xff\xfe", b"abc", b"q"]),
    "int64": (pa.int64(), [2**62, -1, 0, -(2**63), 7]),
    "float64": (pa.float64(), [0.1, -0.0, 1e308, 2.5e-310, 3.0]),
    "decimal128": (pa.decimal128(20, 4), [decimal.Decimal("1.0001"), decimal.Decimal("-99999.9999"),
                                          decimal.Decimal("0"), decimal.Decimal("12.5"), decimal.Decimal("7")]),
    "timestamp": (pa.timestamp("us"), [1, 2**40, -5, 0, 9]),
    "string with nulls": (pa.string(), ["a", None, "ccc", "", "z"]),
    "large_string": (pa.large_string(), ["a", "bb", "", "dddd", "z"]),
    "bool": (pa.bool_(), [True, None, False, True, False]),
    "float32": (pa.float32(), [1.5, -0.0, 3.25, 1e30, 2.0]),
    "fixed_size_binary": (pa.binary(3), [b"abc", None, b"\x00\x00\x00", b"xyz", b"qqq"]),
    "list<int32>": (pa.list_(pa.int32()), [[1], None, [], [2, 3], [4]]),
    "large_list<float64>": (pa.large_list(pa.float64()), [[0.1], [], None, [-0.0, 1e-320], [2.0]]),
    "fixed_size_list<int16>": (pa.list_(pa.int16(), 2), [[1, 2], None, [3, None], [-4, 5], [6, 7]]),
    "struct": (pa.struct([("a", pa.int32()), ("b", pa.string())]),
               [{"a": 1, "b": "x"}, None, {"a": None, "b": ""}, {"a": 4, "b": "yy"}, {"a": 5, "b": "z"}]),
    "map<string, int64>": (pa.map_(pa.string(), pa.int64()), [[("k", 1)], [], None, [("a", 2), ("b", None)], [("z", 0)]]),
    "list<struct<list<string>>>": (pa.list_(pa.struct([("l", pa.list_(pa.string()))])),
                                   [[{"l": ["a"]}], [], [{"l": None}, None], [{"l": ["b", "c"]}], [{"l": []}]]),
    "string_view": (pa.string_view(), ["a", "a string longer than twelve bytes", None, "", "z"]),
    "list<binary_view>": (pa.list_(pa.binary_view()), [[b"x"], [b"another value past twelve bytes"], None, [], [b"q"]]),
    "list_view<int32>": (pa.list_view(pa.int32()), [[1], None, [], [2, 3], [4]]),
    "dense_union": (None, pa.UnionArray.from_dense(pa.array([0, 1, 0, 1, 0], pa.int8()), pa.array([0, 0, 1, 1, 2], pa.int32()),
                                                   [pa.array([1, None, 5], pa.int32()), pa.array(["a", "bcd"])], ["i", "s"])),
    "sparse_union": (None, pa.UnionArray.from_sparse(pa.array([0, 1, 0, 1, 0], pa.int8()),
                                                     [pa.array([1, 2, None, 4, 5], pa.int32()),
                                                      pa.array(["x", "a", "y", "bcd", None])], ["i", "s"])),
    "run_end_encoded": (None, pa.RunEndEncodedArray.from_arrays(pa.array([2, 3, 5], pa.int32()), pa.array(["a", None, "b"]))),
    "list<halffloat>": (pa.list_(pa.float16()), [[None], [], None, [None, None], [None]]),
    "list<decimal256>": (pa.list_(pa.decimal256(40, 3)), [[decimal.Decimal("1.5")], [], None,
                                                         [decimal.Decimal("-2.125")], [decimal.Decimal("0")]]),
    "list<month_day_nano_interval>": (pa.list_(pa.month_day_nano_interval()),
                                      [[pa.MonthDayNano([1, 2, 3])], [], None, [pa.MonthDayNano([-1, 0, 5])], []]),
}


def _growing_batches(value_type, values):
    """Batches whose dictionary grows by appending twice, then is replaced."""
    if value_type is None:  # values built as an array already (unions, run-end encoded)
        value_type = values.type
    else:
        values = pa.array(values, value_type)
    schema = pa.schema([("d", pa.dictionary(pa.int32(), value_type))])
    dicts = [values.slice(0, 2), values.slice(0, 3), values.slice(0, 4), values.slice(4, 1)]
    indices = [[0, 1, 0], [2, 1], [3, 0, None], [0]]
    return schema, [pa.record_batch([pa.DictionaryArray.from_arrays(pa.array(i, pa.int32()), d)],
                                    schema=schema) for i, d in zip(indices, dicts)]


@pytest.mark.parametrize("name", list(DELTA_VALUES))
def test_ferry_reads_pyarrows_dictionary_deltas(name):
    schema, batches = _growing_batches(*DELTA_VALUES[name])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema, options=pa.ipc.IpcWriteOptions(emit_dictionary_deltas=True)) as w:
        for b in batches:
            w.write_batch(b)
    reader = pa.ipc.open_stream(sink.getvalue())
    reader.read_all()
    assert reader.stats.num_dictionary_deltas == 2  # the oracle wrote deltas
    got = _batches(F.ipc_read_buffer(sink.getvalue()))
    assert [b.column(0).to_pylist() for b in got] == [b.column(0).to_pylist() for b in batches]


@pytest.mark.parametrize("name", list(DELTA_VALUES))
def test_pyarrow_reads_ferrys_dictionary_deltas(name):
    schema, batches = _growing_batches(*DELTA_VALUES[name])
    data = F.ipc_write_bytes(pa.RecordBatchReader.from_batches(schema, batches), emit_dictionary_deltas=True)
    reader = pa.ipc.open_stream(data)
    got = list(reader)
    assert [b.column(0).to_pylist() for b in got] == [b.column(0).to_pylist() for b in batches]
    assert (reader.stats.num_dictionary_deltas, reader.stats.num_replaced_dictionaries) == (2, 1)
    # Without the option the same batches go as three replacements.
    plain = pa.ipc.open_stream(F.ipc_write_bytes(pa.RecordBatchReader.from_batches(schema, batches)))
    plain.read_all()
    assert (plain.stats.num_dictionary_deltas, plain.stats.num_replaced_dictionaries) == (0, 3)


def _payload_nans(*bits):
    """A list<float64> array of one row per value, the doubles given by their bits."""
    values = pa.py_buffer(struct.pack(f"<{len(bits)}Q", *bits))
    doubles = pa.Array.from_buffers(pa.float64(), len(bits), [None, values])
    return pa.ListArray.from_arrays(pa.array(range(len(bits) + 1), pa.int32()), doubles)


def _bits(list_array):
    flat = list_array.flatten()
    return struct.unpack(f"<{len(flat)}Q", flat.buffers()[1].to_pybytes()[flat.offset * 8:(flat.offset + len(flat)) * 8])


NAN_BITS = [0x7FF8000000000001, 0xFFF8000000000000, 0x7FF0000000000ABC, 0x8000000000000000, 0x0000000000000001]


def test_ferry_joins_a_nested_dictionary_delta_bit_for_bit():
    # A dictionary of lists of doubles, then a delta: ferry's joined dictionary keeps every bit
    # (NaN payloads and signs), as pyarrow's does.
    values = _payload_nans(*NAN_BITS)
    schema = pa.schema([("d", pa.dictionary(pa.int32(), values.type))])
    batches = [pa.record_batch([pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), values.slice(0, n))],
                               schema=schema) for n in (2, 5)]
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema, options=pa.ipc.IpcWriteOptions(emit_dictionary_deltas=True)) as w:
        for b in batches:
            w.write_batch(b)
    oracle = pa.ipc.open_stream(sink.getvalue())
    want = [_bits(b.column(0).dictionary) for b in oracle]
    assert oracle.stats.num_dictionary_deltas == 1
    assert want[1] == tuple(NAN_BITS)
    got = [_bits(b.column(0).dictionary) for b in _batches(F.ipc_read_buffer(sink.getvalue()))]
    assert got == want


def test_ferry_writes_a_nested_dictionary_that_differs_only_in_a_nan_payload():
    # Two dictionaries equal but for one NaN's payload are two dictionaries: pyarrow reads the
    # second one's bits, deltas or not.
    schema = pa.schema([("d", pa.dictionary(pa.int32(), pa.list_(pa.float64())))])
    dictionaries = [_payload_nans(0x7FF8000000000001, 0x3FF0000000000000),
                    _payload_nans(0x7FF8000000000002, 0x3FF0000000000000)]
    batches = [pa.record_batch([pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), d)], schema=schema)
               for d in dictionaries]
    for deltas in (False, True):
        data = F.ipc_write_bytes(pa.RecordBatchReader.from_batches(schema, batches), emit_dictionary_deltas=deltas)
        got = [_bits(b.column(0).dictionary) for b in pa.ipc.open_stream(data)]
        assert got == [_bits(d) for d in dictionaries], f"deltas={deltas}"


def test_pyarrow_reads_ferrys_dictionary_deltas_in_a_file():
    schema, batches = _growing_batches(pa.string(), ["a", "b", "c", "d", "z"])
    grown = batches[:3]  # a file takes deltas but no replacement
    data = F.ipc_write_bytes(pa.RecordBatchReader.from_batches(schema, grown), file=True,
                             emit_dictionary_deltas=True)
    reader = pa.ipc.open_file(pa.py_buffer(data))
    got = [reader.get_batch(i) for i in range(reader.num_record_batches)]
    assert [b.column(0).to_pylist() for b in got] == [b.column(0).to_pylist() for b in grown]
    assert reader.stats.num_dictionary_deltas == 2
    assert _same(F.ipc_read_buffer(data).read_all(), pa.Table.from_batches(grown))
    with pytest.raises(F.FerryError, match="cannot replace"):
        F.ipc_write_bytes(pa.RecordBatchReader.from_batches(schema, batches), file=True, emit_dictionary_deltas=True)


# -- pyarrow reads what ferry wrote ------------------------------------------------------------

CASES = [(name, sl) for name in TYPE_CASES for sl in [None, (3, 20), (7, 0)]]


@pytest.mark.parametrize("name,sl", CASES, ids=[f"{n}-{s}" for n, s in CASES])
@pytest.mark.parametrize("fmt,compression,alignment",
                         [("stream", None, 8), ("file", None, 64), ("stream", "lz4", 8), ("file", "zstd", 8)])
def test_pyarrow_reads_ferry_output(name, sl, fmt, compression, alignment):
    arr = TYPE_CASES[name] if sl is None else TYPE_CASES[name].slice(*sl)
    batch = pa.record_batch([arr], names=[name])
    data = F.ipc_write_bytes(batch, file=fmt == "file", compression=compression, alignment=alignment)
    reader = pa.ipc.open_file(pa.py_buffer(data)) if fmt == "file" else pa.ipc.open_stream(data)
    got = reader.read_all()
    got.validate(full=True)
    assert _same(got, pa.Table.from_batches([batch]))
    # And ferry reads its own bytes back to the same values.
    assert _same(F.ipc_read_buffer(data).read_all(), pa.Table.from_batches([batch]))


PYARROW_CANNOT_SWAP = {"binary_view", "string_view", "run_end_encoded"}


@pytest.mark.parametrize("name", list(TYPE_CASES))
def test_big_endian_output_reads_natively_in_pyarrow_and_ferry(name):
    """ferry writes big-endian bodies; Arrow C++ (pyarrow) swaps them back on read, an
    independent check of ferry's per-type swap rules, and so does ferry's reader."""
    batch = pa.record_batch([TYPE_CASES[name].slice(2, 30)], names=[name])
    data = F.ipc_write_bytes(batch, big_endian=True)
    native = F.ipc_write_bytes(batch)
    assert _same(F.ipc_read_buffer(data).read_all(), pa.Table.from_batches([batch]))
    if name in PYARROW_CANNOT_SWAP:
        # Arrow C++ refuses these; ferry's view layout is hand-checked below.
        with pytest.raises(pa.ArrowNotImplementedError):
            pa.ipc.open_stream(data).read_all()
        return
    got = pa.ipc.open_stream(data).read_all()
    got.validate(full=True)
    assert _same(got, pa.Table.from_batches([batch]))
    if name in ("int32", "int64", "float64", "decimal128", "string"):
        assert data != native  # the bytes really changed


def test_big_endian_bytes_are_hand_checked():
    batch = pa.record_batch([pa.array([1, 258], pa.int32())], names=["x"])
    data = F.ipc_write_bytes(batch, big_endian=True)
    assert b"\x00\x00\x00\x01\x00\x00\x01\x02" in data
    assert b"\x01\x00\x00\x00\x02\x01\x00\x00" not in data
    # Views: the length is swapped; inline bytes stay; a long value's prefix stays while its
    # buffer index and offset are swapped.
    long = "a string longer than twelve"
    views = pa.record_batch([pa.array(["hello", long], pa.string_view())], names=["v"])
    data = F.ipc_write_bytes(views, big_endian=True)
    assert b"\x00\x00\x00\x05hello" + b"\x00" * 7 in data
    assert b"\x00\x00\x00\x1b" + b"a st" + b"\x00" * 8 in data
    assert F.ipc_read_buffer(data).read_all().column(0).to_pylist() == ["hello", long]


def test_ferry_output_is_byte_compatible_in_size(tmp_path):
    """Uncompressed, ferry's stream is no larger than pyarrow's for the same table."""
    table = pa.table({"i": pa.array(range(1000), pa.int64()), "s": pa.array([str(i) for i in range(1000)])})
    ours = F.ipc_write_bytes(table)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    theirs = sink.getvalue().to_pybytes()
    assert len(ours) <= len(theirs) + 64
    assert pa.ipc.open_stream(ours).read_all().equals(table)


def test_ferry_writes_files_and_dictionaries_pyarrow_reads(tmp_path):
    table = pa.table({"d": TYPE_CASES["dictionary"], "n": TYPE_CASES["list_struct"]})
    path = tmp_path / "out.arrow"
    F.ipc_write_path(table, path, file=True)
    r = pa.ipc.open_file(str(path))
    assert r.num_record_batches == 1
    assert r.read_all().equals(table)


# -- zero-copy and lifetime --------------------------------------------------------------------

def test_reading_from_memory_is_zero_copy():
    table = pa.table({"x": pa.array(range(100000), pa.int64()), "s": pa.array(["v%d" % i for i in range(100000)])})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    data = sink.getvalue()
    before = F.held_input_count()
    reader = F.ipc_read_buffer(data)
    assert F.held_input_count() == before + 1
    batch = reader.read_next_batch()
    lo, hi = data.address, data.address + data.size
    for col in batch.columns:
        for buf in col.buffers():
            if buf is not None and buf.size > 0:
                assert lo <= buf.address < hi, "a buffer was copied"
    assert batch.column(0).to_pylist()[:3] == [0, 1, 2]
    del col, buf
    # The input stays alive while the batch does, and is let go when both are gone.
    del reader
    assert F.held_input_count() == before + 1
    del batch
    assert F.held_input_count() == before


# -- bad input ------------------------------------------------------------------------------

def test_bad_bytes_raise_clear_errors():
    with pytest.raises(F.FerryError, match="ends before its Schema"):
        F.ipc_read_buffer(b"")
    with pytest.raises(F.FerryError, match="not a valid Message flatbuffer"):
        F.ipc_read_buffer(b"\xff\xff\xff\xff\x10\x00\x00\x00" + b"\xab" * 16)
    good = F.ipc_write_bytes(pa.record_batch([pa.array([1, 2, 3])], names=["x"]))
    with pytest.raises(pa.ArrowInvalid, match="truncated inside message 1"):
        F.ipc_read_buffer(good[:-20], track=False).read_all()
    with pytest.raises(F.FerryError, match="No such file"):
        F.ipc_read_path("/nonexistent/file.arrow")


@pytest.mark.skipif(not os.path.isdir(os.path.join(VECTORS, "ipc-malformed")), reason="no malformed vectors")
def test_malformed_vectors_are_rejected():
    for path in glob.glob(os.path.join(VECTORS, "ipc-malformed", "*")):
        with pytest.raises((F.FerryError, pa.ArrowInvalid)):
            F.ipc_read_path(path).read_all()
