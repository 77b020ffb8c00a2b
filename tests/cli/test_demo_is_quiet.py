"""The demo config's own servers speak no warning at a user: ``ava-engine mcp list`` on config/default.yaml prints
the servers and their tools and nothing on stderr (every tool that asks to be cached says it is read-only)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_mcp_list_on_the_demo_config_warns_about_nothing() -> None:
    engine = Path(sys.executable).with_name("ava-engine")
    done = subprocess.run(
        [str(engine), "mcp", "list", "--config", str(ROOT / "config" / "default.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "mcp_dice_list_tables" in done.stdout and "mcp_rules_get_rule" in done.stdout
    assert done.stderr == ""
