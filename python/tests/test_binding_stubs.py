"""The shipped type stubs are what nanobind's stub generator makes of the installed extension:
a stale stub fails here. FERRY_UPDATE_STUBS=1 rewrites them instead."""
import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
pytest.importorskip("nanobind.stubgen", reason="nanobind is not installed")

PYTHON = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = PYTHON / "ferry"
STUBS = {"ferry._ferry": "_ferry.pyi", "ferry._ferry.ipc": "ipc.pyi", "ferry._ferry.dipc": "dipc.pyi",
         "ferry._ferry.flight": "flight.pyi"}


def generate(module, out):
    cmd = [sys.executable, "-m", "nanobind.stubgen", "-q", "-m", module, "-o", str(out)]
    if module == "ferry._ferry":
        cmd += ["-p", str(PYTHON / "stubgen-patterns.txt")]
    subprocess.run(cmd, check=True, cwd=out.parent)


@pytest.mark.parametrize("module", sorted(STUBS))
def test_stubs_are_current(module, tmp_path):
    fresh = tmp_path / STUBS[module]
    generate(module, fresh)
    shipped = PACKAGE / STUBS[module]
    if os.environ.get("FERRY_UPDATE_STUBS") == "1":
        shipped.write_text(fresh.read_text())
    assert shipped.exists(), f"{shipped} is missing: run FERRY_UPDATE_STUBS=1 pytest {__file__}"
    assert fresh.read_text() == shipped.read_text(), (
        f"{shipped.name} is stale: run FERRY_UPDATE_STUBS=1 python -m pytest {__file__}")


def test_the_package_is_marked_typed():
    assert (PACKAGE / "py.typed").exists()
