"""In CI (``CI=true``) a run with a skipped test fails and names the test and its reason; outside CI a skip is a skip.

The rule lives in tests/conftest.py; these tests load it as a plugin into a separate pytest run over a throwaway
test file, with and without xdist (under xdist only the controller sees the skips).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SAMPLE = """
import pytest

def test_runs() -> None:
    assert True

def test_needs_a_device() -> None:
    pytest.skip("no PulseAudio here")
"""


def run_pytest(tmp_path: Path, ci: str | None, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text(SAMPLE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")}
    env["PYTHONPATH"] = str(ROOT)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.conftest",
            "-p",
            "no:cacheprovider",
            "-q",
            *extra,
            "test_sample.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_skip_fails_the_run_in_ci(tmp_path: Path, workers: tuple[str, ...]) -> None:
    p = run_pytest(tmp_path, "true", *workers)
    assert p.returncode == pytest.ExitCode.TESTS_FAILED, p.stdout + p.stderr
    assert "skipped tests fail the run in CI" in p.stdout
    assert "SKIPPED test_sample.py::test_needs_a_device -- " in p.stdout and "no PulseAudio here" in p.stdout


def test_a_skip_is_a_skip_outside_ci(tmp_path: Path) -> None:
    p = run_pytest(tmp_path, None)
    assert p.returncode == pytest.ExitCode.OK, p.stdout + p.stderr
    assert "1 passed, 1 skipped" in p.stdout and "fail the run" not in p.stdout


def test_ci_false_is_not_ci(tmp_path: Path) -> None:
    assert run_pytest(tmp_path, "false").returncode == pytest.ExitCode.OK
