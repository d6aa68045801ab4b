#!/usr/bin/env python3
"""bench/dipc/connect_time.py: how long a UCX client takes to connect, for two builds side by
side. A run reads 10 kept 1,000-row batches from `ferry_small_batches serve ucx` in a client
process of its own; the figure is the reader's `connect_s` (from its first call to ferry's hello
answered). The builds alternate, run by run, so that both see the same minutes of a noisy machine.

  loopback   server and client on this host, over 127.0.0.1
  namespace  the server in one network namespace, the client in another, joined by a bridge
             (tests/support/netns.py): another host, as UCX and ferry see it

Each case is run two ways: with a fresh server for each run, the client connecting as soon as
the server listens (a server's first client), and with one server per build kept running across
the runs, each client coming while it is idle (a running service's clients; a first read warms
it up).

    .venv/bin/python bench/dipc/connect_time.py --trees OLD/bench,NEW/bench --runs 25
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "support"))
from ab_table import ab_cells  # noqa: E402


def serve(tree, serve_host, ip):
    """A server of 10 kept 1,000-row batches: its process and its URI."""
    exe = os.path.join(tree, "ferry_small_batches")
    server = serve_host.popen([exe, "serve", "ucx", "0", "kept", "1000", "10", "0", f"{ip}:0"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return server, server.stdout.readline().split()[1]


def stop(server):
    server.stdin.close()
    server.wait(timeout=30)


def read_ms(tree, read_host, uri):
    """One client process's read of `uri`: its connect_s, in ms."""
    exe = os.path.join(tree, "ferry_small_batches")
    r = read_host.run([exe, "read", uri, "default", "10", "1000", "0", "0", "0"],
                      capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"{exe} read: exit {r.returncode}: {r.stderr[-2000:]}")
    return float(re.search(r'"connect_s": ([0-9.]+)', r.stdout).group(1)) * 1e3


def connect_ms(tree, serve_host, read_host, ip):
    """One run on a fresh server: the reader's connect_s, in ms."""
    server, uri = serve(tree, serve_host, ip)
    try:
        return read_ms(tree, read_host, uri)
    finally:
        stop(server)


class Here:
    """This host, as the namespaces' hosts are run."""

    def run(self, args, **kwargs):
        return subprocess.run(args, **kwargs)

    def popen(self, args, **kwargs):
        return subprocess.Popen(args, **kwargs)


def measure(trees, runs, serve_host, read_host, ip):
    """`runs` runs of each tree, alternating, each on a fresh server: each tree's times in ms."""
    times = {t: [] for t in trees}
    for i in range(runs):
        for t in trees if i % 2 == 0 else trees[::-1]:
            times[t].append(connect_ms(t, serve_host, read_host, ip))
    return times


def measure_running(trees, runs, serve_host, read_host, ip):
    """`runs` runs of each tree, alternating, on one server per tree kept running (a first read
    warms each up): each tree's times in ms."""
    servers = {}
    try:
        for t in trees:
            servers[t] = serve(t, serve_host, ip)
            read_ms(t, read_host, servers[t][1])
        times = {t: [] for t in trees}
        for i in range(runs):
            for t in trees if i % 2 == 0 else trees[::-1]:
                times[t].append(read_ms(t, read_host, servers[t][1]))
        return times
    finally:
        for server, _ in servers.values():
            stop(server)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trees", required=True,
                    help="directories holding ferry_small_batches, comma-separated")
    ap.add_argument("--runs", type=int, default=25, help="runs of each tree in each case")
    ap.add_argument("--no-namespaces", action="store_true", help="leave out the namespace case")
    args = ap.parse_args()
    trees = args.trees.split(",")
    cases = {}
    for way, run in (("fresh server", measure), ("running server", measure_running)):
        cases[f"loopback, {way}"] = run(trees, args.runs, Here(), Here(), "127.0.0.1")
        if not args.no_namespaces:
            from netns import Hosts
            with Hosts(["a", "c"]) as hosts:
                cases[f"namespace, {way}"] = run(trees, args.runs, hosts["a"], hosts["c"],
                                                 hosts["a"].ip)
    print("| case | build | connect, median ms (range) | against the first build (median of the "
          "runs' ratios) |")
    print("| --- | --- | --- | --- |")
    for case, times in cases.items():
        for cells in ab_cells(times):
            print(f"| {case} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
