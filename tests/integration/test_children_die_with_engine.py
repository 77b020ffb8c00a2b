"""Every process the engine starts dies with it, even when the engine is SIGKILLed (it can clean nothing up then).

Security III, item 3: after SIGKILL of ``serve`` or of the console, an MCP server still connecting was left with
parent 1, its grandchildren too. Here the installed ``ava-engine serve`` and ``ava-console`` (under a pty) run a
config with servers hung in initialize (one that ignores SIGTERM and its stdin closing, with a grandchild), a working
stdio server started through ``sh -c`` with two grandchildren (one escaped into a session of its own, where no
process-group kill reaches it), and a bundled built-in server. Once every one of those processes is seen under the
engine, the engine is SIGKILLed, and every one of them must be gone within a bounded wait.
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_serve_shutdown import _alive, descendants, wait_for

ROOT = Path(__file__).resolve().parents[2]
ENGINE_BIN = str(ROOT / ".venv" / "bin" / "ava-engine")
CONSOLE_BIN = str(ROOT / ".venv" / "bin" / "ava-console")
FIXTURES = ROOT / "tests" / "fixtures" / "mcp_servers"
PY = sys.executable

#: What the command lines that must all be seen under the engine before it is killed contain (the sleeps are
#: grandchildren; a command line read from /proc ends in a space).
NEEDLES = ("hang_initialize.py", "stubborn.py", "sleep 300 ", "sleep 3001 ", "sleep 3002 ", "engine.servers.bundle")


def config() -> str:
    shell = f"sleep 3001 & setsid sleep 3002 & exec {PY} {FIXTURES / 'fixture_server.py'}"
    return f"""engine:
  http: {{port: 0}}
mcp:
  servers:
    hung:        # never answers initialize
      command: ["{PY}", "{FIXTURES / "hang_initialize.py"}"]
      connect_timeout_ms: 60000
    stubborn:    # never answers, ignores SIGTERM and its stdin closing, has a grandchild
      command: ["{PY}", "{FIXTURES / "stubborn.py"}", "--hang-initialize"]
      connect_timeout_ms: 60000
    shell:       # a working server whose shell left two sleeps behind, one in a session of its own
      command: ["/bin/sh", "-c", "{shell}"]
      env: {{AVA_OWN_PROCESS: "1"}}
      connect_timeout_ms: 60000
    dice:        # a built-in server in the shared bundle child
      transport: bundled
      target: engine.servers.dice.server:create
"""


def _children_seen(root: int) -> dict[int, str]:
    """Wait until every needle is a live process under ``root``; all its live descendants then."""
    found: dict[int, str] = {}

    def ready() -> bool:
        found.clear()
        found.update(descendants(root))
        cmds = list(found.values())
        return all(any(needle in cmd for cmd in cmds) for needle in NEEDLES)

    wait_for(ready, 90, f"the engine's children {NEEDLES} under pid {root}")
    return dict(found)


def _all_gone(children: dict[int, str]) -> None:
    left: list[str] = []

    def gone() -> bool:
        left[:] = [f"{pid} {cmd}" for pid, cmd in children.items() if _alive(pid)]
        return not left

    try:
        wait_for(gone, 10, "every child of the killed engine to die")
    except AssertionError:
        for pid in children:  # no leftovers for the rest of the run
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        raise AssertionError(f"outlived the SIGKILLed engine: {left}") from None


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(config())
    return path


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def test_sigkilled_serve_takes_every_child_and_grandchild_with_it(
    config_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    proc = subprocess.Popen(
        [ENGINE_BIN, "--config", str(config_path), "serve"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=config_path.parent,
    )
    started.append(proc)
    children = _children_seen(proc.pid)
    proc.kill()
    proc.wait(timeout=10)
    _all_gone(children)


def _drain(fd: int) -> None:
    """Read the console's screen output and drop it (a full pty would block the console)."""
    while True:
        try:
            if not os.read(fd, 65536):
                return
        except OSError:
            return


def test_sigkilled_console_takes_every_child_and_grandchild_with_it(
    config_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    try:
        proc = subprocess.Popen(
            [CONSOLE_BIN, "--config", str(config_path)],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=config_path.parent,
            env=env,
            start_new_session=True,
        )
    finally:
        os.close(slave)
    started.append(proc)
    reader = threading.Thread(target=_drain, args=(master,), daemon=True)
    reader.start()
    try:
        children = _children_seen(proc.pid)
        proc.kill()
        proc.wait(timeout=10)
        _all_gone(children)
    finally:
        os.close(master)
