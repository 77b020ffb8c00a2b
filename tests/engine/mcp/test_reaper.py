"""The reaper (engine/mcp/reaper.py) on its own: what it kills when its engine goes, and what it leaves alone.

- The pipe's EOF: every registered process group (SIGKILL for one that ignores SIGTERM) and every process carrying
  the run's marker die; a group registered then forgotten, and a process marked for another run, live on.
- The engine SIGKILLed while a forked copy of it still holds the pipe open (no EOF ever comes): the reaper's death
  signal and parent check still kill the engine's children, including the one registered just before the kill.
- A reaper that died is replaced on the next registration; one that cannot start is a warning, not a failed spawn.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.mcp import reaper
from tests.integration.test_serve_shutdown import _alive, wait_for

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = str(ROOT / "engine" / "mcp" / "reaper.py")


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        if _group(proc.pid):  # the shell's sleep, when the reaper failed to kill it
            os.killpg(proc.pid, signal.SIGKILL)


def _group(pgid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                out.append(int(entry))
    return out


def _catches(pid: int, sig: int) -> bool:
    """``pid`` has a handler for ``sig`` (the reaper installs its own just before it starts to wait)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            caught = next(line for line in f if line.startswith("SigCgt:")).split()[1]
    except (OSError, StopIteration):
        return False
    return bool(int(caught, 16) & (1 << (sig - 1)))


def test_eof_kills_the_registered_groups_and_the_marked_processes_only(
    procs: list[subprocess.Popen[bytes]],
) -> None:
    run_id = "test-run-1"

    def start(*argv: str, marker: str | None = None) -> subprocess.Popen[bytes]:
        env = {"PATH": os.environ["PATH"]} | ({reaper.MARKER: marker} if marker else {})
        proc = subprocess.Popen(argv, env=env, start_new_session=True)
        procs.append(proc)
        return proc

    stubborn = start("/bin/sh", "-c", "trap '' TERM; sleep 3011; :")  # its group ignores SIGTERM
    marked = start("sleep", "3012", marker=run_id)  # never registered: found by its environment
    forgotten = start("sleep", "3013")  # registered, then reaped by the engine: its pid may be anyone's now
    other_run = start("sleep", "3014", marker="another-run")
    wait_for(lambda: len(_group(stubborn.pid)) == 2, 10, "the shell's sleep (SIGTERM ignored from then on)")
    members = _group(stubborn.pid)

    guard = subprocess.Popen([sys.executable, "-I", "-S", SCRIPT, run_id, str(os.getpid())], stdin=subprocess.PIPE)
    procs.append(guard)
    assert guard.stdin is not None
    guard.stdin.write(f"+{stubborn.pid}\n+{forgotten.pid}\n-{forgotten.pid}\n".encode())
    guard.stdin.close()  # the engine is gone
    assert guard.wait(timeout=20) == 0
    left = [pid for pid in (*members, marked.pid) if _alive(pid)]
    assert not left, f"left alive: {left}"
    assert _alive(forgotten.pid) and _alive(other_run.pid)


ENGINE = """
import os, subprocess, sys, time
from engine.mcp import reaper
env = reaper.child_env({"PATH": os.environ["PATH"]})
victim = subprocess.Popen(["sleep", "3021"], env=env, start_new_session=True)
holder = os.fork()
if holder == 0:  # a copy of the engine that holds the reaper's pipe open: its EOF never comes
    time.sleep(300)
    os._exit(0)
reaper.ChildGroups().add(victim.pid)
print(victim.pid, holder, reaper.reaper_pid(), flush=True)
sys.stdin.read()
"""


def test_a_killed_engine_s_children_die_though_the_pipe_stays_open(procs: list[subprocess.Popen[bytes]]) -> None:
    engine = subprocess.Popen([sys.executable, "-c", ENGINE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
    procs.append(engine)
    assert engine.stdout is not None
    victim, holder, guard = (int(word) for word in engine.stdout.readline().split())
    try:
        wait_for(lambda: _catches(guard, signal.SIGTERM), 20, "the reaper to be set up (its SIGTERM handler)")
        engine.kill()
        engine.wait(timeout=10)
        wait_for(lambda: not _alive(guard), 20, "the reaper to finish")
        assert not _alive(victim), "the engine's child outlived it"
        assert _alive(holder)  # the pipe was open all along: the death signal did it
    finally:
        for pid in (victim, holder):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def test_a_dead_reaper_is_replaced_on_the_next_registration(procs: list[subprocess.Popen[bytes]]) -> None:
    child = subprocess.Popen(["sleep", "3031"], env=reaper.child_env(None), start_new_session=True)
    procs.append(child)
    groups = reaper.ChildGroups()
    groups.add(child.pid)
    first = reaper.reaper_pid()
    assert first is not None
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: not _alive(first), 10, "the reaper to die")
    groups.discard(child.pid)
    groups.add(child.pid)
    second = reaper.reaper_pid()
    assert second not in (None, first)
    groups.discard(child.pid)


def test_no_reaper_to_start_is_a_warning_not_a_failed_spawn(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    own = reaper._Reaper()  # not the process's reaper: that one keeps guarding the other tests' children
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    own.ensure()
    own.tell("+", 4242)
    assert own.process is None
    assert "cannot start the reaper" in caplog.text
    assert caplog.text.count("cannot start the reaper") == 1  # tried once, not at every registration
