"""Hosts for tests and benchmarks: network namespaces joined by veth pairs to a bridge in this
(the root) namespace, which has an address on the hosts' network too, so that a process here (a
Dask scheduler, a test) reaches every host and every host reaches it. Each host has its own
loopback, interfaces and abstract sockets, so shared memory works within a host only, and TCP
(UCX over TCP, gRPC) between hosts.

    with Hosts(["a", "b", "c"]) as hosts:
        hosts["a"].ip                      # 10.<net>.0.1
        hosts["a"].run(["ferry", ...])     # ip netns exec ... ferry ...
        hosts.root_ip                      # this namespace's address on the bridge

Everything made is removed on exit, also when a step fails; where the sandbox forbids
namespaces, entering raises Unavailable with its reason (a test skips with it: hosts_or_skip).
"""
import contextlib
import fcntl
import os
import re
import subprocess
from dataclasses import dataclass

# Held while a set of hosts picks its network and puts its bridge on it, so that sets made at
# once (pytest-xdist workers, a benchmark beside a test) never share a network.
_LOCK = "/run/lock/ferry-netns.lock" if os.path.isdir("/run/lock") else "/tmp/ferry-netns.lock"
# The networks hosts are put on: 10.N.0.0/24 for N in this range.
_NETS = range(220, 250)


class Unavailable(Exception):
    """The sandbox forbids network namespaces, veth pairs or bridges (the message says which)."""


def _ip(*args):
    return subprocess.run(["ip", *args], capture_output=True, text=True)


@dataclass
class Host:
    """One network namespace: its name, its address on the bridge, its interface there (inside
    the namespace: `ip -n NAME link set LINK down` cuts the host off), and the prefix that runs
    a command inside it."""
    name: str
    ip: str
    link: str = ""

    @property
    def wrap(self):
        return ["ip", "netns", "exec", self.name]

    def run(self, args, **kwargs):
        return subprocess.run([*self.wrap, *args], **kwargs)

    def popen(self, args, **kwargs):
        return subprocess.Popen([*self.wrap, *args], **kwargs)


class Hosts:
    """Namespaces named after `names`, 10.N.0.1, 10.N.0.2, ... on a bridge whose root address is
    10.N.0.254, N the first network no interface of this machine is on (chosen on entry, under a
    lock shared by every process that makes hosts)."""

    _made_here = 0  # Hosts made by this process, so that two in turn never share a name

    def __init__(self, names):
        # A namespace outlives `ip netns del` while a process of it lingers, and with it its end
        # of the veth pair: a second set made by the same process must not reuse the names.
        Hosts._made_here += 1
        tag = (os.getpid() * 7 + Hosts._made_here) % 10000
        self.net = None  # chosen on entry
        self.bridge = f"fbr{tag}"
        self.root_ip = None
        self.hosts = {n: Host(f"ferry-{n}{tag}", "") for n in names}
        self._made_bridge = False
        self._made = []

    def __getitem__(self, name):
        return self.hosts[name]

    def _step(self, *args):
        r = _ip(*args)
        if r.returncode != 0:
            raise Unavailable(f"ip {' '.join(args)}: {r.stderr.strip()}")

    def _claim_network(self):
        """Pick the first free network and put the bridge on it, under the lock."""
        with open(_LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            shown = _ip("-4", "-o", "addr", "show").stdout
            used = {int(m) for m in re.findall(r"inet 10\.(\d+)\.\d+\.\d+/", shown)}
            free = [n for n in _NETS if n not in used]
            if not free:
                raise Unavailable(f"every network 10.{_NETS[0]}-{_NETS[-1]}.0.0/24 is in use")
            self.net = free[0]
            self.root_ip = f"10.{self.net}.0.254"
            for i, host in enumerate(self.hosts.values()):
                host.ip = f"10.{self.net}.0.{i + 1}"
            self._step("link", "add", self.bridge, "type", "bridge")
            self._made_bridge = True
            self._step("addr", "add", f"{self.root_ip}/24", "dev", self.bridge)

    def __enter__(self):
        try:
            self._claim_network()
            self._step("link", "set", self.bridge, "up")
            for i, host in enumerate(self.hosts.values()):
                self._step("netns", "add", host.name)
                self._made.append(host.name)
                outside, inside = f"{self.bridge}h{i}", f"{self.bridge}n{i}"
                self._step("link", "add", outside, "type", "veth", "peer", "name", inside)
                self._step("link", "set", outside, "master", self.bridge)
                self._step("link", "set", outside, "up")
                self._step("link", "set", inside, "netns", host.name)
                host.link = inside
                self._step("-n", host.name, "addr", "add", f"{host.ip}/24", "dev", inside)
                self._step("-n", host.name, "link", "set", inside, "up")
                self._step("-n", host.name, "link", "set", "lo", "up")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for i, name in enumerate(self._made):
            # The pair goes now (deleting one end deletes both), not when the namespace, which a
            # lingering process keeps, is finally freed.
            _ip("link", "del", f"{self.bridge}h{i}")
            _ip("netns", "del", name)
        self._made = []
        if self._made_bridge:
            _ip("link", "del", self.bridge)
            self._made_bridge = False
        return False


@contextlib.contextmanager
def hosts_or_skip(names):
    """For a test: Hosts(names), entered and removed on exit; where the sandbox forbids network
    namespaces, veth pairs or bridges, the test is skipped with the reason. pytest is imported
    only here, so that benchmarks use this module without it."""
    import pytest

    hosts = Hosts(names)
    try:
        hosts.__enter__()
    except Unavailable as e:
        pytest.skip(f"this sandbox forbids network namespaces: {e}")
    try:
        yield hosts
    finally:
        hosts.__exit__(None, None, None)
