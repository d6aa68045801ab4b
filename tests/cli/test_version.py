"""One version: `ferry --version`, `ferry version`, FerryVersion(), Python's ferry.__version__ and
its package metadata, the Ruby extension's Ferry::VERSION, the gemspec, the CMake package and the
pkg-config files all report the repository's VERSION file, the one place it is written."""
import ctypes
import importlib.metadata
import os
import re
import shutil
import subprocess

import pytest

from cli_support import REPO


@pytest.fixture(scope="module")
def version():
    with open(os.path.join(REPO, "VERSION")) as f:
        text = f.read().strip()
    assert re.fullmatch(r"\d+\.\d+\.\d+", text), f"VERSION holds {text!r}, not MAJOR.MINOR.PATCH"
    return text


@pytest.fixture(scope="module")
def build_dir(ferry_cli):
    """The build tree the tool came from: <build>/tools/ferry/ferry."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(ferry_cli))))


def test_the_tool_prints_it(run, version):
    for args in (["--version"], ["version"]):
        r = run(*args)
        assert (r.returncode, r.stdout) == (0, f"ferry {version}\n"), (args, r.stderr)


def test_the_c_surface_returns_it(build_dir, version):
    lib = ctypes.CDLL(os.environ.get("FERRY_LIBRARY") or os.path.join(build_dir, "libferry.so"))
    lib.FerryVersion.restype = ctypes.c_char_p
    assert lib.FerryVersion().decode() == version


def test_python_reports_it(version):
    import ferry
    assert ferry.__version__ == version
    assert importlib.metadata.version("ferry") == version


def test_the_cmake_and_pkg_config_packages_declare_it(build_dir, version):
    with open(os.path.join(build_dir, "ferryConfigVersion.cmake")) as f:
        assert f'set(PACKAGE_VERSION "{version}")' in f.read()
    for pc in ("ferry.pc", "ferry-flight.pc"):
        # ferry-flight.pc requires ferry, found beside it.
        r = subprocess.run(["pkg-config", "--modversion", os.path.join(build_dir, pc)],
                           capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PKG_CONFIG_PATH": build_dir})
        assert (r.returncode, r.stdout.strip()) == (0, version), (pc, r.stderr)


def test_ruby_and_the_gem_report_it(build_dir, version):
    ruby = shutil.which("ruby")
    if ruby is None:
        pytest.fail("ruby is not installed (scripts/setup.sh installs it)")
    spec = subprocess.run([ruby, "-e", 'print Gem::Specification.load(ARGV[0]).version',
                           os.path.join(REPO, "ferry.gemspec")],
                          capture_output=True, text=True, timeout=60)
    assert (spec.returncode, spec.stdout) == (0, version), spec.stderr
    ext = subprocess.run([ruby, "-I", os.path.join(build_dir, "ruby"), "-I",
                          os.path.join(REPO, "ruby", "lib"), "-e", 'require "ferry"; print Ferry::VERSION'],
                         capture_output=True, text=True, timeout=60)
    assert (ext.returncode, ext.stdout) == (0, version), ext.stderr
