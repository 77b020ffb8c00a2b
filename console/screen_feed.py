"""Hands what changed to the screens: each event batch's ``Changes`` to every mounted screen, a rebuild when the
config or the engine changed, and a by-name call (``show_voice``, ``show_approvals`` …) to the screens that have it.

Why apart from the app: the app decides what changed (state, timings, the header's counts); this decides who is told,
and keeps the counts behind ``sync_token`` (a screen shown again rebuilds only if it missed something). It knows the
screens by what they answer (``FedScreen``), not by class, so it imports no screen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from textual.css.query import NoMatches

if TYPE_CHECKING:
    from textual.screen import Screen

    from console.state import Changes

SyncToken = tuple[int, int, str | None]


@runtime_checkable
class FedScreen(Protocol):
    """A console screen (``console.screens.base.ConsoleScreen``): updated per batch, its key bar redrawn."""

    synced: SyncToken | None

    def apply_changes(self, changes: Changes) -> None: ...

    def update_keybar(self) -> None: ...


class ScreenFeed:
    """The screens of ``stack`` (the app's screen stack) told about changes; ``selected`` is the selected call."""

    def __init__(self, stack: Callable[[], Iterable[Screen[Any]]], selected: Callable[[], str | None]) -> None:
        self._stack, self._selected = stack, selected
        #: Event batches handed out, and rebuilds asked for (the parts of ``sync_token`` besides the selection).
        self.batches = 0
        self.rebuilds = 0

    def live(self) -> list[Screen[Any]]:
        return [s for s in self._stack() if s.is_mounted]

    def sync_token(self) -> SyncToken:
        """What a screen shows depends on: the batches handed out, the rebuilds asked for, the selected call.

        A screen that saw every batch while another was on top of it (the call view, a dialog) is up to date when it
        comes back and is not rebuilt; one that was switched away from missed batches and rebuilds."""
        return (self.batches, self.rebuilds, self._selected())

    def dispatch(self, changes: Changes) -> None:
        for screen in self.live():
            try:
                if isinstance(screen, FedScreen):
                    screen.apply_changes(changes)
                    screen.synced = self.sync_token()
                    call = self._selected()  # the key bar marks the selected call's active tier
                    if changes.default_tier or call in changes.calls_changed or call in changes.calls_added:
                        screen.update_keybar()
            except NoMatches:  # the screen is being torn down (app exiting): nothing to update
                continue

    def rebuild(self) -> None:
        """Every mounted screen rebuilds now; the others (their sync token moved) when they are shown next."""
        self.rebuilds += 1
        self.tell("refresh_all")

    def tell(self, method: str) -> None:
        """Call ``method`` on every mounted screen that has it (dialogs on the stack do not)."""
        for screen in self.live():
            fn = getattr(screen, method, None)
            if callable(fn):
                fn()
