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

import mcp.client.stdio as sdk_stdio
import pytest

from engine.mcp import connection
from engine.mcp.connection import ServerGone
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
    sent: list[tuple[str, bool]] = []  # (signal, whether the group was still there to receive it)
    real_signal_group = connection.signal_group

    def recording_signal_group(pgid: int, sig: int) -> bool:
        delivered = real_signal_group(pgid, sig)
        sent.append((signal.Signals(sig).name, delivered))
        return delivered

    sdk_escalations: list[int] = []
    real_terminate = sdk_stdio._terminate_process_tree

    async def recording_terminate(process: Any) -> None:
        sdk_escalations.append(process.pid)
        await real_terminate(process)

    monkeypatch.setattr(connection, "signal_group", recording_signal_group)
    monkeypatch.setattr(sdk_stdio, "_terminate_process_tree", recording_terminate)

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
    assert sent == [("SIGTERM", True), ("SIGKILL", True)]  # the stop's own escalation, in order, to a live group
    assert conn.process.returncode == -signal.SIGKILL  # SIGTERM is ignored: the SIGKILL is what ended it
    assert sdk_escalations == []  # the SDK's own (seconds later) was not needed
    assert _gone(pgid), f"left in group {pgid}: {_members(pgid)}"
