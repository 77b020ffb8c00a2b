"""``ava-engine serve`` (installed entry point): a busy port is one clear line, and a saved config is reloaded.

A port held by another program ends serve with exit 1 and one error line naming the address and the config key,
no traceback. Saving the config file (an atomic replace, as the console and ``import-mcp-json`` do) reloads it
without SIGHUP: the file watch sees the rename.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.waiting import wait_until_sync

ROOT = Path(__file__).resolve().parents[2]
ENGINE_BIN = str(ROOT / ".venv" / "bin" / "ava-engine")
FIXTURE_SERVER = ROOT / "tests" / "fixtures" / "mcp_servers" / "fixture_server.py"


def test_busy_port_is_one_clear_line_and_exit_1(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        cfg = tmp_path / "config.yaml"
        cfg.write_text(f"engine:\n  http:\n    host: 127.0.0.1\n    port: {port}\n")
        proc = subprocess.run(
            [ENGINE_BIN, "--config", str(cfg), "serve"], capture_output=True, text=True, timeout=60, cwd=tmp_path
        )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, proc.stderr
    assert str(port) in errors[0] and "127.0.0.1" in errors[0] and "engine.http.port" in errors[0]
    assert "ava-engine" in errors[0] and str(cfg) in errors[0]


CONFIG = f"""mcp:
  servers:
    fx:   # the fixture
      command: ["{sys.executable}", "{FIXTURE_SERVER}"]
engine:
  http:
    port: 0
"""


def _save(path: Path, text: str) -> None:
    """Replace the file the way an atomic save does (temp file, rename)."""
    tmp = path.with_name(f".{path.name}.abcdefgh.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _ids(url: str) -> list[str]:
    with urllib.request.urlopen(url + "/mcp/status", timeout=5) as r:
        return [s["id"] for s in json.loads(r.read())["servers"]]


def test_saving_the_config_reloads_it_without_sighup(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(CONFIG)
    proc = subprocess.Popen(
        [ENGINE_BIN, "--config", str(cfg), "--json", "serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "serve printed nothing"
        first = json.loads(proc.stdout.readline())
        assert first["servers"] == {"fx": "up"}
        _save(cfg, CONFIG.replace("    fx:   # the fixture", "    fx2:   # renamed"))
        wait_until_sync(lambda: _ids(first["http"]) == ["fx2"], within=20, what="the renamed server listed")
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
