"""Pilot tests of the MCP server screens by keyboard alone: add → test → save → reload with a form error
corrected on the way, a secret stored in the keyring and referenced from the config, restart of a failed server,
enable/disable saved to the config (X) and for this run (x), the plain message when MCP is switched off, import
from Claude Desktop JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from console.app import AvaConsole
from console.screens.servers import MCP_OFF
from tests.console.helpers import paste, record_notifications, type_text

FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "mcp_servers" / "fixture_server.py"


def _read(path: Path) -> str:
    return path.read_text()


def _write(path: Path, text: str) -> None:
    path.write_text(text)


async def tab_to(pilot, app: AvaConsole, widget_id: str, limit: int = 60) -> None:
    for _ in range(limit):
        if app.focused is not None and app.focused.id == widget_id:
            return
        await pilot.press("tab")
    raise AssertionError(f"Tab never reached #{widget_id}")


def _servers(config_path: Path) -> dict:
    return yaml.safe_load(_read(config_path))["mcp"]["servers"] or {}


def _with_server(config_path: Path, server_id: str = "fx") -> None:
    entry = f"    {server_id}:\n      command: [{sys.executable}, {FIXTURE}]\n      connect_timeout_ms: 10000\n"
    _write(config_path, _read(config_path).replace("  servers: {}\n", "  servers:\n" + entry))


def _status(app: AvaConsole, server_id: str) -> dict[str, Any]:
    assert app.engine is not None
    return next(s for s in app.engine.server_status()["servers"] if s["id"] == server_id)


async def test_add_test_save_reload_with_secret(config_path: Path, memory_keyring, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        await pilot.press("a")
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "f-id")
        await type_text(pilot, "Bad id")
        msg = app.screen.query_one("#msg-id")
        await wait(pilot, lambda: "lower-case" in str(msg.render()))
        await pilot.press(*["backspace"] * 6)
        await type_text(pilot, "fixture")
        await wait(pilot, lambda: str(msg.render()) == "")
        await tab_to(pilot, app, "f-command")
        await type_text(pilot, "no-such-program-xyz")
        await wait(pilot, lambda: "not found on PATH" in str(app.screen.query_one("#msg-command").render()))
        await pilot.press(*["backspace"] * len("no-such-program-xyz"))
        await paste(pilot, f"{sys.executable} {FIXTURE}")  # typing was checked with the name above
        await wait(pilot, lambda: str(app.screen.query_one("#msg-command").render()) == "")
        await tab_to(pilot, app, "add-env")
        await pilot.press("enter")
        await wait(pilot, lambda: app.focused is not None and "kv-key" in app.focused.classes)
        await type_text(pilot, "API_TOKEN")
        await pilot.press("tab")
        await type_text(pilot, "tok-123456")  # "store in keyring" is ticked by default
        await pilot.press("ctrl+t")
        result = app.screen.query_one("#form-result")
        await wait(pilot, lambda: "test passed" in str(result.render()), within=20)
        assert "mcp_fixture_echo" in str(result.render())
        assert "fixture" not in _servers(config_path)
        await pilot.press("ctrl+s")
        await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
        await pilot.press("y")
        await wait(pilot, lambda: "fixture" in _servers(config_path))
        saved = _servers(config_path)["fixture"]
        assert saved["env"] == {"API_TOKEN": "${keyring:FIXTURE_API_TOKEN}"}
        assert "tok-123456" not in _read(config_path)
        assert memory_keyring.store[("ava-console", "FIXTURE_API_TOKEN")] == "tok-123456"
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        engine = app.engine
        assert engine is not None
        await wait(
            pilot,
            lambda: any(s.get("id") == "fixture" and s.get("state") == "up" for s in engine.server_status()["servers"]),
            within=20,
        )
        table = app.screen.query_one("#servers")
        await wait(pilot, lambda: "fixture" in [k.value for k in table.rows])  # type: ignore[attr-defined]
        # The secrets screen shows the name and where the config references it, never the value.
        await pilot.press("f9")
        await wait(pilot, lambda: type(app.screen).__name__ == "SecretsScreen")
        secrets = app.screen.query_one("#secrets")
        await wait(pilot, lambda: "FIXTURE_API_TOKEN" in [k.value for k in secrets.rows])  # type: ignore[attr-defined]
        row = secrets.get_row("FIXTURE_API_TOKEN")  # type: ignore[attr-defined]
        assert "mcp.servers.fixture.env.API_TOKEN" in str(row[2])
        assert all("tok-123456" not in str(c) for c in row)


async def test_restart_failed_server(config_path: Path, crash_yaml, wait) -> None:
    text = _read(config_path).replace("  servers: {}\n", "  servers:\n" + crash_yaml("crashy"))
    _write(config_path, text)
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=20)
        await pilot.press("f3")
        await wait(
            pilot,
            lambda: app.state.servers.get("crashy") is not None and app.state.servers["crashy"].state == "failed",
            within=20,
        )
        table = app.screen.query_one("#servers")
        await wait(pilot, lambda: "failed" in str(table.get_row("crashy")[1]))  # type: ignore[attr-defined]

        def starts() -> int:
            return sum(1 for ln in app.state.log if ln.type == "server.state" and "crashy starting" in ln.text)

        before = starts()
        await pilot.press("r")
        await wait(pilot, lambda: starts() > before, within=20)
        await wait(pilot, lambda: app.state.servers["crashy"].state == "failed", within=20)
        assert "failed" in str(table.get_row("crashy")[1])  # type: ignore[attr-defined]
        stderr = app.screen.query_one("#stderr")
        await wait(pilot, lambda: len(stderr.lines) > 0)  # type: ignore[attr-defined]


async def test_toggle_and_save_enabled(config_path: Path, wait) -> None:
    _with_server(config_path)
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        notes = record_notifications(app)
        await wait(pilot, lambda: app.engine_running, within=20)
        await pilot.press("f3")
        await wait(pilot, lambda: _status(app, "fx")["state"] == "up", within=20)
        table = app.screen.query_one("#servers")
        await wait(pilot, lambda: "up" in str(table.get_row("fx")[1]))  # type: ignore[attr-defined]
        assert "enabled" not in _servers(config_path)["fx"]

        # X: switch off and save; nothing is written until the diff is confirmed.
        await pilot.press("X")
        await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
        assert "+      enabled: false" in app.screen.diff  # type: ignore[attr-defined]
        await pilot.press("y")
        await wait(pilot, lambda: _servers(config_path)["fx"].get("enabled") is False)
        await wait(pilot, lambda: app.engine.settings.mcp.servers["fx"].enabled is False)  # type: ignore[union-attr]
        await wait(pilot, lambda: _status(app, "fx")["state"] == "stopped", within=20)
        assert _status(app, "fx")["pid"] is None and _status(app, "fx")["enabled"] is False
        await wait(pilot, lambda: "disabled" in str(table.get_row("fx")[1]))  # type: ignore[attr-defined]
        assert "# The console tests' config" in _read(config_path)

        # X again: switch on and save; the hot reload starts it.
        await pilot.press("X")
        await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
        await pilot.press("y")
        await wait(pilot, lambda: _servers(config_path)["fx"].get("enabled") is True)
        await wait(pilot, lambda: _status(app, "fx")["state"] == "up", within=20)

        # x: off for this run only, the file untouched; then X finds the file already says enabled: true and
        # switches it back on for the run without a save.
        saved = _read(config_path)
        await pilot.press("x")
        await wait(pilot, lambda: _status(app, "fx")["state"] == "stopped", within=20)
        assert _status(app, "fx")["enabled"] is False and _read(config_path) == saved
        await pilot.press("X")
        await wait(pilot, lambda: _status(app, "fx")["state"] == "up", within=20)
        assert _read(config_path) == saved
        assert any("already has enabled: true for fx" in n for n in notes)


async def test_mcp_switched_off(config_path: Path, wait) -> None:
    _with_server(config_path)
    _write(config_path, _read(config_path).replace("  enabled: true\n", "  enabled: false\n", 1))
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        notes = record_notifications(app)
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("f3")
        note = app.screen.query_one("#mcp-note")
        await wait(pilot, lambda: "mcp.enabled: false" in str(note.render()))
        table = app.screen.query_one("#servers")
        await wait(pilot, lambda: "configured" in str(table.get_row("fx")[1]))  # type: ignore[attr-defined]
        assert app.engine.server_status() == {"enabled": False, "pending": [], "servers": []}  # type: ignore[union-attr]
        await pilot.press("r")
        await wait(pilot, lambda: MCP_OFF in notes)


@pytest.mark.slow
async def test_import_claude_desktop_json(config_path: Path, tmp_path: Path, wait) -> None:
    doc = {"mcpServers": {"Time Server": {"command": sys.executable, "args": ["-m", "mcp_server_time"]}}}
    src = tmp_path / "claude_desktop_config.json"
    src.write_text(json.dumps(doc))
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        await pilot.press("i")
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "import-path")
        await pilot.press(*str(src), "enter")
        await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
        await pilot.press("escape")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        assert "time_server" not in _servers(config_path)
        await pilot.press("i")
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "import-path")
        await paste(pilot, str(src))  # typed the first time
        await pilot.press("enter")
        await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
        await pilot.press("y")
        await wait(pilot, lambda: "time_server" in _servers(config_path))
        assert _servers(config_path)["time_server"]["command"] == [sys.executable, "-m", "mcp_server_time"]
        assert "# The console tests' config" in _read(config_path)


async def test_edit_form_shows_a_bundled_server(config_path: Path, wait) -> None:
    entry = "    rules:\n      transport: bundled\n      target: engine.servers.rules.server:create\n"
    _write(config_path, _read(config_path).replace("  servers: {}\n", "  servers:\n" + entry))
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=60)  # the bundle child imports the SDK first
        await wait(pilot, lambda: _status(app, "rules")["state"] == "up", within=30)
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        await pilot.press("e")
        await wait(pilot, lambda: app.focused is not None and app.focused.id is not None and "f-" in app.focused.id)
        assert app.screen.query_one("#f-transport").value == "bundled"  # type: ignore[attr-defined]
        target = app.screen.query_one("#f-target")
        assert target.value == "engine.servers.rules.server:create"  # type: ignore[attr-defined]
        assert app.screen.query_one("#row-command").display is False
        await pilot.press("escape")
