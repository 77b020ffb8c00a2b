"""A replay inside a running console is history (issue 34 item 1): a recording with an approval request, a tool's
question to the operator and an engine error, replayed (Ctrl+O's path) beside a live call, opens no dialog, queues
no approval, moves none of the header's live counts, and the live call goes on. A key on the replayed call never
reaches the engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from console.app import AvaConsole
from console.replay import PREFIX
from console.screens.elicitation import ElicitationScreen
from engine.events import (
    CallEnded,
    CallStarted,
    ElicitationRequested,
    ElicitationResolved,
    ElicitationWaiting,
    EngineError,
    Event,
    ToolApprovalRequested,
    ToolApprovalResolved,
    ToolCompleted,
    ToolRequested,
    TranscriptAdded,
)
from tests.console.helpers import record_notifications

RECORDED_CALL = "call-1"  # the live call's id too: the replay renames its calls, so they never collide


def write_recording(path: Path, call_id: str = RECORDED_CALL) -> Path:
    """A recorded call whose tool waited for an approval and asked the operator a question (as the recorder writes
    it: a header line, then one event per line)."""
    common: dict[str, Any] = {"call_id": call_id, "tool_call_id": "t1", "exposed_name": "mcp_tables_book_table"}
    events: list[Event] = [
        CallStarted(call_id=call_id, context="demo", provider="scripted", caller_name="Recorded"),
        TranscriptAdded(call_id=call_id, role="user", text="book a table"),
        ToolRequested(**common, server="tables", tool="book_table", arguments={"when": "8pm"}),
        ToolApprovalRequested(
            approval_id="a1",
            **common,
            server="tables",
            tool="book_table",
            reason="asks first",
            timeout_s=60,
            deadline=4e9,
        ),
        ToolApprovalResolved(approval_id="a1", **common, outcome="approved", by="operator"),
        ElicitationRequested(
            elicitation_id="e1",
            **common,
            server="tables",
            tool="book_table",
            ask="operator",
            mode="form",
            message="How many guests?",
            deadline=4e9,
            timeout_s=60,
            schema={"type": "object", "properties": {"guests": {"type": "integer"}}},
        ),
        ElicitationWaiting(elicitation_id="e1", call_id=call_id, tool_call_id="t1", who="operator"),
        ElicitationResolved(elicitation_id="e1", **common, action="accept", by="operator", content={"guests": 4}),
        EngineError(message="recorded trouble", call_id=call_id),
        ToolCompleted(**common, server="tables", tool="book_table", status="error", latency_ms=5, message="full"),
        CallEnded(call_id=call_id, reason="hangup", duration_s=2.0),
    ]
    t0 = 1_700_000_000.0
    lines = [{"type": "recording.header", "format": 1, "call_id": call_id, "started": t0, "engine_version": "test"}]
    ts = t0
    for ev in events:
        # the question waits half a second for the operator (at 1× a dialog would be up that long)
        ts += 0.5 if isinstance(ev, ElicitationResolved) else 0.05
        lines.append({**ev.to_dict(), "ts": ts})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


class Watch:
    """What the console showed at any moment while it ran (sampled at every wait step)."""

    def __init__(self, app: AvaConsole) -> None:
        self.app = app
        self.dialogs: set[str] = set()
        self.queued: set[str] = set()
        self.replayed_live: set[str] = set()
        self.counts: set[int] = set()

    def look(self) -> None:
        app = self.app
        self.dialogs |= {type(s).__name__ for s in app.screen_stack if isinstance(s, ElicitationScreen)}
        self.queued |= set(app.approvals.rows) | set(app.elicitations.rows)
        self.replayed_live |= {c for c in app.state.calls if c.startswith(PREFIX)}
        self.counts.add(int(app.sub_title.split(" call", 1)[0]) if " call" in app.sub_title else -1)


async def _replay(app: AvaConsole, pilot: Any, wait: Any, path: Path, speed: float, watch: Watch) -> None:
    before = app.replay

    def finished() -> bool:
        watch.look()
        r = app.replay
        return r is not before and r is not None and r.done and PREFIX + RECORDED_CALL in app.state.ended

    app.start_replay(path, speed)
    await wait(pilot, finished, 30)


async def test_a_replay_beside_a_live_call_is_history(config_path: Path, tmp_path: Path, wait) -> None:
    recording = write_recording(tmp_path / "recorded.jsonl")
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        notes = record_notifications(app)
        await wait(pilot, lambda: app.engine_running, 60)
        await pilot.press("ctrl+n")
        await wait(pilot, lambda: app.selected_call in app.state.calls)
        live = app.selected_call
        assert live == RECORDED_CALL
        await wait(pilot, lambda: app.sub_title.startswith("1 call "))
        watch = Watch(app)
        for speed in (1.0, 0.0):  # at its pace (one event a batch) and instant (the whole call in one batch)
            await _replay(app, pilot, wait, recording, speed, watch)
        replayed = PREFIX + RECORDED_CALL
        assert [t for _, _, t in app.state.transcript(replayed)] == ["book a table"] * 2  # it was shown, twice
        # a key on the replayed call: the console says it is a replay, the engine never hears of it
        app.selected_call = replayed
        await pilot.press("f7")
        await wait(pilot, lambda: any("replay" in n and "nothing" in n for n in notes), 10)
        # the live call goes on: it answers the next line
        app.selected_call = live
        await pilot.press("escape")
        app.screen.query_one("#calls").focus()
        await pilot.press("s")
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "talk")
        await pilot.press(*"hello", "enter")
        await wait(pilot, lambda: any("listening" in t for _, _, t in app.state.transcript(live)), 30)
        watch.look()
        assert app.is_running and app.engine_running and live in app.state.calls
        assert app.engine is not None and [c.call_id for c in app.engine.calls_info()] == [live]
        assert watch.dialogs == set() and watch.queued == set(), (watch.dialogs, watch.queued)
        assert watch.replayed_live == set() and watch.counts == {1}, (watch.replayed_live, watch.counts)
        assert "0 errors/5 min" in app.sub_title
        assert not [n for n in notes if "approval" in n or "question" in n]
