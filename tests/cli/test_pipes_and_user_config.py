"""``ava-engine`` as a shell user runs it: piped into a reader that leaves early, and ``secrets`` with no ``--config``.

Why: ``ava-engine schema | head`` ended in a BrokenPipeError traceback (the reader closing its end is normal in a
pipeline, not a bug to report), and ``ava-engine secrets list`` without ``--config`` silently created a user config
from the demo just to look for references. Everything runs through the installed entry point, as a user would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINT = Path(sys.executable).parent / "ava-engine"


def _env(home: Path) -> dict[str, str]:
    """A private HOME/XDG tree and the tests' file keyring, keeping PYTHONPATH so the worktree's code runs."""
    paths = [str(ROOT / "tests" / "fixtures"), *filter(None, os.environ.get("PYTHONPATH", str(ROOT)).split(":"))]
    return {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "PYTHONPATH": ":".join(paths),
        "PYTHON_KEYRING_BACKEND": "file_keyring.FileKeyring",
        "AVA_TEST_KEYRING_FILE": str(home / "keyring.json"),
    }


def _closed_reader(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run with stdout a pipe whose reader is gone before the first write (``| head`` at its most impatient)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode("utf-8", "replace")
    return proc.wait(timeout=60), err


@pytest.mark.parametrize(
    "args",
    [
        ["schema"],
        ["--help"],
        ["--config", str(ROOT / "config" / "default.yaml"), "check"],
        ["--config", str(ROOT / "config" / "default.yaml"), "--json", "schema"],
    ],
    ids=["schema", "help", "check", "schema-json"],
)
def test_a_reader_that_leaves_early_is_no_traceback(args: list[str], tmp_path: Path) -> None:
    code, err = _closed_reader([str(ENTRY_POINT), *args], _env(tmp_path))
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert "Exception ignored" not in err, err
    assert code in (0, 1), (code, err)


def _user_config(home: Path) -> Path:
    return home / ".config" / "ava-console" / "config.yaml"


def test_secrets_without_config_never_creates_the_user_config(tmp_path: Path) -> None:
    env = _env(tmp_path)
    for argv in (
        ["secrets", "set", "TOKEN", "--value", "s3cr3t-value"],
        ["secrets", "list"],
        ["secrets", "get", "TOKEN"],
    ):
        proc = subprocess.run(
            [str(ENTRY_POINT), *argv], capture_output=True, text=True, env=env, timeout=60, check=False
        )
        assert proc.returncode == 0, (argv, proc.stderr)
    assert not _user_config(tmp_path).exists(), "secrets created a user config silently"
    proc = subprocess.run(
        [str(ENTRY_POINT), "secrets", "list"], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert "TOKEN" in proc.stdout
    # says what it did instead: no config was read, and how to get references
    assert "no config" in proc.stderr and "--config" in proc.stderr, proc.stderr
    assert "s3cr3t-value" not in proc.stdout + proc.stderr


def test_secrets_list_reads_an_existing_user_config(tmp_path: Path) -> None:
    cfg = _user_config(tmp_path)
    cfg.parent.mkdir(parents=True)
    cfg.write_text('providers:\n  p:\n    type: scripted\n    api_key: "${keyring:MY_KEY}"\n')
    env = _env(tmp_path)
    proc = subprocess.run(
        [str(ENTRY_POINT), "--json", "secrets", "list"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert '"MY_KEY"' in proc.stdout and "providers.p.api_key" in proc.stdout
