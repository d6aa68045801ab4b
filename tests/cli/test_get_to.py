"""`ferry get --to FILE` puts FILE in place only when it is whole: it writes an unnamed file
(O_TMPFILE) in FILE's directory and links it there at the end. Mid-stream the directory holds
nothing new while the client holds a deleted-looking file of that directory open (how Linux shows
an O_TMPFILE file in /proc); SIGKILL then leaves nothing; --force replaces an existing file with
the new data (pyarrow's read of it is the oracle) and leaves no hidden name behind; without
--force an existing file is refused and kept. Where the filesystem has no O_TMPFILE (emulated
here by a preloaded open() that fails it with EOPNOTSUPP, as such a filesystem does), the client
falls back to a hidden .partial file, renamed when whole and removed on SIGTERM. The client stops
mid-stream at the fault suite's pause point (FERRY_FAULT_PAUSE, compiled into test trees)."""
import os
import re
import shutil
import signal
import subprocess
import time

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from cli_support import write_ipc
from ferry_process import ServeProcess

PAUSED = "ferry-fault: paused at"


def _table(rows=200_000):
    return pa.table({"i": pa.array(range(rows), pa.int64()),
                     "s": pa.array([f"r{k % 977}" for k in range(rows)])})


def _serve(tmp_path, path):
    server = ServeProcess([f"t={path}"], tmp=str(tmp_path))
    name, uri = server.first_line().split()[:2]
    assert name == "t"
    return server, uri


def _unnamed_files(pid, directory):
    """The files process `pid` has open that live in `directory` without a name there: /proc
    shows an O_TMPFILE file as 'DIR/#INODE (deleted)'."""
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            continue
        if re.fullmatch(re.escape(str(directory)) + r"/#\d+ \(deleted\)", target):
            out.append(target)
    return out


def _paused_get(ferry_cli, uri, out, log, env=None):
    """`ferry get URI --ticket t --to OUT` stopped at its third body; returns the process."""
    client = subprocess.Popen(
        [ferry_cli, "get", uri, "--ticket", "t", "--to", str(out), "--no-progress"],
        stderr=log, stdout=subprocess.DEVNULL,
        env=dict(os.environ, FERRY_FAULT_PAUSE="client:body:3", **(env or {})))
    deadline = time.monotonic() + 30
    while PAUSED not in open(log.name).read():
        assert client.poll() is None and time.monotonic() < deadline, open(log.name).read()
        time.sleep(0.01)
    return client


# open() failing O_TMPFILE with EOPNOTSUPP, as a filesystem without it does; anything else goes
# to the C library's own open.
NO_TMPFILE_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>

int open(const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  mode_t mode = (flags & (O_CREAT | __O_TMPFILE)) ? va_arg(args, mode_t) : 0;
  va_end(args);
  if ((flags & O_TMPFILE) == O_TMPFILE) {
    errno = EOPNOTSUPP;
    return -1;
  }
  int (*real)(const char*, int, ...) = (int (*)(const char*, int, ...))dlsym(RTLD_NEXT, "open");
  return real(path, flags, mode);
}
"""


@pytest.fixture(scope="module")
def no_tmpfile(tmp_path_factory):
    """LD_PRELOAD of a library whose open() refuses O_TMPFILE."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    assert compiler, "no C compiler (scripts/setup.sh installs build-essential)"
    d = tmp_path_factory.mktemp("no_tmpfile")
    (d / "no_tmpfile.c").write_text(NO_TMPFILE_C)
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(d / "no_tmpfile.so"),
                    str(d / "no_tmpfile.c"), "-ldl"], check=True, capture_output=True)
    return {"LD_PRELOAD": str(d / "no_tmpfile.so")}


def test_without_o_tmpfile_a_partial_file_is_renamed_or_removed(ferry_cli, tmp_path,
                                                                 no_tmpfile):
    table = _table(100_000)
    path = write_ipc(tmp_path / "t.arrows", table, chunk=20_000)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    server, uri = _serve(tmp_path, path)
    log = open(tmp_path / "get.err", "w+")
    try:
        # Caught mid-stream: the hidden .partial file, removed by SIGTERM.
        client = _paused_get(ferry_cli, uri, out_dir / "got.arrows", log, no_tmpfile)
        [partial] = os.listdir(out_dir)
        assert re.fullmatch(rf"\.got\.arrows\.ferry-{client.pid}\.partial", partial), partial
        assert _unnamed_files(client.pid, out_dir) == []
        client.send_signal(signal.SIGTERM)
        assert client.wait(timeout=10) == 128 + signal.SIGTERM
        assert os.listdir(out_dir) == []
        # Whole: renamed into place.
        r = subprocess.run([ferry_cli, "get", uri, "--ticket", "t", "--to",
                            str(out_dir / "got.arrows"), "--no-progress"],
                           env=dict(os.environ, **no_tmpfile), capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        assert os.listdir(out_dir) == ["got.arrows"]
        assert ipc.open_stream(str(out_dir / "got.arrows")).read_all().equals(table)
    finally:
        log.close()
        server.close()


def test_a_client_killed_mid_stream_leaves_nothing(ferry_cli, tmp_path):
    table = _table()
    path = write_ipc(tmp_path / "t.arrows", table, chunk=20_000)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    server, uri = _serve(tmp_path, path)
    log = open(tmp_path / "get.err", "w+")
    client = None
    try:
        client = _paused_get(ferry_cli, uri, out_dir / "got.arrows", log)
        # Mid-stream: written to an unnamed file of the directory, which shows nothing.
        assert os.listdir(out_dir) == []
        assert len(_unnamed_files(client.pid, out_dir)) == 1
        client.send_signal(signal.SIGKILL)
        assert client.wait(timeout=10) == -signal.SIGKILL
        assert os.listdir(out_dir) == []
    finally:
        if client is not None and client.poll() is None:
            client.kill()
        log.close()
        server.close()


def test_force_replaces_a_file_and_an_existing_file_is_kept_without_it(run, ferry_cli,
                                                                        tmp_path):
    table = _table(50_000)
    path = write_ipc(tmp_path / "t.arrows", table, chunk=10_000)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "got.arrows"
    target.write_bytes(b"an older file")
    old_umask = os.umask(0o022)
    os.umask(old_umask)
    server, uri = _serve(tmp_path, path)
    try:
        r = run("get", uri, "--ticket", "t", "--to", target, "--no-progress")
        assert r.returncode == 2 and "the file exists (--force replaces it)" in r.stderr
        assert target.read_bytes() == b"an older file"
        r = run("get", uri, "--ticket", "t", "--to", target, "--force", "--no-progress")
        assert r.returncode == 0, r.stderr
        assert ipc.open_stream(str(target)).read_all().equals(table)
        assert os.listdir(out_dir) == ["got.arrows"]
        assert os.stat(target).st_mode & 0o777 == 0o644 & ~old_umask
        # A bare name: the working directory's file.
        r = subprocess.run([ferry_cli, "get", uri, "--ticket", "t", "--to", "new.arrows",
                            "--no-progress"], cwd=out_dir, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        assert ipc.open_stream(str(out_dir / "new.arrows")).read_all().equals(table)
        assert sorted(os.listdir(out_dir)) == ["got.arrows", "new.arrows"]
    finally:
        server.close()


def test_many_small_batches_are_written_whole_and_in_order(run, tmp_path):
    # 1,500 batches: more than the writing queue holds, written in groups of 16 by the reading
    # thread while a file's writes are cheap, and by the writing thread once they are not.
    table = _table(150_000)
    path = write_ipc(tmp_path / "t.arrows", table, chunk=100)
    server, uri = _serve(tmp_path, path)
    try:
        out = tmp_path / "got.arrows"
        r = run("get", uri, "--ticket", "t", "--to", out, "--no-progress")
        assert r.returncode == 0, r.stderr
        assert "1500 batches" in r.stdout
        got = ipc.open_stream(str(out))
        batches = list(got)
        assert len(batches) == 1500 and all(b.num_rows == 100 for b in batches)
        assert pa.Table.from_batches(batches).equals(table)
    finally:
        server.close()


def test_to_standard_output_the_stream_is_alone_and_the_summary_goes_to_stderr(ferry_cli,
                                                                              tmp_path):
    # `--to /dev/stdout` into a pipe: the bytes are one IPC stream, ending with its end-of-stream
    # marker and nothing after it; the summary is on stderr.
    table = _table(20_000)
    path = write_ipc(tmp_path / "t.arrows", table, chunk=1_000)
    server, uri = _serve(tmp_path, path)
    try:
        r = subprocess.run([ferry_cli, "get", uri, "--ticket", "t", "--to", "/dev/stdout",
                            "--no-progress"], capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.endswith(b"\xff\xff\xff\xff\x00\x00\x00\x00")
        assert ipc.open_stream(pa.BufferReader(r.stdout)).read_all().equals(table)
        assert b"20 batches, 20000 rows" in r.stderr and b"written to /dev/stdout" in r.stderr
    finally:
        server.close()


def test_a_full_device_fails_naming_it_and_why(run, tmp_path):
    path = write_ipc(tmp_path / "t.arrows", _table(50_000), chunk=1_000)
    server, uri = _serve(tmp_path, path)
    try:
        r = run("get", uri, "--ticket", "t", "--to", "/dev/full", "--no-progress")
        assert r.returncode != 0
        assert "/dev/full" in r.stderr and "No space left on device" in r.stderr, r.stderr
        # The server is left serving: a second read of the same dataset is whole.
        out = tmp_path / "after.arrows"
        r = run("get", uri, "--ticket", "t", "--to", out, "--no-progress")
        assert r.returncode == 0, r.stderr
        assert ipc.open_stream(str(out)).read_all().num_rows == 50_000
    finally:
        server.close()
