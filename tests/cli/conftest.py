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
        # A None value removes that variable.
        full_env = dict(os.environ)
        for key, value in (env or {}).items():
            if value is None:
                full_env.pop(key, None)
            else:
                full_env[key] = value
        return subprocess.run([ferry_cli, *map(str, args)], capture_output=True, text=True,
                              env=full_env, timeout=timeout)
    return go
