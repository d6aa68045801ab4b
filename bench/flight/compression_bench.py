#!/usr/bin/env python3
"""bench/flight/compression_bench.py: DoGet over a 1 Gbit/s link, uncompressed against lz4_frame
and zstd bodies (the `ferry-compression` header), on data that compresses (strings from a small
vocabulary with ints) and data that does not (random float64s).

The server and the client are two network namespaces joined by a bridge (tests/support/netns.py);
the server's side of its link is limited to 1 Gbit/s with a tbf qdisc (`tc qdisc add dev ... root
tbf rate 1gbit`), so every byte DoGet sends crosses a real, slow link. The client is pyarrow.flight
in the client's namespace, which decompresses as any Arrow reader does. Rounds alternate the
codecs (none, lz4_frame, zstd, none, ...) and each figure is the median of --repeat reads.

    FERRY_CLI=build/test/tools/ferry/ferry .venv/bin/python bench/flight/compression_bench.py \\
        --mib 256 --repeat 3 --out compression.json

Needs root (namespaces and tc); prints a Markdown table.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "support"))
from ferry_process import ServeProcess  # noqa: E402
from netns import Hosts  # noqa: E402

CODECS = ["none", "lz4_frame", "zstd"]

# Run in the client's namespace: read the flight `repeat` times with the codec and print the
# seconds of each read and the rows it got.
CLIENT = r"""
import json, sys, time
import pyarrow.flight as fl
uri, name, codec = sys.argv[1], sys.argv[2], sys.argv[3]
client = fl.connect(uri)
options = fl.FlightCallOptions(headers=[(b"ferry-compression", codec.encode())])
ticket = client.get_flight_info(fl.FlightDescriptor.for_path(name)).endpoints[0].ticket
t0 = time.perf_counter()
table = client.do_get(ticket, options=options).read_all()
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "rows": table.num_rows, "bytes": table.nbytes}))
"""


def write_strings(path, mib):
    rng = np.random.default_rng(7)
    words = np.array(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
                      "india", "juliett", "kilo", "lima"])
    rows_per_batch = 1 << 20
    schema = pa.schema([("word", pa.string()), ("n", pa.int64())])
    written = 0
    with ipc.new_stream(str(path), schema) as w:
        while written < mib << 20:
            idx = rng.integers(0, len(words), rows_per_batch)
            batch = pa.record_batch([pa.array(words[idx]), pa.array(idx % 5, pa.int64())],
                                    schema=schema)
            w.write_batch(batch)
            written += batch.nbytes


def write_floats(path, mib):
    rng = np.random.default_rng(8)
    rows_per_batch = 1 << 20
    schema = pa.schema([("x", pa.float64())])
    with ipc.new_stream(str(path), schema) as w:
        for _ in range(max(1, (mib << 20) // (8 * rows_per_batch))):
            w.write_batch(pa.record_batch([pa.array(rng.random(rows_per_batch))], schema=schema))


def server_bytes(host, uri):
    out = host.run([sys.executable, "-c",
                    "import json,sys,pyarrow.flight as fl;"
                    "r=list(fl.connect(sys.argv[1]).do_action(fl.Action('stats',b'')));"
                    "print(json.loads(r[0].body.to_pybytes())['grpc']['bytes_sent'])", uri],
                   capture_output=True, text=True, check=True)
    return int(out.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=256, help="size of each dataset (MiB)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rate", default="1gbit", help="the link's rate (tc tbf)")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()

    results = {}
    with tempfile.TemporaryDirectory() as tmp, Hosts(["server", "client"]) as hosts:
        strings, floats = os.path.join(tmp, "strings.arrows"), os.path.join(tmp, "floats.arrows")
        write_strings(strings, args.mib)
        write_floats(floats, args.mib)
        server, client = hosts["server"], hosts["client"]
        # The server's end of its veth pair (tests/support/netns.py names it <bridge>n<index>).
        device = f"{hosts.bridge}n0"
        server.run(["tc", "qdisc", "add", "dev", device, "root", "tbf", "rate", args.rate,
                    "burst", "256kb", "latency", "50ms"], check=True)
        # --insecure: the namespaces' bridge is private to this run.
        with ServeProcess(["--flight", f"{server.ip}:0", "--insecure", f"strings={strings}",
                           f"floats={floats}"], wrap=server.wrap, tmp=tmp) as serve:
            uri = serve.first_line()
            for name in ["strings", "floats"]:
                times = {c: [] for c in CODECS}
                wire = {}
                for _ in range(args.repeat):
                    for codec in CODECS:
                        before = server_bytes(client, uri)
                        run = client.run([sys.executable, "-c", CLIENT, uri, name, codec],
                                         capture_output=True, text=True, check=True)
                        got = json.loads(run.stdout)
                        times[codec].append(got["seconds"])
                        wire[codec] = server_bytes(client, uri) - before
                        results.setdefault(name, {})["table_bytes"] = got["bytes"]
                for codec in CODECS:
                    results[name][codec] = {"seconds": statistics.median(times[codec]),
                                            "runs": times[codec], "wire_bytes": wire[codec]}
    print(f"| data | codec | bytes on the wire | read (s) | MB/s of table | vs none |")
    print("|---|---|---:|---:|---:|---:|")
    for name, row in results.items():
        base = row["none"]["seconds"]
        for codec in CODECS:
            r = row[codec]
            mbs = row["table_bytes"] / r["seconds"] / 1e6
            print(f"| {name} | {codec} | {r['wire_bytes'] / 1e6:.1f} MB | {r['seconds']:.2f} | "
                  f"{mbs:.0f} | {base / r['seconds']:.2f}x |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"rate": args.rate, "mib": args.mib, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
