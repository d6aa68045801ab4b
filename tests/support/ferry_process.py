"""The `ferry` command as the Python suites run it: where the built tool is, a command run with its
stderr on a terminal, and a `ferry serve` process whose stderr goes to a file that can be read
while it runs. Shared by the CLI, Flight, docs, fault and interop suites, which add only how they
read the URIs a server prints."""
import glob
import os
import pty
import signal
import subprocess
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def find_cli():
    """FERRY_CLI (scripts/test.sh sets it), or the newest build/*/tools/ferry/ferry; None when
    there is neither."""
    path = os.environ.get("FERRY_CLI")
    if path:
        return path
    found = sorted(glob.glob(os.path.join(REPO, "build", "*", "tools", "ferry", "ferry")),
                   key=os.path.getmtime)
    return found[-1] if found else None


def stop_process(pid, timeout=5.0):
    """SIGSTOP `pid` and wait until the kernel shows every one of its threads stopped (state T in
    /proc/PID/task/*/stat): kill() only queues the signal, and until the thread that takes it has
    run, the others (a server's pollers) may answer one more call on a loaded machine."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(state in ("T", "t") for state in _thread_states(pid)):
            return
        time.sleep(0.001)
    raise AssertionError(f"process {pid} did not stop within {timeout} s: its threads are "
                         f"{sorted(_thread_states(pid))}")


def _thread_states(pid):
    """The state letter of each thread of `pid` (a thread that ends while read is left out)."""
    states = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
        except FileNotFoundError:
            pass
    return states


def ferry_cli():
    """The ferry executable (find_cli), asserted to exist."""
    path = find_cli()
    assert path and os.access(path, os.X_OK), (
        "no ferry executable: build ferry_cli or set FERRY_CLI (scripts/test.sh sets it)")
    return path


def on_terminal(argv, timeout=120):
    """Run `argv` with its stderr on a pseudo-terminal (as a user's shell has it) and return what
    it wrote there."""
    main, side = pty.openpty()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=side)
    os.close(side)
    out = bytearray()
    while True:
        try:
            chunk = os.read(main, 1 << 16)
        except OSError:  # EIO: the process closed its end
            break
        if not chunk:
            break
        out += chunk
    os.close(main)
    assert proc.wait(timeout=timeout) == 0, out.decode(errors="replace")
    return out.decode(errors="replace")


class ServeProcess:
    """`[*wrap, cli, "serve", *args]` (cli: ferry_cli() unless named) started in `cwd` with `env`; its stdout is a pipe the
    caller reads URIs from, its stderr a file under `tmp` (stderr() reads it as it grows). A
    context manager: leaving stops it (SIGINT, then SIGKILL after 10 s) and removes the file,
    keeping the text in .final_stderr."""

    def __init__(self, args, env=None, cwd=None, tmp=None, wrap=(), cli=None):
        self.err_path = os.path.join(tmp or "/tmp", f"ferry-serve-{time.monotonic_ns()}.err")
        self.err = open(self.err_path, "w+")
        self.final_stderr = None
        self.proc = subprocess.Popen([*wrap, cli or ferry_cli(), "serve", *map(str, args)], cwd=cwd,
                                     env=env, stdout=subprocess.PIPE, stderr=self.err, text=True)

    def first_line(self):
        """The first line the server printed, stripped; fails with its stderr if it printed
        none."""
        line = self.proc.stdout.readline().strip()
        if not line:
            self.stop()
            raise AssertionError(f"ferry serve printed nothing: {self.stderr()}")
        return line

    def stderr(self):
        if self.err.closed:
            return self.final_stderr
        self.err.flush()
        with open(self.err_path) as f:
            return f.read()

    def stop(self, sig=signal.SIGINT, timeout=10):
        """Sends `sig` and waits up to `timeout` s, then kills; the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def close(self):
        """Stops the server if it runs, and keeps its stderr in .final_stderr."""
        self.stop()
        if not self.err.closed:
            self.final_stderr = self.stderr()
            self.err.close()
            os.unlink(self.err_path)
        if self.proc.stdout:
            self.proc.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
