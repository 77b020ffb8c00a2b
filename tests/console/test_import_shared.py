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
VSCODE = {
    "servers": {
        "gh": {"type": "streamable-http", "url": "http://127.0.0.1:9/mcp"},
        "py": {"type": "stdio", "command": "python3", "args": ["-m", "srv"], "env": {"KEY": "${env:PY_KEY}"}},
    }
}


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


def _cli_import(config: Path, src: Path) -> dict[str, Any]:
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
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


@pytest.mark.slow
async def test_cli_and_console_import_the_same_servers(
    config_path: Path, tmp_path: Path, memory_keyring: MemoryKeyring, monkeypatch: pytest.MonkeyPatch, wait: Any
) -> None:
    set_secret("files-token", "t")  # the console validates the saved file against the keyring
    set_secret("remote-key", "k")
    monkeypatch.setenv("PY_KEY", "k")
    files = []
    for name, doc in (("claude_desktop_config.json", CLAUDE), ("mcp.json", VSCODE)):
        files.append(tmp_path / name)
        files[-1].write_text(json.dumps(doc))
    (tmp_path / "cli").mkdir()
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
    assert servers["my_files"]["env"] == {"TOKEN": "${keyring:files-token}", "API_KEY": "${keyring:MY_FILES_API_KEY}"}
    assert memory_keyring.store[("ava-console", "MY_FILES_API_KEY")] == "sk-proj-0a1b2c3d4e5f6a7b8c9d"
    assert "sk-proj" not in console_config.read_text() + cli_config.read_text()
    assert servers["legacy"] == {"transport": "sse", "url": "http://127.0.0.1:9/sse", "enabled": False}
    assert servers["s_9lives"]["cwd"] == "${HOME}" and servers["py"]["env"] == {"KEY": "${PY_KEY}"}
    assert servers["gh"] == {"transport": "http", "url": "http://127.0.0.1:9/mcp"}
    shown = "\n".join(notes)
    assert all(w in shown for w in cli_warnings)  # the same messages, word for word
