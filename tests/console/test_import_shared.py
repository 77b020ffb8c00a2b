"""One MCP-JSON importer: ``ava-engine import-mcp-json`` and the console's Servers screen (``i``) give the same servers.

Before, the console had its own importer: it left VS Code ``${input:…}`` references as they were, ignored
``disabled``, stopped at the first bad entry, and imported a server whose id was taken as ``id_2`` (so importing a
file twice doubled it) where the CLI reported a conflict.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from console.app import AvaConsole
from engine.config import set_secret
from engine.config.loader import parse_yaml
from tests.console.helpers import paste, record_notifications
from tests.fixtures.memory_keyring import MemoryKeyring

ENTRY_POINT = Path(sys.executable).parent / "ava-engine"
EXISTING = '    remote:\n      url: "http://127.0.0.1:9/other"\n      transport: http\n'

CLAUDE = {
    "mcpServers": {
        "My Files": {
            "command": "npx",
            "args": ["-y", "@scope/files", "/tmp"],
            "env": {"TOKEN": "${input:files-token}", "API_KEY": "sk-proj-0a1b2c3d4e5f6a7b8c9d"},
        },
        "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${input:remote-key}"}},
        "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse", "disabled": True},
        "9lives": {"command": "python3", "args": ["-m", "nine"], "cwd": "${env:HOME}"},
        "broken": {"nothing": True},
        "odd": {"type": "websocket", "url": "ws://127.0.0.1:9"},
    }
}
VSCODE = """{
  // JSONC, as VS Code writes .vscode/mcp.json
  "servers": {
    "gh": {"type": "streamable-http", "url": "http://127.0.0.1:9/mcp"},
    "py": {"type": "stdio", "command": "python3", "args": ["-m", "srv"], "env": {"KEY": "${env:PY_KEY}"},},
  },
}
"""


def _config(path: Path, source: Path) -> Path:
    """The console tests' config with MCP off (nothing starts on reload) and one server the import collides with."""
    text = source.read_text().replace(
        "mcp:\n  enabled: true\n  servers: {}\n", "mcp:\n  enabled: false\n  servers:\n" + EXISTING
    )
    assert EXISTING in text
    path.write_text(text)
    return path


def _servers(path: Path) -> dict[str, Any]:
    return json.loads(json.dumps(parse_yaml(path.read_text(), str(path))["mcp"]["servers"]))


def _cli_import(config: Path, src: Path, code: int = 0) -> dict[str, Any]:
    fixtures = str(Path(__file__).resolve().parents[1] / "fixtures")
    env = {
        **os.environ,
        "PY_KEY": "k",
        "PYTHONPATH": os.pathsep.join([fixtures, os.environ.get("PYTHONPATH", "")]),
        "PYTHON_KEYRING_BACKEND": "file_keyring.FileKeyring",  # the literal API_KEY goes to the keyring
        "AVA_TEST_KEYRING_FILE": str(config.parent / "keyring.json"),
    }
    proc = subprocess.run(
        [str(ENTRY_POINT), "--config", str(config), "--json", "import-mcp-json", str(src)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == code, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


@pytest.mark.slow
async def test_cli_and_console_import_the_same_servers(
    config_path: Path, tmp_path: Path, memory_keyring: MemoryKeyring, monkeypatch: pytest.MonkeyPatch, wait: Any
) -> None:
    set_secret("MY_FILES_FILES_TOKEN", "t")  # ${input:files-token} of "My Files", set beforehand: nothing to ask
    monkeypatch.setenv("PY_KEY", "k")
    files = []
    for name, doc in (("claude_desktop_config.json", json.dumps(CLAUDE)), ("mcp.json", VSCODE)):
        files.append(tmp_path / name)
        files[-1].write_text(doc)
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "keyring.json").write_text(json.dumps({"ava-console\x00MY_FILES_FILES_TOKEN": "t"}))
    cli_config = _config(tmp_path / "cli" / "config.yaml", config_path)
    shutil.copy(tmp_path / "script.yaml", tmp_path / "cli" / "script.yaml")
    console_config = _config(config_path, config_path)

    cli_warnings: list[str] = []
    for src in files:
        out = _cli_import(cli_config, src)
        cli_warnings += out["conflicts"] + out["problems"]
    assert "mcp.servers.remote already exists with a different config; not overwritten" in cli_warnings
    assert any("'broken'" in w for w in cli_warnings) and any("'websocket'" in w for w in cli_warnings)

    app = AvaConsole(console_config)
    async with app.run_test(size=(120, 40)) as pilot:
        notes = record_notifications(app)
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        for src in files:
            await pilot.press("i")
            await wait(pilot, lambda: app.focused is not None and app.focused.id == "import-path")
            await paste(pilot, str(src))
            await pilot.press("enter")
            await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
            await pilot.press("y")
            await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        await wait(pilot, lambda: {"gh", "py"} <= set(_servers(console_config)), within=20)

    servers = _servers(console_config)
    assert servers == _servers(cli_config)
    assert servers["remote"] == {"url": "http://127.0.0.1:9/other", "transport": "http"}  # never overwritten
    assert servers["my_files"]["env"] == {
        "TOKEN": "${keyring:MY_FILES_FILES_TOKEN}",
        "API_KEY": "${keyring:MY_FILES_API_KEY}",
    }
    assert memory_keyring.store[("ava-console", "MY_FILES_API_KEY")] == "sk-proj-0a1b2c3d4e5f6a7b8c9d"
    assert "sk-proj" not in console_config.read_text() + cli_config.read_text()
    assert servers["legacy"] == {"transport": "sse", "url": "http://127.0.0.1:9/sse", "enabled": False}
    assert servers["s_9lives"]["cwd"] == "${HOME}" and servers["py"]["env"] == {"KEY": "${PY_KEY}"}
    assert servers["gh"] == {"transport": "http", "url": "http://127.0.0.1:9/mcp"}
    shown = "\n".join(notes)
    assert all(w in shown for w in cli_warnings)  # the same messages, word for word


INPUTS = """// .vscode/mcp.json
{
  "inputs": [{"type": "promptString", "id": "api-key", "description": "Weather API key", "password": true},],
  "servers": {
    "weather": {"command": "python3", "args": ["-m", "weather", "--root", "${workspaceFolder}"],
                "env": {"WEATHER_KEY": "${input:api-key}"}},
  },
}
"""


@pytest.mark.slow
async def test_the_console_asks_for_the_inputs_in_its_form(
    config_path: Path, tmp_path: Path, memory_keyring: MemoryKeyring, wait: Any
) -> None:
    (tmp_path / "proj" / ".vscode").mkdir(parents=True)
    src = tmp_path / "proj" / ".vscode" / "mcp.json"
    src.write_text(INPUTS)
    (tmp_path / "cli").mkdir()
    cli_config = _config(tmp_path / "cli" / "config.yaml", config_path)
    shutil.copy(tmp_path / "script.yaml", tmp_path / "cli" / "script.yaml")
    before = cli_config.read_text()
    out = _cli_import(cli_config, src, code=1)  # no terminal: the same input, named, nothing written
    assert [n["secret"] for n in out["needs"]] == ["WEATHER_API_KEY"] and cli_config.read_text() == before
    console_config = _config(config_path, config_path)

    app = AvaConsole(console_config)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        await pilot.press("i")
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "import-path")
        await paste(pilot, str(src))
        await pilot.press("enter")
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "import-input-0")
        await paste(pilot, "wk-0123456789abcdef")
        await pilot.press("enter")
        await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
        assert "wk-0123456789abcdef" not in app.screen.diff + app.screen.title_text  # type: ignore[attr-defined]
        await pilot.press("y")
        await wait(pilot, lambda: "weather" in _servers(console_config), within=20)

    weather = _servers(console_config)["weather"]
    assert weather["env"] == {"WEATHER_KEY": "${keyring:WEATHER_API_KEY}"}
    assert weather["command"][-1] == str((tmp_path / "proj").resolve())
    assert memory_keyring.store[("ava-console", "WEATHER_API_KEY")] == "wk-0123456789abcdef"
