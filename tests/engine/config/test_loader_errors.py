"""Every malformed fixture config is reported with its file, line and key path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.config import ConfigError, load_settings, load_settings_text

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "configs"
MALFORMED = sorted((CONFIGS / "malformed").glob("*.yaml"))
EXPECT_RE = re.compile(r"^# expect: (\d+) (\S*): (.+)$")


def _expectation(path: Path) -> tuple[int, str, str]:
    first = path.read_text().splitlines()[0]
    match = EXPECT_RE.match(first)
    assert match, f"{path.name} must start with '# expect: LINE PATH: FRAGMENT'"
    return int(match.group(1)), match.group(2), match.group(3)


def test_there_are_many_malformed_fixtures() -> None:
    assert len(MALFORMED) >= 15


@pytest.mark.parametrize("path", MALFORMED, ids=lambda p: p.stem)
def test_malformed_config_names_file_line_and_key(path: Path) -> None:
    line, key_path, fragment = _expectation(path)
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={}, lookup_secret=lambda name: "unused")
    text = str(info.value)
    prefix = f"{path}:{line}: " + (f"{key_path}: " if key_path else "")
    matching = [row for row in text.splitlines() if row.startswith(prefix)]
    assert matching, f"no error line starts with {prefix!r}:\n{text}"
    assert any(fragment in row for row in matching), text
    issue = next(i for i in info.value.issues if i.line == line and i.path == key_path)
    assert issue.file == str(path)


def test_all_problems_are_reported_at_once() -> None:
    text = (
        "engine:\n"  # 1
        "  http:\n"  # 2
        "    port: -1\n"  # 3
        "  logging: {level: loud}\n"  # 4
        "mcp:\n"  # 5
        "  servers:\n"  # 6
        "    Bad:\n"  # 7
        "      command: [x]\n"  # 8
        "      restart: {backoff_ms: 0}\n"  # 9
    )
    with pytest.raises(ConfigError) as info:
        load_settings_text(text, "cfg.yaml")
    rows = str(info.value).splitlines()
    assert rows == [
        "cfg.yaml:3: engine.http.port: must be >= 0",
        "cfg.yaml:4: engine.logging.level: must be one of 'debug', 'info', 'warning' or 'error'",
        "cfg.yaml:7: mcp.servers.Bad: server id 'Bad' must match [a-z][a-z0-9_]* (at most 32 characters)",
        "cfg.yaml:9: mcp.servers.Bad.restart.backoff_ms: must be > 0",
    ]
    assert [i.line for i in info.value.issues] == [3, 4, 7, 9]


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "config.yaml"
    with pytest.raises(ConfigError) as info:
        load_settings(missing)
    assert str(info.value) == f"{missing}: config file not found"


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory"):
        load_settings(tmp_path)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"engine:\n  http:\n    host: caf\xe9\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert str(info.value) == f"{path}:3: is not UTF-8 text"


def test_all_duplicate_keys_are_listed_with_paths() -> None:
    text = "a:\n  b: 1\n  b: 2\nc:\n  - x: 1\n    x: 2\n"
    with pytest.raises(ConfigError) as info:
        load_settings_text(text, "d.yaml")
    assert str(info.value).splitlines() == [
        "d.yaml:3: a.b: duplicate key 'b' (first defined on line 2)",
        "d.yaml:6: c[0].x: duplicate key 'x' (first defined on line 5)",
    ]


def test_duplicate_key_error_does_not_show_values() -> None:
    text = "providers:\n  p:\n    api_key: sk-literal-one\n    api_key: sk-literal-two\n"
    with pytest.raises(ConfigError) as info:
        load_settings_text(text, "d.yaml")
    assert "sk-literal" not in str(info.value)


def test_yaml_tags_are_rejected_with_location() -> None:
    with pytest.raises(ConfigError) as info:
        load_settings_text("engine:\n  http:\n    host: !secret abc\n", "t.yaml")
    assert str(info.value).startswith("t.yaml:3: engine.http.host: YAML tags such as '!secret'")


def test_unquoted_date_is_accepted_as_text() -> None:
    settings = load_settings_text("mcp:\n  servers:\n    s:\n      command: [x]\n      mode: 2025-06-18\n", "x")
    assert settings.mcp.servers["s"].mode == "2025-06-18"


def test_dict_key_that_is_not_text() -> None:
    with pytest.raises(ConfigError) as info:
        load_settings_text("console:\n  keymap:\n    1: f1\n", "k.yaml")
    assert str(info.value) == "k.yaml:3: console.keymap: key 1 must be text, not a number (quote it)"


def test_comment_only_file_is_empty(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="the config is empty"):
        load_settings_text("# nothing here\n\n", "c.yaml")


def test_recursive_alias_is_an_error_not_a_crash() -> None:
    with pytest.raises(ConfigError) as info:
        load_settings_text("console: &a\n  keymap: *a\n", "r.yaml")
    assert str(info.value).startswith("r.yaml:2: console.keymap: ")


def test_anchors_and_merge_keys_work_and_keep_lines() -> None:
    text = (
        "x-restart: &restart\n"
        "  backoff_ms: 100\n"
        "mcp:\n"
        "  servers:\n"
        "    a:\n"
        "      command: [x]\n"
        "      restart:\n"
        "        <<: *restart\n"
        "        max_restarts: -1\n"
    )
    with pytest.raises(ConfigError) as info:
        load_settings_text(text, "m.yaml")
    rows = str(info.value).splitlines()
    assert "m.yaml:1: x-restart: unknown key 'x-restart'" in rows[0]
    assert rows[1] == "m.yaml:9: mcp.servers.a.restart.max_restarts: must be >= 0"
