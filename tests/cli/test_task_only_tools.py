"""A tool that can only run as an MCP task (``execution.taskSupport: required``) is never shown to a model: the engine
does not run tasks, so the model could only ever call it into an error. ``mcp list`` says why it is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ENTRY_POINT = Path(sys.executable).parent / "ava-engine"
ROOT = Path(__file__).resolve().parents[2]


def test_task_only_tools_are_left_out_with_the_reason(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "mcp:\n  servers:\n    tk:\n      transport: inprocess\n"
        "      target: tests.fixtures.mcp_servers.schema_server:tasks\n"
        "      mode: legacy\n"  # tasks (and taskSupport) are of the 2025-11-25 protocol
    )
    done = subprocess.run(
        [str(ENTRY_POINT), "--config", str(config), "mcp", "list", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ | {"PYTHONPATH": str(ROOT)},  # the in-process target is imported from the repository
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (server,) = json.loads(done.stdout)["servers"]
    assert [t["exposed_name"] for t in server["tools"]] == ["mcp_tk_plain", "mcp_tk_optional"]
    assert any("'required'" in w and "taskSupport: required" in w for w in server["warnings"]), server["warnings"]
