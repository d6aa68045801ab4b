"""Processes for the fault suite: `ferry serve` and `ferry get` started with a fault point
(FERRY_FAULT_PAUSE=ROLE:PHASE[:N]: the process stops itself there and says so on stderr), and
what the survivor of a fault leaves behind, read from /proc.

Loopback and shared memory only; every wait is bounded.
"""

import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from ferry_process import ferry_cli, stop_process  # noqa: E402,F401 (ferry_cli: also for the suites)

PAUSED = "ferry-fault: paused at"


def pypi_ucx():
    """The environment that makes ferry's processes load PyPI's UCX (the libucx-cu12 wheel that
    ferry's wheel and ucxx load; scripts/setup.sh installs it into .venv) instead of the system's,
    and that UCX's version; None where it is not installed.

    The binaries are built against Debian's UCX 1.13 and run on the newer one unchanged. The mmap
    hooks are installed by relocation, not 1.22's default atomic code patching, which costs every
    process 0.4 s of CPU at start on this project's 2-core VMs (docs/install.md); the hooks serve
    RDMA registration caches, which the shared-memory and TCP lanes under test do not use."""
    try:
        import importlib.metadata
        import libucx
    except ImportError:
        return None
    lib = os.path.join(os.path.dirname(os.path.abspath(libucx.__file__)), "lib")
    env = {"LD_LIBRARY_PATH": lib, "UCX_MEM_MMAP_HOOK_MODE": "reloc"}
    return env, importlib.metadata.version("libucx-cu12")


def loaded_ucx(env):
    """The UCX version a `ferry` process started with `env` loads (`ferry devices --json`)."""
    import json
    out = subprocess.run([ferry_cli(), "devices", "--json"], env=dict(os.environ, **env),
                         capture_output=True, text=True, timeout=30, check=True).stdout
    return json.loads(out)["ucx"]["loaded"]


class Log:
    """A process's stderr, written to a file and read as it grows."""

    def __init__(self, path):
        self.path = path
        self.file = open(path, "w+")

    def text(self):
        self.file.flush()
        with open(self.path) as f:
            return f.read()

    def wait_for(self, pattern, timeout, after=0):
        """The time the first line matching `pattern` past offset `after` was seen, or None."""
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern)
        while time.monotonic() < deadline:
            text = self.text()
            m = rx.search(text, after)
            if m:
                return time.monotonic(), m
            time.sleep(0.005)
        return None, None


def cpu_seconds(pid):
    """CPU time of all a process's threads, in seconds (the scheduler's nanosecond counts: the
    tick-based ones in /proc/PID/stat are too coarse for an idle process)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that just ended
    return total / 1e9


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def segment_maps(pid):
    """The memfd segments a process maps (ferry's shared-memory regions)."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return sum("ferry-segment" in line for line in f)
    except FileNotFoundError:
        return 0


def idle_cpu(pid, seconds=1.0, settle=0.7, windows=3, bound=0.01):
    """The share of one CPU the process used over `seconds`, after `settle` seconds: the lowest
    of up to `windows` windows, stopping at the first under `bound`. A busy spin or a timer that
    polls keeps every window above the bound; a client's clean-up that ends inside the first
    window (a 2-core VM under load once put 10-13 ms of it there) does not."""
    time.sleep(settle)
    shares = []
    for _ in range(windows):
        before = cpu_seconds(pid)
        time.sleep(seconds)
        shares.append((cpu_seconds(pid) - before) / seconds)
        if shares[-1] < bound:
            break
    return min(shares)


def fault_batch(rows):
    """The suites' batch: an int64 column and a string column of `rows` rows (needs pyarrow)."""
    import pyarrow as pa
    return pa.record_batch({"i": pa.array(range(rows), pa.int64()),
                            "s": pa.array([f"r{k % 977}" for k in range(rows)])})


class _ServerProcess:
    """A `ferry serve` process with its stdout pipe and its stderr Log; kill() ends it (resumed
    first, should it be stopped) and closes both."""

    def signal(self, sig):
        """Send `sig`; a SIGSTOP returns once every thread has stopped (stop_process)."""
        if self.proc.poll() is None:
            if sig == signal.SIGSTOP:
                stop_process(self.proc.pid)
            else:
                self.proc.send_signal(sig)

    def kill(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.log.file.close()


class FlightServe(_ServerProcess):
    """`ferry serve -v --flight 127.0.0.1:0 --timeout 2 ARGS...`, optionally with a fault point;
    .uri once it printed it."""

    def __init__(self, tmp, args, pause=None):
        self.log = Log(os.path.join(tmp, f"flight-{time.monotonic_ns()}.err"))
        env = dict(os.environ)
        env.pop("FERRY_FAULT_PAUSE", None)
        if pause:
            env["FERRY_FAULT_PAUSE"] = pause
        self.proc = subprocess.Popen(
            [ferry_cli(), "serve", "-v", "--flight", "127.0.0.1:0", "--timeout", "2", *args],
            stdout=subprocess.PIPE, stderr=self.log.file, text=True, env=env)
        self.uri = self.proc.stdout.readline().strip()
        assert self.uri.startswith("grpc://"), "ferry serve exited: " + self.log.text()


class Serve(_ServerProcess):
    """`ferry serve -v` with a dataset `t`; .uri once it printed it."""

    def __init__(self, tmp, transport, body_args, data, env, timeout, pause=None):
        self.log = Log(os.path.join(tmp, f"serve-{time.monotonic_ns()}.err"))
        run_env = dict(os.environ, **env)
        run_env.pop("FERRY_FAULT_PAUSE", None)
        if pause:
            run_env["FERRY_FAULT_PAUSE"] = pause
        listen = ["--listen", "127.0.0.1:0"] if transport == "ucx" else []
        self.proc = subprocess.Popen(
            [ferry_cli(), "serve", "-v", "--transport", transport, *listen, "--timeout",
             str(timeout), *body_args, f"t={data}"],
            stdout=subprocess.PIPE, stderr=self.log.file, text=True, env=run_env)
        line = self.proc.stdout.readline()
        assert line, "ferry serve exited: " + self.log.text()
        self.uri = line.split()[1]

    def stop(self, timeout=5):
        """SIGTERM; the time it took to exit."""
        start = time.monotonic()
        self.signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("ferry serve did not stop within %ss: %s" % (timeout, self.log.text()))
        return time.monotonic() - start


class Get:
    """`ferry get URI --ticket t --to OUT [ARGS]` in the background."""

    def __init__(self, tmp, uri, out, env, timeout, pause=None, args=()):
        self.log = Log(os.path.join(tmp, f"get-{time.monotonic_ns()}.err"))
        run_env = dict(os.environ, **env)
        run_env.pop("FERRY_FAULT_PAUSE", None)
        if pause:
            run_env["FERRY_FAULT_PAUSE"] = pause
        self.out = out
        self.proc = subprocess.Popen(
            [ferry_cli(), "get", uri, "--ticket", "t", "--no-progress", "--force", "--to",
             str(out), "--timeout", str(timeout), *args],
            stdout=subprocess.DEVNULL, stderr=self.log.file, env=run_env)

    def wait(self, timeout):
        """(exit status, seconds it took from now), or (None, timeout) if it did not exit."""
        start = time.monotonic()
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, timeout
        return rc, time.monotonic() - start

    def kill(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()
        self.log.file.close()
