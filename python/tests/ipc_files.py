"""The tables and IPC files the Dissociated IPC tests serve: a table of five kinds of column
(int64, float64, strings with nulls, lists with nulls, a dictionary), written by pyarrow (the
independent writer) as a stream or a file in batches of a given size."""
import numpy as np
import pyarrow as pa


def mixed_table(rows):
    rng = np.random.default_rng(7)
    return pa.table(
        {
            "i": pa.array(np.arange(rows, dtype=np.int64)),
            "f": pa.array(rng.random(rows)),
            "s": pa.array([None if i % 11 == 0 else f"row {i}" for i in range(rows)]),
            "l": pa.array([[i, i + 1] if i % 3 else None for i in range(rows)], pa.list_(pa.int32())),
            "d": pa.array([["a", "b", "c"][i % 3] for i in range(rows)]).dictionary_encode(),
        }
    )


def _write(new, path, table, chunk, compression):
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.OSFile(str(path), "wb") as f:
        with new(f, table.schema, options=options) as w:
            for b in table.to_batches(max_chunksize=chunk):
                w.write_batch(b)


def write_stream(path, table, chunk, compression=None):
    """`table` as an IPC stream at `path`, in batches of at most `chunk` rows."""
    _write(pa.ipc.new_stream, path, table, chunk, compression)


def write_file(path, table, chunk, compression=None):
    """`table` as an IPC file at `path`, in batches of at most `chunk` rows."""
    _write(pa.ipc.new_file, path, table, chunk, compression)
