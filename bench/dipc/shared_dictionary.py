#!/usr/bin/env python3
"""bench/dipc/shared_dictionary.py: a Dissociated IPC read of a producer's stream whose batches
share one dictionary, against pyarrow writing and reading the same stream in memory.

The dataset is a callable that returns a pyarrow RecordBatchReader of --batches batches, each
--rows int32 indices into one dictionary of --values strings. A `ferry.dipc.Server` ("shm")
serves it and a client in the same process reads it whole (`pa.table(ferry.dipc.connect(...))`),
timed from connect to the table; the server's writer sends the dictionary once and knows it by
its memory for every later batch (docs/ipc.md). The peer writes the same stream with pyarrow to a
memory buffer and reads it back. Each case runs --repeat times; the medians and ranges are
printed.
"""
import argparse
import statistics
import time

import pyarrow as pa
import pyarrow.ipc as ipc

import ferry.dipc


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", type=int, default=200)
    p.add_argument("--rows", type=int, default=1000)
    p.add_argument("--values", type=int, default=200_000)
    p.add_argument("--repeat", type=int, default=15)
    a = p.parse_args()
    values = pa.array([f"value {i}" for i in range(a.values)])
    indices = pa.array([i * 7 % a.values for i in range(a.rows)], pa.int32())
    batch = pa.record_batch([pa.DictionaryArray.from_arrays(indices, values)], names=["d"])
    table = pa.Table.from_batches([batch] * a.batches)

    def stream():
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())

    server = ferry.dipc.Server.start()
    server.add("t", stream)
    ferry_s, pyarrow_s = [], []
    for _ in range(a.repeat):
        start = time.perf_counter()
        got = pa.table(ferry.dipc.connect(server.uri, "t"))
        ferry_s.append(time.perf_counter() - start)
        assert got.equals(table), "ferry read back other rows"
        start = time.perf_counter()
        sink = pa.BufferOutputStream()
        with ipc.new_stream(sink, table.schema) as w:
            for b in stream():
                w.write_batch(b)
        got = ipc.open_stream(sink.getvalue()).read_all()
        pyarrow_s.append(time.perf_counter() - start)
        assert got.equals(table), "pyarrow read back other rows"

    def show(name, xs):
        ms = sorted(1e3 * x for x in xs)
        print(f"{name}: {statistics.median(ms):.1f} ms (median of {len(ms)}; {ms[0]:.1f}-{ms[-1]:.1f})")

    print(f"{a.batches} batches of {a.rows} indices sharing one {a.values:,}-string dictionary")
    show("ferry.dipc over shm, a producer's stream", ferry_s)
    show("pyarrow, written to memory and read back", pyarrow_s)


if __name__ == "__main__":
    main()
