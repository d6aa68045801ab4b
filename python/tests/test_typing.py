"""The hand-written stubs of ferry's pure-Python modules agree with the modules: mypy's stubtest
compares each shipped .pyi with what the installed module defines at run time (names, signatures,
defaults, classes) and fails on any mismatch. The modules are found, not listed: every module of
the installed package with a .pyi beside it whose public objects are defined in Python. The stubs
of the extension's modules (nanobind's, whose functions stubtest cannot introspect) are checked by
test_binding_stubs.py against a fresh generation instead."""
import importlib
import pathlib
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("ferry._ferry", reason="the ferry binding is not installed (pip install ./python)")
pytest.importorskip("mypy.stubtest", reason="mypy is not installed (scripts/setup.sh installs it)")
import ferry  # noqa: E402

# pyarrow ships no stubs; Polars and Ray are typed, but mypy reading all of either takes minutes,
# so their names are taken as Any here (the stubs' own annotations of them are still parsed).
CONFIG = textwrap.dedent("""\
    [mypy]
    ignore_missing_imports = True
    [mypy-polars.*]
    follow_imports = skip
    [mypy-ray.*]
    follow_imports = skip
    """)


def _module_name(stub, root):
    parts = stub.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_pure_python(module):
    """Whether every public object of `module` that has a home module is defined outside the
    extension (ferry._ferry)."""
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    for name in names:
        home = getattr(getattr(module, name, None), "__module__", None) or ""
        if home == "ferry._ferry" or home.startswith("ferry._ferry."):
            return False
    return True


def pure_python_stubbed_modules():
    root = pathlib.Path(ferry.__file__).resolve().parent
    found = []
    for stub in sorted(root.rglob("*.pyi")):
        if stub.name == "_ferry.pyi" or not (stub.with_suffix(".py").exists()):
            continue
        name = _module_name(stub, root)
        if _is_pure_python(importlib.import_module(name)):
            found.append(name)
    # stubtest checks a package's submodules with it; naming them again makes mypy see each twice.
    return [m for m in found if not any(m.startswith(p + ".") for p in found)]


def _stubtest(modules, cwd):
    config = cwd / "mypy.ini"
    config.write_text(CONFIG)
    return subprocess.run([sys.executable, "-m", "mypy.stubtest", "--mypy-config-file",
                           str(config), *modules], capture_output=True, text=True, cwd=cwd,
                          timeout=280)


def test_every_pure_python_stub_matches_its_module(tmp_path):
    modules = pure_python_stubbed_modules()
    # The discovery finds the modules that ship stubs (ferry.polars at least) and none of the
    # extension's, whose stubs test_binding_stubs.py checks.
    assert "ferry.polars" in modules
    assert not {"ferry.flight", "ferry.dipc", "ferry.ipc"} & set(modules)
    result = _stubtest(modules, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_stubtest_fails_on_a_mismatch(tmp_path):
    """The check can fail: a stub whose signature differs from its module's is reported."""
    package = tmp_path / "stubbed"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "m.py").write_text("def f(a, b=1):\n    return a\n")
    (package / "m.pyi").write_text("def f(a: int) -> int: ...\n")
    result = subprocess.run([sys.executable, "-m", "mypy.stubtest", "stubbed.m"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=280,
                            env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert result.returncode != 0
    assert "stubbed.m.f" in result.stdout, result.stdout + result.stderr
