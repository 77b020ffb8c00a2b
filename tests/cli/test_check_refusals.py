"""``ava-engine check`` refuses what would otherwise be read quietly wrong or slowly, naming file, line and key.

An MCP server with both ``command`` and ``url`` (one of them was silently ignored), an ``asterisk.ari_url`` that
is not an http(s) URL (the ARI client failed later, at the first call), and a deeply nested YAML document (a 4 MB
``[[[[…]]]]`` took seconds inside the parser and was reported without a line or the limit). Run through the
installed entry point: exit code 2, the message on stderr, or in ``--json``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ENTRY_POINT = Path(sys.executable).parent / "ava-engine"


def check(config: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    assert ENTRY_POINT.exists(), f"{ENTRY_POINT} is missing: install the package (make test does) first"
    return subprocess.run(
        [str(ENTRY_POINT), "--config", str(config), *extra, "check"],
        capture_output=True,
        text=True,
        timeout=120,
    )


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("transport", ["", "      transport: http\n", "      transport: stdio\n"])
def test_a_server_with_both_command_and_url_is_refused(tmp_path: Path, transport: str) -> None:
    config = write(
        tmp_path,
        "engine:\n  http: {enabled: false}\nmcp:\n  servers:\n    ok:\n      command: [echo]\n"
        f"    both:\n{transport}      command: [npx, some-server]\n      url: http://127.0.0.1:9/mcp\n",
    )
    done = check(config)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{config}:7: mcp.servers.both: give either command (stdio) or url (http/sse), not both" in done.stderr


@pytest.mark.parametrize("url", ["ws://127.0.0.1:8088/ari", "127.0.0.1:8088", "http//127.0.0.1:8088/ari", "http://"])
def test_an_ari_url_that_is_not_http_is_refused_with_what_to_write(tmp_path: Path, url: str) -> None:
    config = write(tmp_path, f"engine:\n  http: {{enabled: false}}\nasterisk:\n  username: ava\n  ari_url: '{url}'\n")
    done = check(config, "--json")
    assert done.returncode == 2, done.stdout + done.stderr
    error = json.loads(done.stdout)["error"]
    assert error.startswith(f"{config}:5: asterisk.ari_url: "), error
    assert "http://127.0.0.1:8088/ari" in error


@pytest.mark.parametrize("url", ["http://127.0.0.1:8088/ari", "https://pbx.example.com/ari", "http://[::1]:8088/ari"])
def test_an_http_ari_url_is_accepted(tmp_path: Path, url: str) -> None:
    config = write(tmp_path, f"engine:\n  http: {{enabled: false}}\nasterisk:\n  ari_url: '{url}'\n")
    done = check(config)
    assert "ari_url" not in done.stderr, done.stderr


def deep_sequences(depth: int) -> str:
    return "engine:\n  http: {enabled: false}\nx-deep: " + "[" * depth + "]" * depth + "\n"


def deep_mappings(depth: int) -> str:
    return "engine:\n  http: {enabled: false}\nx-deep:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(depth))


def deep_flow_mappings(depth: int) -> str:
    return "engine:\n  http: {enabled: false}\nx-deep: " + "{a: " * depth + "1" + "}" * depth + "\n"


@pytest.mark.parametrize(
    ("document", "line"),
    [
        (deep_sequences(2_000_000), 3),  # 4 MB of [[[[…]]]]
        (deep_flow_mappings(600_000), 3),
        (deep_mappings(1_900), 67),  # 4 MB of block mappings, each line indented deeper
    ],
    ids=["sequences", "flow-mappings", "block-mappings"],
)
def test_a_deeply_nested_document_is_refused_at_its_line_with_the_limit(
    tmp_path: Path, document: str, line: int
) -> None:
    config = write(tmp_path, document)
    assert config.stat().st_size > 3_000_000
    done = check(config)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"error: {config}:{line}: x-deep"), done.stderr[:500]
    assert "nested more than 64 levels deep" in done.stderr, done.stderr[:500]
    assert len(done.stderr) < 2_000  # the path is abbreviated, not 64 keys long


def test_nesting_up_to_the_limit_still_loads(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "engine:\n  http: {enabled: false}\nmcp:\n  servers:\n    fx:\n      command: [echo]\n      tools:\n"
        "        - name: t\n          probe_args: {a: " + "[" * 50 + "]" * 50 + "}\n",
    )
    done = check(config)
    assert "nested" not in done.stderr, done.stderr
