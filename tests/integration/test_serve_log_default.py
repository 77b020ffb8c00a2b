"""Without ``engine.logging.level``, one-shot commands keep stderr to warnings and ``serve`` logs at info (a daemon's
servers coming and going belong in its log); through the installed ``ava-engine``."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE_BIN = str(ROOT / ".venv" / "bin" / "ava-engine")
CONFIG = """engine:
  http: {port: 0}
mcp:
  servers:
    dice:
      transport: inprocess
      target: engine.servers.dice.server:create
"""


def test_one_shot_commands_are_quiet_and_serve_logs_info(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(CONFIG, encoding="utf-8")
    listed = subprocess.run(
        [ENGINE_BIN, "--config", str(cfg), "mcp", "list"], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert listed.returncode == 0, listed.stderr
    assert "INFO" not in listed.stderr, listed.stderr

    proc = subprocess.Popen(
        [ENGINE_BIN, "--config", str(cfg), "serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "ava-engine serving" in line, line
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=20)
    assert "INFO engine.mcp.supervisor: MCP server dice: up" in err, err
