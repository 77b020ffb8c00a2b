"""ConfigDocument: edits keep comments/order/references, validation before save, diff, .bak, conflicts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.config import ConfigConflictError, ConfigDocument, ConfigError, load_settings

BASE = """\
# ava config (user comment at the top)
engine:
  http:
    port: 8088   # the port
mcp:
  servers:
    # dice is the demo server
    dice:
      command: ["{python}", -m, engine.servers.dice]   # keep me
      restart:
        backoff_ms: 500
      tools:
        - name: roll
    time:
      command: [mcp-server-time]
providers:
  gpt:
    type: openai_chat
    api_key: ${keyring:openai_key}
"""

ENV: dict[str, str] = {}


def _secret(name: str) -> str:
    return "sk-fake-value-000"


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(BASE)
    return path


def test_set_and_save_keeps_comments_order_and_references(cfg: Path) -> None:
    doc = ConfigDocument.load(cfg)
    doc.set(("mcp", "servers", "dice", "restart", "backoff_ms"), 750)
    doc.set(("engine", "logging", "level"), "debug")
    settings = doc.save(env=ENV, lookup_secret=_secret)
    assert settings is not None
    assert settings.mcp.servers["dice"].restart.backoff_ms == 750
    text = cfg.read_text()
    expected = BASE.replace("backoff_ms: 500", "backoff_ms: 750").replace(
        "    port: 8088   # the port\n", "    port: 8088   # the port\n  logging:\n    level: debug\n"
    )
    assert text == expected
    assert Path(f"{cfg}.bak").read_text() == BASE
    assert load_settings(cfg, env=ENV, lookup_secret=_secret).engine.logging.level == "debug"


def test_bak_holds_the_previous_version_after_each_save(cfg: Path) -> None:
    doc = ConfigDocument.load(cfg)
    doc.set(("engine", "http", "port"), 9001)
    doc.save(lookup_secret=_secret)
    first = cfg.read_text()
    doc.set(("engine", "http", "port"), 9002)
    doc.save(lookup_secret=_secret)
    assert Path(f"{cfg}.bak").read_text() == first
    assert "port: 9002" in cfg.read_text()


def test_get_and_remove(cfg: Path) -> None:
    doc = ConfigDocument.load(cfg)
    assert doc.get(("mcp", "servers", "dice", "tools", 0, "name")) == "roll"
    assert doc.get(("providers", "gpt", "api_key")) == "${keyring:openai_key}"  # raw, not expanded
    assert doc.get(("nope",), None) is None
    with pytest.raises(KeyError, match=r"mcp\.servers\.zzz is not set"):
        doc.get(("mcp", "servers", "zzz", "command"))
    doc.remove(("mcp", "servers", "time"))
    with pytest.raises(KeyError, match=r"mcp\.servers\.time is not set"):
        doc.remove(("mcp", "servers", "time"))
    assert "time:" not in doc.text()
    with pytest.raises(KeyError, match="is not a mapping"):
        doc.set(("engine", "http", "port", "x"), 1)


def test_set_server_merges_and_keeps_comments(cfg: Path) -> None:
    doc = ConfigDocument.load(cfg)
    doc.set_server(
        "dice",
        {"command": ["{python}", "-m", "engine.servers.dice"], "restart": {"backoff_ms": 900}, "start": "lazy"},
    )
    doc.set_server("web", {"transport": "http", "url": "http://127.0.0.1:9/mcp"})
    doc.save(lookup_secret=_secret)
    text = cfg.read_text()
    assert "# keep me" in text and "# dice is the demo server" in text
    assert "tools:" not in text.split("time:")[0]  # removed from dice
    assert text.index("dice:") < text.index("time:") < text.index("web:")
    settings = load_settings(cfg, env=ENV, lookup_secret=_secret)
    assert settings.mcp.servers["dice"].start == "lazy"
    assert settings.mcp.servers["web"].url == "http://127.0.0.1:9/mcp"
    doc.remove_server("web")
    assert "web" not in doc.get(("mcp", "servers"))


def test_invalid_edit_is_refused_before_anything_is_written(cfg: Path) -> None:
    doc = ConfigDocument.load(cfg)
    doc.set(("mcp", "servers", "dice", "restart", "backoff_ms"), -1)
    with pytest.raises(ConfigError) as info:
        doc.save(lookup_secret=_secret)
    assert str(info.value) == f"{cfg}:11: mcp.servers.dice.restart.backoff_ms: must be > 0"
    assert cfg.read_text() == BASE
    assert not Path(f"{cfg}.bak").exists()


def test_diff(cfg: Path) -> None:
    doc = ConfigDocument.load(cfg)
    assert doc.diff() == ""
    doc.set(("engine", "http", "port"), 9000)
    diff = doc.diff()
    assert "-    port: 8088   # the port" in diff
    assert "+    port: 9000   # the port" in diff
    assert diff.startswith(f"--- {cfg} (on disk)\n+++ {cfg} (edited)\n")


def test_refuses_to_save_over_a_changed_file(cfg: Path) -> None:
    doc = ConfigDocument.load(cfg)
    doc.set(("engine", "http", "port"), 9000)
    cfg.write_text(BASE + "# edited by someone else\n")
    with pytest.raises(ConfigConflictError) as info:
        doc.save(lookup_secret=_secret)
    assert str(info.value) == (
        f"{cfg}: the file changed on disk since it was loaded; reload it and make the change again"
    )
    assert cfg.read_text().endswith("# edited by someone else\n")


def test_refuses_when_file_deleted_or_created(tmp_path: Path, cfg: Path) -> None:
    doc = ConfigDocument.load(cfg)
    cfg.unlink()
    with pytest.raises(ConfigConflictError, match="was deleted"):
        doc.save(lookup_secret=_secret)
    new_path = tmp_path / "new.yaml"
    fresh = ConfigDocument.new(new_path)
    fresh.set(("engine", "http", "port"), 8100)
    new_path.write_text("engine: {}\n")
    with pytest.raises(ConfigConflictError, match="was created"):
        fresh.save()


def test_new_document_saved_without_bak(tmp_path: Path) -> None:
    path = tmp_path / "sub.yaml"
    doc = ConfigDocument.new(path)
    doc.set(("engine", "http", "port"), 8100)
    doc.save()
    assert path.read_text() == "engine:\n  http:\n    port: 8100\n"
    assert not Path(f"{path}.bak").exists()


def test_save_keeps_permissions_and_leaves_no_temp_files(cfg: Path) -> None:
    os.chmod(cfg, 0o600)
    doc = ConfigDocument.load(cfg)
    doc.set(("engine", "http", "port"), 9000)
    doc.save(lookup_secret=_secret)
    assert cfg.stat().st_mode & 0o777 == 0o600
    assert Path(f"{cfg}.bak").stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in cfg.parent.iterdir()) == ["config.yaml", "config.yaml.bak"]


def test_load_errors_are_config_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml:2: YAML syntax error"):
        ConfigDocument.load(bad)
    with pytest.raises(ConfigError, match="config file not found"):
        ConfigDocument.load(tmp_path / "missing.yaml")
    bad.write_text("- a\n")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        ConfigDocument.load(bad)


def test_new_keys_go_before_the_blank_line_and_comments_of_the_next_section(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "engine:\n  http:\n    port: 1   # eol\n\n  # about logging\n  logging:\n    level: info  # lvl\n"
        "# top comment\nmcp: {}\n"
    )
    doc = ConfigDocument.load(path)
    doc.set(("engine", "http", "host"), "localhost")
    doc.set(("engine", "history_limit"), 2)
    assert doc.text() == (
        "engine:\n  http:\n    port: 1   # eol\n    host: localhost\n\n"
        "  # about logging\n  logging:\n    level: info  # lvl\n"
        "  history_limit: 2\n# top comment\nmcp: {}\n"
    )
    doc.save()
    assert load_settings(path).engine.http.host == "localhost"
