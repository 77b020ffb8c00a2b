"""``ava-engine import-mcp-json`` on the files VS Code and Cursor really write, through the installed entry point.

Before: a JSONC file (comments, trailing commas) was "not valid JSON"; ``inputs`` were ignored and ``${input:ID}``
became a keyring reference nobody was asked to fill; ``${workspaceFolder}`` was written as an environment variable
reference; a password in a ``postgres://`` argument, ``--api-key=…`` or ``?token=…`` was written in plain text; and
the file was saved with every ``${VAR}`` and secret assumed set, so ``ava-engine check`` then refused it. Now every
import ends in a config ``check`` accepts, or writes nothing and says why.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from engine.config.loader import load_settings_text

ROOT = Path(__file__).resolve().parents[3]
ENTRY_POINT = Path(sys.executable).parent / "ava-engine"
CONFIG = "# mine\nmcp:\n  servers: {}\n"

VSCODE_JSONC = """// .vscode/mcp.json as VS Code writes it
{
  "inputs": [
    {
      "type": "promptString",
      "id": "github-token",
      "description": "GitHub Personal Access Token",
      "password": true,
    },
  ],
  /* two servers */
  "servers": {
    "github": {
      "type": "http",
      "url": "http://127.0.0.1:9/mcp/",
      "headers": {"Authorization": "Bearer ${input:github-token}"},
    },
    "files": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "${workspaceFolder}/docs"], // trailing
      "cwd": "${workspaceFolder}",
    },
  },
}
"""

PG = "postgres://reader:pa55w0rd-Q@localhost:5432/shop"
CREDENTIAL_ARGS: dict[str, Any] = {
    "mcpServers": {
        "pg": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres", PG]},
        "search": {
            "command": "uvx",
            "args": [
                "mcp-server-time==2025.1.1",
                "--api-key=sk-live-51HxQ2eZvKYlo2C",
                "--token",
                "ghp_abcdefghij0123456789",
            ],
        },
        "remote": {
            "command": "npx",
            "args": [
                "mcp-remote",
                "https://127.0.0.1:9/mcp?token=tok_9f8e7d6c5b4a&mode=full",
                "--header",
                "Authorization:Bearer abc123secret",
            ],
        },
        "hosted": {"url": "http://127.0.0.1:9/sse?api_key=k3y-0000-1111&v=2", "type": "sse"},
    }
}
SECRET_VALUES = [
    "pa55w0rd-Q",
    "sk-live-51HxQ2eZvKYlo2C",
    "ghp_abcdefghij0123456789",
    "tok_9f8e7d6c5b4a",
    "abc123secret",
    "k3y-0000-1111",
]


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    paths = [str(ROOT / "tests" / "fixtures"), *filter(None, os.environ.get("PYTHONPATH", str(ROOT)).split(":"))]
    env = {**os.environ, "PYTHONPATH": ":".join(paths), "AVA_TEST_KEYRING_FILE": str(tmp / "keyring.json")}
    env["PYTHON_KEYRING_BACKEND"] = "file_keyring.FileKeyring"
    return {**env, **extra}


def _cli(tmp: Path, *argv: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any], str]:
    proc = subprocess.run(
        [str(ENTRY_POINT), "--config", str(tmp / "config.yaml"), "--json", *argv],
        capture_output=True,
        text=True,
        env=env or _env(tmp),
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    out = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, out, proc.stderr


def _ring(tmp: Path) -> dict[str, str]:
    path = tmp / "keyring.json"
    raw = json.loads(path.read_text()) if path.exists() else {}
    return {k.split("\x00", 1)[1]: v for k, v in raw.items() if not k.endswith("__index__")}


def _set(tmp: Path, name: str, value: str) -> None:
    path = tmp / "keyring.json"
    raw = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps({**raw, f"ava-console\x00{name}": value}))


def _workspace(tmp: Path) -> Path:
    (tmp / "proj" / ".vscode").mkdir(parents=True)
    src = tmp / "proj" / ".vscode" / "mcp.json"
    src.write_text(VSCODE_JSONC)
    (tmp / "config.yaml").write_text(CONFIG)
    return src


def test_vscode_jsonc_without_a_terminal_writes_nothing_and_lists_the_inputs(tmp_path: Path) -> None:
    src = _workspace(tmp_path)
    code, out, err = _cli(tmp_path, "import-mcp-json", str(src))
    assert code == 1, err
    assert (tmp_path / "config.yaml").read_text() == CONFIG and out["written"] is False
    assert (
        "ava-engine secrets set GITHUB_GITHUB_TOKEN" in out["error"] and "GitHub Personal Access Token" in out["error"]
    )
    assert out["needs"] == [
        {
            "secret": "GITHUB_GITHUB_TOKEN",
            "input": "github-token",
            "description": "GitHub Personal Access Token",
            "server": "github",
        }
    ]

    _set(tmp_path, "GITHUB_GITHUB_TOKEN", "ghp_fromtheuser")  # what `ava-engine secrets set` does
    code, out, err = _cli(tmp_path, "import-mcp-json", str(src))
    assert code == 0, err
    assert out["written"] is True and out["added"] == ["files", "github"]
    text = (tmp_path / "config.yaml").read_text()
    assert text.startswith("# mine") and "ghp_fromtheuser" not in text
    s = load_settings_text(text, "x", lookup_secret=_ring(tmp_path).__getitem__)
    workspace = str((tmp_path / "proj").resolve())
    assert s.mcp.servers["files"].command[-1] == f"{workspace}/docs" and s.mcp.servers["files"].cwd == workspace
    headers = s.mcp.servers["github"].headers
    assert {k: v.get_secret_value() for k, v in headers.items()} == {"Authorization": "Bearer ghp_fromtheuser"}
    code, out, err = _cli(tmp_path, "check")  # what the import promised
    assert code == 0 and out["ok"] is True, out or err


def test_no_input_never_asks(tmp_path: Path) -> None:
    src = _workspace(tmp_path)
    code, out, _ = _cli(tmp_path, "import-mcp-json", "--no-input", str(src))
    assert code == 1 and out["needs"][0]["secret"] == "GITHUB_GITHUB_TOKEN"
    assert (tmp_path / "config.yaml").read_text() == CONFIG


def test_a_terminal_is_asked_without_echo(tmp_path: Path) -> None:
    src = _workspace(tmp_path)
    pid, fd = pty.fork()
    if pid == 0:  # the child: the terminal is the pty (getpass reads /dev/tty)
        argv = [str(ENTRY_POINT), "--config", str(tmp_path / "config.yaml"), "import-mcp-json", str(src)]
        os.execve(argv[0], argv, _env(tmp_path))
    seen = b""

    def read_until(marker: bytes) -> None:
        nonlocal seen
        deadline = time.monotonic() + 60
        while marker not in seen and time.monotonic() < deadline:
            if select.select([fd], [], [], 1)[0]:
                try:
                    seen += os.read(fd, 4096)
                except OSError:
                    return

    read_until(b"GitHub Personal Access Token")
    os.write(fd, b"ghp_typedsecret\n")
    read_until(b"added mcp.servers.github")
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, seen.decode(errors="replace")
    assert b"ghp_typedsecret" not in seen  # not echoed, never printed
    assert _ring(tmp_path)["GITHUB_GITHUB_TOKEN"] == "ghp_typedsecret"
    assert "${keyring:GITHUB_GITHUB_TOKEN}" in (tmp_path / "config.yaml").read_text()


def test_credentials_in_arguments_and_urls_move_to_the_keyring(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(CONFIG)
    src = tmp_path / "claude_desktop_config.json"
    src.write_text(json.dumps(CREDENTIAL_ARGS))
    code, out, err = _cli(tmp_path, "import-mcp-json", str(src))
    assert code == 0, err
    text = (tmp_path / "config.yaml").read_text()
    assert not [v for v in SECRET_VALUES if v in text + json.dumps(out) + err]
    ring = _ring(tmp_path)
    assert sorted(ring.values()) == sorted(v if v != "abc123secret" else "Bearer abc123secret" for v in SECRET_VALUES)
    assert ring["PG_PASSWORD"] == "pa55w0rd-Q" and ring["SEARCH_API_KEY"] == "sk-live-51HxQ2eZvKYlo2C"
    s = load_settings_text(text, "x", lookup_secret=ring.__getitem__)  # expanded: exactly what the file said
    for sid in ("pg", "search", "remote"):
        entry = CREDENTIAL_ARGS["mcpServers"][sid]
        assert s.mcp.servers[sid].command == [entry["command"], *entry["args"]]
    assert s.mcp.servers["hosted"].url == CREDENTIAL_ARGS["mcpServers"]["hosted"]["url"]
    assert "mcp-server-time==2025.1.1" in text  # a package spec is not a credential
    code, out, err = _cli(tmp_path, "check")
    assert code == 0, out or err


def test_a_config_check_would_refuse_is_not_written(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(CONFIG)
    src = tmp_path / "mcp.json"
    src.write_text(json.dumps({"servers": {"py": {"command": "python3", "env": {"HOME_DIR": "${env:AVA_UNSET_X}"}}}}))
    env = _env(tmp_path)
    env.pop("AVA_UNSET_X", None)
    code, out, _ = _cli(tmp_path, "import-mcp-json", str(src), env=env)
    assert code == 1 and out["written"] is False
    assert "ava-engine check" in out["error"] and "AVA_UNSET_X" in out["error"]
    assert (tmp_path / "config.yaml").read_text() == CONFIG
    code, out, err = _cli(tmp_path, "import-mcp-json", str(src), env={**env, "AVA_UNSET_X": "/x"})
    assert code == 0 and out["added"] == ["py"], err


def test_variables_only_vscode_resolves_skip_their_server(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(CONFIG)
    src = tmp_path / "mcp.json"
    src.write_text(
        json.dumps(
            {"servers": {"pick": {"command": "npx", "args": ["${command:pickFolder}"]}, "ok": {"command": "python3"}}}
        )
    )
    code, out, err = _cli(tmp_path, "import-mcp-json", str(src))
    assert code == 0 and out["added"] == ["ok"], err
    assert any("'pick'" in p and "${command:pickFolder}" in p for p in out["problems"])


def test_size_and_nesting_are_bounded_before_parsing(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(CONFIG)
    big, deep = tmp_path / "big.json", tmp_path / "deep.json"
    big.write_text(json.dumps({"servers": {"a": {"command": "x", "description": "y" * 300_000}}}))
    deep.write_text('{"servers": ' + "[" * 50_000 + "]" * 50_000 + "}")
    for path, why in ((big, "bytes"), (deep, "nested deeper")):
        code, out, err = _cli(tmp_path, "import-mcp-json", str(path))
        assert code == 2 and why in out["error"] and str(path) in out["error"], err
    broken = tmp_path / "broken.jsonc"
    broken.write_text('{\n  // fine\n  "servers": {\n    "a": \n  }\n}\n')
    code, out, _ = _cli(tmp_path, "import-mcp-json", str(broken))
    assert code == 2 and f"{broken}:5" in out["error"]
    assert (tmp_path / "config.yaml").read_text() == CONFIG
