"""ava-engine as a user runs it (child processes): JSON output, exit codes, secrets never printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def run(*args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        input=stdin,
    )


@pytest.fixture
def keyring_env(tmp_path: Path) -> dict[str, str]:
    return {
        "PYTHON_KEYRING_BACKEND": "file_keyring.FileKeyring",
        "PYTHONPATH": str(ROOT / "tests" / "fixtures"),
        "AVA_TEST_KEYRING_FILE": str(tmp_path / "keyring.json"),
    }


def test_demo_call_json_events() -> None:
    p = run(
        "--config",
        "config/default.yaml",
        "call",
        "--context",
        "demo",
        "--say",
        "hello",
        "--say",
        "goodbye",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    events = [json.loads(line) for line in p.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "call.started" and types[-1] == "call.ended"
    assert "transcript.added" in types
    req = [e for e in events if e["type"] == "tool.requested"]
    done = [e for e in events if e["type"] == "tool.completed"]
    assert req[0]["exposed_name"] == "hangup_call" and done[0]["status"] == "success"
    assert types.index("tool.requested") < types.index("tool.completed") < types.index("call.ended")


def test_bad_config_exit_2_names_file_and_line(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("engine:\n  http:\n    port: -1\n")
    p = run("--config", str(cfg), "check", "--json")
    assert p.returncode == 2
    err = json.loads(p.stdout)["error"]
    assert "bad.yaml:3" in err and "engine.http.port" in err


def test_bad_arguments_exit_2() -> None:
    p = run("--config", "config/default.yaml", "call", "--json")
    assert p.returncode == 2 and "--context" in json.loads(p.stdout)["error"]
    p = run("--config", "config/default.yaml", "call", "--context", "nope", "--say", "x")
    assert p.returncode == 2 and "unknown context 'nope'" in p.stderr


def test_tools_canonical_json() -> None:
    p = run("--config", "config/default.yaml", "tools", "--context", "demo", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert (out["context"], out["provider"], out["tier"]) == ("demo", None, "standard")
    names = [t["name"] for t in out["tools"]]
    assert "hangup_call" in names and "mcp_dice_roll" in names
    assert all(t["input_schema"]["type"] == "object" for t in out["tools"])


def test_schema_command(tmp_path: Path) -> None:
    out = tmp_path / "schema.json"
    p = run("schema", "--output", str(out))
    assert p.returncode == 0, p.stderr
    schema = json.loads(out.read_text())
    assert {"engine", "providers", "mcp", "contexts", "budget"} <= set(schema["properties"])


def test_secrets_round_trip_never_printed_unless_revealed(keyring_env: dict[str, str], tmp_path: Path) -> None:
    canary = "sk-CANARY-7f3a9b2c1d"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "providers:\n  s:\n    type: scripted\n    script: scripts/demo.yaml\n"
        "asterisk:\n  password: ${keyring:ari_pw}\n"
    )
    p = run("secrets", "set", "ari_pw", env=keyring_env, stdin=canary + "\n")
    assert p.returncode == 0, p.stderr
    assert canary not in p.stdout + p.stderr
    p = run("--config", str(cfg), "secrets", "list", "--json", env=keyring_env)
    rows = json.loads(p.stdout)["secrets"]
    assert rows == [{"name": "ari_pw", "referenced_by": ["asterisk.password"], "stored": True}]
    p = run("secrets", "get", "ari_pw", env=keyring_env)
    assert p.returncode == 0 and canary not in p.stdout
    p = run("secrets", "get", "ari_pw", "--reveal", env=keyring_env)
    assert p.stdout.strip() == canary
    p = run("--config", str(cfg), "check", "--json", env=keyring_env)
    assert p.returncode == 0 and canary not in p.stdout + p.stderr
    p = run("--config", str(cfg), "call", "--context", "x", "--say", "hi", env=keyring_env)
    assert canary not in p.stdout + p.stderr
    p = run("secrets", "delete", "ari_pw", env=keyring_env)
    assert p.returncode == 0
    p = run("secrets", "get", "ari_pw", "--json", env=keyring_env)
    assert p.returncode == 1 and "not in the keyring" in json.loads(p.stdout)["error"]
