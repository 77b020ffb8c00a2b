"""Quitting the console while MCP servers are still connecting stops them at once, grandchildren included.

Before, the console only stopped an engine that had finished starting: quitting while a server hung in initialize
left the start-up running and the children to outlive the console.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from console.app import AvaConsole

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


async def test_quit_while_servers_connect_stops_them_within_3_s(tmp_path: Path) -> None:
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
            groups = [s._attempt_conn.pid for s in sups if s._attempt_conn is not None and s._attempt_conn.pid]
        assert app.engine is not None and not app.engine.started  # still starting: the case this is about
        async with asyncio.timeout(3):
            await app.action_quit()
    for pgid in groups:
        assert not _alive_in_group(pgid), f"left in process group {pgid}"
