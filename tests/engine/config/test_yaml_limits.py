"""YAML input is bounded: alias bombs and oversized files are refused with the file and line, quickly."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from engine.bounds.yaml_loader import (
    MAX_ALIAS_VALUES,
    TooDeep,
    YAMLError,
    YamlLimitError,
    alias_bomb,
    depth_message,
    load_file,
    nesting,
    safe_load,
)
from engine.config import ConfigError, load_settings, load_settings_text
from engine.config.fragment import parse_yaml_fragment
from engine.servers.dice.tables import TableError, load_tables

ROOT = Path(__file__).resolve().parents[3]
ENTRY = ROOT / ".venv" / "bin" / "ava-engine"


def laughs(levels: int = 9, under: str = "") -> str:
    """The classic "billion laughs": each level is nine aliases of the one before (9**levels strings)."""
    out = [f'{under}a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        out.append(f"{under}a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(out) + "\n"


def test_the_bomb_is_about_a_kilobyte() -> None:
    assert len(laughs()) < 1100


def test_cli_check_refuses_an_alias_bomb_with_file_and_line(tmp_path: Path) -> None:
    cfg = tmp_path / "bomb.yaml"
    cfg.write_text("engine:\n  http:\n    enabled: false\nx-anchors:\n" + laughs(under="  "))
    # Before the bound, expanding 387 million strings ran for minutes: the timeout is the guard.
    p = subprocess.run(
        [str(ENTRY), "--config", str(cfg), "check", "--json"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert p.returncode == 2, p.stderr
    err = json.loads(p.stdout)["error"]
    assert "bomb.yaml:" in err and "alias bomb" in err and "x-anchors" in err


def test_alias_bomb_error_names_the_line_of_the_container_that_blows_up(tmp_path: Path) -> None:
    cfg = tmp_path / "bomb.yaml"
    cfg.write_text(laughs())
    with pytest.raises(ConfigError) as info:
        load_settings(cfg)
    (issue,) = info.value.issues
    # a5 is the first key whose own expansion goes over the bound (597,870 values; a4 has 66,429).
    assert (issue.file, issue.line, issue.path) == (str(cfg), 6, "a5")
    assert "expand this document to" in issue.message


def test_reasonable_aliases_still_load() -> None:
    first = (
        "    s0: &srv\n      transport: stdio\n      command: [echo, '0']\n"
        "      restart: {enabled: true, max_restarts: 3, backoff_ms: 100}\n"
    )
    rest = "".join(f"    s{i}:\n      <<: *srv\n      command: [echo, '{i}']\n" for i in range(1, 50))
    settings = load_settings_text("mcp:\n  servers:\n" + first + rest, "ok.yaml")
    assert len(settings.mcp.servers) == 50 and settings.mcp.servers["s49"].restart.max_restarts == 3
    shared = {"n": list(range(100))}
    assert alias_bomb({f"k{i}": shared for i in range(900)}) is None  # ~90,000 values from aliases: fine
    assert alias_bomb({f"k{i}": shared for i in range(1100)}) is not None  # ~110,000: refused
    assert MAX_ALIAS_VALUES == 100_000


def test_a_100_mb_config_is_refused_before_parsing(tmp_path: Path) -> None:
    cfg = tmp_path / "huge.yaml"
    with cfg.open("wb") as f:
        f.truncate(100 * 1024 * 1024)  # sparse: nothing is written, reading it would produce 100 MB
    with pytest.raises(ConfigError, match=r"is 104,857,600 bytes; YAML files are limited to 8,388,608 bytes"):
        load_settings(cfg)
    with pytest.raises(YamlLimitError, match="104,857,600 bytes"):
        load_file(cfg)


def test_console_fragments_and_the_servers_readers_are_bounded_too(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="alias bomb"):
        parse_yaml_fragment(laughs(), "tools")
    with pytest.raises(YAMLError, match="alias bomb") as info:
        safe_load(laughs())
    assert "line 6" in str(info.value)
    tables = tmp_path / "tables.yaml"
    tables.write_text("tables:\n" + laughs(under="  "))
    with pytest.raises(TableError, match="alias bomb"):
        load_tables(tables)
    assert safe_load("a: &x [1]\nb: *x\n") == {"a": [1], "b": [1]}


def test_a_cycle_is_sized_once_not_followed() -> None:
    loop: list[object] = [1, 2]
    loop.append(loop)
    assert alias_bomb({"a": loop}) is None


def test_sizes_are_not_counted_twice_for_shared_blocks() -> None:
    block = {"x": [1, 2]}
    assert alias_bomb({"a": block, "b": block}) is None


def test_deep_nesting_is_refused_by_the_servers_readers_and_fragments_too(tmp_path: Path) -> None:
    """The parsers compose recursively: without the bound, 200,000 levels was a RecursionError (not a YAMLError,
    so a dice table's loader crashed instead of reporting) or "nesting is too deep" without a line."""
    deep = "name: t\nrows:\n  - " + "[" * 200_000 + "]" * 200_000 + "\n"
    with pytest.raises(YAMLError, match="nested more than 64 levels deep") as info:
        safe_load(deep)
    assert "line 3" in str(info.value)
    tables = tmp_path / "tables.yaml"
    tables.write_text("tables:\n  - " + "{a: " * 100_000 + "1" + "}" * 100_000 + "\n")
    with pytest.raises(TableError, match="nested more than 64 levels deep"):
        load_tables(tables)
    with pytest.raises(ConfigError) as err:
        parse_yaml_fragment("a:\n  b: " + "[" * 70 + "]" * 70 + "\n", "tools")
    assert str(err.value) == "tools:2: a.b[0]…: " + depth_message()
    nested: list[Any] = []
    for _ in range(59):
        nested = [nested]
    assert safe_load("a: " + "[" * 60 + "]" * 60) == {"a": nested}


def test_a_document_libyaml_cannot_read_is_scanned_by_the_fallback() -> None:
    """libyaml only screens for depth; where it finds a syntax error, the parser that reads the document decides."""
    broken = "a: 'unclosed''\nb: " + "[" * 70 + "]" * 70 + "\n"
    asked: list[str] = []

    def fallback(text: str) -> TooDeep | None:
        asked.append(text)
        return TooDeep(7, ("from", "fallback"))

    assert nesting(broken, fallback=fallback) == TooDeep(7, ("from", "fallback")) and asked == [broken]
    assert nesting(broken) is None
    assert nesting("a: [[1]]\n", fallback=fallback) is None and len(asked) == 1  # shallow: no scan at all
    with pytest.raises(ConfigError, match="YAML syntax error"):  # the real parse reports the syntax error
        load_settings_text(broken, "broken.yaml")
