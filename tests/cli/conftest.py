"""Fixtures of the command-line suite: the `ferry` executable and a runner."""
import os
import subprocess

import pytest

from cli_support import find_cli


@pytest.fixture(scope="session")
def ferry_cli():
    path = find_cli()
    if not path or not os.path.exists(path):
        pytest.fail("no ferry executable: build ferry_cli or set FERRY_CLI")
    return path


@pytest.fixture(scope="session")
def run(ferry_cli):
    """Run `ferry ARGS...`; returns the CompletedProcess (text mode), never raises on exit codes."""
    def go(*args, env=None, timeout=120):
        full_env = dict(os.environ, **(env or {}))
        return subprocess.run([ferry_cli, *map(str, args)], capture_output=True, text=True,
                              env=full_env, timeout=timeout)
    return go
