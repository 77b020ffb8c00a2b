"""``ava-engine mcp call`` gives a tool its own ``timeout_ms``: the operator's call is in no phone call, so no tier
budget clamps it; ``--context``/``--tier`` run it as such a call would, and a timeout then says how to change that.

Run through the installed entry point, against the fixture server's ``slow`` tool (it sleeps for what it is asked).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINT = Path(sys.executable).parent / "ava-engine"
FIXTURE_SERVER = ROOT / "tests" / "fixtures" / "mcp_servers" / "fixture_server.py"

# The tool may take 20 s; every tier's budget is far below the second the call takes.
CONFIG = f"""
budget:
  tiers: {{fast: 50, standard: 100, deep: 150}}
mcp:
  servers:
    fx:
      transport: stdio
      command: [{json.dumps(sys.executable)}, {json.dumps(str(FIXTURE_SERVER))}]
      tools:
        - name: slow
          timeout_ms: 20000
contexts:
  desk:
    provider: text
    prompt: test
    tools: [mcp_fx_slow]
    tier: {{default: standard, mode: fixed}}
providers:
  text: {{type: ollama, model: llama3}}
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    return path


def mcp_call(config: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    assert ENTRY_POINT.exists(), f"{ENTRY_POINT} is missing: install the package (make test does) first"
    return subprocess.run(
        [str(ENTRY_POINT), "--config", str(config), "mcp", "call", "mcp_fx_slow", "--args", '{"seconds": 1}', *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_operators_call_runs_to_the_tools_own_limit(config: Path) -> None:
    done = mcp_call(config, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "success", result
    assert "slept 1" in result["message"]


def test_a_tier_clamps_it_and_the_timeout_says_how_to_change_that(config: Path) -> None:
    done = mcp_call(config, "--tier", "standard")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("timeout:"), done.stdout
    assert "budget.tiers.standard" in done.stdout
    assert "leave out --context and --tier" in done.stderr


def test_a_context_runs_it_as_that_contexts_calls_would(config: Path) -> None:
    done = mcp_call(config, "--context", "desk", "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    assert json.loads(done.stdout)["status"] == "timeout"
