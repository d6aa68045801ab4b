"""A pytest plugin for CI (scripts/test.sh loads it with `-p pytest_strict_skips`): a skipped test
fails the run unless its reason names missing hardware (a GPU, CUDA, an OpenCL device, ...), so a
peer library that failed to install, or test data that is missing, cannot pass as green. It
prints the skip count and each skip's reason."""
import re

import pytest

HARDWARE = re.compile(r"\b(GPU|GPUs|CUDA|OpenCL device|ROCm|accelerator|hardware|InfiniBand|RDMA|NVLink)\b",
                      re.IGNORECASE)


def _reason(report):
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _skips(config):
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    reports = reporter.stats.get("skipped", []) if reporter is not None else []
    return [(r.nodeid, _reason(r)) for r in reports]


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    bad = [s for s in _skips(session.config) if not HARDWARE.search(s[1])]
    if bad and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    skips = _skips(config)
    bad = [s for s in skips if not HARDWARE.search(s[1])]
    terminalreporter.write_line(
        f"strict skips: {len(skips)} skipped, {len(skips) - len(bad)} for missing hardware, "
        f"{len(bad)} for anything else (those fail the run)")
    for nodeid, reason in skips:
        mark = "ok  " if HARDWARE.search(reason) else "FAIL"
        terminalreporter.write_line(f"  {mark} {nodeid}: {reason}")
