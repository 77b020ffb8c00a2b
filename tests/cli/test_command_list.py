"""Every documented ``ava-engine`` command exists in the installed entry point, and every command it has is documented.

Why: ``mcp calibrate`` was documented in the README and passed its test, which patched the command into the CLI,
while the installed ``ava-engine`` had no such command. These tests only run the console script that pip installed
next to the interpreter, as a user would, and read the command names from the manual's command table
(docs/getting-started.md), its MCP command list (docs/mcp-servers.md) and DESIGN.md's CLI list.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: The console script pip installed beside this interpreter (``[project.scripts]`` in pyproject.toml).
ENTRY_POINT = Path(sys.executable).parent / "ava-engine"
FIXTURE_SERVER = ROOT / "tests" / "fixtures" / "mcp_servers" / "fixture_server.py"

#: DESIGN.md's CLI list (the design lives outside this repository, so it is copied here).
DESIGN_COMMANDS = {
    ("check",),
    ("serve",),
    ("mcp", "list"),
    ("mcp", "test"),
    ("mcp", "call"),
    ("tools",),
    ("call",),
    ("secrets", "set"),
    ("secrets", "get"),
    ("secrets", "list"),
    ("secrets", "delete"),
    ("import-mcp-json",),
}

_WORD = re.compile(r"[a-z][a-z0-9-]*(\|[a-z][a-z0-9-]*)*")


def _command_words(usage: str) -> set[tuple[str, ...]]:
    """``secrets set|get NAME [--x]`` -> {("secrets", "set"), ("secrets", "get")}: the leading lower-case words."""
    words = list(itertools.takewhile(_WORD.fullmatch, usage.replace("\\|", "|").split()))
    return set(itertools.product(*(w.split("|") for w in words))) if words else set()


def _doc_section(page: str, title: str) -> str:
    text = (DOCS / page).read_text(encoding="utf-8")
    assert title in text, f"docs/{page} has no section {title!r}"
    return text.split(title, 1)[1].split("\n#", 1)[0]


def readme_commands() -> set[tuple[str, ...]]:
    """The commands in the manual's command table and in the MCP page's command list."""
    found: set[tuple[str, ...]] = set()
    for line in _doc_section("getting-started.md", "## ava-engine commands").splitlines():
        if line.startswith("| `"):
            for usage in re.findall(r"`([^`]+)`", line.split(" | ")[0]):
                found |= _command_words(usage)
    for line in _doc_section("mcp-servers.md", "## Commands").splitlines():
        m = re.match(r"- `ava-engine ([^`]+)`", line)
        if m:
            found |= _command_words(m.group(1))
    return found


DOCUMENTED = sorted(readme_commands() | DESIGN_COMMANDS)


@functools.cache
def ava_engine(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the installed ``ava-engine`` (cached: the ``--help`` texts are shared by several tests)."""
    assert ENTRY_POINT.exists(), f"{ENTRY_POINT} is missing: install the package (make test does) first"
    return subprocess.run(
        [str(ENTRY_POINT), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )


def listed_subcommands(help_text: str) -> list[str]:
    """The sub-command names argparse lists (indented four spaces under the COMMAND/ACTION positional)."""
    return re.findall(r"^ {4}([a-z][a-z0-9-]*)\s", help_text, flags=re.MULTILINE)


def test_the_readme_table_is_read() -> None:
    # guards the parser above: a docs reshuffle must not turn the documented list into nothing
    assert {("check",), ("mcp", "calibrate"), ("secrets", "delete"), ("import-mcp-json",)} <= readme_commands()


def test_top_level_help_lists_every_documented_command() -> None:
    p = ava_engine("--help")
    assert p.returncode == 0, p.stderr
    listed = set(listed_subcommands(p.stdout))
    assert {words[0] for words in DOCUMENTED} <= listed, p.stdout


@pytest.mark.parametrize("words", DOCUMENTED, ids=" ".join)
def test_documented_command_exists(words: tuple[str, ...]) -> None:
    p = ava_engine(*words, "--help")
    assert p.returncode == 0, f"ava-engine {' '.join(words)} --help: exit {p.returncode}\n{p.stdout}{p.stderr}"
    assert p.stdout.startswith(f"usage: ava-engine {' '.join(words)} "), p.stdout


def test_every_command_is_documented_in_the_readme() -> None:
    documented = readme_commands()
    undocumented = []
    for top in listed_subcommands(ava_engine("--help").stdout):
        actions = listed_subcommands(ava_engine(top, "--help").stdout)
        candidates: list[tuple[str, ...]] = [(top, a) for a in actions] or [(top,)]
        for words in candidates:
            if words not in documented:
                undocumented.append(" ".join(words))
    assert undocumented == [], "add these to the command table in docs/getting-started.md"


def _calibration_config(tmp_path: Path) -> Path:
    # --meta makes the fixture server declare `echo` idempotent (in _meta); every other tool is not.
    cfg = {
        "engine": {"http": {"enabled": False}},
        "mcp": {"servers": {"fx": {"transport": "stdio", "command": ["{python}", str(FIXTURE_SERVER), "--meta"]}}},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


@pytest.mark.timeout(90)
def test_mcp_calibrate_probes_only_idempotent_tools_json(tmp_path: Path) -> None:
    config = _calibration_config(tmp_path)
    p = ava_engine("--config", str(config), "mcp", "calibrate", "fx", "--probes", "3", "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    report = json.loads(p.stdout)
    assert (report["server"], report["environment"], report["probes_per_tool"]) == ("fx", "local", 3)
    rows = {r["name"]: r for r in report["tools"]}
    echo = rows.pop("echo")
    assert echo["result"] == "calibrated" and echo["outcomes"] == {"success": 3}, echo
    assert echo["exposed_name"] == "mcp_fx_echo" and echo["tier"] in ("fast", "standard", "deep")
    # the non-idempotent tools (crash, fail, add_tool, ...) are never called
    assert {"crash", "fail", "add_tool"} <= set(rows)
    assert {r["result"] for r in rows.values()} == {"skipped"}
    assert {r["reason"] for r in rows.values()} == {
        "not read-only or idempotent (by annotation or config): never probed"
    }
    assert (report["calibrated"], report["skipped"]) == (1, len(rows))


@pytest.mark.timeout(90)
def test_mcp_calibrate_text_output(tmp_path: Path) -> None:
    config = _calibration_config(tmp_path)
    p = ava_engine("--config", str(config), "mcp", "calibrate", "fx", "--probes", "2")
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert re.fullmatch(r"server fx \(local\): 1 calibrated, \d+ skipped, 2 probes per tool", lines[0]), lines[0]
    echo = [line for line in lines if line.split()[0] == "mcp_fx_echo"]
    assert len(echo) == 1 and re.search(r"\b(FAST|STANDARD|DEEP)\b.* p50 .* ms +p99 .* ms", echo[0]), echo
    assert (
        "  mcp_fx_crash" in p.stdout
        and "skipped: not read-only or idempotent (by annotation or config): never probed" in p.stdout
    )


def test_mcp_calibrate_unknown_server_is_a_usage_error(tmp_path: Path) -> None:
    config = _calibration_config(tmp_path)
    p = ava_engine("--config", str(config), "--json", "mcp", "calibrate", "nosuch")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "unknown MCP server 'nosuch' (configured: fx)" in p.stdout
