"""The approval queue with a real MCP server declaring annotations (tests/fixtures/mcp_servers/destructive_server.py):
the engine keeps the annotations as the server declared them, and a destructive call reaches the server only when
the operator approved it. Headless commands never hang on an approval (the installed ``ava-engine``)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import yaml

from engine.app import Engine
from engine.config import load_settings
from engine.events import ToolApprovalRequested, ToolApprovalResolved
from engine.sessions.session import CallSession
from tests.engine.mcp.helpers import FIXTURES, ROOT

ENTRY = ROOT / ".venv" / "bin" / "ava-engine"
SERVER = FIXTURES / "destructive_server.py"
#: A loaded machine may take long to start a Python MCP server: a ceiling, not a measured time.
SLOW = {"connect_timeout_ms": 60_000}


def write_config(tmp_path: Path, approve: list[str] | None = None) -> tuple[Path, Path]:
    record = tmp_path / "calls.jsonl"
    record.touch()
    (tmp_path / "s.yaml").write_text(
        yaml.safe_dump(
            {
                "greeting": "Notes here.",
                "intents": [
                    {
                        "name": "delete",
                        "patterns": [r"delete (?P<name>\w+)"],
                        "tools": [{"name": "mcp_notes_delete_note", "args": {"name": "{name}"}}],
                        "reply": "{result}",
                    }
                ],
                "fallback": "what?",
            }
        )
    )
    context: dict[str, object] = {"provider": "s", "tools": ["mcp_notes_*"]}
    if approve:
        context["approve"] = approve
    server = {"command": [sys.executable, str(SERVER), "--record", str(record)], **SLOW}
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "engine": {"http": {"enabled": False}, "approvals": {"timeout_ms": 30_000}},
                "providers": {"s": {"type": "scripted", "script": "s.yaml"}},
                "mcp": {"servers": {"notes": server}},
                "contexts": {"c": context},
            }
        )
    )
    return cfg, record


def arrived(record: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in record.read_text().splitlines()]


async def test_a_real_servers_destructive_hint_waits_for_the_operator(tmp_path: Path) -> None:
    cfg, record = write_config(tmp_path, approve=["mcp_notes_add_note"])
    engine = Engine(load_settings(cfg), config_path=cfg)
    engine.attach_approver("test")
    sub = engine.bus.subscribe(types={ToolApprovalRequested.type, ToolApprovalResolved.type})
    async with engine:
        d = engine.registry.get("mcp_notes_delete_note")
        assert d is not None and d.tool.definition.annotations == {"destructiveHint": True}
        session = CallSession(call_id="call-n", context="c", provider="s")
        session.shown_tools = frozenset(engine.registry.names())

        async def call(name: str, note: str) -> str:
            result = await engine.execute_tool(session, name, {"name": note})
            return result.status

        # read-only wins over destructive: runs at once
        assert await call("mcp_notes_peek_note", "a") == "success"
        # destructive, denied: never reaches the server
        task = asyncio.create_task(call("mcp_notes_delete_note", "b"))
        req = await asyncio.wait_for(sub.get(), 30)
        assert isinstance(req, ToolApprovalRequested) and req.server == "notes" and req.tool == "delete_note"
        assert "'notes' declares it destructive" in req.reason
        engine.deny_tool(req.approval_id, "keep it")
        assert await task == "rejected"
        # destructive, approved: reaches the server once
        task = asyncio.create_task(call("mcp_notes_delete_note", "c"))
        while not isinstance(req := await asyncio.wait_for(sub.get(), 30), ToolApprovalRequested):
            pass
        engine.approve_tool(req.approval_id)
        assert await task == "success"
        # destructiveHint false cannot lift the context's approve: it waits too
        task = asyncio.create_task(call("mcp_notes_add_note", "d"))
        while not isinstance(req := await asyncio.wait_for(sub.get(), 30), ToolApprovalRequested):
            pass
        assert "lists it under approve" in req.reason
        engine.deny_tool(req.approval_id)
        assert await task == "rejected"
    assert arrived(record) == [{"tool": "peek_note", "name": "a"}, {"tool": "delete_note", "name": "c"}]


def run_cli(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ENTRY), "--config", str(cfg), *args, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_headless_call_is_denied_at_once_and_never_runs(tmp_path: Path) -> None:
    """``ava-engine call`` has no operator: the destructive call is denied at once (30 s timeout configured, so a
    wait would show), the model hears why, and nothing reaches the server."""
    cfg, record = write_config(tmp_path)
    p = run_cli(cfg, "call", "--context", "c", "--say", "delete groceries")
    assert p.returncode == 0, p.stderr[-2000:]
    events = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    kinds = [e["type"] for e in events]
    assert "tool.approval_requested" in kinds
    resolved = next(e for e in events if e["type"] == "tool.approval_resolved")
    assert (resolved["outcome"], resolved["by"], resolved["reason"]) == (
        "denied",
        "engine",
        "no operator is attached to approve it",
    )
    rejected = next(e for e in events if e["type"] == "tool.rejected")
    assert "needs the operator's approval" in rejected["reason"]
    assert "tool.completed" not in kinds
    assert arrived(record) == []


def test_the_operators_mcp_call_is_its_own_approval(tmp_path: Path) -> None:
    cfg, record = write_config(tmp_path)
    p = run_cli(cfg, "mcp", "call", "mcp_notes_delete_note", "--args", '{"name": "old"}')
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(p.stdout)["status"] == "success"
    assert arrived(record) == [{"tool": "delete_note", "name": "old"}]
