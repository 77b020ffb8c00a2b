"""The MCP SDK loads only for an engine that runs an MCP server, not with the engine's import or a command without one.

Importing the SDK and the engine's client machinery costs ~1.4 s of CPU; ``engine.app`` used to pull it in through
``engine.budget.calibration → engine.mcp.policy → engine.mcp`` (the package face imported the host), and building an
engine through the MCP host and the engine's own MCP endpoint, so every ``ava-engine`` command and every
``ava-console`` paid for it. Each check runs in a fresh interpreter; the last one is the control: with the demo's
in-process servers the SDK is loaded, so the watch sees what it is meant to see.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINT = Path(sys.executable).parent / "ava-engine"

#: Runs the installed script as ``__main__``; prints at exit whether the SDK (``mcp`` or a submodule) was loaded.
WATCH = """
import atexit, runpy, sys

loaded = lambda: sorted(m for m in sys.modules if m == "mcp" or m.startswith("mcp."))[:3]
atexit.register(lambda: print("SDK " + repr(loaded()), file=sys.stderr))
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def sdk_modules(stderr: str) -> str:
    (line,) = [ln for ln in stderr.splitlines() if ln.startswith("SDK ")]
    return line.removeprefix("SDK ")


@pytest.mark.parametrize("module", ["engine.app", "console.app"])
def test_importing_the_engine_or_the_console_does_not_load_the_mcp_sdk(module: str) -> None:
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.'))[:3])"
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]", f"import {module} loaded the MCP SDK: {p.stdout}"


def run_watched(config: Path, *command: str) -> subprocess.CompletedProcess[str]:
    assert ENTRY_POINT.exists(), f"{ENTRY_POINT} is missing: install the package (make test does) first"
    argv = [sys.executable, "-c", WATCH, str(ENTRY_POINT), "--config", str(config), *command]
    p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p


def test_a_call_on_an_engine_without_mcp_servers_never_loads_the_sdk(tmp_path: Path) -> None:
    demo = (ROOT / "config" / "default.yaml").read_text()
    assert "\nmcp:\n  enabled: true\n" in demo, "the demo config's mcp section moved: update this test"
    config = tmp_path / "no-mcp.yaml"
    config.write_text(demo.replace("\nmcp:\n  enabled: true\n", "\nmcp:\n  enabled: false\n"))
    p = run_watched(config, "call", "--context", "demo", "--say", "hello", "--json")
    assert '"type": "call.ended"' in p.stdout, p.stdout  # the command ran a call on an engine
    assert sdk_modules(p.stderr) == "[]"


def test_listing_the_demo_servers_loads_the_sdk() -> None:
    p = run_watched(ROOT / "config" / "default.yaml", "mcp", "list", "--json")
    assert '"dice"' in p.stdout, p.stdout
    assert sdk_modules(p.stderr) != "[]"
