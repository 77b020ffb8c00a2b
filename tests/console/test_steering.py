"""Pilot tests of live steering on the Calls screen, by keyboard alone: ``i`` whispers to the selected call's agent
(shown in the transcript as hidden, given to its next turn only), ``S`` makes it say a line next (shown as the
operator's and as the agent's words); the dialog explains itself, refuses an empty line, Esc leaves it; a key
with no live call selected says what to do."""

from __future__ import annotations

from pathlib import Path

from console.app import AvaConsole
from tests.console.helpers import type_text

WHISPER = "The caller is the baron; flatter him."
LINE = "A raven lands on the sill."


def _transcript_text(app: AvaConsole) -> str:
    log = app.screen.query_one("#transcript")
    words = " ".join(str(line.text) for line in log.lines).split()  # type: ignore[attr-defined]
    return " ".join(words)  # the log wraps to its width: compare the words


async def test_whisper_and_say_now_from_the_keyboard(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("ctrl+n")
        await wait(pilot, lambda: bool(app.state.calls) and app.selected_call in app.state.calls)
        call_id = app.selected_call
        assert call_id is not None
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "calls")  # its keys work here
        await pilot.press("escape")
        session = next(s for s in app.engine.live_calls() if s.call_id == call_id)  # type: ignore[union-attr]

        await pilot.press("i")
        await wait(pilot, lambda: type(app.screen).__name__ == "SteerModal")
        assert "Whisper to the agent" in str(app.screen.query_one("#steer-title").render())
        await pilot.press("enter")  # nothing typed: the dialog says so and stays
        assert "type the instruction" in str(app.screen.query_one("#steer-error").render())
        await type_text(pilot, WHISPER)
        await pilot.press("enter")
        await wait(pilot, lambda: type(app.screen).__name__ == "CallsScreen")
        await wait(pilot, lambda: "whisper" in {r for _, r, _ in app.state.transcript(call_id)})
        assert session.whispers == [WHISPER]
        await wait(pilot, lambda: "hidden from the caller" in _transcript_text(app))
        assert WHISPER in _transcript_text(app)

        await pilot.press("S")
        await wait(pilot, lambda: type(app.screen).__name__ == "SteerModal")
        await type_text(pilot, LINE)
        await pilot.press("enter")
        await wait(pilot, lambda: ("assistant", LINE) in {(r, t) for _, r, t in app.state.transcript(call_id)})
        assert ("say-now", LINE) in {(r, t) for _, r, t in app.state.transcript(call_id)}
        assert [(n.kind, n.text) for n in session.steering] == [("whisper", WHISPER), ("say", LINE)]
        assert any(line.type == "steering.injected" and "hidden" in line.text for line in app.state.log)

        await pilot.press("S")  # Esc leaves the dialog: nothing is sent
        await wait(pilot, lambda: type(app.screen).__name__ == "SteerModal")
        await type_text(pilot, "never mind")
        await pilot.press("escape")  # an edited line: Esc asks first; d discards it
        await wait(pilot, lambda: type(app.screen).__name__ == "LeaveFormScreen")
        await pilot.press("d")
        await wait(pilot, lambda: type(app.screen).__name__ == "CallsScreen")
        assert len(session.steering) == 2

        await pilot.press("tab")  # the talk box is where the caller's words go
        app.screen.query_one("#talk").focus()
        await type_text(pilot, "hello")
        await pilot.press("enter")  # the whisper goes to this turn, once
        await wait(pilot, lambda: session.whispers == [] and session.turn == 1)


async def test_steering_keys_need_a_live_call(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("S")
        await pilot.pause(0.1)
        assert type(app.screen).__name__ == "CallsScreen"
        assert any("select a live call first" in str(n.message) for n in app._notifications)


def test_the_console_state_shows_steering_from_events_alone() -> None:
    """A recording replayed through the state (no engine) shows the steering as the live console did."""
    from console.state import ConsoleState
    from engine.events import CallStarted, SteeringInjected, TranscriptAdded

    state = ConsoleState()
    changes = state.apply(
        [
            CallStarted(call_id="call-7", context="demo", provider="script", ts=100.0),
            SteeringInjected(call_id="call-7", kind="whisper", text=WHISPER, via="UpdatePrompt", hidden=True, ts=101.0),
            SteeringInjected(call_id="call-7", kind="say", text=LINE, via="InjectAgentMessage", ts=102.0),
            TranscriptAdded(call_id="call-7", role="assistant", text=LINE, ts=103.0),
        ]
    )
    assert changes.transcripts == {"call-7"}
    assert state.transcript("call-7") == [
        (101.0, "whisper", WHISPER),
        (102.0, "say-now", LINE),
        (103.0, "assistant", LINE),
    ]
    lines = [line.text for line in state.log if line.type == "steering.injected"]
    assert lines == [
        f"call-7: the operator whispered to the agent via UpdatePrompt (hidden from the caller): {WHISPER}",
        f"call-7: the operator had the agent say via InjectAgentMessage: {LINE}",
    ]
