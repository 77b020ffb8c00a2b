"""Pilot tests of the approval queue on the Calls screen: a destructive MCP tool (a real server declaring
``destructiveHint``) asked for on a call waits; the panel shows it with its arguments and a countdown; ``y``
approves (it runs once), ``x`` denies (it never runs); the keys show in the footer only while something waits."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import pytest
import yaml

from console.app import AvaConsole
from console.approvals import PendingRow
from console.widgets.approval_panel import render_rows
from tests.console.helpers import record_notifications, type_text

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "fixtures" / "mcp_servers" / "destructive_server.py"


@pytest.fixture
def notes_config(config_path: Path) -> tuple[Path, Path]:
    """The console config with the notes server and an intent that deletes a note."""
    record = config_path.parent / "calls.jsonl"
    record.touch()
    cfg = yaml.safe_load(config_path.read_text())
    cfg["mcp"]["servers"] = {
        "notes": {"command": [sys.executable, str(SERVER), "--record", str(record)], "connect_timeout_ms": 60_000}
    }
    cfg["engine"]["approvals"] = {"timeout_ms": 60_000}
    config_path.write_text(yaml.safe_dump(cfg))
    script_path = config_path.parent / "script.yaml"
    script = yaml.safe_load(script_path.read_text())
    script["intents"].insert(
        0,
        {
            "name": "delete",
            "patterns": [r"delete (?P<name>\w+)"],
            "tools": [{"name": "mcp_notes_delete_note", "args": {"name": "{name}"}}],
            "reply": "{result}",
        },
    )
    script_path.write_text(yaml.safe_dump(script))
    return config_path, record


async def _ask_for_delete(pilot, app: AvaConsole, wait) -> str:
    await wait(pilot, lambda: app.engine_running, 60)  # it starts a Python MCP server: slow on a loaded machine
    await pilot.press("ctrl+n")
    await wait(pilot, lambda: app.focused is not None and app.focused.id == "calls", 30)  # s: talk
    await pilot.press("s")
    await wait(pilot, lambda: app.focused is not None and app.focused.id == "talk", 30)
    call_id = app.selected_call
    assert call_id is not None
    await type_text(pilot, "delete shopping")
    await pilot.press("enter")
    await wait(pilot, lambda: bool(app.approvals.rows), 30)
    await wait(pilot, lambda: bool(app.screen.query("#approvals")), 30)
    await pilot.press("escape")  # out of the talk box: y and x are keys again
    return call_id


def _panel_text(app: AvaConsole) -> str:
    return str(app.screen.query_one("#approvals").render())


def _footer_actions(app: AvaConsole) -> set[str]:
    return {b.action for _n, b, _e, _t in app.screen.active_bindings.values()}


async def test_y_approves_and_the_tool_runs_once(notes_config: tuple[Path, Path], wait) -> None:
    cfg, record = notes_config
    app = AvaConsole(cfg)
    async with app.run_test(size=(120, 40)) as pilot:
        notes = record_notifications(app)
        assert "approve_tool" not in _footer_actions(app)  # nothing waits: no approval keys
        call_id = await _ask_for_delete(pilot, app, wait)
        text = _panel_text(app)
        assert "mcp_notes_delete_note (notes) on " + call_id in text
        assert '{"name": "shopping"}' in text and "declares it destructive" in text
        assert re.search(r"▶ +\d+ s left", text), text
        assert any("waits for your approval" in n for n in notes)
        assert {"approve_tool", "deny_tool"} <= _footer_actions(app)
        assert record.read_text() == ""  # waiting: the server has not been called
        await pilot.press("y")
        await wait(pilot, lambda: any(i.exposed_name == "mcp_notes_delete_note" for i in app.state.invocations), 30)
        await wait(pilot, lambda: not app.approvals.rows, 30)
        inv = next(i for i in app.state.invocations if i.exposed_name == "mcp_notes_delete_note")
        await wait(pilot, lambda: inv.status == "success", 30)
        assert [json.loads(x) for x in record.read_text().splitlines()] == [{"tool": "delete_note", "name": "shopping"}]
        await wait(pilot, lambda: not app.screen.query_one("#approvals").display, 30)
        assert "approve_tool" not in _footer_actions(app)


async def test_x_denies_and_the_tool_never_runs(notes_config: tuple[Path, Path], wait) -> None:
    cfg, record = notes_config
    app = AvaConsole(cfg)
    async with app.run_test(size=(120, 40)) as pilot:
        call_id = await _ask_for_delete(pilot, app, wait)
        await pilot.press("x")
        await wait(pilot, lambda: not app.approvals.rows, 30)
        said = "the operator did not approve mcp_notes_delete_note"
        await wait(pilot, lambda: any(said in t for _, _, t in app.state.transcript(call_id)), 30)
        assert record.read_text() == ""


async def test_shift_x_denies_with_the_operators_reason(notes_config: tuple[Path, Path], wait) -> None:
    cfg, record = notes_config
    app = AvaConsole(cfg)
    async with app.run_test(size=(120, 40)) as pilot:
        call_id = await _ask_for_delete(pilot, app, wait)
        await pilot.press("X")
        await wait(pilot, lambda: app.screen.__class__.__name__ == "DenyReasonScreen", 30)
        await pilot.press("escape")  # leaving the dialog denies nothing
        await wait(pilot, lambda: app.screen.__class__.__name__ == "CallsScreen", 30)
        assert app.approvals.rows and record.read_text() == ""
        await pilot.press("X")
        await wait(pilot, lambda: app.screen.__class__.__name__ == "DenyReasonScreen", 30)
        await type_text(pilot, "keep it")
        await pilot.press("enter")
        await wait(pilot, lambda: not app.approvals.rows, 30)
        said = "the operator did not approve mcp_notes_delete_note: keep it"
        await wait(pilot, lambda: any(said in t for _, _, t in app.state.transcript(call_id)), 30)
        assert record.read_text() == ""


async def test_closing_the_console_denies_what_waits(notes_config: tuple[Path, Path], wait) -> None:
    """A console handed a running engine (not its own) stops being its approver when it closes."""
    from engine import Engine
    from engine.config import load_settings

    cfg, record = notes_config
    engine = Engine(load_settings(cfg), config_path=cfg)
    async with engine:
        app = AvaConsole(cfg, engine=engine)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait(pilot, lambda: app.engine_running, 60)
            call = await engine.start_call("demo")
            turn = asyncio.create_task(engine.user_said(call.call_id, "delete shopping"))
            await wait(pilot, lambda: bool(app.approvals.rows), 30)
            assert engine.executor.approvals.approvers == ("console",)
            (pending,) = engine.pending_approvals()
        assert engine.executor.approvals.approvers == ()
        reply = await turn  # denied when the console left: the turn goes on without the tool
        assert "the approver (console) left" in reply.text
        assert engine.pending_approvals() == []
    assert record.read_text() == ""
    assert pending.exposed_name == "mcp_notes_delete_note"


def test_countdown_and_order() -> None:
    rows = [
        PendingRow("ap-1", "c-1", "mcp_notes_delete_note", "notes", {"name": "a"}, "why one", 100.0),
        PendingRow("ap-2", "", "mcp_notes_delete_note", "notes", {"name": "b" * 600}, "why two", 130.0),
    ]
    text = render_rows(rows, now=85.2, keys=("a", "b", "c")).plain
    assert "▶ 15 s left  mcp_notes_delete_note (notes) on c-1" in text
    assert "\n  45 s left  mcp_notes_delete_note (notes) on an MCP client (no call)" in text
    assert "…" in text and "1 more waiting" in text
    assert "a approve the ▶ call  b deny it  c deny, say why" in text
    assert "0 s left" in render_rows(rows[:1], now=500.0).plain


async def test_the_keys_answer_the_selected_calls_approval_and_bracket_moves_the_mark(
    notes_config: tuple[Path, Path], wait
) -> None:
    """Two calls wait: the mark follows the selected call, y answers that one (not the oldest), ] moves the mark."""
    cfg, record = notes_config
    app = AvaConsole(cfg)
    async with app.run_test(size=(120, 40)) as pilot:
        first = await _ask_for_delete(pilot, app, wait)
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "calls", 30)
        await pilot.press("ctrl+n")
        await wait(pilot, lambda: app.selected_call not in (None, first), 30)
        second = app.selected_call
        assert second is not None
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "calls", 30)
        await pilot.press("s")
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "talk", 30)
        await type_text(pilot, "delete groceries")
        await pilot.press("enter")
        await wait(pilot, lambda: len(app.approvals.rows) == 2, 30)
        await pilot.press("escape")
        await wait(pilot, lambda: "▶" in _panel_text(app) and "more waiting (] next)" in _panel_text(app), 30)
        marked = next(line for line in _panel_text(app).splitlines() if line.startswith("▶"))
        assert marked.endswith(f"on {second}")  # the selected (newer) call's, not the oldest
        await pilot.press("right_square_bracket")
        await wait(
            pilot,
            lambda: any(ln.startswith("▶") and ln.endswith(f"on {first}") for ln in _panel_text(app).splitlines()),
            30,
        )
        await pilot.press("right_square_bracket")  # round the queue: back to the second call's
        await wait(
            pilot,
            lambda: any(ln.startswith("▶") and ln.endswith(f"on {second}") for ln in _panel_text(app).splitlines()),
            30,
        )
        await pilot.press("y")
        await wait(pilot, lambda: len(app.approvals.rows) == 1, 30)
        (left,) = app.approvals.rows.values()
        assert left.call_id == first  # the oldest still waits
        await wait(pilot, lambda: record.read_text().strip() != "", 30)
        assert [json.loads(x) for x in record.read_text().splitlines()] == [
            {"tool": "delete_note", "name": "groceries"}
        ]


def test_the_queue_targets_the_pick_then_the_selected_call_then_the_oldest() -> None:
    from console.approvals import ApprovalQueue

    q = ApprovalQueue()
    a = PendingRow("ap-1", "c-1", "t", "s", {}, "r", 10.0)
    b = PendingRow("ap-2", "c-2", "t", "s", {}, "r", 20.0)
    q.rows = {a.approval_id: a, b.approval_id: b}
    assert q.target(None) is a and q.target("c-2") is b and q.target("c-9") is a
    assert q.pick_next("c-2") is a and q.target("c-2") is a  # picked wins over the selection
    q.rows.pop("ap-1")
    assert q.target("c-2") is b  # the pick is gone: back to the selection rule
    assert ApprovalQueue().pick_next(None) is None
