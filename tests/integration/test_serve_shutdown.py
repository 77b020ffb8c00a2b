"""``ava-engine serve`` (the installed entry point) stops cleanly whatever its MCP servers are doing.

Servers hung in initialize (one that exits when its stdin closes, one that ignores that and SIGTERM and has a
grandchild) and one backing off between restarts for a minute: SIGTERM ends serve with exit code 0, and no child or
grandchild is left. Serve holds its own stop to ``STOP_DEADLINE_S`` (past it, it kills the children and exits 1), so
exit code 0 is the sign that the stop fit in its bound; the tests time nothing themselves. A second SIGTERM/SIGINT
while stopping forces the exit at once (exit code 128 + the signal).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
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


#: Only a guard against a serve that never exits (its own stop deadline is under 3 s; the connect timeouts and the
#: restart back-off it must not wait out are a minute).
EXIT_GUARD_S = 30.0


def _exit_of(proc: subprocess.Popen[str], seen: str = "") -> tuple[int, str]:
    """Serve's exit code and its stderr (``seen``: what the test already read of it)."""
    try:
        _out, err = proc.communicate(timeout=EXIT_GUARD_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        _out, err = proc.communicate(timeout=10)
        raise AssertionError(f"serve did not exit within {EXIT_GUARD_S} s; stderr:\n{seen}{err}") from None
    return proc.returncode, seen + err


def _read_until(proc: subprocess.Popen[str], needle: str) -> str:
    """Read serve's stderr up to the line holding ``needle``; returns what was read (pytest's timeout guards it)."""
    assert proc.stderr is not None
    seen = ""
    while needle not in seen:
        line = proc.stderr.readline()
        assert line, f"serve's stderr ended before {needle!r}:\n{seen}"
        seen += line
    return seen


def test_sigterm_while_servers_connect_and_back_off_stops_cleanly_and_leaves_no_child(
    serve: object, tmp_path: Path
) -> None:
    mark = tmp_path / "crashed"
    proc = serve(HUNG + crashing(mark))  # type: ignore[operator]
    children = _started(proc, "hang_initialize.py", "stubborn.py")
    wait_for(mark.exists, 30, "the crashing server's first attempt to end")
    children = {**children, **descendants(proc.pid)}
    proc.send_signal(signal.SIGTERM)
    code, err = _exit_of(proc)
    assert code == 0, err  # not 1: the stop fit in serve's own deadline, the children were not killed past it
    assert "did not stop within" not in err
    assert "Traceback" not in err
    left = [f"{pid} {cmd}" for pid, cmd in children.items() if _alive(pid)]
    assert not left, f"left behind: {left}"


def test_second_signal_forces_the_exit_and_still_kills_the_children(serve: object) -> None:
    proc = serve(HUNG)  # type: ignore[operator]
    children = _started(proc, "hang_initialize.py", "stubborn.py")
    proc.send_signal(signal.SIGTERM)
    seen = _read_until(proc, "SIGTERM: stopping")  # the orderly stop has begun (the stubborn server holds it up)
    proc.send_signal(signal.SIGINT)
    code, err = _exit_of(proc, seen)
    assert code == 128 + signal.SIGINT, err  # the forced exit, not the orderly stop's 0
    assert "second SIGINT" in err and "Traceback" not in err
    wait_for(lambda: not any(_alive(pid) for pid in children), 10, "children killed by the forced exit")
