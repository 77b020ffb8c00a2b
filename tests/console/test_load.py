"""Load: thousands of events from many calls through the real bus and pump; the console still answers a key."""

from __future__ import annotations

from pathlib import Path

from console.app import AvaConsole
from engine.events import CallStarted, ToolCompleted, ToolRequested, TranscriptAdded

CALLS = 50
ROUNDS = 60  # 50 calls × 60 rounds × 3 events = 9000 events


async def test_console_answers_keys_under_load(config_path: Path, wait) -> None:
    app = AvaConsole(config_path, tick=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        engine = app.engine
        assert engine is not None
        for c in range(CALLS):
            engine.bus.publish(CallStarted(call_id=f"load-{c}", context="demo", provider="script", caller_name=f"c{c}"))
        for r in range(ROUNDS):
            for c in range(CALLS):
                cid, tc = f"load-{c}", f"tc_{r}"
                engine.bus.publish(TranscriptAdded(call_id=cid, role="user", text=f"round {r}"))
                engine.bus.publish(
                    ToolRequested(
                        call_id=cid,
                        tool_call_id=tc,
                        exposed_name="mcp_dice_roll",
                        server="dice",
                        tool="roll",
                        arguments={"expression": "2d6"},
                    )
                )
                engine.bus.publish(
                    ToolCompleted(
                        call_id=cid,
                        tool_call_id=tc,
                        exposed_name="mcp_dice_roll",
                        server="dice",
                        tool="roll",
                        status="success",
                        latency_ms=3.0,
                        message="7",
                    )
                )
            if r % 10 == 0:
                await pilot.pause(0)
        # A key press is handled while the backlog drains: F2 switches to the tool log.
        await pilot.press("f2")
        await wait(pilot, lambda: type(app.screen).__name__ == "ToolLogScreen")
        await wait(pilot, lambda: app.state.events_seen >= CALLS * (1 + 3 * ROUNDS), within=30)
        # Batching: far fewer messages than events.
        assert app.feed.batches < app.state.events_seen / 20
        table = app.screen.query_one("#invocations")
        await wait(pilot, lambda: table.row_count == 2000)  # type: ignore[attr-defined]
        await pilot.press("f1")
        await wait(pilot, lambda: type(app.screen).__name__ == "CallsScreen")
        calls = app.screen.query_one("#calls")
        assert calls.row_count == CALLS  # type: ignore[attr-defined]
