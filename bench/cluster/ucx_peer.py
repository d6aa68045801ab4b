"""bench/cluster/ucx_peer.py: UCX's own peer for bench/cluster/cluster_bench.py, what UCX moves
between its hosts with no Arrow and no ferry: `ucx_perftest -t tag_bw` streams over TCP, and
ferry_ucx_limit (bench/cluster/ucx_limit.c), libucp moving the bytes as a reader that keeps them
must."""
import itertools
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tests", "support"))
from ferry_process import ferry_cli  # noqa: E402

PORT = 13337


def _final_mib_per_s(stdout):
    """The overall bandwidth of ucx_perftest's "Final:" line (its MB are MiB), 0 if it has none."""
    final = [line for line in stdout.splitlines() if line.startswith("Final:")]
    return float(final[0].split()[6]) if final else 0.0


def _streams(listeners, names, run):
    """Once `listeners` (ucx_perftest processes waiting for their peers) are up, `run(name)` for
    each of `names` at once, a thread each; then the listeners are killed. Each run's rate."""
    time.sleep(1)
    rates = {}

    def one(name):
        rates[name] = _final_mib_per_s(run(name).stdout)
    try:
        threads = [threading.Thread(target=one, args=(n,)) for n in names]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for p in listeners:
            p.kill()
            p.wait()
    return rates


def tag_bw(hosts, size, iters, names=("a", "b")):
    """Concurrent ucx_perftest tag_bw streams over TCP, from c to each of `names`, each end
    polling its worker without a pause: MiB/s each."""
    env = dict(os.environ, UCX_TLS="tcp,self")
    servers = [hosts[n].popen(["ucx_perftest", "-p", str(PORT)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for n in names]
    return _streams(servers, names, lambda name: hosts["c"].run(
        ["ucx_perftest", hosts[name].ip, "-p", str(PORT), "-t", "tag_bw", "-s", str(size), "-n",
         str(iters)], env=env, capture_output=True, text=True, timeout=600))


def tag_bw_sleeping(hosts, per_server, size=8 << 20, senders=("a", "b")):
    """UCX's limit for ferry's parallel read: `per_server` bytes in `size`-byte tag_bw messages
    from each of `senders` to host c at once (ucx_perftest's sender is the end that connects),
    both ends sleeping on their workers' events between messages (`-E sleep`), as ferry's
    threads do where two streams share two cores. The aggregate MiB/s as the plain TCP reader
    counts it: every stream's bytes over the slowest stream's time, each stream's time its bytes
    over its own rate (connecting and UCX's warm-up not counted)."""
    env = dict(os.environ, UCX_TLS="tcp,self")
    iters = max(1, per_server // size)
    ports = {name: PORT + 1 + i for i, name in enumerate(senders)}
    receivers = [hosts["c"].popen(["ucx_perftest", "-p", str(ports[n]), "-E", "sleep"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for n in senders]
    rates = _streams(receivers, senders, lambda name: hosts[name].run(
        ["ucx_perftest", hosts["c"].ip, "-p", str(ports[name]), "-t", "tag_bw", "-s", str(size),
         "-n", str(iters), "-E", "sleep"], env=env, capture_output=True, text=True, timeout=600))
    if not all(rates.get(n) for n in senders):
        raise RuntimeError(f"ucx_perftest -E sleep printed no rate: {rates}")
    return len(senders) * min(rates.values())


_limit_calls = itertools.count(1)  # ucx_limit's calls: each takes ports of its own


def ucx_limit_binary():
    """ferry_ucx_limit, beside the ferry executable's build (FERRY_UCX_LIMIT overrides)."""
    if os.environ.get("FERRY_UCX_LIMIT"):
        return os.environ["FERRY_UCX_LIMIT"]
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(ferry_cli()))))
    return os.path.join(build, "bench", "ferry_ucx_limit")


def ucx_limit(hosts, per_server, senders=("a", "b"), send_one=False, recv_one=False, window=None):
    """The limit of ferry's parallel read over UCX: `per_server` bytes in 8 MiB tagged messages
    from each of `senders` to one process on host c at once, each sent from and received into its
    own place (ferry_ucx_limit: libucp alone, both ends sleeping on their workers' events). The
    aggregate MiB/s of one run after a warm-up run on the same connections. `send_one` sends every
    message from one 8 MiB place, `recv_one` receives every one into one place, as tag_bw does;
    `window` puts that many messages in flight each way (ucx_limit.c's own choice otherwise)."""
    return ucx_limit_runs(hosts, per_server, 1, senders, send_one, recv_one, window)[-1][0]


def ucx_limit_runs(hosts, per_server, runs, senders=("a", "b"), send_one=False, recv_one=False,
                   window=None):
    """ucx_limit's `runs` runs after its warm-up, on the same connections: for each, [MiB/s, the
    whole machine's CPU seconds a GiB, its context switches a GiB]."""
    more = ([f"window={window}"] if window else []) + (["one"] if send_one else [])
    env = dict(os.environ, UCX_TLS="tcp,self")
    # A port of its own each call: a listener killed a moment ago may still hold the last one.
    call = next(_limit_calls)
    ports = {name: PORT + 10 + 2 * (call % 40) + i for i, name in enumerate(senders)}
    limit = ucx_limit_binary()
    sending = [hosts[n].popen([limit, "send", hosts[n].ip, str(ports[n]), str(per_server)] + more,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
               for n in senders]
    try:
        time.sleep(1)
        peers = ",".join(f"{hosts[n].ip}:{ports[n]}" for n in senders)
        more = ([f"window={window}"] if window else []) + (["one"] if recv_one else [])
        r = hosts["c"].run([limit, "recv", peers, str(per_server), str(runs)] + more,
                           env=env, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            for p in sending:
                p.kill()
            said = " ".join(p.communicate()[1].strip() for p in sending)
            raise RuntimeError(f"ferry_ucx_limit recv: exit {r.returncode}: {r.stderr.strip()}"
                               f" (the senders: {said or 'nothing'})")
        return [[float(x) for x in line.split()] for line in r.stdout.splitlines() if line]
    finally:
        for p in sending:
            p.kill()
            p.communicate()
