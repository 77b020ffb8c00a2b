"""The narrow pieces of the console's model that the Calls screen's parts are given (issue 34 item 13).

Each part of the Calls screen (steering, approvals, phone, voice …) is an object built with the piece of the console
it needs, typed by a Protocol here (or in ``console.ports``), instead of reading the whole app (``self.app.…``).
The app satisfies them structurally, so nothing here imports it (no import circle), and a test can hand a part a
small double.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from console.ports import Notifier, Workers

if TYPE_CHECKING:
    from textual.screen import Screen

    from console.state import ConsoleState
    from engine import Engine


class Commands(Protocol):
    """Where the operator's commands go (``console.orders.Orders``): this engine, or the engine owning the call."""

    def run(
        self,
        command: str,
        target: str | None,
        args: Mapping[str, Any],
        *,
        title: str,
        done: Callable[[dict[str, Any]], str | None] | None = None,
        failed: Callable[[str], None] | None = None,
    ) -> None: ...


class Selection(Protocol):
    """The selected call and what the console knows of the calls: what every Calls key acts on."""

    selected_call: str | None
    state: ConsoleState


class EngineAccess(Protocol):
    """This console's own engine, if it has one (``attached``: engines elsewhere, reached through ``orders``)."""

    engine: Engine | None

    @property
    def orders(self) -> Commands: ...

    @property
    def attached(self) -> bool: ...

    def require_engine(self, what: str = "") -> Engine | None: ...


class Dialogs(Notifier, Protocol):
    """What a part shows the operator: a notification, or a dialog whose answer comes back to ``callback``."""

    def open_dialog(self, screen: Screen[Any], callback: Callable[[Any], None] | None = None) -> None: ...


__all__ = ["Commands", "Dialogs", "EngineAccess", "Selection", "Workers"]
