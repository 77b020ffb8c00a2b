"""Issue 34 item 7: a console attached to an engine (``--attach http://… --token T``) shows that engine's MCP server
health as a local console does: every server with its state, transport and last error on the Servers screen and
in the header's count, including servers that settled before the console attached (no ``server.state`` event
comes for them), and a server that fails later. Against a real ``ava-engine serve`` child (the installed entry
point) with one server that runs and one that crashes at start."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import aiohttp
import pytest
from textual.widgets import DataTable

from console.app import AvaConsole
from tests.console.conftest import FIXTURE_SERVER, wait_for
from tests.integration.test_attach_console import SCRIPT, _serve
from tests.waiting import wait_until

TOKEN = "tok-servers-0123456789"


def _config(tmp: Path) -> Path:
    cfg = {
        "engine": {"id": "solo", "http": {"port": 0, "auth_token": TOKEN}},
        "providers": {"desk": {"type": "scripted", "script": str(SCRIPT)}},
        "mcp": {
            "enabled": True,
            "servers": {
                "dice": {"transport": "inprocess", "target": "engine.servers.dice.server:create"},
                "crashy": {
                    "command": [sys.executable, str(FIXTURE_SERVER), "--crash-at-start"],
                    "connect_timeout_ms": 5000,
                    "restart": {"max_restarts": 0, "backoff_ms": 50},
                },
            },
        },
        "contexts": {"desk": {"provider": "desk", "prompt": "A help desk.", "tools": []}},
    }
    path = tmp / "config.yaml"
    path.write_text(json.dumps(cfg))  # JSON is YAML
    return path


async def _settled(url: str) -> dict[str, str]:
    """The engine's own answer (``/mcp/status``) once both servers settled: id → state."""
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        states: dict[str, str] = {}

        async def settled() -> bool:
            async with http.get(f"{url}/mcp/status") as r:
                states.update({s["id"]: s["state"] for s in (await r.json())["servers"]})
            return states.get("dice") == "up" and states.get("crashy") == "failed"

        await wait_until(settled, within=30, what="dice up and crashy failed")
        return states


def _rows(app: AvaConsole) -> dict[str, list[str]]:
    table = app.screen.query_one("#servers", DataTable)
    return {str(table.get_row_at(i)[0]): [str(c) for c in table.get_row_at(i)] for i in range(table.row_count)}


@pytest.mark.timeout(120)
async def test_attached_console_shows_the_engines_server_health(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    async with _serve(cfg) as (_proc, first):
        url = first["http"]
        await _settled(url)  # before the console attaches: no server.state event will tell it
        app = AvaConsole(Path("."), attach=url, token=TOKEN, tick=False)
        async with app.run_test(size=(160, 40)) as pilot:
            await wait_for(pilot, lambda: "1 engine" in app.sub_title, within=30)
            await pilot.press("f3")
            await wait_for(pilot, lambda: {"solo/dice", "solo/crashy"} <= set(_rows(app)), within=30)
            rows = _rows(app)
            assert "up" in rows["solo/dice"][1] and "inprocess" in rows["solo/dice"][2]
            assert "failed" in rows["solo/crashy"][1] and "stdio" in rows["solo/crashy"][2]
            assert rows["solo/crashy"][-1] not in ("", "-")  # its last error
            assert "engine starting" not in str(app.screen.query_one("#mcp-note").render())
            await wait_for(pilot, lambda: "servers 1 up, 1 failed" in app.sub_title)
