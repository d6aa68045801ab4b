"""`ferry get` of small kept batches against the small-batches benchmark's own client, and
`ferry get --to FILE` against the limit of writing that file.

One `ferry serve --keep` serves a stream file of N batches of R rows with the benchmark's values
(x int64, f float64, s a short string; 1,000 rows are about 24 KB). Each round runs, in an order
that rotates from round to round:
  count     `ferry get` reading and counting the batches;
  devnull   `ferry get --to /dev/null`, writing them as an IPC stream to no output;
  file      `ferry get --to DIR/...`, writing them into a file (DIR is tmpfs by default);
  limit     ferry_write_limit (bench/cli/write_limit.c): the same file's bytes written into a file
            in DIR with write(2), one batch's worth at a time, with no Arrow and no reading.
Both write a new file: the last one is removed before each (untimed).
  client    ferry_small_batches read: the benchmark's client, the pace `ferry get` is held to.
Each `ferry get` is timed by the transfer it reports (its bytes over its rate after connecting);
the benchmark's client and the limit time themselves. Prints each case's median seconds and the
ratios: each get's to the client, and the file's to the limit.

    FERRY_CLI=build/bench/tools/ferry/ferry .venv/bin/python bench/cli/get_small_batches.py \\
        --tree build/bench/bench --rounds 15
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "support"))
import machine  # noqa: E402 (tests/support, on the path above)

CASES = ["count", "devnull", "file", "limit", "client"]
SUMMARY = re.compile(r"([\d,]+) bytes in [\d.]+ s \([\d.]+ [MG]B/s; connected in [\d.]+ ms, "
                     r"then ([\d.]+) ([MG])B/s")


def make_stream(path, batches, rows):
    """The benchmark's batch (bench/dipc/small_batches.cpp's MakeBatch) `batches` times."""
    x = pa.array(range(rows), pa.int64())
    f = pa.array([i * 0.5 for i in range(rows)], pa.float64())
    s = pa.array([f"v{i % 1000}" for i in range(rows)], pa.string())
    batch = pa.record_batch([x, f, s], names=["x", "f", "s"])
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, batch.schema) as writer:
        for _ in range(batches):
            writer.write_batch(batch)
    return os.path.getsize(path)


def run(words):
    r = subprocess.run(words, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(words)}: exit {r.returncode}\n{r.stdout[-2000:]}"
                           f"{r.stderr[-2000:]}")
    return r.stdout + r.stderr


def get_seconds(cli, uri, batches, to):
    if to and os.path.exists(to) and to != "/dev/null":
        os.unlink(to)  # a new file, as for the limit: freeing the last one's pages is not timed
    words = [cli, "get", uri, "--ticket", "t", "--validation", "default", "--no-progress"]
    if to:
        words += ["--to", to, "--force"]
    out = run(words)
    m = SUMMARY.search(out)
    if not m:
        raise RuntimeError(f"no summary in `ferry get`'s output: {out[-2000:]}")
    if f"{batches} batches" not in out:
        raise RuntimeError(f"`ferry get` did not read {batches} batches: {out[-2000:]}")
    rate = float(m.group(2)) * (1e9 if m.group(3) == "G" else 1e6)
    return int(m.group(1).replace(",", "")) / rate


def remove(path):
    if os.path.exists(path):
        os.unlink(path)


def last_json(text):
    return json.loads(text.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", required=True,
                        help="the directory of ferry_small_batches and ferry_write_limit")
    parser.add_argument("--batches", type=int, default=20000)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--dir", default="/dev/shm",
                        help="where the file case and the limit write (default /dev/shm, tmpfs)")
    parser.add_argument("--out", help="write the rounds and medians here as JSON")
    args = parser.parse_args()
    cli = os.environ.get("FERRY_CLI", "ferry")
    client = os.path.join(args.tree, "ferry_small_batches")
    limit = os.path.join(args.tree, "ferry_write_limit")
    with tempfile.TemporaryDirectory() as work, \
            tempfile.TemporaryDirectory(dir=args.dir) as out_dir:
        source = os.path.join(work, "batches.arrows")
        size = make_stream(source, args.batches, args.rows)
        target = os.path.join(out_dir, "written.arrows")
        server = subprocess.Popen([cli, "serve", "--keep", f"t={source}"], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True)
        try:
            uri = server.stdout.readline().split()[1]
            measure = {
                "count": lambda: get_seconds(cli, uri, args.batches, None),
                "devnull": lambda: get_seconds(cli, uri, args.batches, "/dev/null"),
                "file": lambda: get_seconds(cli, uri, args.batches, target),
                "limit": lambda: remove(target) or last_json(run([limit, source, target,
                                                str(size // args.batches)]))["seconds"],
                "client": lambda: args.batches / last_json(run(
                    [client, "read", uri, "default", str(args.batches), str(args.rows), "0",
                     "100", "50"]))["batches_per_s"],
            }
            for case in CASES:  # a first, cold read of each, not counted
                measure[case]()
            seconds = {case: [] for case in CASES}
            for r in range(args.rounds):
                k = r % len(CASES)
                for case in CASES[k:] + CASES[:k]:
                    seconds[case].append(measure[case]())
        finally:
            server.terminate()
            server.wait(timeout=30)
    median = {case: statistics.median(v) for case, v in seconds.items()}
    here = machine.describe()
    print(machine.line(here))
    print(f"{args.batches:,} kept batches of {args.rows:,} rows ({size / 1e6:.0f} MB), "
          f"{args.rounds} rounds, medians; the file case and the limit write into {args.dir}")
    print("| case | seconds | against the benchmark's client |")
    print("| --- | --- | --- |")
    for case in CASES:
        print(f"| {case} | {median[case]:.4f} | {median['client'] / median[case]:.2f}x |")
    print(f"file against its limit: {median['limit'] / median['file']:.2f}x")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"machine": here, "batches": args.batches, "rows": args.rows, "bytes": size,
                       "seconds": seconds, "median": median}, f, indent=1)


if __name__ == "__main__":
    main()
