"""ferry.ipc against pyarrow.ipc: streams and files, to and from bytes, files and memory maps."""
import io
import os
import threading

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
import ferry  # noqa: E402

from arrays import TYPE_CASES  # noqa: E402
from binding_support import assert_same  # noqa: E402

N = len(TYPE_CASES["int8"])
# Extension types travel as their storage plus metadata; the rest as themselves.
COLUMNS = {n: a for n, a in TYPE_CASES.items() if len(a) == N and n != "extension"}


def table():
    return pa.table(COLUMNS)


def pa_stream_bytes(t, **kw):
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema, **kw) as w:
        w.write_table(t, max_chunksize=11)
    return sink.getvalue()


def assert_tables_equal(back, t):
    assert back.schema == t.schema
    for name in t.column_names:
        assert_same(back.column(name).combine_chunks(), t.column(name).combine_chunks())


def test_ferry_reads_pyarrow_streams_in_place():
    t = table()
    data = pa_stream_bytes(t)
    s = ferry.ipc.read_stream(data)
    batches = s.read_all()
    back = pa.Table.from_batches([pa.record_batch(b) for b in batches])
    assert_tables_equal(back, t)
    # Zero copy: the int32 column's values lie inside pyarrow's buffer.
    col = pa.record_batch(batches[0]).column("int32").buffers()[1]
    assert data.address <= col.address < data.address + data.size


@pytest.mark.parametrize("compression", [None, "lz4", "zstd"])
def test_pyarrow_reads_ferry_streams(compression):
    t = table()
    out = ferry.ipc.write_stream(pa.RecordBatchReader.from_batches(t.schema, t.to_batches(9)),
                                 compression=compression)
    assert out.readonly
    back = pa.ipc.open_stream(pa.py_buffer(out)).read_all()
    assert_tables_equal(back, t)


def test_pyarrow_compressed_streams_are_read():
    t = table()
    back = ferry.ipc.read_stream(pa_stream_bytes(t, options=pa.ipc.IpcWriteOptions(compression="zstd")))
    assert_tables_equal(pa.RecordBatchReader.from_stream(back).read_all(), t)


def test_files_both_ways_through_paths_and_memory_maps(tmp_path):
    t = table()
    path = tmp_path / "ferry.arrow"
    size = ferry.ipc.write_file(t, path)
    assert size == path.stat().st_size
    with pa.ipc.open_file(pa.memory_map(str(path))) as r:
        assert_tables_equal(r.read_all(), t)
    pa_path = tmp_path / "pyarrow.arrow"
    with pa.ipc.new_file(str(pa_path), t.schema) as w:
        w.write_table(t, max_chunksize=15)
    reader = ferry.ipc.FileReader(pa_path)
    assert reader.num_record_batches == len(reader) == 3
    assert pa.schema(reader.schema) == t.schema
    got = [pa.record_batch(reader.read_record_batch(i)) for i in range(len(reader))]
    assert_tables_equal(pa.Table.from_batches(got), t)
    with pytest.raises(IndexError):
        reader.read_record_batch(3)
    # read_stream on a path memory-maps it and tells the formats apart by their magic.
    assert_tables_equal(pa.RecordBatchReader.from_stream(ferry.ipc.read_stream(str(pa_path))).read_all(), t)


def test_file_reader_reads_bytes_in_memory():
    t = table()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, t.schema) as w:
        w.write_table(t)
    data = sink.getvalue()
    reader = ferry.ipc.FileReader(data)
    batch = pa.record_batch(reader.read_record_batch(0))
    assert_tables_equal(pa.Table.from_batches([batch]), t)
    addr = batch.column("int64").buffers()[1].address
    assert data.address <= addr < data.address + data.size


def test_stream_bytes_written_by_ferry_read_by_ferry():
    t = pa.table({"a": np.arange(1000), "b": [str(i) for i in range(1000)]})
    out = ferry.ipc.write_stream(t)
    back = pa.RecordBatchReader.from_stream(ferry.ipc.read_stream(out)).read_all()
    assert back.equals(t)


def test_batches_that_share_a_dictionary_send_it_once_and_changes_are_sent():
    """Batches that share one dictionary send it once (the writer holds each batch until the
    next, so it knows the dictionary by its memory); a batch with other values replaces it, and
    one with the same values in other memory sends nothing. pyarrow reads what was written."""
    shared = pa.array(["red", "green", None, "blue"])
    col = pa.DictionaryArray.from_arrays(pa.array([0, 1, 3, 2], pa.int32()), shared)
    batches = [pa.record_batch([col], names=["c"])] * 50
    other = pa.DictionaryArray.from_arrays(pa.array([1, 0], pa.int32()), pa.array(["x", "y"]))
    copied = pa.DictionaryArray.from_arrays(pa.array([1], pa.int32()), pa.array(["x", "y"]))
    batches += [pa.record_batch([other], names=["c"]), pa.record_batch([copied], names=["c"])]
    t = pa.Table.from_batches(batches)
    reader = pa.ipc.open_stream(pa.py_buffer(ferry.ipc.write_stream(t)))
    back = reader.read_all()
    assert back.equals(t)
    assert (reader.stats.num_dictionary_batches, reader.stats.num_replaced_dictionaries) == (2, 1)


def test_a_dictionary_is_checked_once_as_it_arrives_and_its_indices_in_every_batch():
    """Full validation checks a dictionary's values when its message arrives (not again in each
    batch that uses it) and each batch's indices against it: pyarrow's stream of batches sharing a
    dictionary reads back whole; one whose dictionary holds bad UTF-8 is refused at that message,
    and one whose batch indexes past the dictionary at that batch."""
    values = pa.array(["ab", "cd", "ef"])
    good = pa.DictionaryArray.from_arrays(pa.array([0, 2, 1], pa.int8()), values)
    t = pa.Table.from_batches([pa.record_batch([good], names=["d"])] * 30)
    back = pa.table(ferry.ipc.read_stream(pa_stream_bytes(t)))
    assert back.equals(t)
    # "a\xc3": a truncated two-byte sequence in the dictionary's first value.
    bad_values = pa.StringArray.from_buffers(3, values.buffers()[1], pa.py_buffer(b"a\xc3cdef"))
    bad = pa.DictionaryArray.from_arrays(pa.array([1, 2], pa.int8()), bad_values)
    data = pa_stream_bytes(pa.Table.from_batches([pa.record_batch([bad], names=["d"])] * 3))
    with pytest.raises(ValueError, match=r"message 1 \(dictionary 0\).*element 0: invalid UTF-8"):
        pa.table(ferry.ipc.read_stream(data))
    assert pa.table(ferry.ipc.read_stream(data, validation=ferry.ValidationLevel.DEFAULT)).num_rows == 6
    past = pa.DictionaryArray.from_arrays(pa.array([0, 3], pa.int8()), values, safe=False)
    data = pa_stream_bytes(pa.Table.from_batches([pa.record_batch([good], names=["d"]),
                                                  pa.record_batch([past], names=["d"])]))
    with pytest.raises(ValueError, match=r"message 3.*element 1: dictionary index 3 is outside"):
        pa.table(ferry.ipc.read_stream(data))


def test_device_batches_are_written_through_the_device_layer():
    t = pa.table({"a": [1, 2, 3], "s": ["x", None, "z"]})
    guarded = ferry.Device.resolve(ferry.DeviceType.EXT_DEV, 0)
    on_device = ferry.array(t.to_batches()[0]).copy_to(guarded)
    out = ferry.ipc.write_stream(on_device)
    assert pa.ipc.open_stream(pa.py_buffer(out)).read_all().equals(t)


def test_errors():
    with pytest.raises(ValueError):
        ferry.ipc.read_stream(b"not an arrow stream at all, just bytes")
    with pytest.raises(OSError, match="nope"):
        ferry.ipc.FileReader("/nonexistent/nope.arrow")
    with pytest.raises(ValueError, match=r'unknown compression "gzip" \(none, lz4 or lz4_frame, zstd\)'):
        ferry.ipc.write_stream(table(), compression="gzip")
    with pytest.raises(TypeError, match="sink must be None"):
        ferry.ipc.write_stream(table(), 3)


class Trickle:
    """A raw sink that takes at most 1,000 bytes a call, as a raw file or a pipe may."""

    def __init__(self):
        self.data = bytearray()
        self.calls = 0

    def write(self, b):
        self.calls += 1
        taken = bytes(b[:1000])
        self.data += taken
        return len(taken)


class Broken:
    def __init__(self, after):
        self.left = after

    def write(self, b):
        self.left -= 1
        if self.left < 0:
            raise OSError("disk full")
        return len(b)


@pytest.mark.parametrize("fmt", ["stream", "file"])
def test_writable_file_objects_are_sinks(tmp_path, fmt):
    t = table()
    write = ferry.ipc.write_stream if fmt == "stream" else ferry.ipc.write_file
    read = (lambda b: pa.ipc.open_stream(b).read_all()) if fmt == "stream" else \
        (lambda b: pa.ipc.open_file(pa.BufferReader(b)).read_all())
    # io.BytesIO, an open file and a sink that takes a little at a time: pyarrow reads each.
    buf = io.BytesIO()
    size = write(t, buf, compression="zstd")
    assert size == len(buf.getvalue())
    assert_tables_equal(read(buf.getvalue()), t)
    path = tmp_path / "out.arrow"
    with open(path, "wb") as f:
        assert write(t, f) == f.tell()
    assert_tables_equal(read(path.read_bytes()), t)
    trickle = Trickle()
    assert write(t, trickle) == len(trickle.data) > 1000
    assert trickle.calls > len(trickle.data) // 1000
    assert_tables_equal(read(bytes(trickle.data)), t)
    # The bytes are what the path sink writes.
    assert bytes(trickle.data) == bytes(write(t))


def test_a_sink_that_raises_or_lies_fails_the_write_naming_it():
    with pytest.raises(OSError, match=r"the sink's write\(\) raised OSError at byte \d+: disk full"):
        ferry.ipc.write_stream(table(), Broken(after=2))

    class Greedy:
        def write(self, b):
            return len(b) + 1

    with pytest.raises(OSError, match=r"the sink's write\(\) took \d+ of \d+ bytes at byte 0"):
        ferry.ipc.write_stream(table(), Greedy())
    with pytest.raises(TypeError, match=r"a writable file object \(with write\(\)\)"):
        ferry.ipc.write_stream(table(), object())


def pa_stream_pieces(t):
    """The stream's bytes in three parts: the schema and first batch, the other batches, the end."""
    sink = pa.BufferOutputStream()
    batches = t.to_batches(max_chunksize=11)
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_batch(batches[0])
        first = sink.tell()
        for b in batches[1:]:
            w.write_batch(b)
        rest = sink.tell()
    data = sink.getvalue().to_pybytes()
    return data[:first], data[first:rest], data[rest:], len(batches)


def test_readable_file_objects_are_read_as_the_batches_are_taken():
    t = table()
    head, middle, end, count = pa_stream_pieces(t)
    assert_tables_equal(pa.table(ferry.ipc.read_stream(io.BytesIO(head + middle + end))), t)
    # A pipe whose writer sends the rest only once the reader has taken the first batch: a
    # reader that waited for the whole stream would never get it (the writer gives up after 30 s).
    r, w = os.pipe()
    first_taken = threading.Event()
    errors = []

    def writer():
        with os.fdopen(w, "wb") as f:
            f.write(head)
            f.flush()
            if not first_taken.wait(30):
                errors.append("the first batch was not read before the rest of the stream came")
            for i in range(0, len(middle), 777):  # in pieces that split messages
                f.write(middle[i:i + 777])
                f.flush()
            f.write(end)

    thread = threading.Thread(target=writer)
    thread.start()
    with os.fdopen(r, "rb", buffering=0) as f:
        stream = ferry.ipc.read_stream(f)
        got = [stream.read_next()]
        first_taken.set()
        got += stream.read_all()
    thread.join()
    assert not errors, errors
    assert len(got) == count
    assert_tables_equal(pa.Table.from_batches([pa.record_batch(a) for a in got]), t)


def test_a_readable_source_that_ends_early_or_raises_is_named():
    head, middle, end, _ = pa_stream_pieces(table())
    whole = head + middle + end
    with pytest.raises(pa.ArrowInvalid, match=r"the stream is truncated at byte \d+ \(\d+ more"):
        pa.table(ferry.ipc.read_stream(io.BytesIO(whole[:len(whole) // 2])))
    with pytest.raises(ValueError, match="the stream ends before its Schema message"):
        ferry.ipc.read_stream(io.BytesIO(b"")).read_all()

    class Broken:
        def read(self, n):
            raise ValueError("boom")

    with pytest.raises(OSError, match=r"the source's read\(\) raised ValueError at byte 0: boom"):
        ferry.ipc.read_stream(Broken()).read_all()


def test_file_reader_reads_a_file_object_whole(tmp_path):
    t = table()
    path = tmp_path / "t.arrow"
    with pa.ipc.new_file(str(path), t.schema) as w:
        w.write_table(t, max_chunksize=11)
    for source in (open(path, "rb"), io.BytesIO(path.read_bytes())):
        with source:
            reader = ferry.ipc.FileReader(source)
        expected = pa.ipc.open_file(str(path))
        assert len(reader) == expected.num_record_batches
        got = pa.Table.from_batches([pa.record_batch(reader.read_record_batch(i))
                                     for i in range(len(reader))])
        assert_tables_equal(got, t)
    with pytest.raises(ValueError):
        ferry.ipc.FileReader(io.BytesIO(b"ARROW1\x00\x00 not a whole file"))
