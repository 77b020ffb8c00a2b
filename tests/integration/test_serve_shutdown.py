"""``ava-engine serve`` (the installed entry point) stops within 3 s whatever its MCP servers are doing.

Servers hung in initialize (one that exits when its stdin closes, one that ignores that and SIGTERM and has a
grandchild) and one backing off between restarts for a minute: SIGTERM ends serve within the 3 s guard, with exit
code 0, and no child or grandchild is left. A second SIGTERM/SIGINT while stopping forces the exit at once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.waiting import wait_until_sync

ROOT = Path(__file__).resolve().parents[2]
ENGINE_BIN = str(ROOT / ".venv" / "bin" / "ava-engine")
FIXTURES = ROOT / "tests" / "fixtures" / "mcp_servers"
PY = sys.executable


def _stat(pid: int) -> tuple[str, int] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[1])  # state, ppid


def _alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def descendants(root: int) -> dict[int, str]:
    """Live descendants of ``root``: pid -> command line."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(int(entry))) is not None and st[0] not in ("Z", "X"):
            parents[int(entry)] = st[1]
    out: dict[int, str] = {}
    for pid in parents:
        p = parents.get(pid)
        for _ in range(20):
            if p == root:
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        out[pid] = f.read().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    pass
                break
            if p is None:
                break
            p = parents.get(p)
    return out


def wait_for(predicate: object, limit_s: float, what: str) -> None:
    wait_until_sync(predicate, within=limit_s, what=what)  # type: ignore[arg-type]


HUNG = f"""engine:
  http: {{port: 0}}
mcp:
  servers:
    hung:        # never answers initialize; exits when its stdin closes
      command: ["{PY}", "{FIXTURES / "hang_initialize.py"}"]
      connect_timeout_ms: 60000
    stubborn:    # never answers, ignores SIGTERM and its stdin closing, has a grandchild
      command: ["{PY}", "{FIXTURES / "stubborn.py"}", "--hang-initialize"]
      connect_timeout_ms: 60000
"""


def crashing(mark: Path) -> str:
    """A server that crashes at start, then waits a minute before the next attempt; ``mark`` appears once it has
    crashed (the child lives for a moment only, so a look at the process list can miss it on a busy machine)."""
    run = f"{PY} {FIXTURES / 'fixture_server.py'} --crash-at-start; echo $? >> {mark}"
    return f"""    crashing:
      command: ["/bin/sh", "-c", "{run}"]
      restart: {{backoff_ms: 60000, backoff_max_ms: 60000, max_restarts: 5}}
"""


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[object]:
    procs: list[subprocess.Popen[str]] = []

    def start(config: str) -> subprocess.Popen[str]:
        path = tmp_path / "config.yaml"
        path.write_text(config)
        proc = subprocess.Popen(
            [ENGINE_BIN, "--config", str(path), "serve"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)


def _started(proc: subprocess.Popen[str], *needles: str) -> dict[int, str]:
    """Wait until serve has a live child for every needle (and the stubborn one its grandchild)."""
    found: dict[int, str] = {}

    def ready() -> bool:
        found.clear()
        found.update(descendants(proc.pid))
        cmds = list(found.values())
        return all(any(n in c for c in cmds) for n in needles) and any(c.startswith("sleep 300") for c in cmds)

    wait_for(ready, 60, f"serve's children {needles}")
    return dict(found)


def _stopped_within(proc: subprocess.Popen[str], limit_s: float) -> tuple[int, str]:
    try:
        _out, err = proc.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        _out, err = proc.communicate(timeout=10)
        raise AssertionError(f"serve did not exit within {limit_s} s; stderr:\n{err}") from None
    return proc.returncode, err


def test_sigterm_while_servers_connect_and_back_off_exits_within_3_s(serve: object, tmp_path: Path) -> None:
    mark = tmp_path / "crashed"
    proc = serve(HUNG + crashing(mark))  # type: ignore[operator]
    children = _started(proc, "hang_initialize.py", "stubborn.py")
    wait_for(mark.exists, 30, "the crashing server's first attempt to end")
    children = {**children, **descendants(proc.pid)}
    proc.send_signal(signal.SIGTERM)
    code, err = _stopped_within(proc, 3.0)
    assert code == 0, err
    assert "Traceback" not in err
    left = [f"{pid} {cmd}" for pid, cmd in children.items() if _alive(pid)]
    assert not left, f"left behind: {left}"


def test_second_signal_forces_the_exit_and_still_kills_the_children(serve: object) -> None:
    proc = serve(HUNG)  # type: ignore[operator]
    children = _started(proc, "hang_initialize.py", "stubborn.py")
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.15)  # the stubborn server holds the orderly stop up for about a second
    proc.send_signal(signal.SIGINT)
    code, err = _stopped_within(proc, 1.5)
    assert code == 128 + signal.SIGINT, err
    assert "second SIGINT" in err and "Traceback" not in err
    wait_for(lambda: not any(_alive(pid) for pid in children), 1.0, "children killed by the forced exit")
