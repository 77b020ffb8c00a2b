"""Stopping the engine is bounded whatever a server does: hung in a call, ignoring SIGTERM, with a grandchild.

The bound is the connection's own escalation (``Connection.stop_soon``): SIGTERM to the child's process group, then
SIGKILL. The test checks that escalation ran, in that order, and ended the server (killed by the SIGKILL), before the
SDK's slower one (close stdin, wait, SIGTERM, wait, SIGKILL) was ever needed. The no-orphan fixture (conftest) checks
afterwards that neither the server nor its grandchild is left.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

import pytest

from engine.mcp.connection import ServerGone
from tests.engine.mcp.escalations import record_escalations
from tests.engine.mcp.helpers import FIXTURES, settings
from tests.waiting import wait_until

STUBBORN = str(FIXTURES / "stubborn.py")


def _gone(pgid: int) -> bool:
    """No live process left in the group (zombies waiting for a reaper do not count)."""
    return all(_zombie(pid) for pid in _members(pgid))


def _members(pgid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid:
                out.append(int(entry))
    return out


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


async def test_stop_with_a_call_hung_in_a_server_that_ignores_sigterm(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    escalations = record_escalations(monkeypatch)
    s = settings({"stub": {"transport": "stdio", "command": [sys.executable, STUBBORN], "connect_timeout_ms": 20000}})
    engine = await make_engine(s)
    sup = engine.mcp.supervisors["stub"]
    assert sup.state == "up", sup.last_error
    conn = sup.conn
    pgid = conn.pid
    assert len(_members(pgid)) == 2  # the server and its sleeping grandchild
    call = asyncio.ensure_future(conn.call("block", {"seconds": 300}, None, None))
    await wait_until(lambda: "BLOCKING" in sup.stderr.lines, what="the server blocked inside the call")
    async with asyncio.timeout(30):  # only a guard against hanging for ever
        await engine.stop()
    assert call.done() and isinstance(call.exception(), ServerGone)  # retrieved: no "never retrieved" at its GC
    # the stop's own escalation, in order, to a live group
    assert escalations.to(pgid) == [("SIGTERM", True), ("SIGKILL", True)]
    assert conn.process.returncode == -signal.SIGKILL  # SIGTERM is ignored: the SIGKILL is what ended it
    assert escalations.sdk == []  # the SDK's own (seconds later) was not needed
    assert _gone(pgid), f"left in group {pgid}: {_members(pgid)}"
