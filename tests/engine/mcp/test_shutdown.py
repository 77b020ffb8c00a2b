"""Stopping the engine is bounded whatever a server does: hung in a call, ignoring SIGTERM, with a grandchild.

The no-orphan fixture (conftest) checks afterwards that neither the server nor its grandchild is left.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from engine.mcp.connection import KILL_AFTER_S, ServerGone
from tests.engine.mcp.helpers import FIXTURES, settings

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


async def test_stop_with_a_call_hung_in_a_server_that_ignores_sigterm(make_engine: Any) -> None:
    s = settings({"stub": {"transport": "stdio", "command": [sys.executable, STUBBORN], "connect_timeout_ms": 20000}})
    engine = await make_engine(s)
    sup = engine.mcp.supervisors["stub"]
    assert sup.state == "up", sup.last_error
    conn = sup.conn
    pgid = conn.pid
    assert len(_members(pgid)) == 2  # the server and its sleeping grandchild
    call = asyncio.ensure_future(conn.call("block", {"seconds": 300}, None, None))
    await asyncio.sleep(0.3)  # the server is inside the call now, its whole process blocked
    loop = asyncio.get_running_loop()
    begun = loop.time()
    async with asyncio.timeout(3):
        await engine.stop()
    took = loop.time() - begun
    assert call.done() and isinstance(call.exception(), ServerGone)  # retrieved: no "never retrieved" at its GC
    assert _gone(pgid), f"left in group {pgid}: {_members(pgid)}"
    assert took < KILL_AFTER_S + 1.5  # a guard: the stop did not wait out the SDK's own escalation
