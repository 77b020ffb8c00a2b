"""Shared test fixtures (the repo root, a demo config, isolated user dirs, a leftover-process check) and the CI rule
that a skipped test fails the run: in CI a skip means a dependency the machine should have is missing, and a
missing dependency must be fixed, not silently counted as a pass."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Fixtures shared across folders: ``pulse`` (a private PulseAudio daemon with a null sink), ``redis_server`` (a real
#: redis-server on a loopback port: the store's tests and the attached console's).
pytest_plugins = ["tests.fixtures.pulse", "tests.fixtures.redis_fixture", "tests.fixtures.prewarm"]


@pytest.fixture
def repo_root() -> Path:
    return ROOT


@pytest.fixture
def demo_config_path() -> Path:
    return ROOT / "config" / "default.yaml"


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Never touch the developer's real config/data dirs from a test."""
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    yield


@pytest.fixture(autouse=True)
def _thawed_heap() -> Iterator[None]:
    """A console or ``serve`` in a test freezes the heap as the real ones do (engine/core/heap.py); undo it
    afterwards, or every test's app would stay in memory for the rest of the worker's run."""
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def python() -> str:
    return sys.executable


def children_of(pid: int) -> list[int]:
    """Live child processes of ``pid`` (from /proc), for no-orphan checks."""
    out: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry))
    return out


def in_ci() -> bool:
    """CI sets ``CI=true`` (GitHub Actions, GitLab, and ``.ci/run``)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _skipped(config: pytest.Config) -> list[pytest.TestReport]:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    return list(reporter.stats.get("skipped", [])) if reporter is not None else []


def _skip_reason(report: pytest.TestReport) -> str:
    if isinstance(report.longrepr, tuple):  # (path, line, "Skipped: reason")
        path, line, reason = report.longrepr
        return f"{path}:{line + 1}: {reason.removeprefix('Skipped: ')}"
    return str(report.longrepr)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # only the controller decides (under xdist every worker runs this hook too, with no terminal reporter stats)
    if in_ci() and not hasattr(session.config, "workerinput") and _skipped(session.config):
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    skipped = _skipped(config)
    if not (in_ci() and skipped):
        return
    terminalreporter.section("skipped tests fail the run in CI (CI=true)", sep="=", red=True, bold=True)
    for report in skipped:
        terminalreporter.line(f"SKIPPED {report.nodeid} -- {_skip_reason(report)}")
    terminalreporter.line(
        f"{len(skipped)} test(s) skipped: install what they need (make test installs the system packages when it"
        " runs as root) instead of skipping."
    )
