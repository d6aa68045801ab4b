"""Ray nodes for the tests and benchmarks that run a Ray cluster in network namespaces
(tests/support/netns.py): `ray start --block` inside a host, each in a process group of its own,
and their closing. Measured here: a worker node ends within a second of SIGTERM, but a head
node in a namespace, once its workers are gone, did not end within 15 s (the old grace, spent on
every run), so close_nodes ends the workers first and gives the head a short grace before
SIGKILL; the cluster's session directory goes with the test."""
import os
import signal
import subprocess
import sys
import time

# `ray start --block`, run by this interpreter (so the environment's Ray, whatever PATH says).
RAY_START = [sys.executable, "-c", "from ray.scripts.scripts import main; main()", "start",
             "--block", "--disable-usage-stats"]


class RayNode:
    """`ray start --block ARGS` inside `host` (netns.Host), its output to `log`; closing ends its
    process group, the node's raylet and workers with it."""

    def __init__(self, host, args, env, log):
        self.proc = host.popen([*RAY_START, *args], env=env, stdout=log, stderr=log,
                               start_new_session=True)

    def signal(self, sig):
        """Send `sig` to the node's process group; False when the group is gone."""
        try:
            os.killpg(self.proc.pid, sig)
            return True
        except ProcessLookupError:
            return False


def close_nodes(nodes, grace=3.0):
    """End `nodes` (the head first in the list, as they were started): the workers' groups, then
    the head's; each step SIGTERMs, waits up to `grace` seconds for `ray start` to exit, and then
    SIGKILLs the group and waits up to 10 s more."""
    if len(nodes) > 1:
        _end(nodes[1:], grace)
    _end(nodes[:1], grace)


def _end(nodes, grace):
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        live = [n for n in nodes if n.signal(sig)]
        deadline = time.monotonic() + wait
        for n in live:
            try:
                n.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        nodes = [n for n in nodes if n.proc.poll() is None]
        if not nodes:
            return
