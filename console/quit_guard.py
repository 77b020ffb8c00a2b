"""Quitting with live calls asks first: Ctrl+Q ends every live call (the engine stops with the console), and an
operator who presses it by mistake mid-call would hang up on callers. With no live call it quits at once; a second
Ctrl+Q while the question is open quits (the answer "yes")."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from console.screens.modals import ConfirmScreen

if TYPE_CHECKING:
    from console.console_port import Console


class QuitConfirm(ConfirmScreen):
    """The quit question (its own class, so a second Ctrl+Q can tell it is open)."""

    CSS_PATH = "screens/modals.tcss"  # relative to this module: the dialog's styles are the confirm dialog's


def calls_still_live(app: Console) -> list[str]:
    """The calls that quitting would end (the engine's own list once it runs, else what the console saw)."""
    engine = app.engine
    if engine is not None and app.engine_running:
        return [c.call_id for c in engine.calls_info()]
    return list(app.state.calls)


async def quit_or_ask(app: Console, quit_now: Callable[[], Awaitable[None]]) -> None:
    """Quit now when no call is live (or the question is already open); else ask, and quit only on yes."""
    calls = calls_still_live(app)
    if not calls or isinstance(app.screen, QuitConfirm):
        await quit_now()
        return

    async def answered(yes: bool | None) -> None:
        if yes:
            await quit_now()

    shown = ", ".join(calls[:5]) + (f" and {len(calls) - 5} more" if len(calls) > 5 else "")
    question = f"Quit and end {len(calls)} live call{'s' if len(calls) != 1 else ''}?"
    detail = f"{shown} will be hung up: the engine stops with the console. (Ctrl+Q again: quit)"
    app.push_screen(QuitConfirm(question, detail), answered)
