"""`ferry inspect` against pyarrow: the message list of a stream (kinds, body lengths, rows,
dictionary ids and deltas) is what pyarrow's MessageReader and stream reader see, and a file's
batch blocks point at the messages pyarrow reads there."""
import re

import pyarrow as pa
import pytest

from cli_support import integration_vectors, vector_id, write_ipc
from arrays import TYPE_CASES

MESSAGE = re.compile(r"^message (\d+) \(ends at byte (\d+)\): (schema|dictionary|record batch|end of stream)(.*)$")
BATCH = re.compile(r"^, (\d+) rows, (\d+) body bytes, (\S+)$")
DICT = re.compile(r"^ id (\d+)( \(delta\))?$")
BLOCK = re.compile(r"^  batch (\d+): (\d+) rows, (\d+) body bytes at offset (\d+), (\S+)$")


def parse_stream(text):
    out = []
    for line in text.splitlines():
        m = MESSAGE.match(line)
        if not m:
            continue
        kind, rest = m.group(3), m.group(4)
        entry = {"kind": kind, "end": int(m.group(2))}
        if kind == "record batch":
            b = BATCH.match(rest)
            assert b, line
            entry.update(rows=int(b.group(1)), body=int(b.group(2)), compression=b.group(3))
        elif kind == "dictionary":
            d = DICT.match(rest)
            assert d, line
            entry.update(id=int(d.group(1)), delta=bool(d.group(2)))
        out.append(entry)
    return out


def pyarrow_messages(path):
    """(kind, body length) of every message, by pyarrow's MessageReader, and the stream's batches."""
    reader = pa.ipc.MessageReader.open_stream(pa.memory_map(path))
    messages = []
    while True:
        try:
            msg = reader.read_next_message()
        except StopIteration:
            break
        messages.append((msg.type, msg.body.size if msg.body is not None else 0))
    stream = pa.ipc.open_stream(pa.memory_map(path))
    batches = list(stream)
    return messages, batches, stream.stats


KIND = {"schema": "schema", "dictionary": "dictionary", "record batch": "record batch"}


def check_stream(run, path, compression="uncompressed"):
    r = run("inspect", path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"{path}: Arrow IPC stream, ")
    ours = parse_stream(r.stdout)
    messages, batches, stats = pyarrow_messages(path)
    listed = [m for m in ours if m["kind"] != "end of stream"]
    assert [(KIND[m["kind"]], m.get("body", None)) for m in listed] == \
        [(k, b if k == "record batch" else None) for k, b in messages]
    assert [m["rows"] for m in listed if m["kind"] == "record batch"] == [b.num_rows for b in batches]
    assert all(m["compression"] == compression for m in listed if m["kind"] == "record batch")
    dicts = [m for m in listed if m["kind"] == "dictionary"]
    assert len(dicts) == stats.num_dictionary_batches
    assert sum(m["delta"] for m in dicts) == stats.num_dictionary_deltas
    # Message ends grow and the last one is the file's size (with the end-of-stream marker).
    ends = [m["end"] for m in ours]
    assert ends == sorted(ends)
    schema = pa.ipc.open_stream(pa.memory_map(path)).schema
    assert f"schema ({len(schema)} columns, metadata V5):" in r.stdout
    for field in schema:
        assert f"\n  {field.name}: " in r.stdout
    return ours


@pytest.mark.parametrize("path", integration_vectors(".stream"), ids=vector_id)
def test_stream_vectors_list_the_messages_pyarrow_reads(run, path):
    r = run("inspect", path)
    assert r.returncode == 0, r.stderr
    messages, batches, stats = pyarrow_messages(path)
    listed = [m for m in parse_stream(r.stdout) if m["kind"] != "end of stream"]
    assert [KIND[m["kind"]] for m in listed] == [k for k, _ in messages]
    assert [m["body"] for m in listed if m["kind"] == "record batch"] == \
        [b for k, b in messages if k == "record batch"]
    assert [m["rows"] for m in listed if m["kind"] == "record batch"] == [b.num_rows for b in batches]


@pytest.mark.parametrize("compression", [None, "lz4", "zstd"])
def test_pyarrow_streams_with_every_type(run, tmp_path, compression):
    n = len(TYPE_CASES["int32"])
    table = pa.table({k: v for k, v in TYPE_CASES.items() if len(v) == n})
    path = write_ipc(tmp_path / "t.arrows", table, chunk=15, compression=compression)
    ours = check_stream(run, path, {None: "uncompressed", "lz4": "LZ4_FRAME", "zstd": "ZSTD"}[compression])
    assert ours[-1]["kind"] == "end of stream"


def test_dictionary_replacements_and_deltas(run, tmp_path):
    schema = pa.schema([("d", pa.dictionary(pa.int32(), pa.string()))])
    batches = [pa.record_batch([pa.DictionaryArray.from_arrays(pa.array(i, pa.int32()), pa.array(d))], schema=schema)
               for i, d in [([0, 1], ["a", "b"]), ([2], ["a", "b", "c"]), ([0], ["z"])]]
    for deltas in [False, True]:
        path = tmp_path / f"d{deltas}.arrows"
        with pa.OSFile(str(path), "wb") as sink:
            with pa.ipc.new_stream(sink, schema, options=pa.ipc.IpcWriteOptions(emit_dictionary_deltas=deltas)) as w:
                for b in batches:
                    w.write_batch(b)
        ours = check_stream(run, str(path))
        flags = [m["delta"] for m in ours if m["kind"] == "dictionary"]
        assert flags == ([False, True, False] if deltas else [False, False, False])


@pytest.mark.parametrize("path", integration_vectors(".arrow_file"), ids=vector_id)
def test_file_blocks_point_at_the_batches_pyarrow_reads(run, path):
    r = run("inspect", path)
    assert r.returncode == 0, r.stderr
    reader = pa.ipc.open_file(path)
    head = r.stdout.splitlines()
    assert head[0].startswith(f"{path}: Arrow IPC file, ")
    blocks = [BLOCK.match(line) for line in head if BLOCK.match(line)]
    assert len(blocks) == reader.num_record_batches
    assert f"record batches: {reader.num_record_batches}" in r.stdout
    data = pa.memory_map(path).read_buffer()
    for i, b in enumerate(blocks):
        assert int(b.group(1)) == i
        assert int(b.group(2)) == reader.get_batch(i).num_rows
        msg = pa.ipc.read_message(pa.BufferReader(data.slice(int(b.group(4)))))
        assert msg.type == "record batch"
        assert msg.body.size == int(b.group(3))
    for i in range(reader.num_record_batches):
        reader.get_batch(i)
    assert f"dictionaries: {reader.stats.num_dictionary_batches}," in r.stdout


def test_truncated_stream_is_an_error(run, tmp_path):
    path = write_ipc(tmp_path / "t.arrows", pa.table({"x": list(range(100))}))
    data = open(path, "rb").read()
    cut = tmp_path / "cut.arrows"
    cut.write_bytes(data[:-30])
    r = run("inspect", cut)
    assert r.returncode == 1
    assert r.stderr.startswith(f"ferry: {cut}: ") and "truncated" in r.stderr
