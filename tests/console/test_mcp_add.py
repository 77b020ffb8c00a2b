"""Servers screen → "Add from registry" (A): a registry server.json (or package, or URL) fills the server form,
where the operator fills the secret it needs, tests and saves; the secret goes to the keyring, never to the YAML
or the diff. A malformed server.json says what is wrong and opens nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from console.app import AvaConsole
from tests.console.helpers import paste, record_notifications
from tests.engine.mcp.helpers import NetServer
from tests.fixtures.memory_keyring import MemoryKeyring

CANARY = "canary-5e4d3c2b1a09f8e7d6c5"


def _read(path: Path) -> str:
    return path.read_text()


def _servers(path: Path) -> dict[str, Any]:
    return yaml.safe_load(_read(path))["mcp"]["servers"] or {}


async def _open_dialog(pilot: Any, app: AvaConsole, wait: Any) -> None:
    await wait(pilot, lambda: app.engine_running, within=30)
    await pilot.press("f3")
    await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
    await pilot.press("A")
    await wait(pilot, lambda: type(app.screen).__name__ == "AddSourceScreen")


@pytest.mark.slow
async def test_server_json_fills_the_form_tests_and_saves(
    config_path: Path, memory_keyring: MemoryKeyring, wait: Any
) -> None:
    server = NetServer("http", "--require-header", f"X-Api-Key={CANARY}").start()
    try:
        src = config_path.parent / "server.json"
        src.write_text(
            json.dumps(
                {
                    "name": "com.example/weather",
                    "version": "1.0.0",
                    "remotes": [
                        {
                            "type": "streamable-http",
                            "url": server.url,
                            "headers": [{"name": "X-Api-Key", "isSecret": True, "isRequired": True}],
                        }
                    ],
                }
            )
        )
        app = AvaConsole(config_path)
        async with app.run_test(size=(120, 40)) as pilot:
            await _open_dialog(pilot, app, wait)
            await paste(pilot, str(src))
            await pilot.press("enter")
            await wait(pilot, lambda: type(app.screen).__name__ == "ServerForm" and app.screen.loaded)  # type: ignore[attr-defined]
            form: Any = app.screen
            assert form.query_one("#f-id").value == "weather" and form.query_one("#f-url").value == server.url
            assert str(form.query_one("#f-transport").value) == "http"
            result = str(form.query_one("#form-result").render())
            assert "fill in: X-Api-Key (secret)" in result and str(src) in result
            row = form.query_one("#headers-rows").children[0]
            assert (row.key, row.value, row.keyring) == ("X-Api-Key", "", True)

            await pilot.press("ctrl+t")  # without the key the server refuses
            await wait(pilot, lambda: "test failed" in str(form.query_one("#form-result").render()), within=30)
            row.query_one(".kv-value").value = CANARY
            await pilot.press("ctrl+t")
            await wait(pilot, lambda: "test passed" in str(form.query_one("#form-result").render()), within=30)

            await pilot.press("ctrl+s")
            await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
            diff = app.screen.diff  # type: ignore[attr-defined]
            assert CANARY not in diff and "X-Api-Key: ${keyring:WEATHER_X-API-KEY}" in diff
            await pilot.press("y")
            await wait(pilot, lambda: "weather" in _servers(config_path))
        saved = _servers(config_path)["weather"]
        assert saved == {
            "transport": "http",
            "url": server.url,
            "headers": {"X-Api-Key": "${keyring:WEATHER_X-API-KEY}"},
        }
        assert memory_keyring.store[("ava-console", "WEATHER_X-API-KEY")] == CANARY
        assert CANARY not in _read(config_path)
    finally:
        server.kill()


@pytest.mark.slow
async def test_a_malformed_server_json_says_where(config_path: Path, wait: Any) -> None:
    src = config_path.parent / "server.json"
    src.write_text('{"name": "a/b", "packages": [{"registryType": "npm", "identifier": 3}]}')
    before = _read(config_path)
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        notes = record_notifications(app)
        await _open_dialog(pilot, app, wait)
        await paste(pilot, str(src))
        await pilot.press("enter")
        await wait(pilot, lambda: any("packages[0].identifier" in n for n in notes), within=15)
        assert type(app.screen).__name__ == "ServersScreen" and str(src) in " ".join(notes)
        await pilot.press("A")
        await wait(pilot, lambda: type(app.screen).__name__ == "AddSourceScreen")
        await pilot.press("escape")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
    assert _read(config_path) == before
