#!/usr/bin/env python3
"""Case (a) of the cross-process transfer benchmark: pyarrow on both ends of a Unix socket.

A forked sender process builds the same table as bench/dipc/transfer_bench.cpp (int64, double,
short string and list<int32> columns, `--batches` batches of `--rows` rows) and, for every
connection, writes it as an Arrow IPC stream (`pa.ipc.new_stream` over the socket's file
object). The receiver (this process) connects, reads the stream with `pa.ipc.open_stream` and
drops each batch as it comes; it times that, from connect to the end of the stream. The first
pass is a warm-up (it also waits for the sender to build the table) and is not reported.

Output, one item a line: `rep SECONDS` for each repetition, then `rows N`, `batches N`,
`bytes N` (the table's buffer bytes, pyarrow's `nbytes`), `best SECONDS`, `median SECONDS`.
Without pyarrow it prints `skip: ...` and exits with status 3.
"""
import argparse
import os
import socket
import statistics
import sys
import tempfile
import time

try:
    import numpy as np
    import pyarrow as pa
except ImportError as e:  # pragma: no cover
    print(f"skip: pyarrow (and numpy) are needed: {e}", flush=True)
    sys.exit(3)


def build_batch(rows: int) -> pa.RecordBatch:
    """Row i: i, i * 0.5, "value {i % 1000}", [0, 1, ..., i % 4 - 1] (as in the C++ side)."""
    i = np.arange(rows, dtype=np.int64)
    words = pa.array([f"value {j}" for j in range(1000)], pa.string())
    strings = words.take(pa.array(i % 1000))
    lengths = (i % 4).astype(np.int32)
    offsets = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    values = np.arange(offsets[-1], dtype=np.int32) - np.repeat(offsets[:-1], lengths)
    lists = pa.ListArray.from_arrays(pa.array(offsets), pa.array(values, pa.int32()))
    return pa.record_batch([pa.array(i), pa.array(i * 0.5), strings, lists],
                           names=["l", "g", "u", "list"])


def sender(listener: socket.socket, rows: int, batches: int, passes: int) -> None:
    table = [build_batch(rows) for _ in range(batches)]
    for _ in range(passes):
        conn, _ = listener.accept()
        with conn, conn.makefile("wb") as f:
            with pa.ipc.new_stream(f, table[0].schema) as w:
                for b in table:
                    w.write_batch(b)


def receive(path: str) -> tuple[float, int, int, int]:
    start = time.perf_counter()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    rows = batches = nbytes = 0
    with s, s.makefile("rb") as f:
        reader = pa.ipc.open_stream(f)
        for b in reader:
            rows += b.num_rows
            batches += 1
            nbytes += b.nbytes
            del b
    return time.perf_counter() - start, rows, batches, nbytes


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_725_000)
    p.add_argument("--batches", type=int, default=16)
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()

    path = os.path.join(tempfile.mkdtemp(prefix="ferry-pyarrow-"), "sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    pid = os.fork()
    if pid == 0:
        try:
            sender(listener, a.rows, a.batches, a.reps + 1)
        finally:
            os._exit(0)
    listener.close()
    try:
        receive(path)  # warm-up
        times = []
        for _ in range(a.reps):
            t, rows, batches, nbytes = receive(path)
            times.append(t)
            print(f"rep {t:.6f}", flush=True)
    finally:
        os.waitpid(pid, 0)
        os.unlink(path)
        os.rmdir(os.path.dirname(path))
    print(f"rows {rows}\nbatches {batches}\nbytes {nbytes}")
    print(f"best {min(times):.6f}\nmedian {statistics.median(times):.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
