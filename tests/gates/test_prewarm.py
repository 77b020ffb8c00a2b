"""The test run's fork server for fixture MCP servers (tests/fixtures/mcp_servers/_prewarm.py) behaves like the
process it stands in for: the script runs on the launcher's own pipes, argv, cwd and environment; the launcher
exits as the script does (code or signal), passes signals on, and a launcher killed with SIGKILL takes the script
with it. Without these, a test of the engine's process handling would silently test something else."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.mcp_servers._prewarm import socket_path
from tests.fixtures.prewarm import SERVERS, listening
from tests.waiting import wait_until_sync

PROBE = str(SERVERS / "prewarm_probe.py")


@pytest.fixture(autouse=True)
def _fork_server_up() -> None:
    wait_until_sync(lambda: listening(socket_path()), within=30, what="the test run's fork server listening")


def _start(*args: str, **env: str) -> tuple[subprocess.Popen[str], int, list[str]]:
    proc = subprocess.Popen(
        [sys.executable, PROBE, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    assert proc.stdout is not None
    first = proc.stdout.readline().split()
    assert first[0] == "pid", first
    return proc, int(first[1]), first[2:]


def _dead(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def _gone(pid: int, limit_s: float = 10) -> bool:
    try:
        wait_until_sync(lambda: _dead(pid), within=limit_s)
    except AssertionError:
        return False
    return True


def test_runs_forked_on_the_launchers_pipes_args_cwd_and_env(tmp_path: Path) -> None:
    proc, pid, rest = _start("--exit", "7", PROBE="seen")
    assert pid != proc.pid  # a warm child, not the launcher
    assert rest == ["--exit", "7", os.getcwd(), "seen"]
    out, _ = proc.communicate("hello\n", timeout=10)
    assert out == "echo hello\n" and proc.returncode == 7


def test_a_child_that_ends_first_leaves_the_other_launchers_exit_alone() -> None:
    """Two launchers at once, the first's child ends first: the second still hears its child's exit (the server
    once closed the newest launcher's connection whenever any child ended, and that launcher exited 1, not 7)."""
    first, _, _ = _start("--exit", "3")
    second, _, _ = _start("--exit", "7")
    first.communicate("", timeout=10)
    assert first.returncode == 3
    out, _ = second.communicate("hello\n", timeout=10)
    assert out == "echo hello\n" and second.returncode == 7


def test_own_process_when_asked() -> None:
    proc, pid, _ = _start(AVA_OWN_PROCESS="1")
    assert pid == proc.pid
    proc.communicate("", timeout=10)
    assert proc.returncode == 0


def test_a_death_by_signal_is_the_launchers_too() -> None:
    proc, _, _ = _start("--signal", str(int(signal.SIGUSR1)))
    proc.communicate("", timeout=10)
    assert proc.returncode == -signal.SIGUSR1


def test_sigterm_is_passed_on() -> None:
    proc, pid, _ = _start()
    proc.terminate()
    assert proc.wait(10) == -signal.SIGTERM
    assert _gone(pid)


def test_sigkill_of_the_launcher_ends_the_script() -> None:
    proc, pid, _ = _start()
    proc.kill()
    proc.wait(10)
    assert _gone(pid)
    assert proc.stdin is not None and proc.stdout is not None
    assert proc.stdout.read() == ""  # the script's end closed the pipe the launcher handed over
