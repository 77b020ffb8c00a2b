"""A text box that refuses the keys its screen holds for a while: the Calls screen's talk and caller boxes while a
tool waits for the operator's approval.

Why: the approval keys (``y`` approve, ``x`` deny) are single letters. Pressed while the focus was in the talk box
they were typed as text and the countdown ran out. Nor may they answer from there: a ``y`` in a half-typed sentence
would approve a destructive tool by accident. While the screen's ``held_key`` returns a hint for a key, that key is
neither typed nor acted on, and the hint (how to answer: Esc, then the key) is shown instead.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from textual import events
from textual.widgets import Input


@runtime_checkable
class KeyHolder(Protocol):
    """A screen that holds some keys back from its text boxes for now."""

    def held_key(self, key: str) -> str | None:
        """A hint saying why ``key`` is not typed and what to do instead, or None to type it."""


class GuardedInput(Input):
    """An ``Input`` whose screen (a ``KeyHolder``) may hold keys back from it."""

    def on_key(self, event: events.Key) -> None:
        screen = self.screen
        hint = screen.held_key(event.key) if isinstance(screen, KeyHolder) else None
        if hint is None:
            return
        event.stop()
        event.prevent_default()  # Input's own key handler (which types the character) does not run
        self.notify(hint, title="approval", severity="warning")
