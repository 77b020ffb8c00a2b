"""The server form and the import dialog by keyboard (issue 16 A2, A3, A11).

Before: the form refused every shipped server ("'{python}' is not found on PATH"); env values were saved to the
YAML in plain text unless a box was ticked, and the diff showed them; the console's import copied credentials into
the YAML; the form's result was printed below ~70 rows of inputs, off-screen at 80×24, and a bad field stayed
wherever it was.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from console.app import AvaConsole
from console.server_model import check_field, from_config, model_errors, to_config
from engine.config.loader import parse_yaml
from tests.console.helpers import paste
from tests.fixtures.memory_keyring import MemoryKeyring

ROOT = Path(__file__).resolve().parents[2]
DICE = '    dice:\n      command: ["{python}", "-m", "engine.servers.dice"]\n'
SECRET = "sk-live-9f8e7d6c5b4a39281706"


def _raw(path: Path) -> str:
    return path.read_text()


def _servers(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())["mcp"]["servers"] or {}


def _shipped() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for path in [ROOT / "config" / "default.yaml", *sorted((ROOT / "config" / "examples").glob("*.yaml"))]:
        data = parse_yaml(path.read_text(), str(path))
        for sid, raw in ((data.get("mcp") or {}).get("servers") or {}).items():
            out.append((path.name, str(sid), json.loads(json.dumps(raw))))
    # default.yaml's comment shows how to run a built-in server as its own process
    out.append(("default.yaml comment", "dice_stdio", {"command": ["{python}", "-m", "engine.servers.dice"]}))
    return out


@pytest.mark.parametrize(("where", "sid", "raw"), _shipped(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_shipped_server_passes_the_form(where: str, sid: str, raw: dict[str, Any]) -> None:
    f = from_config(sid, raw)
    fields = ["id", "mode", "connect_timeout_ms", "tools"]
    fields += {"stdio": ["command"], "http": ["url"], "sse": ["url"]}.get(f.transport, ["target"])
    for name in fields:
        value = f.tools if name == "tools" else str(getattr(f, name))
        assert check_field(name, value, base_dir=ROOT / "config") == "", (where, sid, name, value)
    assert model_errors(to_config(f)) == {}, (where, sid)
    assert to_config(f).get("command") == raw.get("command"), "the command is saved as written ({python} kept)"


def _config(path: Path, servers: str = "") -> Path:
    path.write_text(
        path.read_text().replace("  servers: {}\n", "  servers:\n" + servers if servers else "  servers: {}\n")
    )
    return path


async def _open_form(pilot: Any, app: AvaConsole, wait: Any, key: str) -> None:
    await wait(pilot, lambda: app.engine_running, within=30)
    await pilot.press("f3")
    await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
    await pilot.press(key)
    await wait(pilot, lambda: type(app.screen).__name__ == "ServerForm" and app.screen.loaded)  # type: ignore[attr-defined]


def _text(app: AvaConsole, selector: str) -> str:
    return str(app.screen.query_one(selector).render())


def _on_screen(app: AvaConsole, selector: str) -> bool:
    region = app.screen.query_one(selector).region
    return region.height > 0 and region.bottom <= app.screen.size.height - 1 and region.y >= 0


@pytest.mark.slow
async def test_a_python_placeholder_server_tests_and_saves(config_path: Path, wait: Any) -> None:
    _config(config_path, DICE)
    app = AvaConsole(config_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_form(pilot, app, wait, "e")
        assert app.screen.query_one("#f-command").value == "{python} -m engine.servers.dice"  # type: ignore[attr-defined]
        await pilot.press("ctrl+t")
        await wait(pilot, lambda: "test passed" in _text(app, "#form-result"), within=30)
        assert "mcp_dice_roll" in _text(app, "#form-result")
        assert _on_screen(app, "#form-result"), "the result is visible without scrolling at 80x24"
        app.screen.query_one("#f-timeout_ms").value = "4000"  # type: ignore[attr-defined]
        await pilot.press("ctrl+s")
        await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
        await pilot.press("y")
        await wait(pilot, lambda: "defaults" in _servers(config_path)["dice"], within=20)
        assert _servers(config_path)["dice"]["command"] == ["{python}", "-m", "engine.servers.dice"]


@pytest.mark.slow
async def test_env_values_go_to_the_keyring_and_no_diff_shows_one(
    config_path: Path, memory_keyring: MemoryKeyring, wait: Any
) -> None:
    _config(config_path, DICE)
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open_form(pilot, app, wait, "e")
        app.screen.query_one("#add-env").press()  # type: ignore[attr-defined]
        await wait(pilot, lambda: app.focused is not None and "kv-key" in app.focused.classes)
        await pilot.press(*"WEATHER_KEY", "tab", *SECRET)  # the box is ticked by default: keyring
        await pilot.press("ctrl+s")
        await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
        assert SECRET not in app.screen.diff  # type: ignore[attr-defined]
        assert "${keyring:DICE_WEATHER_KEY}" in app.screen.diff  # type: ignore[attr-defined]
        assert ("ava-console", "DICE_WEATHER_KEY") not in memory_keyring.store, "stored only after the yes"
        await pilot.press("y")
        await wait(pilot, lambda: "env" in _servers(config_path)["dice"], within=20)
        assert _servers(config_path)["dice"]["env"] == {"WEATHER_KEY": "${keyring:DICE_WEATHER_KEY}"}
        assert memory_keyring.store[("ava-console", "DICE_WEATHER_KEY")] == SECRET
        assert SECRET not in _raw(config_path)


@pytest.mark.slow
async def test_a_plain_text_credential_needs_an_explicit_yes(
    config_path: Path, memory_keyring: MemoryKeyring, wait: Any
) -> None:
    _config(config_path, DICE)
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open_form(pilot, app, wait, "e")
        app.screen.query_one("#add-env").press()  # type: ignore[attr-defined]
        await wait(pilot, lambda: app.focused is not None and "kv-key" in app.focused.classes)
        await pilot.press(*"API_TOKEN", "tab", *SECRET, "tab", "space")  # untick "store in keyring"
        await pilot.press("ctrl+s")
        await wait(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        await pilot.press("n")
        await wait(pilot, lambda: "not saved" in _text(app, "#form-result"))
        assert "API_TOKEN" in _text(app, "#form-result") and "env" not in _servers(config_path)["dice"]
        await pilot.press("ctrl+s")
        await wait(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        await pilot.press("y")
        await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
        assert SECRET not in app.screen.diff and "••••••" in app.screen.diff  # type: ignore[attr-defined]
        await pilot.press("y")
        await wait(pilot, lambda: "env" in _servers(config_path)["dice"], within=20)
        assert _servers(config_path)["dice"]["env"] == {"API_TOKEN": SECRET}  # the operator's explicit choice
        assert memory_keyring.store == {}


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_first_bad_field_is_scrolled_to_and_focused(
    config_path: Path, wait: Any, size: tuple[int, int]
) -> None:
    _config(config_path, DICE)
    app = AvaConsole(config_path)
    async with app.run_test(size=size) as pilot:
        await _open_form(pilot, app, wait, "e")
        app.screen.query_one("#f-stable_after_ms").value = "soon"  # type: ignore[attr-defined]
        app.screen.query_one("#f-id").focus()
        await pilot.pause()
        await pilot.press("ctrl+s")
        await wait(pilot, lambda: "need attention" in _text(app, "#form-result"))
        assert _on_screen(app, "#form-result")
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "f-stable_after_ms")
        await wait(pilot, lambda: _on_screen(app, "#f-stable_after_ms"))
        assert "whole number" in _text(app, "#msg-stable_after_ms")
        assert _on_screen(app, "#msg-stable_after_ms")


async def test_two_columns_when_wide(config_path: Path, wait: Any) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(200, 60)) as pilot:
        await _open_form(pilot, app, wait, "a")
        id_row, transport_row = app.screen.query_one("#row-id"), app.screen.query_one("#row-transport")
        assert id_row.region.y == transport_row.region.y and transport_row.region.x > id_row.region.right
        assert app.screen.query_one("#row-max_restarts").region.bottom < 40, "the fields fit in the upper part"


@pytest.mark.slow
async def test_console_import_moves_credentials_to_the_keyring(
    config_path: Path, tmp_path: Path, memory_keyring: MemoryKeyring, wait: Any
) -> None:
    src = tmp_path / "claude_desktop_config.json"
    doc = {"mcpServers": {"weather": {"command": "npx", "args": ["-y", "w"], "env": {"API_KEY": SECRET, "LVL": "1"}}}}
    src.write_text(json.dumps(doc))
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        await pilot.press("i")
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "import-path")
        await paste(pilot, str(src))
        await pilot.press("enter")
        await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
        assert SECRET not in app.screen.diff and "${keyring:WEATHER_API_KEY}" in app.screen.diff  # type: ignore[attr-defined]
        await pilot.press("y")
        await wait(pilot, lambda: "weather" in _servers(config_path), within=20)
    assert _servers(config_path)["weather"]["env"] == {"API_KEY": "${keyring:WEATHER_API_KEY}", "LVL": "1"}
    assert memory_keyring.store[("ava-console", "WEATHER_API_KEY")] == SECRET
    assert SECRET not in _raw(config_path)


@pytest.mark.slow
async def test_console_import_keeps_plain_text_only_when_ticked(
    config_path: Path, tmp_path: Path, memory_keyring: MemoryKeyring, wait: Any
) -> None:
    src = tmp_path / "claude_desktop_config.json"
    src.write_text(json.dumps({"mcpServers": {"weather": {"command": "npx", "env": {"API_KEY": SECRET}}}}))
    app = AvaConsole(config_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        await pilot.press("i")
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "import-path")
        app.screen.query_one("#import-plain").value = True  # type: ignore[attr-defined]
        await paste(pilot, str(src))
        await pilot.press("enter")
        await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
        assert SECRET not in app.screen.diff and "••••••" in app.screen.diff  # type: ignore[attr-defined]
        await pilot.press("y")
        await wait(pilot, lambda: "weather" in _servers(config_path), within=20)
    assert _servers(config_path)["weather"]["env"] == {"API_KEY": SECRET}  # the explicit choice
    assert memory_keyring.store == {}


def test_the_form_keeps_a_remote_servers_sign_in_settings() -> None:
    """The form has no fields for ``auth`` yet: editing a remote server must not drop its OAuth settings."""
    raw = {
        "transport": "http",
        "url": "https://mcp.example.com/mcp",
        "auth": {"oauth": {"client_name": "ava", "scopes": ["read"], "redirect_port": 8765}},
    }
    f = from_config("remote", raw)
    out = to_config(f)
    assert out["auth"] == raw["auth"] and model_errors(out) == {}
    f.transport = "sse"  # switched to a transport without sign-in: the block goes (the config would refuse it)
    assert "auth" not in to_config(f)
