"""An option that a subcommand would ignore in the mode it runs in is refused, naming the option
and why, before anything starts: a Flight option on a server without --flight, a Flight client's
option with a shm:// or ucx:// URI, a Dissociated IPC client's option with a grpc:// URI, the
planes' options when no plane is served. Each command line below is valid but for that one
option, so the refusal is the only failure it can have; the same line without the option gets
past it."""
import pyarrow as pa
import pytest

from cli_support import write_ipc

SHM = "shm://@ferry-nowhere?want_data=4294967296&free_data=8589934592&ferry=1"
UCX = "ucx://127.0.0.1:1?want_data=4294967296&free_data=8589934592&ferry=1"
GRPC = "grpc://127.0.0.1:1"
SERVE = ["serve", "t={path}"]
FLIGHT = ["serve", "--flight", "127.0.0.1:0", "t={path}"]

# (the command line without the option, the option and its value, a word of the reason)
CASES = [
    # A server without --flight: the Flight server's options.
    (SERVE, ["--tls-cert", "{path}"], "needs --flight"),
    (SERVE, ["--tls-key", "{path}"], "needs --flight"),
    (SERVE, ["--tls-client-ca", "{path}"], "needs --flight"),
    (SERVE, ["--max-upload-bytes", "1MiB"], "needs --flight"),
    (SERVE, ["--ucx-listen", "127.0.0.1:0"], "needs --flight"),
    (SERVE, ["--peer", GRPC], "needs --flight"),
    (SERVE, ["--peers-file", "{path}"], "needs --flight"),
    (SERVE, ["--peer-timeout", "3"], "needs --flight"),
    (SERVE, ["--allow-partial"], "needs --flight"),
    (SERVE, ["--peer-tls-roots", "{path}"], "needs --flight"),
    (SERVE, ["--partition-bytes", "1MiB"], "use it with --flight"),
    (SERVE, ["--ticket-ttl", "5"], "needs --flight"),
    (SERVE, ["--drain-timeout", "5"], "needs --flight"),
    # ... --insecure where nothing listens beyond this host; --keep beside --device, which keeps
    # the bodies already; --device with packed bodies, which it cannot lend.
    (SERVE, ["--insecure"], "from this host only"),
    (SERVE + ["--transport", "shm"], ["--insecure"], "from this host only"),
    (SERVE + ["--device", "cuda:0"], ["--keep"], "GPU's memory"),
    (SERVE + ["--body-type", "packed"], ["--device", "cuda:0"], "needs --body-type list"),
    # A Flight server: a plain server's options; the planes' options with no plane; the peers'
    # options with no peer; a client CA without TLS.
    (FLIGHT, ["--device", "cuda:0"], "without --flight"),
    (FLIGHT, ["--print-ticket"], "GetFlightInfo"),
    (FLIGHT + ["--transport", "grpc"], ["--region-bytes", "2MiB"], "serves neither"),
    (FLIGHT + ["--transport", "grpc"], ["--body-type", "packed"], "serves neither"),
    (FLIGHT + ["--transport", "grpc"], ["--keep"], "serves neither"),
    (FLIGHT + ["--transport", "grpc"], ["--max-clients", "3"], "serves neither"),
    (FLIGHT + ["--transport", "grpc"], ["--timeout", "3"], "serves neither"),
    (FLIGHT + ["--transport", "grpc"], ["--ucx-listen", "127.0.0.1:0"], "serves neither"),
    (FLIGHT + ["--transport", "shm"], ["--ucx-listen", "127.0.0.1:0"], "serves only shm"),
    (FLIGHT, ["--peer-timeout", "3"], "needs --peer or --peers-file"),
    (FLIGHT, ["--allow-partial"], "needs --peer or --peers-file"),
    (FLIGHT, ["--peer-tls-roots", "{path}"], "needs --peer or --peers-file"),
    (FLIGHT, ["--tls-client-ca", "{path}"], "needs --tls-cert"),
    # A Dissociated IPC read: a Flight client's options.
    (["get", SHM, "--ticket", "t"], ["--path", "t"], "needs a grpc:// URI"),
    (["get", UCX, "--ticket", "t"], ["--via", "ucx"], "needs a grpc:// URI"),
    (["get", SHM, "--ticket", "t"], ["--parallel", "2"], "needs a grpc:// URI"),
    (["get", UCX, "--ticket", "t"], ["--grpc-below", "0"], "needs a grpc:// URI"),
    (["get", UCX, "--ticket", "t"], ["--token-file", "{path}"], "needs a grpc:// URI"),
    (["get", SHM, "--ticket", "t"], ["--tls-roots", "{path}"], "needs a grpc:// URI"),
    # ... and lists asked of a plane that always lends them.
    (["get", SHM, "--ticket", "t"], ["--buffer-lists"], "always lends them"),
    (["get", UCX, "--data-uri", SHM, "--ticket", "t"], ["--buffer-lists"], "always lends them"),
    # A Flight read: a Dissociated IPC client's options; TLS roots without TLS; what follows a
    # flight's locations when a ticket is redeemed with DoGet; lists where no UCX is read.
    (["get", GRPC, "--path", "t"], ["--data-uri", SHM], "locations say"),
    (["get", GRPC, "--path", "t"], ["--connect-timeout", "3"], "--timeout bounds"),
    (["get", GRPC, "--path", "t"], ["--max-body-bytes", "1MiB"], "ferry list --json"),
    (["get", GRPC, "--path", "t"], ["--tls-roots", "{path}"], "is not one"),
    (["get", GRPC, "--path", "t"], ["--ticket", "t"], "give one of them"),
    (["get", GRPC, "--path", "t", "--via", "shm"], ["--buffer-lists"], "reads none"),
    (["get", GRPC, "--path", "t", "--via", "grpc"], ["--buffer-lists"], "reads none"),
    (["get", GRPC, "--ticket", "t"], ["--via", "ucx"], "redeemed with DoGet"),
    (["get", GRPC, "--ticket", "t"], ["--parallel", "2"], "redeemed with DoGet"),
    (["get", GRPC, "--ticket", "t"], ["--grpc-below", "0"], "redeemed with DoGet"),
    (["get", GRPC, "--path", "t", "--via", "ucx"], ["--grpc-below", "0"], "has chosen"),
    (["get", GRPC, "--ticket", "t"], ["--buffer-lists"], "redeemed with DoGet"),
    (["list", GRPC], ["--tls-roots", "{path}"], "is not one"),
    (["put", GRPC, "{path}", "--path", "t"], ["--tls-roots", "{path}"], "is not one"),
]


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return write_ipc(tmp_path_factory.mktemp("refused") / "t.arrows", pa.table({"x": [1, 2, 3]}))


def _line(words, path):
    return [w.replace("{path}", path) for w in words]


@pytest.mark.parametrize("base,option,why", CASES,
                         ids=[f"{' '.join(c[0][:1] + c[0][1:2])} {c[1][0]}" for c in CASES])
def test_an_ignored_option_is_refused_by_name(run, path, base, option, why):
    r = run(*_line(base + option, path), timeout=60)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.startswith(f"ferry: {option[0]}: "), r.stderr
    assert why in r.stderr, r.stderr
    assert r.stdout == "", r.stdout


@pytest.mark.parametrize("base", sorted({tuple(c[0]) for c in CASES if c[0][0] != "serve"}))
def test_without_the_option_the_line_gets_past_the_check(run, path, base):
    # Nothing listens at these URIs: the command fails on connecting, naming the URI, not an
    # option. A millisecond to connect leaves no time to wait for a server still starting: the
    # refusal comes at once, not after a timeout.
    line = _line(list(base), path)
    bounds = ["--timeout", "2"] + (["--connect-timeout", "0.001"] if base[0] == "get" and
                                   not base[1].startswith("grpc") else [])
    r = run(*line, *bounds, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("ferry: "), r.stderr
    assert not r.stderr.startswith("ferry: --"), r.stderr


def test_cat_limit_and_json_exclude_each_other(run, path):
    r = run("cat", path, "--json", "--limit", "1")
    assert r.returncode > 100 and "--limit" in r.stderr and "--json" in r.stderr, r.stderr
