"""``ava-engine mcp call --accept-defaults``: a question the tool asks during the call (MCP elicitation) is accepted
with the form's defaults (SEP-1034), in both protocol eras; a required field without a default declines it, naming
that field; without the flag the question is declined as before and stderr says what the server asked and that
``--accept-defaults`` would answer it.

Through the installed entry point, against a real stdio MCP server (tests/fixtures/mcp_servers/elicit_defaults_server.py
reports the raw answer it got) and ``@modelcontextprotocol/server-everything``'s elicitation tool (its required
``name`` has no default).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.engine.mcp.helpers import EVERYTHING_BIN
from tests.engine.mcp.test_real_peers import needs_everything

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINT = Path(sys.executable).parent / "ava-engine"
SERVER = ROOT / "tests" / "fixtures" / "mcp_servers" / "elicit_defaults_server.py"
ASKED = "Please confirm your profile"
DEFAULTS = {"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "tags": ["b"], "verified": True}
#: ``legacy``: a 2025-11-25 connection (elicitation/create mid-call); ``auto``: 2026-07-28 (InputRequiredResult).
ERAS = {"old": "legacy", "new": "auto"}


def write_config(tmp_path: Path, era: str) -> Path:
    cfg = tmp_path / f"{era}.yaml"
    server: dict[str, Any] = {"command": [str(EVERYTHING_BIN), "stdio"], "connect_timeout_ms": 60_000}
    if era in ERAS:
        server = {"command": [sys.executable, str(SERVER)], "mode": ERAS[era], "connect_timeout_ms": 60_000}
    cfg.write_text(json.dumps({"engine": {"http": {"enabled": False}}, "mcp": {"servers": {era: server}}}))
    return cfg


def mcp_call(cfg: Path, tool: str, *extra: str, args: dict[str, Any] | None = None) -> subprocess.CompletedProcess[str]:
    assert ENTRY_POINT.exists(), f"{ENTRY_POINT} is missing: install the package (make test does) first"
    argv = [str(ENTRY_POINT), "--config", str(cfg), "mcp", "call", tool, "--args", json.dumps(args or {}), *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def answered(message: str) -> dict[str, Any]:
    assert message.startswith("answered "), message
    got: dict[str, Any] = json.loads(message.removeprefix("answered "))
    return got


@pytest.mark.parametrize("era", list(ERAS))
def test_the_question_is_accepted_with_the_forms_defaults(tmp_path: Path, era: str) -> None:
    done = mcp_call(write_config(tmp_path, era), f"mcp_{era}_profile", "--accept-defaults", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert answered(result["message"]) == {"action": "accept", "content": DEFAULTS}
    (asked,) = result["elicitations"]
    assert (asked["message"], asked["action"], asked["server"], asked["tool"]) == (ASKED, "accept", era, "profile")
    assert ASKED in done.stderr and "defaults" in done.stderr


def test_without_the_flag_it_is_declined_and_stderr_says_how_to_answer(tmp_path: Path) -> None:
    done = mcp_call(write_config(tmp_path, "old"), "mcp_old_profile")
    assert done.returncode == 0, done.stdout + done.stderr  # the tool itself succeeded: it reports the decline
    assert done.stdout.startswith('success: answered {"action":"decline"}'), done.stdout
    assert f"asked: {ASKED}" in done.stderr, done.stderr
    assert "--accept-defaults" in done.stderr


def test_a_required_field_without_a_default_declines_naming_it(tmp_path: Path) -> None:
    done = mcp_call(
        write_config(tmp_path, "new"), "mcp_new_profile", "--accept-defaults", "--json", args={"nickname": True}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert answered(result["message"]) == {"action": "decline"}
    (asked,) = result["elicitations"]
    assert asked["action"] == "decline" and "'nickname'" in asked["reason"] and "'name'" not in asked["reason"]
    assert "'nickname'" in done.stderr


@needs_everything
def test_server_everythings_form_needs_a_name_it_has_no_default_for(tmp_path: Path) -> None:
    done = mcp_call(write_config(tmp_path, "ev"), "mcp_ev_trigger_elicitation_request", "--accept-defaults", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert "declined" in result["message"], result
    (asked,) = result["elicitations"]
    assert asked["action"] == "decline" and "required field(s) without a usable default: 'name'" in asked["reason"]
