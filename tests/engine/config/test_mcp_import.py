"""The one MCP-JSON importer's rules: file-level errors name the file and line, entry problems name the entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.config import ConfigDocument, McpImportError, import_mcp_json
from engine.config.mcp_import import merge_plan, normalise_server_id, parse_mcp_json


def test_file_level_errors_name_the_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(McpImportError, match=r"^a\.json:2: not valid JSON: .* \(column 1\)"):
        parse_mcp_json('{"mcpServers":\n}', "a.json")
    with pytest.raises(McpImportError, match=r"no 'mcpServers' .* or 'servers' .* object found"):
        parse_mcp_json('{"other": 1}')
    with pytest.raises(McpImportError, match="top level must be a JSON object"):
        parse_mcp_json("[]")
    with pytest.raises(McpImportError, match=r"missing\.json: cannot read the file"):
        import_mcp_json(ConfigDocument.new(tmp_path / "c.yaml"), tmp_path / "missing.json")


def test_entries_are_converted_or_skipped_with_a_reason() -> None:
    plan = parse_mcp_json(
        json.dumps(
            {
                "mcpServers": {
                    "Web": {"type": "http", "url": "https://x.example/mcp", "headers": {"A": "b"}},
                    "web": {"command": "other"},
                    "ws": {"type": "websocket", "url": "ws://x"},
                    "cmd": {"command": ["not", "a", "string"]},
                    "http-no-url": {"type": "sse"},
                    "bad-url": {"url": "ftp://x"},
                    "envy": {"command": "x", "env": ["A=1"], "envFile": ".env"},
                }
            }
        )
    )
    assert plan.servers == {
        "web": {"transport": "http", "url": "https://x.example/mcp", "headers": {"A": "b"}},
        "envy": {"transport": "stdio", "command": ["x"]},
    }
    assert plan.renamed == {"Web": "web"}
    text = "\n".join(plan.problems)
    for expected in (
        "server 'web': its id 'web' is already used by another entry; skipped",
        "server 'ws': unknown server type 'websocket'",
        "server 'cmd': 'command' must be a non-empty",
        "server 'http-no-url': needs 'url'; skipped",
        "server 'bad-url': url:",
        "server 'envy'.env: must be an object of strings; ignored",
        "server 'envy': 'envFile'",
    ):
        assert expected in text


def test_merging_never_overwrites_and_is_idempotent(tmp_path: Path) -> None:
    src = tmp_path / "mcp.json"
    src.write_text(json.dumps({"servers": {"a": {"command": "x"}, "b": {"url": "http://127.0.0.1:9/mcp"}}}))
    doc = ConfigDocument.new(tmp_path / "config.yaml", "mcp:\n  servers:\n    b:\n      url: http://other\n")
    first = import_mcp_json(doc, src)
    assert sorted(first.added) == ["a"] and first.conflicts == [
        "mcp.servers.b already exists with a different config; not overwritten"
    ]
    again = import_mcp_json(doc, src)
    assert again.added == {} and again.unchanged == ["a"]
    assert again.summary()[-1] == f"nothing added from {src}"
    assert merge_plan({}, parse_mcp_json(src.read_text())) == (
        {"a": first.added["a"], "b": {"transport": "http", "url": "http://127.0.0.1:9/mcp"}},
        [],
        [],
    )


def test_server_ids_from_free_text() -> None:
    assert normalise_server_id("My Server!") == "my_server"
    assert normalise_server_id("9lives") == "s_9lives"
    long = normalise_server_id("a very long server name that goes on and on")
    assert len(long) == 32 and long == normalise_server_id("a very long server name that goes on and on")
    with pytest.raises(ValueError, match="empty server name"):
        normalise_server_id("  ")
