"""Every built-in MCP server through the engine's MCP host, every tool called through the one execution path
(Engine.execute_tool), with valid and invalid input — run each of the three ways: a child process each (stdio),
inside the engine (``inprocess``), and all in one shared child (``bundled``)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from engine.app import Engine
from engine.config.models import Settings
from engine.sessions.session import CallSession

pytestmark = pytest.mark.slow


@pytest.fixture(params=["stdio", "inprocess", "bundled"])
async def engine(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Engine]:
    py = sys.executable
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "notes.txt").write_text("the dragon sleeps\n")
    args = {
        "dice": ["--seed", "7"],
        "aviation_atis": ["--metar-file", "metar_sample.txt"],
        "memory": ["--db", str(tmp_path / "mem.sqlite3")],
        "file_io": ["--root", str(tmp_path / "root")],
        "rules": [],
    }
    mode = request.param
    # What is tested is each tool's answer to valid and invalid input, not its speed: the tools' declared max
    # durations (500 ms for memory's sqlite) timed out on a loaded machine, so a generous timeout stands in for them.
    relaxed = {"defaults": {"timeout_ms": 30_000}}
    servers: dict[str, dict[str, Any]] = {
        sid: {"command": [py, "-m", f"engine.servers.{sid}", *argv], **relaxed}
        if mode == "stdio"
        else {"transport": mode, "target": f"engine.servers.{sid}.server:create", "args": argv, **relaxed}
        for sid, argv in args.items()
    }
    e = Engine(Settings.model_validate({"mcp": {"servers": servers}}))
    await e.start()
    try:
        yield e
    finally:
        await e.stop()


def operator(engine: Engine) -> CallSession:
    s = CallSession(call_id="op", context="operator", provider="none")
    s.shown_tools = frozenset(engine.registry.names())
    return s


CASES = [
    # (exposed name, arguments, expected status, a fragment of the message)
    ("mcp_dice_roll", {"expression": "2d6+1"}, "success", "total"),
    ("mcp_dice_roll", {"expression": "4d6kh3"}, "success", "total"),
    ("mcp_dice_roll", {"expression": "two d six"}, "success", "total"),
    ("mcp_dice_roll", {"expression": "1000000d6"}, "error", "dice"),
    ("mcp_dice_roll", {"expression": "banana"}, "error", ""),
    ("mcp_dice_roll", {}, "rejected", "expression: is required"),
    ("mcp_dice_list_tables", {}, "success", "weather"),
    ("mcp_dice_roll_table", {"table": "weather"}, "success", ""),
    ("mcp_dice_roll_table", {"table": "no_such_table"}, "error", "no_such_table"),
    ("mcp_aviation_atis_get_atis", {"icao": "LSZH"}, "success", "Zurich information"),
    ("mcp_aviation_atis_get_atis", {"icao": "ZZZZ"}, "error", "ZZZZ"),
    ("mcp_aviation_atis_get_atis", {"icao": "LSZ"}, "error", "4 letters"),
    ("mcp_aviation_atis_get_atis", {"icao": "LSZH", "metar_raw": "garbage"}, "error", "METAR"),
    ("mcp_memory_remember", {"subject": "Grimble", "fact": "owes the party ten gold"}, "success", "Grimble"),
    ("mcp_memory_query_entities", {"name": "Grimble"}, "success", "ten gold"),
    ("mcp_memory_search_facts", {"query": "gold"}, "success", "Grimble"),
    ("mcp_memory_get_summary", {"session_id": "nope"}, "success", ""),
    ("mcp_memory_remember", {"subject": "", "fact": "x"}, "error", "subject"),
    ("mcp_file_io_list_dir", {}, "success", "notes.txt"),
    ("mcp_file_io_read_file", {"path": "notes.txt"}, "success", ""),
    ("mcp_file_io_write_file", {"path": "out.txt", "content": "hello"}, "success", ""),
    ("mcp_file_io_read_file", {"path": "../etc/passwd"}, "error", ""),
    ("mcp_file_io_read_file", {"path": "/etc/passwd"}, "error", ""),
    ("mcp_rules_search_rules", {"query": "grappling"}, "success", "rappl"),
    ("mcp_rules_get_rule", {"id": "d20-advantage"}, "success", ""),
    ("mcp_rules_get_rule", {"id": "d20-nope"}, "error", "d20-nope"),
]


async def test_every_builtin_tool_through_the_host(engine: Engine) -> None:
    assert {s["id"]: s["state"] for s in engine.server_status()["servers"]} == {
        "dice": "up",
        "aviation_atis": "up",
        "memory": "up",
        "file_io": "up",
        "rules": "up",
    }
    session = operator(engine)
    failures = []
    for name, args, status, fragment in CASES:
        r = await engine.execute_tool(session, name, args)
        if r.status != status or fragment.lower() not in r.message.lower():
            failures.append(f"{name}({args}) -> {r.status}: {r.message}")
    assert failures == []
    # every tool of every built-in server was called at least once
    called = {c[0] for c in CASES}
    assert called == {n for n in engine.registry.names() if n.startswith("mcp_")}
