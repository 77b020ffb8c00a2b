"""``import-mcp-json`` never copies a credential into the YAML by default (issue 16 A3), through the installed CLI.

Before, ``"env": {"API_KEY": "sk-…"}`` was written to the config in plain text. Now it goes to the OS keyring as
``${keyring:SERVERID_API_KEY}``; without a keyring nothing is written and the error says how to choose plain text;
``--plaintext-secrets`` is that explicit choice; a keyring name holding another value is never overwritten.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from engine.config.secrets import looks_like_secret

ROOT = Path(__file__).resolve().parents[3]
ENTRY_POINT = Path(sys.executable).parent / "ava-engine"
KEY = "sk-proj-4f9a8b7c6d5e4f3a2b1c"
SOURCE = {
    "mcpServers": {
        "weather": {
            "command": "npx",
            "args": ["-y", "weather-mcp"],
            "env": {"API_KEY": KEY, "LOG_LEVEL": "debug", "HOME_DIR": "${env:HOME}"},
        },
        "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Trace": "on", "Authorization": "Bearer abc123"}},
    }
}


def _env(tmp: Path, keyring: bool = True) -> dict[str, str]:
    paths = [str(ROOT / "tests" / "fixtures"), *filter(None, os.environ.get("PYTHONPATH", str(ROOT)).split(":"))]
    env = {**os.environ, "PYTHONPATH": ":".join(paths), "AVA_TEST_KEYRING_FILE": str(tmp / "keyring.json")}
    env["PYTHON_KEYRING_BACKEND"] = "file_keyring.FileKeyring" if keyring else "keyring.backends.null.Keyring"
    return env


def _run(tmp: Path, *extra: str, keyring: bool = True) -> tuple[int, dict[str, Any], str]:
    src = tmp / "claude.json"
    src.write_text(json.dumps(SOURCE))
    config = tmp / "config.yaml"
    if not config.exists():
        config.write_text("mcp:\n  servers: {}\n")
    proc = subprocess.run(
        [str(ENTRY_POINT), "--config", str(config), "--json", "import-mcp-json", str(src), *extra],
        capture_output=True,
        text=True,
        env=_env(tmp, keyring),
        timeout=60,
        check=False,
    )
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def _ring(tmp: Path) -> dict[str, str]:
    raw = json.loads((tmp / "keyring.json").read_text())
    return {k.split("\x00", 1)[1]: v for k, v in raw.items() if not k.endswith("__index__")}


def test_credentials_go_to_the_keyring(tmp_path: Path) -> None:
    code, out, err = _run(tmp_path)
    assert code == 0, err
    text = (tmp_path / "config.yaml").read_text()
    assert KEY not in text and "abc123" not in text
    assert "API_KEY: ${keyring:WEATHER_API_KEY}" in text and "Authorization: ${keyring:REMOTE_AUTHORIZATION}" in text
    assert "LOG_LEVEL: debug" in text and "HOME_DIR: ${HOME}" in text and "X-Trace: on" in text
    assert sorted(out["keyring"]) == ["REMOTE_AUTHORIZATION", "WEATHER_API_KEY"]
    assert _ring(tmp_path) == {"WEATHER_API_KEY": KEY, "REMOTE_AUTHORIZATION": "Bearer abc123"}
    assert KEY not in json.dumps(out) + err
    code, out, _ = _run(tmp_path)  # twice: nothing new
    assert code == 0 and out["added"] == [] and sorted(out["unchanged"]) == ["remote", "weather"]


def test_no_keyring_writes_nothing_and_says_how(tmp_path: Path) -> None:
    code, out, _ = _run(tmp_path, keyring=False)
    assert code == 1
    assert "--plaintext-secrets" in out["error"] and "WEATHER_API_KEY" in out["error"] and KEY not in out["error"]
    assert (tmp_path / "config.yaml").read_text() == "mcp:\n  servers: {}\n"


def test_plain_text_only_by_explicit_choice(tmp_path: Path) -> None:
    code, out, err = _run(tmp_path, "--plaintext-secrets", keyring=False)
    assert code == 0, err
    assert KEY in (tmp_path / "config.yaml").read_text() and out["keyring"] == []


def test_a_different_secret_of_the_same_name_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "keyring.json").write_text(json.dumps({"ava-console\x00WEATHER_API_KEY": "older"}))
    code, out, err = _run(tmp_path)
    assert code == 0, err
    assert out["added"] == ["remote"] and "WEATHER_API_KEY" in out["conflicts"][0]
    assert _ring(tmp_path)["WEATHER_API_KEY"] == "older"


def test_what_looks_like_a_credential() -> None:
    assert looks_like_secret("API_KEY", "x") and looks_like_secret("Authorization", "Bearer q")
    assert looks_like_secret("OPTS", "ghp_abcdefghijklmnop0123") and looks_like_secret("X", "a1B2c3D4e5F6g7H8i9J0k")
    assert not looks_like_secret("API_KEY", "${keyring:K}") and not looks_like_secret("TOKEN", "")
    assert not looks_like_secret("LOG_LEVEL", "debug") and not looks_like_secret("DATA", "/var/lib/data/file1234567890")
