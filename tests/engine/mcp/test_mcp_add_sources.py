"""How ``plan_add`` reads each kind of source (the entry ``mcp add`` and the console's add dialog both build):
package names and their guesses, runners present or missing, server.json arguments, variables and OCI images."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.config.mcp_add import McpAddError, plan_add


def on_path(*programs: str) -> Any:
    return lambda name: f"/usr/bin/{name}" if name in programs else None


def test_package_names() -> None:
    which = on_path("npx", "uvx")
    p = plan_add("@scope/weather-mcp", which=which)
    assert p.entry["command"] == ["npx", "-y", "@scope/weather-mcp"] and p.suggested_id == "weather_mcp"
    assert plan_add("npm:left-pad@1.3.0", which=which).entry["command"] == ["npx", "-y", "left-pad@1.3.0"]
    assert plan_add("weather@2.0.0", which=which).entry["command"] == ["npx", "-y", "weather@2.0.0"]
    assert plan_add("pypi:mcp-foo==0.2", which=which).entry["command"] == ["uvx", "mcp-foo==0.2"]
    assert plan_add("mcp-foo==0.2", which=which).entry["command"] == ["uvx", "mcp-foo==0.2"]
    guessed = plan_add("not-installed-anywhere-xyz", which=which)
    assert guessed.entry["command"][0] == "npx" and "write pypi:not-installed-anywhere-xyz" in guessed.notes[0]
    installed = plan_add("mcp-server-time", which=which)  # in the engine's venv: read as PyPI
    assert installed.entry["command"] == ["uvx", "mcp-server-time"] and "npm:mcp-server-time" in installed.notes[0]
    p = plan_add("pypi:mcp-foo", which=on_path("pipx"))
    assert p.entry["command"] == ["pipx", "run", "--spec", "mcp-foo", "mcp-foo"] and "uvx is not on PATH" in p.notes[0]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("", "SOURCE is empty"),
        ("npm:-rf", "not a valid npm package name"),
        ("npm:x@1 2", "is not a package version"),
        ("oci:ghcr.io/x/y", "oci: is not a source kind"),
        ("ftp://example.com/mcp", "ftp: is not a source kind"),
        ("https:///nohost", "is not an http(s) URL"),
        ("pypi:surely-not-installed-xyz", "needs uvx (uv) or pipx on PATH"),
        ("npm:x", "needs npx (Node.js) on PATH"),
        ("/no/such/server.json", "cannot read the file"),
    ],
)
def test_bad_sources(source: str, message: str) -> None:
    with pytest.raises(McpAddError, match=None) as e:
        plan_add(source, which=on_path())
    assert message in str(e.value)


def write(tmp: Path, data: dict[str, Any]) -> str:
    p = tmp / "server.json"
    p.write_text(json.dumps(data))
    return str(p)


def test_server_json_arguments_variables_and_oci(tmp_path: Path) -> None:
    src = write(
        tmp_path,
        {
            "name": "io.github.acme/files",
            "packages": [
                {
                    "registryType": "oci",
                    "identifier": "ghcr.io/acme/files",
                    "version": "1.2.0",
                    "runtimeHint": "docker",
                    "transport": {"type": "stdio"},
                    "runtimeArguments": [
                        {
                            "type": "named",
                            "name": "--mount",
                            "value": "type=bind,src={dir},dst=/data",
                            "variables": {"dir": {"isRequired": True, "format": "filepath"}},
                        }
                    ],
                    "packageArguments": [{"type": "positional", "valueHint": "root", "default": "/data"}],
                    "environmentVariables": [{"name": "LOG_LEVEL", "default": "info"}],
                }
            ],
        },
    )
    p = plan_add(src, which=on_path("docker"))
    assert [n.name for n in p.needed] == ["dir"] and p.needed[0].how() == "--arg dir=VALUE"
    p = plan_add(src, args={"dir": "/srv/files"}, which=on_path("docker"))
    assert not p.needed and p.suggested_id == "files"
    assert p.entry["command"] == [
        "docker",
        "run",
        "-i",
        "--rm",
        "--mount",
        "type=bind,src=/srv/files,dst=/data",
        "-e",
        "LOG_LEVEL",
        "ghcr.io/acme/files:1.2.0",
        "/data",
    ]
    assert p.entry["env"] == {"LOG_LEVEL": "info"}
    with pytest.raises(McpAddError, match="needs docker on PATH"):
        plan_add(src, args={"dir": "/x"}, which=on_path())


def test_package_that_cannot_run_falls_back_to_remote(tmp_path: Path) -> None:
    src = write(
        tmp_path,
        {
            "name": "com.example/api",
            "packages": [
                {"registryType": "npm", "identifier": "x", "version": "latest", "transport": {"type": "stdio"}},
                {
                    "registryType": "npm",
                    "identifier": "y",
                    "version": "1",
                    "transport": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
                },
            ],
            "remotes": [
                {
                    "type": "sse",
                    "url": "https://{tenant}.example.com/sse",
                    "headers": [{"name": "X-Trace", "value": "on"}],
                }
            ],
        },
    )
    with pytest.raises(McpAddError, match=r"the URL needs a value for tenant \(--arg tenant=VALUE\)"):
        plan_add(src, which=on_path("npx"))
    p = plan_add(src, args={"tenant": "acme"}, which=on_path("npx"))
    assert p.entry == {"transport": "sse", "url": "https://acme.example.com/sse", "headers": {"X-Trace": "on"}}
    assert any("'latest' is not a version" in n for n in p.notes)
    assert any("runs its own HTTP server" in n for n in p.notes) and p.suggested_id == "api"


def test_extra_values_and_secret_keys(tmp_path: Path) -> None:
    src = write(
        tmp_path,
        {
            "name": "a/b",
            "packages": [
                {
                    "registryType": "npm",
                    "identifier": "b",
                    "version": "1",
                    "transport": {"type": "stdio"},
                    "environmentVariables": [{"name": "TOKEN", "isSecret": True, "isRequired": True}],
                }
            ],
        },
    )
    p = plan_add(src, env={"TOKEN": "x", "EXTRA": "1"}, which=on_path("npx"))
    assert p.entry["env"] == {"TOKEN": "x", "EXTRA": "1"} and p.secret_keys == frozenset({"env:TOKEN"})
    with pytest.raises(McpAddError, match="--header does not apply"):
        plan_add(src, headers={"A": "b"}, which=on_path("npx"))


def test_secret_arguments_become_keyring_references(tmp_path: Path) -> None:
    from engine.config.mcp_add import finalise

    src = write(
        tmp_path,
        {
            "name": "a/api",
            "packages": [
                {
                    "registryType": "npm",
                    "identifier": "api",
                    "version": "1",
                    "transport": {"type": "stdio"},
                    "packageArguments": [
                        {"type": "named", "name": "--token", "isSecret": True, "isRequired": True},
                        {
                            "type": "named",
                            "name": "--auth",
                            "value": "Bearer {key}",
                            "variables": {"key": {"isSecret": True, "isRequired": True}},
                        },
                        {"type": "positional", "value": "serve"},
                    ],
                    "environmentVariables": [{"name": "API_KEY", "isSecret": True}, {"name": "MODE", "value": "x"}],
                }
            ],
        },
    )
    p = plan_add(src, which=on_path("npx"))
    assert {(n.name, n.secret) for n in p.needed} == {("--token", True), ("key", True)}
    p = plan_add(src, args={"--token": "t-1", "key": "k-2"}, env={"API_KEY": "e-3"}, which=on_path("npx"))
    assert "t-1" not in json.dumps(p.entry) and "k-2" not in json.dumps(p.entry)  # held behind markers
    entry, secrets = finalise("api", p.entry, p, p.secret_keys)
    assert entry["command"] == [
        "npx",
        "-y",
        "api@1",
        "--token",
        "${keyring:API_TOKEN}",
        "--auth",
        "Bearer ${keyring:API_KEY}",
        "serve",
    ]
    assert entry["env"] == {"API_KEY": "${keyring:API_API_KEY}", "MODE": "x"}
    assert secrets == {"API_TOKEN": "t-1", "API_KEY": "k-2", "API_API_KEY": "e-3"}
    kept, only_args = finalise("api", p.entry, p, p.secret_keys, move=False)  # the console's form keeps env rows
    assert kept["env"] == {"API_KEY": "e-3", "MODE": "x"} and set(only_args) == {"API_TOKEN", "API_KEY"}
