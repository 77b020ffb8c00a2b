"""``ava-engine mcp list|test|call``, ``import-mcp-json`` and ``serve`` (reload on SIGHUP)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.config.mcp_import import parse_mcp_json
from engine.config.models import Settings
from tests.engine.mcp.helpers import FIXTURE_SERVER, ROOT
from tests.waiting import wait_until_sync

CONFIG = f"""# my config
mcp:
  servers:
    fx:   # the fixture
      command: ["{sys.executable}", "{FIXTURE_SERVER}"]
      tools:
        - name: add
          speech_template: "{{a}} and {{b}} make {{sum}}."
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    p = tmp_path / "config.yaml"
    p.write_text(CONFIG)
    return p


def run(capsys: Any, *argv: str) -> tuple[int, Any]:
    code = main(list(argv))
    out = capsys.readouterr().out.strip()
    return code, json.loads(out) if out.startswith(("{", "[")) else out


def test_mcp_list_test_and_call(config: Path, capsys: Any) -> None:
    code, out = run(capsys, "--config", str(config), "--json", "mcp", "list")
    assert code == 0
    fx = out["servers"][0]
    assert {"id", "state", "transport", "restarts", "last_error", "tools"} <= set(fx)
    assert fx["state"] == "up" and {"name": "add", "exposed_name": "mcp_fx_add"}.items() <= fx["tools"][1].items()

    code, out = run(capsys, "--config", str(config), "--json", "mcp", "test", "fx")
    assert code == 0 and out["ok"] is True
    code, out = run(capsys, "--config", str(config), "--json", "mcp", "test", "nope")
    assert code == 2 and "unknown MCP server 'nope'" in out["error"]

    cli = ("--config", str(config), "--json", "mcp", "call")
    code, out = run(capsys, *cli, "mcp_fx_add", "--args", '{"a": 1, "b": 2}')
    assert code == 0 and out == {"status": "success", "message": "1 and 2 make 3.", "data": {"sum": 3, "a": 1, "b": 2}}
    code, out = run(capsys, "--config", str(config), "--json", "mcp", "call", "mcp_fx_fail")
    assert code == 1 and out["status"] == "error"
    code, out = run(capsys, "--config", str(config), "--json", "mcp", "call", "mcp_fx_add", "--args", '{"a": "x"}')
    assert code == 1 and out["status"] == "rejected"
    code, out = run(capsys, "--config", str(config), "--json", "mcp", "call", "mcp_fx_add", "--args", "[1]")
    assert code == 2


def test_import_claude_and_vscode_json(config: Path, tmp_path: Path, capsys: Any) -> None:
    import keyring

    from tests.fixtures.memory_keyring import MemoryKeyring

    old_ring, ring = keyring.get_keyring(), MemoryKeyring()
    keyring.set_keyring(ring)  # the literal TOKEN moves to the keyring (issue 16 A3)
    try:
        _import_claude_and_vscode_json(config, tmp_path, capsys, ring)
    finally:
        keyring.set_keyring(old_ring)


def _import_claude_and_vscode_json(config: Path, tmp_path: Path, capsys: Any, ring: Any) -> None:
    claude = tmp_path / "claude.json"
    claude.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "My Files": {"command": "npx", "args": ["-y", "@scope/files", "/tmp"], "env": {"TOKEN": "abc"}},
                    "remote": {
                        "url": "http://127.0.0.1:9999/mcp",
                        "headers": {"Authorization": "Bearer ${input:remote-key}"},
                    },
                    "fx": {"command": "something-else"},
                    "broken": {"nothing": True},
                }
            }
        )
    )
    ring.store[("ava-console", "REMOTE_REMOTE_KEY")] = "k"  # the ${input:remote-key} value, set beforehand
    code, out = run(capsys, "--config", str(config), "--json", "import-mcp-json", str(claude))
    assert code == 0
    assert out["added"] == ["my_files", "remote"] and out["renamed"] == {"My Files": "my_files"}
    assert out["conflicts"] == ["mcp.servers.fx already exists with a different config; not overwritten"]
    assert any("broken" in p for p in out["problems"])
    text = config.read_text()
    assert "# my config" in text and "# the fixture" in text  # comments preserved
    assert "${keyring:REMOTE_REMOTE_KEY}" in text
    assert "${keyring:MY_FILES_TOKEN}" in text and "abc" not in text and out["keyring"] == ["MY_FILES_TOKEN"]
    assert ring.store[("ava-console", "MY_FILES_TOKEN")] == "abc"
    from engine.config.loader import load_settings_text

    s: Settings = load_settings_text(text, "x", lookup_secret=lambda name: "k")
    assert s.mcp.servers["my_files"].command == ["npx", "-y", "@scope/files", "/tmp"]
    assert s.mcp.servers["remote"].transport == "http"
    code, out = run(capsys, "--config", str(config), "--json", "import-mcp-json", str(claude))
    assert out["added"] == [] and set(out["unchanged"]) == {"my_files", "remote"}

    vscode = parse_mcp_json(
        json.dumps(
            {
                "servers": {
                    "gh": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
                    "py": {"type": "stdio", "command": "${env:PY}"},
                }
            }
        )
    )
    assert vscode.servers == {
        "gh": {"transport": "sse", "url": "http://127.0.0.1:1/sse"},
        "py": {"transport": "stdio", "command": ["${PY}"]},
    }


def test_serve_reloads_on_sighup(config: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cfg = config.read_text() + "engine:\n  http:\n    port: 0\n"
    config.write_text(cfg)
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "--config", str(config), "--json", "serve", "--poll", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        cwd=str(ROOT),
    )
    assert proc.stdout is not None
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready, "serve printed nothing"
        first = json.loads(proc.stdout.readline())
        assert first["serving"] and first["servers"] == {"fx": "up"} and first["http"].startswith("http://127.0.0.1:")
        import urllib.request

        config.write_text(cfg.replace("    fx:   # the fixture", "    fx2:   # renamed"))
        proc.send_signal(signal.SIGHUP)

        def ids() -> list[str]:
            with urllib.request.urlopen(first["http"] + "/mcp/status", timeout=5) as r:
                return [s["id"] for s in json.loads(r.read())["servers"]]

        wait_until_sync(lambda: ids() == ["fx2"], within=20, what="the renamed server after SIGHUP")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
    assert proc.returncode == 0
