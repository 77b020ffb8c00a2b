"""``ava-engine mcp add`` through the installed entry point: registry server.json files for an npm package (the
``server-everything`` in .peers, resolved by npx offline), a PyPI package installed in the venv and a remote
Streamable HTTP server on loopback; secrets to the keyring (canaries never in the YAML or the output); a failing
test saves nothing unless forced; duplicate ids are refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.engine.mcp.helpers import EVERYTHING_BIN, ROOT

ENTRY_POINT = Path(sys.executable).parent / "ava-engine"
PEERS = ROOT / ".peers"
EVERYTHING_VERSION = "2026.8.31"
CANARY = "canary-7f3e9a1b5c2d4e6f8a0b"
CONFIG = "# servers added by hand\nmcp:\n  servers: {}   # none yet\n"

needs_everything = pytest.mark.skipif(not EVERYTHING_BIN.exists(), reason=f"{EVERYTHING_BIN} is missing (make test)")


def _env(tmp: Path, path: str | None = None) -> dict[str, str]:
    paths = [str(ROOT / "tests" / "fixtures"), *filter(None, os.environ.get("PYTHONPATH", str(ROOT)).split(":"))]
    env = {**os.environ, "PYTHONPATH": ":".join(paths), "AVA_TEST_KEYRING_FILE": str(tmp / "keyring.json")}
    env["PYTHON_KEYRING_BACKEND"] = "file_keyring.FileKeyring"
    if path is not None:
        env["PATH"] = path
    return env


def add(tmp: Path, *argv: str, cwd: Path | None = None, path: str | None = None) -> tuple[int, Any, str]:
    """Run ``ava-engine --config tmp/config.yaml --json mcp add ARGV``; (exit code, JSON out, stderr)."""
    config = tmp / "config.yaml"
    if not config.exists():
        config.write_text(CONFIG)
    proc = subprocess.run(
        [str(ENTRY_POINT), "--config", str(config), "--json", "mcp", "add", *argv],
        capture_output=True,
        text=True,
        env=_env(tmp, path),
        cwd=cwd or tmp,
        timeout=90,
        check=False,
    )
    assert CANARY not in proc.stdout + proc.stderr, "a secret reached the output"
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None, proc.stderr


def ring(tmp: Path) -> dict[str, str]:
    p = tmp / "keyring.json"
    raw = json.loads(p.read_text()) if p.exists() else {}
    return {k.split("\x00", 1)[1]: v for k, v in raw.items() if not k.endswith("__index__")}


def server_json(tmp: Path, data: dict[str, Any], name: str = "server.json") -> Path:
    p = tmp / name
    p.write_text(json.dumps(data, indent=2))
    return p


@needs_everything
def test_npm_server_json_secret_env_to_keyring(tmp_path: Path) -> None:
    src = server_json(
        tmp_path,
        {
            "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
            "name": "io.github.modelcontextprotocol/everything",
            "description": "Exercises all the features of the MCP protocol",
            "version": EVERYTHING_VERSION,
            "packages": [
                {
                    "registryType": "npm",
                    "identifier": "@modelcontextprotocol/server-everything",
                    "version": EVERYTHING_VERSION,
                    "runtimeHint": "npx",
                    "transport": {"type": "stdio"},
                    "environmentVariables": [
                        {"name": "EVERYTHING_TOKEN", "isSecret": True, "isRequired": True, "description": "a token"},
                        {"name": "npm_config_offline", "default": "true"},  # npx never reaches the registry
                        {"name": "OPTIONAL_THING", "description": "not required, no default: left out"},
                    ],
                }
            ],
            "_meta": {"io.modelcontextprotocol.registry/publisher-provided": {"anything": 1}},
        },
    )
    # without the required secret: a usage error naming it and how to give it; nothing written
    code, out, _ = add(tmp_path, str(src), "--yes", cwd=PEERS)
    assert code == 2 and "EVERYTHING_TOKEN (secret)" in out["error"] and "--env EVERYTHING_TOKEN=VALUE" in out["error"]
    assert (tmp_path / "config.yaml").read_text() == CONFIG

    # cwd .peers: npx finds the package installed there (the server's cwd is the engine's when not configured)
    code, out, err = add(tmp_path, str(src), "--env", f"EVERYTHING_TOKEN={CANARY}", "--yes", cwd=PEERS)
    assert code == 0, (out, err)
    assert out["server"] == "everything" and out["written"] is True
    assert out["test"]["ok"] is True and {"echo", "get-env"} <= {t["name"] for t in out["test"]["tools"]}
    assert out["entry"]["command"] == ["npx", "-y", f"@modelcontextprotocol/server-everything@{EVERYTHING_VERSION}"]
    assert out["keyring"] == ["EVERYTHING_EVERYTHING_TOKEN"]
    text = (tmp_path / "config.yaml").read_text()
    assert CANARY not in text and "EVERYTHING_TOKEN: ${keyring:EVERYTHING_EVERYTHING_TOKEN}" in text
    assert text.startswith("# servers added by hand") and "# none yet" in text  # comments kept
    assert "OPTIONAL_THING" not in text and "npm_config_offline: 'true'" in text
    assert ring(tmp_path) == {"EVERYTHING_EVERYTHING_TOKEN": CANARY}
    assert (tmp_path / "config.yaml.bak").read_text() == CONFIG  # saved through ConfigDocument (atomic, backup)

    # the saved entry runs with the value from the keyring: get-env shows the variable, its value masked
    proc = subprocess.run(
        [
            str(ENTRY_POINT),
            "--config",
            str(tmp_path / "config.yaml"),
            "--json",
            "mcp",
            "call",
            "mcp_everything_get_env",
        ],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        cwd=PEERS,
        timeout=90,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "EVERYTHING_TOKEN" in proc.stdout and CANARY not in proc.stdout + proc.stderr

    # the same again: the id exists, refused without --id; with --id it is a second server
    code, out, _ = add(tmp_path, str(src), "--env", f"EVERYTHING_TOKEN={CANARY}", "--yes", cwd=PEERS)
    assert code == 2 and "mcp.servers.everything already exists" in out["error"] and "--id" in out["error"]
    code, out, _ = add(tmp_path, str(src), "--env", f"EVERYTHING_TOKEN={CANARY}", "--id", "ev2", "--yes", "--no-test")
    assert (
        code == 0
        and out["test"] is None
        and "${keyring:EV2_EVERYTHING_TOKEN}" in (tmp_path / "config.yaml").read_text()
    )


def test_pypi_server_json_runs_the_installed_package(tmp_path: Path) -> None:
    import importlib.metadata

    installed = importlib.metadata.version("mcp-server-time")
    src = server_json(
        tmp_path,
        {
            "name": "io.github.modelcontextprotocol/time",
            "description": "Time and timezone conversion",
            "version": "1.0.0",
            "packages": [
                {
                    "registryType": "nuget",
                    "identifier": "Some.Server",
                    "version": "1.0.0",
                    "transport": {"type": "stdio"},
                },
                {
                    "registryType": "pypi",
                    "identifier": "mcp-server-time",
                    "version": installed,
                    "runtimeHint": "uvx",
                    "transport": {"type": "stdio"},
                    "packageArguments": [
                        {
                            "type": "named",
                            "name": "--local-timezone",
                            "value": "{tz}",
                            "variables": {"tz": {"default": "UTC"}},
                        }
                    ],
                },
            ],
        },
    )
    empty = tmp_path / "bin"
    empty.mkdir()
    code, out, err = add(tmp_path, str(src), "--yes", path=str(empty))  # no uvx, no pipx: the engine's environment
    assert code == 0, (out, err)
    assert out["entry"]["command"] == ["{python}", "-m", "mcp_server_time", "--local-timezone", "UTC"]
    assert any("nuget" in n and "not supported" in n for n in out["notes"])
    assert any("engine's Python environment" in n for n in out["notes"])
    assert out["test"]["ok"] is True and "get_current_time" in {t["name"] for t in out["test"]["tools"]}
    assert out["server"] == "time" and "- '{python}'" in (tmp_path / "config.yaml").read_text()


def test_pypi_name_with_uvx_on_path(tmp_path: Path) -> None:
    """With uvx on PATH the entry runs ``uvx PKG==VER``; this uvx stands in for uv (offline) and runs the package."""
    import importlib.metadata

    installed = importlib.metadata.version("mcp-server-time")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    uvx = bin_dir / "uvx"
    uvx.write_text(
        f'#!/bin/sh\n[ "$1" = "mcp-server-time=={installed}" ] || exit 3\nexec "{sys.executable}" -m mcp_server_time\n'
    )
    uvx.chmod(0o755)
    code, out, err = add(tmp_path, f"pypi:mcp-server-time=={installed}", "--id", "clock", "--yes", path=str(bin_dir))
    assert code == 0, (out, err)
    assert out["entry"]["command"] == ["uvx", f"mcp-server-time=={installed}"] and out["test"]["ok"] is True


def test_remote_server_json_secret_header(tmp_path: Path, net_server: Any) -> None:
    server = net_server("http", "--require-header", f"X-Api-Key={CANARY}")
    src = server_json(
        tmp_path,
        {
            "name": "com.example/weather",
            "version": "2.0.0",
            "remotes": [
                {
                    "type": "streamable-http",
                    "url": server.url,
                    "headers": [{"name": "X-Api-Key", "isSecret": True, "isRequired": True, "description": "key"}],
                }
            ],
        },
    )
    code, out, err = add(tmp_path, str(src), "--header", f"X-Api-Key={CANARY}", "--yes")
    assert code == 0, (out, err)
    assert out["entry"] == {
        "transport": "http",
        "url": server.url,
        "headers": {"X-Api-Key": "${keyring:WEATHER_X-API-KEY}"},
    }
    assert out["test"]["ok"] is True  # the server refuses requests without the key: the test used the secret
    assert ring(tmp_path) == {"WEATHER_X-API-KEY": CANARY} and CANARY not in (tmp_path / "config.yaml").read_text()

    # a bare URL, and --env where a header belongs
    code, out, _ = add(tmp_path, server.url, "--id", "bare", "--env", "A=b", "--yes")
    assert code == 2 and "--env does not apply" in out["error"]
    code, out, _ = add(tmp_path, server.url, "--id", "bare", "--header", "X-Api-Key=wrong", "--yes")
    assert code == 1 and out["written"] is False and out["test"]["ok"] is False
    assert "bare" not in (tmp_path / "config.yaml").read_text()


def test_failed_test_saves_nothing_unless_forced(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/mcp"  # discard port: nothing listens
    code, out, _ = add(tmp_path, url, "--id", "gone", "--header", f"Authorization=Bearer {CANARY}", "--yes")
    assert code == 1 and out["written"] is False and "test failed" in out["message"]
    assert (tmp_path / "config.yaml").read_text() == CONFIG and ring(tmp_path) == {}
    code, out, _ = add(tmp_path, url, "--id", "gone", "--header", f"Authorization=Bearer {CANARY}", "--yes", "--force")
    assert code == 0 and out["written"] is True
    text = (tmp_path / "config.yaml").read_text()
    assert "Authorization: ${keyring:GONE_AUTHORIZATION}" in text and CANARY not in text  # looks like a credential
    # not on a terminal and no --yes: shown, not written
    code, out, _ = add(tmp_path, url, "--id", "again", "--no-test")
    assert code == 1 and out["written"] is False and "--yes" in out["message"] and "+    again:" in out["diff"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"name": "a/b", "packages": [', "not valid JSON"),
        ("[1, 2]", "the top level must be a JSON object"),
        ('{"name": "a/b", "version": "1"}', "has neither 'packages' nor 'remotes'"),
        ('{"name": "a/b", "packages": "npm"}', "packages: Input should be a valid list"),
        (
            '{"name": "a/b", "packages": [{"registryType": "npm", "identifier": "x", "version": "1",'
            ' "transport": {"type": 5}}]}',
            "packages[0].transport.type: Input should be 'stdio', 'streamable-http' or 'sse'",
        ),
        ('{"name": "a/b", "remotes": [{"type": "sse"}]}', "remotes[0].url: Field required"),
        (
            '{"name": "a/b", "packages": [{"registryType": "npm", "identifier": "x", "version": "1",'
            ' "transport": {"type": "stdio"}, "packageArguments": [{"type": "named"}]}]}',
            "packages[0].packageArguments[0]: a named argument needs 'name'",
        ),
        ("[" * 5000 + "]" * 5000, "nested deeper than"),
        ('{"name": "a/b", "pad": "' + "x" * 300_000 + '"}', "larger than 256 KiB"),
    ],
    ids=[
        "bad-json",
        "array",
        "nothing-to-run",
        "packages-type",
        "transport-type",
        "remote-url",
        "named-arg",
        "deep",
        "large",
    ],
)
def test_malformed_server_json(tmp_path: Path, content: str, expected: str) -> None:
    src = tmp_path / "server.json"
    src.write_text(content)
    code, out, _ = add(tmp_path, str(src), "--yes")
    assert code == 2 and expected in out["error"] and str(src) in out["error"], out
    assert (tmp_path / "config.yaml").read_text() == CONFIG
