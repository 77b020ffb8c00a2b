"""``ava-engine secrets get`` (the installed entry point) shows that a secret is set and its length, never a
character of it; ``--reveal`` is the one way to print the value. Before, it showed ``sk-…9f3a`` (7 characters)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AVA_ENGINE = Path(sys.executable).parent / "ava-engine"
SECRET = "sk-proj-ABCDEFGHIJKLMNOP-9f3a"


def _cli(tmp_path: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHON_KEYRING_BACKEND": "file_keyring.FileKeyring",
        "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT / "tests" / "fixtures"), os.environ.get("PYTHONPATH")))),
        "AVA_TEST_KEYRING_FILE": str(tmp_path / "keyring.json"),
    }
    return subprocess.run(
        [str(AVA_ENGINE), *args], capture_output=True, text=True, timeout=60, env=env, input=stdin, cwd=tmp_path
    )


def test_secrets_get_shows_a_length_hint_only(tmp_path: Path) -> None:
    assert _cli(tmp_path, "secrets", "set", "api_key", stdin=SECRET + "\n").returncode == 0
    text = _cli(tmp_path, "secrets", "get", "api_key")
    assert text.returncode == 0 and text.stdout == f"set ({len(SECRET)} characters)\n"
    as_json = json.loads(_cli(tmp_path, "secrets", "get", "api_key", "--json").stdout)
    assert as_json == {
        "name": "api_key",
        "value": f"set ({len(SECRET)} characters)",
        "masked": True,
        "length": len(SECRET),
    }
    assert _cli(tmp_path, "secrets", "get", "api_key", "--reveal").stdout == SECRET + "\n"
