"""A keyring that keeps secrets in a plain file works, so nothing else would tell the user that a secret moved out of
the config is no safer in it: ``secrets`` and ``mcp login`` say so, naming the file and what to use instead; a real
keyring is never called unencrypted.

Run with keyrings.alt's real ``PlaintextKeyring`` (a test dependency), through the installed entry point.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import keyring

from engine.config.secrets import unencrypted_warning
from tests.fixtures.memory_keyring import MemoryKeyring

ENTRY_POINT = Path(sys.executable).parent / "ava-engine"


def ava_engine(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {
        "PYTHON_KEYRING_BACKEND": "keyrings.alt.file.PlaintextKeyring",
        "XDG_DATA_HOME": str(tmp_path / "data"),  # where the plaintext keyring writes its file
    }
    return subprocess.run([str(ENTRY_POINT), *args], capture_output=True, text=True, env=env, timeout=60)


def test_secrets_commands_say_the_keyring_is_unencrypted(tmp_path: Path) -> None:
    stored = ava_engine(tmp_path, "secrets", "set", "PROBE_TOKEN", "--value", "s3cr3t-value", "--json")
    assert stored.returncode == 0, stored.stderr
    assert json.loads(stored.stdout) == {"stored": "PROBE_TOKEN", "unencrypted": True}
    assert "UNENCRYPTED" in stored.stderr and "keyrings.alt.file.PlaintextKeyring" in stored.stderr
    assert str(tmp_path / "data") in stored.stderr  # the file it is in
    assert "keyrings.cryptfile" in stored.stderr  # and what to use instead
    listed = ava_engine(tmp_path, "secrets", "list", "--json")
    assert json.loads(listed.stdout)["unencrypted"] is True
    assert "UNENCRYPTED" in listed.stderr
    got = ava_engine(tmp_path, "secrets", "get", "PROBE_TOKEN")
    assert "UNENCRYPTED" in got.stderr and "s3cr3t-value" not in got.stdout + got.stderr


def test_a_real_keyring_is_not_called_unencrypted() -> None:
    old = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    try:
        assert unencrypted_warning() is None
    finally:
        keyring.set_keyring(old)


def test_mcp_login_says_where_the_tokens_go(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "mcp:\n  servers:\n    remote:\n      transport: http\n      url: http://127.0.0.1:9/mcp\n"
        "      auth:\n        oauth:\n          client_name: ava tests\n"
    )
    done = ava_engine(tmp_path, "--config", str(config), "mcp", "login", "remote", "--no-browser", "--timeout", "5")
    assert done.returncode == 1  # nothing listens there; the warning came first
    assert done.stderr.startswith("warning: secrets are stored UNENCRYPTED"), done.stderr
