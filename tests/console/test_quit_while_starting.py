"""Quitting the console while MCP servers are still connecting stops them at once, grandchildren included.

Before, the console only stopped an engine that had finished starting: quitting while a server hung in initialize
left the start-up running and the children to outlive the console. "At once" is the stop's own escalation
(``engine.mcp.connection``: SIGTERM, then SIGKILL to the child's process group), not the connect timeout nor the
SDK's slower escalation: the test checks which path ended the server that ignores SIGTERM.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from console.app import AvaConsole
from tests.engine.mcp.escalations import record_escalations

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_servers"


def _alive_in_group(pgid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            out.append(int(entry))
    return out


async def test_quit_while_servers_connect_kills_them_and_their_grandchildren(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    escalations = record_escalations(monkeypatch)
    config = tmp_path / "config.yaml"
    config.write_text(
        "mcp:\n  servers:\n"
        f"    hung:\n      command: ['{sys.executable}', '{FIXTURES / 'hang_initialize.py'}']\n"
        "      connect_timeout_ms: 60000\n"
        f"    stubborn:\n      command: ['{sys.executable}', '{FIXTURES / 'stubborn.py'}', '--hang-initialize']\n"
        "      connect_timeout_ms: 60000\n"
    )
    app = AvaConsole(config)
    async with app.run_test(size=(120, 40)) as pilot:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        groups: list[int] = []
        while len(groups) < 2 or len(_alive_in_group(groups[-1])) < 2:  # both spawned, the grandchild too
            assert loop.time() < deadline, "the servers were not started"
            await pilot.pause(0.05)
            engine = app.engine
            sups = engine.mcp.supervisors.values() if engine is not None else []
            conns = {s.server_id: s._attempt_conn for s in sups if s._attempt_conn is not None}
            groups = [c.pid for c in conns.values() if c.pid]
        assert app.engine is not None and not app.engine.started  # still starting: the case this is about
        async with asyncio.timeout(30):  # only a guard against hanging for ever (the connect timeout is 60 s)
            await app.action_quit()
    stubborn = conns["stubborn"]
    # the stop's own escalation, in order, to a live group
    assert escalations.to(stubborn.pid) == [("SIGTERM", True), ("SIGKILL", True)]
    assert stubborn.process.returncode == -signal.SIGKILL  # it ignores SIGTERM: the SIGKILL is what ended it
    assert escalations.sdk == []  # the SDK's own (seconds later) was not needed, for either server
    for pgid in groups:
        assert not _alive_in_group(pgid), f"left in process group {pgid}"
