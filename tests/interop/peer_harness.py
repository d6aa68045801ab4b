"""Runs the independent Dissociated IPC peer (tests/interop/dipc_peer) from pytest.

`Server` starts `dipc_peer serve` on 127.0.0.1 with a free port (port 0; the peer prints the
port it got) and reads the URI lines it prints; `get` runs `dipc_peer get`. Both return the
peer's JSON report. Locate the binary with FERRY_DIPC_PEER, else build/*/tests/interop/dipc_peer.
"""

import glob
import json
import os
import selectors
import subprocess
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFUSED = "the server closed the connection after want_data (unknown or expired ticket?)"


def peer_binary():
    """The dipc_peer executable, or an AssertionError saying how to build it."""
    path = os.environ.get("FERRY_DIPC_PEER")
    if path:
        path = os.path.join(REPO, path) if not os.path.isabs(path) else path
        assert os.access(path, os.X_OK), f"FERRY_DIPC_PEER={path} is not an executable"
        return path
    found = sorted(glob.glob(os.path.join(REPO, "build", "*", "tests", "interop", "dipc_peer")),
                   key=os.path.getmtime, reverse=True)
    assert found, ("dipc_peer is not built: `ninja -C build/test dipc_peer` (needs UCX, "
                   "libucx-dev) or set FERRY_DIPC_PEER")
    return found[0]


def ucx_env(tls):
    """The environment for one transport choice: None = UCX's defaults, else UCX_TLS=tls."""
    env = dict(os.environ)
    if tls:
        env["UCX_TLS"] = tls
    return env


class Server:
    """`dipc_peer serve` as a context manager: .uri (one connection) or .meta_uri/.data_uri."""

    def __init__(self, tmp, file, ticket="ticket-1", body=0, split=False, once=True, extra=(),
                 env=None, timeout=30, listen="127.0.0.1:0", wrap=()):
        self.report_path = os.path.join(tmp, f"serve-{time.monotonic_ns()}.json")
        self.err_path = self.report_path + ".err"
        args = [*wrap, peer_binary(), "serve", "--listen", listen, "--file", str(file),
                "--ticket", ticket, "--body", str(body), "--report", self.report_path,
                "--timeout", str(timeout)]
        if split:
            args.append("--split")
        if once:
            args.append("--once")
        args += list(extra)
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.err, env=env)
        self.uri = self.meta_uri = self.data_uri = None
        want = ("METADATA_URI", "DATA_URI") if split else ("URI",)
        lines, buf = {}, b""
        fd = self.proc.stdout.fileno()
        sel = selectors.DefaultSelector()
        sel.register(fd, selectors.EVENT_READ)
        deadline = time.monotonic() + 20
        while len(lines) < len(want):
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                self.kill()
                raise AssertionError(f"dipc_peer serve printed no URI: {self.stderr()}")
            chunk = os.read(fd, 4096)
            if not chunk:
                self.kill()
                raise AssertionError(f"dipc_peer serve exited: {self.stderr()}")
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                label, _, uri = line.decode().strip().partition(" ")
                lines[label] = uri
        sel.close()
        self.uri = lines.get("URI")
        self.meta_uri = lines.get("METADATA_URI")
        self.data_uri = lines.get("DATA_URI")

    def get_args(self, data_flag="--data"):
        """The URI arguments a client passes: URI, or METADATA_URI DATA_FLAG DATA_URI (the
        peer's client names the data URI --data, ferry get --data-uri)."""
        return [self.uri] if self.uri else [self.meta_uri, data_flag, self.data_uri]

    def stderr(self):
        self.err.flush()
        with open(self.err_path) as f:
            return f.read()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def finish(self, timeout=30, terminate=False):
        """Waits for the server to exit (SIGTERM first when terminate) and returns
        (exit status, stderr, report)."""
        if terminate and self.proc.poll() is None:
            self.proc.terminate()
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"dipc_peer serve did not exit: {self.stderr()}")
        report = None
        if os.path.exists(self.report_path):
            with open(self.report_path) as f:
                report = json.load(f)
        return rc, self.stderr(), report

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()
        self.err.close()


def get(tmp, uri_args, out, ticket="ticket-1", extra=(), env=None, timeout=60, wrap=()):
    """Runs `dipc_peer get` (under `wrap`, e.g. `ip netns exec NS`); returns (CompletedProcess,
    report or None)."""
    report_path = os.path.join(tmp, f"get-{time.monotonic_ns()}.json")
    args = [*wrap, peer_binary(), "get", *uri_args, "--ticket", ticket, "--out", str(out),
            "--report", report_path, *extra]
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout)
    report = None
    if os.path.exists(report_path):
        with open(report_path) as f:
            report = json.load(f)
    return proc, report
