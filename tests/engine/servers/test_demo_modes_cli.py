"""The demo config through the installed ``ava-engine``: ``check`` and ``mcp list`` with its built-in servers
in-process (as shipped) and bundled (the one-line switch the README offers), every server up with its tools."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
AVA_ENGINE = Path(sys.executable).parent / "ava-engine"
DEMO = ROOT / "config" / "default.yaml"
SHIPPED = "\n      transport: inprocess\n"
TOOLS = {"dice": 3, "aviation_atis": 1, "memory": 4, "rules": 2}


def run(config: Path, *args: str, data: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(AVA_ENGINE.parent), "HOME": str(data)}  # a bundle child gets only the safe environment
    return subprocess.run(
        [str(AVA_ENGINE), "--config", str(config), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


@pytest.mark.parametrize("transport", ["inprocess", "bundled"])
def test_check_and_mcp_list_on_the_demo(transport: str, tmp_path: Path) -> None:
    text = DEMO.read_text()
    assert text.count(SHIPPED) == len(TOOLS)  # the demo as shipped
    config = DEMO.parent / f".test-demo-{transport}-{tmp_path.name}.yaml"  # beside it: relative paths still resolve
    config.write_text(text.replace(SHIPPED, f"\n      transport: {transport}\n"))
    try:
        check = run(config, "check", "--json", data=tmp_path)
        assert check.returncode == 0, check.stderr
        listed = run(config, "mcp", "list", "--json", data=tmp_path)
        assert listed.returncode == 0, listed.stderr
    finally:
        config.unlink()
    servers = {s["id"]: s for s in json.loads(listed.stdout)["servers"]}
    assert {sid: (s["state"], s["transport"], len(s["tools"])) for sid, s in servers.items()} == {
        sid: ("up", transport, count) for sid, count in TOOLS.items()
    }
    assert (tmp_path / ".local" / "share" / "ava-console" / "memory.sqlite3").exists()  # in this HOME, not yours
