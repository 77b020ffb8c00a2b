"""Helpers shared by the console's Pilot tests."""

from __future__ import annotations

from typing import Any


def record_notifications(app: Any) -> list[str]:
    """Every notification ``app`` shows from now on, recorded as text (the app still shows them)."""
    seen: list[str] = []
    original = app.notify

    def record(message: str, **kwargs: Any) -> None:
        seen.append(message)
        original(message, **kwargs)

    app.notify = record
    return seen


async def paste(pilot: Any, text: str) -> None:
    """Paste ``text`` into the focused widget the way a terminal's bracketed paste arrives: one ``Paste`` event to
    the app, which hands it to the focused widget. For long machine-made text (file paths, a command line): each
    ``pilot.press`` of a character waits for the app to go idle (~0.1 s), so a typed path cost seconds."""
    from textual import events

    pilot.app.post_message(events.Paste(text))
    await pilot.pause()


def transcript_drawn(app: Any) -> bool:
    """The selected call has a line (its greeting, at least) and the Calls screen's transcript pane has drawn every
    line the console's state holds for it. The state has a line before the pane does (the pane writes on the next
    refresh, and a RichLog draws a write only once it has a size): a snapshot taken between the two, as a loaded
    machine's was, shows an empty pane."""
    from textual.widgets import RichLog

    call_id = app.selected_call
    panes = [screen for screen in app.screen_stack if screen.query("#transcript")]
    if call_id is None or not panes:
        return False
    held = len(app.state.transcript(call_id))
    return held >= 1 and len(panes[-1].query_one("#transcript", RichLog).lines) >= held
