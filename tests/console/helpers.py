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


async def type_text(pilot: Any, text: str) -> None:
    """Type ``text`` into the focused text box as a fast typist does: the Key events ``pilot.press(*text)`` sends,
    in the same order, all queued at once, then one wait until the app is idle. ``pilot.press`` waits for the app to
    go idle after every key (~0.1 s each), so a word cost a second. Printable characters only: the box types those
    as its Key events arrive, where a key bound to an action (backspace, tab) runs its action later, after the
    characters queued behind it; press those with ``pilot.press``."""
    from textual import events
    from textual.keys import _character_to_key

    for char in text:
        assert char.isprintable(), f"type_text types printable characters, not {char!r}"
        event = events.Key(char if char.isalnum() else _character_to_key(char), char)
        event.set_sender(pilot.app)
        pilot.app.post_message(event)
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
