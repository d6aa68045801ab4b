#!/usr/bin/env python3
"""bench/cluster/parallel_read.py: a flight spread over two servers, read from a third host by
`ferry get --parallel 2` of two builds side by side. Hosts are network namespaces joined by a
bridge (tests/support/netns.py), so the endpoints go over UCX on TCP; the servers (this tree's
`ferry serve --flight --keep`, the second listing the first with `--peer`) stay up across the
runs. Each run is one `ferry get` process, timed by its own summary line (from its call to the
last batch; GetFlightInfo included) with `--validation none`; the builds alternate run by run,
so that both see the same minutes of a noisy machine.

    FERRY_CLI=build/bench/tools/ferry/ferry .venv/bin/python bench/cluster/parallel_read.py \\
        --clis OLD/tools/ferry/ferry,NEW/tools/ferry/ferry --mib 16 --runs 30

Without --clis it times $FERRY_CLI alone. With --own-servers each CLI reads from a pair of
servers of its own build (both pairs up at once, on the same hosts), so that a change on the
server's side is compared too.
`--grpc-below 0` is passed, so that endpoints this small still go over UCX, as larger ones do.
A CLI's own directory comes first in its library path, so a copied CLI can bring its libraries.
"""
import argparse
import contextlib
import os
import re
import sys
import tempfile
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# cluster_bench puts tests/support on the path, for the imports after it.
from cluster_bench import TOKEN, make_half  # noqa: E402
from ab_table import ab_cells  # noqa: E402
from ferry_process import ServeProcess, ferry_cli  # noqa: E402
from netns import Hosts  # noqa: E402


def read_s(host, cli, uri):
    """One `ferry get` of flight t from `uri` on `host` with `cli`: its seconds."""
    env = dict(os.environ, FERRY_TOKEN=TOKEN, LD_LIBRARY_PATH=os.path.dirname(os.path.abspath(cli)))
    r = host.run([cli, "get", uri, "--path", "t", "--parallel", "2", "--validation", "none",
                  "--grpc-below", "0", "--no-progress"], capture_output=True, text=True, env=env,
                 timeout=300)
    found = re.search(r" in ([0-9.]+) s \(", r.stdout + r.stderr)
    if r.returncode != 0 or found is None:
        raise RuntimeError(f"{cli} get: exit {r.returncode}: {(r.stdout + r.stderr)[-2000:]}")
    return float(found.group(1))


def serve_pair(hosts, tmp, cli):
    """`ferry serve --flight --keep` on hosts a and b, b listing a as its peer, run by `cli`
    (None: this tree's): the two servers, b's URI still to be read from its first line."""
    env = dict(os.environ, FERRY_TOKEN=TOKEN)
    if cli is not None:
        env["LD_LIBRARY_PATH"] = os.path.dirname(os.path.abspath(cli))
    a = ServeProcess(["--flight", f"{hosts['a'].ip}:0", "--keep", f"t={tmp / 'a.arrows'}"],
                     env=env, tmp=str(tmp), wrap=hosts["a"].wrap, cli=cli)
    try:
        b = ServeProcess(["--flight", f"{hosts['b'].ip}:0", "--keep", "--peer", a.first_line(),
                          f"t={tmp / 'b.arrows'}"], env=env, tmp=str(tmp), wrap=hosts["b"].wrap,
                         cli=cli)
    except BaseException:
        a.close()
        raise
    return [a, b]


@contextlib.contextmanager
def served_halves(mib, prefix):
    """Flight t, `mib` MiB on each of hosts a and b (make_half), served by this tree's
    serve_pair on fresh hosts a, b and c: yields (hosts, the second server's URI, the bytes of
    one server's file)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as d:
        tmp = Path(d)
        make_half(tmp / "a.arrows", mib, 0)
        make_half(tmp / "b.arrows", mib, 1 << 40)
        with Hosts(["a", "b", "c"]) as hosts:
            servers = serve_pair(hosts, tmp, None)
            try:
                yield hosts, servers[1].first_line(), os.path.getsize(tmp / "a.arrows")
            finally:
                for s in servers:
                    s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clis", default=None,
                    help="ferry executables, comma-separated (default: $FERRY_CLI alone)")
    ap.add_argument("--mib", type=int, default=16, help="MiB on each server (default 16)")
    ap.add_argument("--runs", type=int, default=20, help="runs of each CLI (default 20)")
    ap.add_argument("--own-servers", action="store_true",
                    help="each CLI reads from servers it runs itself (default: this tree's)")
    args = ap.parse_args()
    clis = args.clis.split(",") if args.clis else [ferry_cli()]
    with tempfile.TemporaryDirectory(prefix="ferry-parallel-read-") as d:
        tmp = Path(d)
        make_half(tmp / "a.arrows", args.mib, 0)
        make_half(tmp / "b.arrows", args.mib, 1 << 40)
        with Hosts(["a", "b", "c"]) as hosts:
            servers, uris = [], {}
            try:
                for cli in clis if args.own_servers else [None]:
                    pair = serve_pair(hosts, tmp, cli)
                    servers += pair
                    uri = pair[1].first_line()
                    for c in clis if cli is None else [cli]:
                        uris[c] = uri
                for cli in clis:
                    read_s(hosts["c"], cli, uris[cli])  # warm-up: the servers' first clients
                times = {cli: [] for cli in clis}
                for i in range(args.runs):
                    for cli in clis if i % 2 == 0 else clis[::-1]:
                        times[cli].append(read_s(hosts["c"], cli, uris[cli]))
            finally:
                for s in servers:
                    s.close()
    print(f"| build | read of {2 * args.mib} MiB, median ms (range) | against the first build "
          "(median of the runs' ratios) |")
    print("| --- | --- | --- |")
    for cells in ab_cells(times, scale=1e3):
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
