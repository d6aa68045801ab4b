#!/usr/bin/env python3
"""bench/flight: the cost of `ferry serve --metrics`, measured on and off in one run.

Two `ferry serve --flight` processes serve the same files, one without metrics ("off") and one
with `--metrics` ("on": every RPC timed by the interceptor, and /metrics scraped every
--scrape-interval seconds, 1 s by default, by a thread of this script during the whole run;
Prometheus scrapes every 15 s by default). Whole `ferry get --path ... --via PLANE` processes read:

  (a) 1 GiB (int64 and float64 columns, 64 MiB batches) over shared memory, full validation
  (b) the same over UCX
  (c) a stream of 1,000-row batches over shared memory
  (d) the same stream over gRPC (DoGet: the interceptor sees every message)

Each round reads every path from "off", "on", "on", "off" (ABBA, so a slow spell of the machine
hits both alike), and the next from "on", "off", "off", "on" (BAAB: a server read twice running is
faster the second time, so each server takes that place equally often), timing the transfer after
connect (`ferry get`'s summary line). The overhead is the median over pairs of rounds of each
pair's on/off - 1 (the four "on" reads' time over the four "off" reads'), with the quartiles of
those pairs beside it: a ratio within one pair is what a busy machine disturbs least. Beside the times, the server's own CPU time for the same reads (from
/proc/PID/stat, summed over all rounds: clock ticks, so only totals are exact), which other
processes on the machine disturb far less than they do elapsed time. Prints a Markdown table;
--out writes JSON.

    FERRY_CLI=build/bench/tools/ferry/ferry .venv/bin/python bench/flight/metrics_bench.py \\
        --repeat 20 --out metrics.json
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request

import numpy as np
import pyarrow as pa

TARGETS = {"big shm": 1.0, "big ucx": 1.0, "small shm": 3.0, "small grpc": 3.0}


def write_file(path, rows_per_batch, batches):
    schema = pa.schema([("i", pa.int64()), ("f", pa.float64())])
    rng = np.random.default_rng(7)
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_stream(f, schema) as w:
        for b in range(batches):
            ints = np.arange(b * rows_per_batch, (b + 1) * rows_per_batch, dtype=np.int64)
            w.write_batch(pa.record_batch([pa.array(ints), pa.array(rng.random(rows_per_batch))],
                                          schema=schema))


class Server:
    """`ferry serve --flight 127.0.0.1:0 ARGS`; .uri is the line it printed first, .metrics the
    URL it printed for --metrics (None without)."""

    def __init__(self, cli, args, err_path):
        self.err = open(err_path, "w+")
        self.proc = subprocess.Popen([cli, "serve", "--flight", "127.0.0.1:0", *args],
                                     stdout=subprocess.PIPE, stderr=self.err, text=True)
        self.uri = self.proc.stdout.readline().strip()
        assert self.uri.startswith("grpc://"), open(err_path).read()
        self.metrics = None
        if "--metrics" in args:
            deadline = time.monotonic() + 10
            while self.metrics is None:
                m = re.search(r"metrics on (http://\S+)", open(err_path).read())
                self.metrics = m.group(1) if m else None
                assert self.metrics or time.monotonic() < deadline, open(err_path).read()
                time.sleep(0.05)

    def cpu(self):
        """The server's user and system CPU seconds so far, its ended threads' included."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self):
        self.proc.send_signal(2)
        self.proc.wait(timeout=30)
        self.err.close()


class Scraper(threading.Thread):
    """GETs `url` every `interval` seconds until stopped; counts the scrapes."""

    def __init__(self, url, interval):
        super().__init__(daemon=True)
        self.url, self.interval, self.scrapes = url, interval, 0
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.wait(self.interval):
            with urllib.request.urlopen(self.url, timeout=5) as r:
                assert r.status == 200 and b"ferry_sent_bytes_total" in r.read()
            self.scrapes += 1


def get(cli, uri, path, via):
    """One `ferry get` process: the transfer's seconds after connect, from its summary line."""
    r = subprocess.run([cli, "get", uri, "--path", path, "--via", via, "--no-progress",
                        "--validation", "full"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    m = re.search(r"(\d+) bytes in [0-9.]+ s .*connected in [0-9.]+ ms, then ([0-9.]+) MB/s",
                  r.stdout)
    assert m and re.search(rf"by plane:.*\b{via} {m.group(1)} bytes", r.stdout), r.stdout
    return int(m.group(1)) / (float(m.group(2)) * 1e6)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gib", type=float, default=1.0, help="size of the big transfer")
    ap.add_argument("--small-batches", type=int, default=4000,
                    help="1,000-row batches in the stream of small batches")
    ap.add_argument("--repeat", type=int, default=6,
                    help="rounds, an even number (each reads every path 4 times: ABBA, then BAAB)")
    ap.add_argument("--scrape-interval", type=float, default=1.0,
                    help="seconds between scrapes of the \"on\" server")
    ap.add_argument("--paths", default="big shm,big ucx,small shm,small grpc",
                    help="the paths to measure, comma-separated")
    ap.add_argument("--out", help="write the figures as JSON here")
    args = ap.parse_args()
    if args.repeat < 2 or args.repeat % 2:
        ap.error("--repeat must be an even number of at least 2 (ABBA and BAAB rounds)")
    cli = os.environ.get("FERRY_CLI", "build/bench/tools/ferry/ferry")

    with tempfile.TemporaryDirectory() as tmp:
        big_rows = 4 << 20  # 64 MiB a batch of two 8-byte columns
        big_batches = max(1, round(args.gib * 16))
        if args.gib < 1 / 16:
            big_rows = max(1000, int(args.gib * (1 << 30) / 16))
        write_file(f"{tmp}/big.arrows", big_rows, big_batches)
        write_file(f"{tmp}/small.arrows", 1000, args.small_batches)
        data = [f"big={tmp}/big.arrows", f"small={tmp}/small.arrows"]
        servers = {"off": Server(cli, data, f"{tmp}/off.err"),
                   "on": Server(cli, ["--metrics", "127.0.0.1:0", *data], f"{tmp}/on.err")}
        scraper = Scraper(servers["on"].metrics, args.scrape_interval)
        scraper.start()
        paths = {"big shm": ("big", "shm"), "big ucx": ("big", "ucx"),
                 "small shm": ("small", "shm"), "small grpc": ("small", "grpc")}
        paths = {p: paths[p] for p in args.paths.split(",")}
        times = {p: {"off": [], "on": []} for p in paths}
        cpu = {p: {"off": 0.0, "on": 0.0} for p in paths}
        try:
            for name, (flight, via) in paths.items():  # a first read of each, discarded
                for s in servers.values():
                    get(cli, s.uri, flight, via)
            for r in range(args.repeat):
                # ABBA, then BAAB: a server read twice running is faster the second time (up
                # to 2x for 1,000-row batches here), so each takes that place equally often.
                order = ("off", "on", "on", "off") if r % 2 == 0 else ("on", "off", "off", "on")
                for name, (flight, via) in paths.items():
                    for which in order:
                        before = servers[which].cpu()
                        times[name][which].append(get(cli, servers[which].uri, flight, via))
                        cpu[name][which] += servers[which].cpu() - before
        finally:
            scraper.stopped.set()
            scraper.join()
            for s in servers.values():
                s.close()

    print(f"| path | metrics off | metrics on | overhead (quartiles) | server CPU off / on | "
          f"CPU overhead | target |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    report = {"repeat": args.repeat, "scrapes": scraper.scrapes, "paths": {}}
    for name, t in times.items():
        off, on = statistics.median(t["off"]), statistics.median(t["on"])
        # One figure per pair of rounds (an ABBA and its BAAB), whose order favours neither.
        rounds = [100 * (sum(t["on"][4 * i:4 * i + 4]) / sum(t["off"][4 * i:4 * i + 4]) - 1)
                  for i in range(args.repeat // 2)]
        overhead = statistics.median(rounds)
        q = statistics.quantiles(rounds, n=4) if len(rounds) > 1 else [overhead, overhead, overhead]
        reads = 2 * args.repeat
        cpu_off, cpu_on = cpu[name]["off"] / reads, cpu[name]["on"] / reads
        cpu_overhead = 100 * (cpu_on / cpu_off - 1) if cpu_off > 0 else float("nan")
        report["paths"][name] = {"off_s": off, "on_s": on, "overhead_percent": overhead,
                                 "rounds_percent": rounds, "off_all": t["off"], "on_all": t["on"],
                                 "server_cpu_off_s": cpu_off, "server_cpu_on_s": cpu_on,
                                 "server_cpu_overhead_percent": cpu_overhead}
        print(f"| {name} | {off * 1e3:.1f} ms | {on * 1e3:.1f} ms | {overhead:+.1f}% "
              f"({q[0]:+.1f}% to {q[2]:+.1f}%) | {cpu_off * 1e3:.1f} / {cpu_on * 1e3:.1f} ms | "
              f"{cpu_overhead:+.1f}% | ≤ {TARGETS[name]:.0f}% |")
    print(f"({args.repeat} rounds of 4 reads per path, ABBA and BAAB; {scraper.scrapes} scrapes of the \"on\" "
          f"server, every {args.scrape_interval:g} s)")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
