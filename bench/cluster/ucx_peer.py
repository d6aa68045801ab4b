"""bench/cluster/ucx_peer.py: UCX's own peer for bench/cluster/cluster_bench.py, what UCX moves
between its hosts with no Arrow and no ferry: `ucx_perftest -t tag_bw` streams over TCP."""
import os
import subprocess
import threading
import time

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
