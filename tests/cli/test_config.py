"""`ferry serve --config FILE` and `--check-config FILE`: one table of settings drives the flags'
--help, the TOML file's keys and the reference in docs/operations.md, and the three agree; a file
serves as the same flags do, a flag overrides its key, and a bad file is refused naming its line
and column (counted by hand here). Servers are read back with pyarrow.flight and Python's own
TOML reader (tomllib) reads what --check-config prints."""
import datetime
import os
import re
import tomllib

import pyarrow as pa
import pyarrow.flight as flight
import pytest

from cli_support import REPO, write_ipc
from ferry_process import ServeProcess

DOCS = os.path.join(REPO, "docs", "operations.md")
BEGIN, END = "<!-- config-reference:begin -->\n", "<!-- config-reference:end -->\n"
ROW = re.compile(r"^\| `([^`]+)` \| `([^`]+)` \| ([a-z ]+) \| `([^`]*)` \| (.*) \|$")
# An option's first help line: "  --flag ..." (or the positional "  datasets ...").
HELP_ENTRY = re.compile(r"^  (-\S+|datasets)\b")


def reference(run):
    r = run("serve", "--config-reference")
    assert r.returncode == 0, r.stderr
    return r.stdout


def rows(text):
    out = []
    for line in text.splitlines()[2:]:
        m = ROW.match(line)
        assert m, line
        out.append(dict(zip(("key", "flag", "type", "default", "help"), m.groups())))
    return out


def help_entries(text):
    """flag -> its help text (whitespace folded), for every option and positional of --help."""
    entries, current = {}, None
    for line in text.splitlines():
        m = HELP_ENTRY.match(line)
        if m:
            current = m.group(1).split(",")[-1]
            entries[current] = line
        elif current and line.startswith("   "):
            entries[current] += " " + line
        else:
            current = None
    return {flag: " ".join(text.split()) for flag, text in entries.items()}


def test_the_table_the_help_and_the_docs_agree(run, tmp_path):
    ref = reference(run)
    table = rows(ref)
    assert len(table) >= 25
    # docs/operations.md shows the table as the tool prints it.
    with open(DOCS) as f:
        docs = f.read()
    assert BEGIN in docs and END in docs
    shown = docs[docs.index(BEGIN) + len(BEGIN):docs.index(END)]
    assert shown.strip() == ref.strip(), (
        "docs/operations.md's settings reference differs from `ferry serve --config-reference`")
    # --help: every row's flag with the row's help, and no serve option without a row.
    r = run("serve", "--help")
    assert r.returncode == 0
    entries = help_entries(r.stdout)
    for row in table:
        flag = "datasets" if row["key"] == "[datasets] NAME" else row["flag"]
        assert flag in entries, flag
        assert entries[flag].endswith(" ".join(row["help"].split())), (flag, entries[flag])
    flags = {row["flag"] for row in table} | {"datasets", "--help", "--config", "--check-config"}
    assert set(entries) - flags == set()
    # The parser: every key at its default is taken, and --check-config prints exactly them.
    groups = {}
    for row in table:
        if row["key"] != "[datasets] NAME":
            group, leaf = row["key"].split(".")
            groups.setdefault(group, []).append(f"{leaf} = {row['default']}")
    text = "".join(f"[{g}]\n" + "\n".join(lines) + "\n" for g, lines in groups.items())
    path = tmp_path / "defaults.toml"
    path.write_text(text)
    r = run("serve", "--check-config", path)
    assert r.returncode == 0, r.stderr
    assert tomllib.loads(r.stdout) == {**tomllib.loads(text), "datasets": {}}
    # The type column: each key refuses a value of another type, naming the key.
    for row in table:
        if row["key"] == "[datasets] NAME":
            continue
        group, leaf = row["key"].split(".")
        wrong = "1" if row["type"] == "boolean" else "true"
        path.write_text(f"[{group}]\n{leaf} = {wrong}\n")
        r = run("serve", "--check-config", path)
        assert r.returncode == 2 and f"{path}:2:{len(leaf) + 4}: {row['key']}: expected" in r.stderr, (
            row, r.stderr)


@pytest.mark.parametrize("text, where, message", [
    ("[planes]\ntimout = 5\n", "2:1", 'unknown key "planes.timout" ([planes] has transport,'),
    ("[plane]\ntimeout = 5\n", "1:2", 'unknown key "plane" (the tables are datasets, auth,'),
    ('[planes]\ntimeout = "5"\n', "2:11", "planes.timeout: expected seconds (a number), not a string"),
    ("[planes]\nmax_clients = 0\n", "2:15", "planes.max_clients: 0 is not above 0"),
    ("[planes]\nregion_bytes = 5\n", "2:16", "planes.region_bytes: Value 5 not in range"),
    ('[planes]\ntransport = "tcp"\n', "2:13", "planes.transport: tcp not in {shm,ucx,grpc}"),
    ('[federation]\npeers = ["grpc://a:1", 2]\n', "2:24", "federation.peers: expected an array"),
    ('[datasets]\nt = "missing.arrows"\n', "2:5", "missing.arrows does not exist"),
    ("[planes]\ntimeout = = 1\n", "2:11", "Error while parsing value"),
    # Of several errors the first in the file is told.
    ('[planes]\nkeep = 1\n[auth]\ninsecure = 2\n', "2:8",
     "planes.keep: expected a boolean (true or false), not an integer (1) (and 1 more)"),
])
def test_a_bad_file_is_refused_naming_line_and_column(run, tmp_path, text, where, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    for mode in ("--check-config", "--config"):
        r = run("serve", mode, path)
        assert r.returncode == 2, r.stdout
        assert r.stderr.startswith(f"ferry: {path}:{where}: "), r.stderr
        assert message in r.stderr, r.stderr
    r = run("serve", "--config", tmp_path / "absent.toml")
    assert r.returncode == 2 and "absent.toml: cannot read the config file" in r.stderr


def test_check_config_prints_the_effective_configuration(run, tmp_path):
    (tmp_path / "conf").mkdir()
    data = write_ipc(tmp_path / "conf" / "t.arrows", pa.table({"x": [1, 2, 3]}))
    path = tmp_path / "conf" / "ferry.toml"
    path.write_text('[planes]\nmax_clients = 3\nregion_bytes = "64MiB"\ntimeout = 5\n'
                    '[auth]\ntoken_file = "token"\n[datasets]\nt = "t.arrows"\nu = "t.arrows"\n')
    r = run("serve", "--check-config", path, "--max-clients", "7", f"u={data}", "v=x.arrows")
    assert r.returncode == 0, r.stderr
    got = tomllib.loads(r.stdout)
    # The flag overrides its key; the file's other keys stay; the defaults fill the rest;
    # relative paths are the file's directory's; a NAME=FILE replaces the file's of that name.
    assert got["planes"]["max_clients"] == 7
    assert got["planes"]["region_bytes"] == 64 << 20
    assert got["planes"]["timeout"] == 5.0
    assert got["planes"]["body_type"] == "list"
    assert got["auth"]["token_file"] == str(tmp_path / "conf" / "token")
    assert got["datasets"] == {"t": data, "u": data, "v": "x.arrows"}
    # What it prints is a configuration that checks to itself.
    again = tmp_path / "again.toml"
    again.write_text(r.stdout.replace('v = "x.arrows"\n', "").replace("v = 'x.arrows'\n", ""))
    r2 = run("serve", "--check-config", again)
    assert r2.returncode == 0, r2.stderr
    del got["datasets"]["v"]
    assert tomllib.loads(r2.stdout) == got
    r = run("serve", "--check-config", path, "--config", path)
    assert r.returncode == 2 and "not both" in r.stderr


def test_the_effective_configuration_serves_as_its_file(run, tmp_path):
    # Every key is in it, most at their defaults, which no mode refuses as a setting it ignores.
    write_ipc(tmp_path / "t.arrows", pa.table({"x": [1, 2, 3]}))
    (tmp_path / "a.toml").write_text('[datasets]\nt = "t.arrows"\n')
    r = run("serve", "--check-config", tmp_path / "a.toml")
    assert r.returncode == 0, r.stderr
    (tmp_path / "b.toml").write_text(r.stdout)
    with ServeProcess(["--config", tmp_path / "b.toml"], tmp=str(tmp_path)) as server:
        name, uri = server.first_line().split()
    assert name == "t" and uri.startswith("shm://")
    # A key away from its default is refused where the mode ignores it, under its flag's name.
    (tmp_path / "c.toml").write_text(r.stdout.replace("cert = ''", 'cert = "c.pem"'))
    r = run("serve", "--config", tmp_path / "c.toml")
    assert r.returncode == 2, r.stderr
    assert "--tls-cert: serves Arrow Flight over TLS: it needs --flight" in r.stderr


def served(uri, token=None):
    """Every flight of a server: name -> (records, bytes, endpoints' location schemes, ticket
    lifetimes in s, the table read back)."""
    options = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {token}".encode())]
                                       ) if token else None
    client = flight.connect(uri)
    out = {}
    for info in client.list_flights(options=options):
        parts, lifetimes = [], []
        for e in info.endpoints:
            parts.append(client.do_get(e.ticket, options=options).read_all())
            left = e.expiration_time.as_py() - datetime.datetime.now(datetime.timezone.utc)
            lifetimes.append(round(left.total_seconds() / 100))
        schemes = [tuple(loc.uri.decode().split(":")[0] for loc in e.locations)
                   for e in info.endpoints]
        out[info.descriptor.path[0].decode()] = (info.total_records, info.total_bytes, schemes,
                                                 lifetimes, pa.concat_tables(parts))
    client.close()
    return out


def test_a_config_file_serves_as_its_flags_do(tmp_path):
    table = pa.table({"x": pa.array(range(200_000), pa.int64())})
    (tmp_path / "srv").mkdir()
    data = write_ipc(tmp_path / "srv" / "t.arrows", table, chunk=20_000)
    (tmp_path / "srv" / "token").write_text("s3cret\n")
    flags = ["--flight", "127.0.0.1:0", "--transport", "shm", "--partition-bytes", "400KiB",
             "--ticket-ttl", "300", "--token-file", tmp_path / "srv" / "token", f"t={data}"]
    config = tmp_path / "srv" / "ferry.toml"
    config.write_text('[flight]\nlisten = "127.0.0.1:0"\npartition_bytes = "400KiB"\n'
                      'ticket_ttl = 300\n[planes]\ntransport = "shm"\n'
                      '[auth]\ntoken_file = "token"\n[datasets]\nt = "t.arrows"\n')
    with ServeProcess(flags, tmp=str(tmp_path)) as a, \
            ServeProcess(["--config", config], tmp=str(tmp_path), cwd="/") as b:
        uri_a, uri_b = a.first_line(), b.first_line()
        by_flags = served(uri_a, "s3cret")
        by_file = served(uri_b, "s3cret")
        # The token is the file's (its path taken from the file's directory, not the server's
        # working directory): a call without it is refused.
        with pytest.raises(flight.FlightUnauthenticatedError):
            list(flight.connect(uri_b).list_flights())
    assert by_flags.keys() == by_file.keys() == {"t"}
    records, size, schemes, lifetimes, got = by_file["t"]
    assert by_flags["t"][:4] == by_file["t"][:4]
    # 1.6 MB in 400 KiB partitions of whole 160 kB batches: 5 endpoints, shm then DoGet each.
    assert (records, size) == (200_000, 1_600_000)
    assert schemes == [("shm", "arrow-flight-reuse-connection")] * 5
    assert lifetimes == [3] * 5
    assert got.equals(table)
