#!/usr/bin/env python3
"""bench/cluster/paired_reads.py: ferry's parallel read between hosts against the plain TCP
ceiling and the limit over UCX, one read of each in turn, with every reader a warm process that
reads when told. Hosts are network namespaces joined by a bridge (tests/support/netns.py).

cluster_bench.py's rounds start each reader afresh, so a round's reads lie seconds apart, and
this VM's pace drifts by a third over seconds. Here every reader connects and warms up once, then
waits on its standard input; each round asks each of them for one read, in an order that turns
round by round, so a round's reads lie about a second apart and each ratio is taken within one
round. The readers, all on host c, each reading the same bytes from hosts a and b at once:
  ferry, default   the Python client, flight t from two `ferry serve --flight --keep` (the second
                   listing the first), over the UCX connections its warm-up read kept
  ferry, full      the same client with full validation
  the limit        ferry_ucx_limit (bench/cluster/ucx_limit.c): libucp alone, the same 8 MiB
                   messages from and into each byte's own place, 16 in flight each way
  the ceiling      plain TCP sockets, each byte sent from and kept at its own place
Prints each reader's median rate and, for each ratio, the median of the rounds' ratios with
their quartiles and range.

    FERRY_CLI=build/bench/tools/ferry/ferry .venv/bin/python bench/cluster/paired_reads.py \\
        --mib 512 --rounds 30
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# cluster_bench puts tests/support on the path, for the imports after it.
from cluster_bench import TOKEN  # noqa: E402
from parallel_read import served_halves  # noqa: E402
from tcp_peer import TCP_COLD_SERVER, TCP_READER  # noqa: E402
from ucx_peer import PORT, ucx_limit_binary  # noqa: E402

# On host c: one warm-up read of flight t from argv[1], then "ready"; then, for each line on its
# standard input (a ferry.ValidationLevel's name), one read at that level and its seconds.
FERRY_PACED = """
import sys, time, pyarrow as pa, ferry, ferry.flight
client = ferry.flight.connect(sys.argv[1], token=sys.argv[2])
def read(level):
    start = time.monotonic()
    table = pa.table(client.do_get("t", parallel=2, validation=level))
    return time.monotonic() - start
read(ferry.ValidationLevel.DEFAULT)
print("ready", flush=True)
for line in sys.stdin:
    print(read(getattr(ferry.ValidationLevel, line.strip())), flush=True)
"""

# The limit's senders listen here, clear of ucx_peer's other peers.
LIMIT_PORT = PORT + 200


class Paced:
    """A reader on a host that reads once for each line it is sent: `read()` is its MiB/s, from
    what it prints about the read (`rate`: that line to MiB/s)."""

    def __init__(self, host, args, rate, env=None):
        self.rate = rate
        self.proc = host.popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        self._expect("ready")

    def _expect(self, what=None):
        line = self.proc.stdout.readline().strip()
        if not line or (what is not None and line != what):
            self.proc.kill()
            raise RuntimeError(f"{self.proc.args[0]}: said {line!r}, exit "
                               f"{self.proc.wait()}: {self.proc.stderr.read()[-2000:]}")
        return line

    def read(self, line="go"):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.rate(self._expect())

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def paired_rounds(hosts, uri, per_server, rounds):
    """`rounds` rounds of one read by each reader, the order turning round by round: a list of
    {reader: MiB/s} per round."""
    def per_s(line):
        return 2 * per_server / (1 << 20) / float(line)

    senders, readers = [], {}
    uenv = dict(os.environ, UCX_TLS="tcp,self")
    try:
        for i, n in enumerate("ab"):
            senders.append(hosts[n].popen([sys.executable, "-c", TCP_COLD_SERVER, hosts[n].ip,
                                           str(per_server)], stdout=subprocess.DEVNULL))
            senders.append(hosts[n].popen([ucx_limit_binary(), "send", hosts[n].ip,
                                           str(LIMIT_PORT + i), str(per_server)], env=uenv,
                                          stdout=subprocess.DEVNULL))
        ips = [hosts[n].ip for n in "ab"]
        readers["ferry"] = Paced(hosts["c"], [sys.executable, "-c", FERRY_PACED, uri, TOKEN],
                                  per_s)
        readers["limit"] = Paced(hosts["c"], [
            ucx_limit_binary(), "recv", ",".join(f"{ip}:{LIMIT_PORT + i}"
                                                 for i, ip in enumerate(ips)),
            str(per_server), str(rounds), "paced"], lambda line: float(line.split()[0]),
            env=uenv)
        readers["ceiling"] = Paced(hosts["c"], [sys.executable, "-c", TCP_READER, ",".join(ips),
                                                str(per_server), "paced", "keep"], per_s)
        turns = [("ferry, default", "ferry", "DEFAULT"), ("ferry, full", "ferry", "FULL"),
                 ("limit", "limit", "go"), ("ceiling", "ceiling", "go")]
        out = []
        for r in range(rounds):
            order = turns[r % len(turns):] + turns[:r % len(turns)]
            out.append({key: readers[who].read(line) for key, who, line in order})
        return out
    finally:
        for reader in readers.values():
            reader.close()
        for s in senders:
            s.kill()
            s.wait()


def spread(values):
    """'MEDIANx (quartiles Q1-Q3x; LO-HIx)' of ratios."""
    v = sorted(values)
    q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    return f"{q[1]:.2f}x (quartiles {q[0]:.2f}-{q[2]:.2f}x; {v[0]:.2f}-{v[-1]:.2f}x)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=512, help="MiB on each server (default 512)")
    ap.add_argument("--rounds", type=int, default=30, help="rounds (default 30)")
    args = ap.parse_args()
    with served_halves(args.mib, "ferry-paired-reads-") as (hosts, uri, per_server):
        runs = paired_rounds(hosts, uri, per_server, args.rounds)
    print(f"\n{args.rounds} rounds, {2 * per_server / (1 << 20):.0f} MiB a read; each ratio "
          "within a round, the median of the rounds' ratios\n")
    print("| reader | MiB/s, median | against the ceiling | against the limit |")
    print("| --- | --- | --- | --- |")
    for key in ("ferry, default", "ferry, full", "limit", "ceiling"):
        ceiling = spread(r[key] / r["ceiling"] for r in runs) if key != "ceiling" else "—"
        limit = spread(r[key] / r["limit"] for r in runs) if key.startswith("ferry") else "—"
        print(f"| {key} | {statistics.median(r[key] for r in runs):.0f} | {ceiling} | {limit} |")


if __name__ == "__main__":
    main()
