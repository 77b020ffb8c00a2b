"""The narrow pieces of the console's model that the Calls screen's parts are given (issue 34 item 13).

Each part of the Calls screen (steering, approvals, phone, voice …) is an object built with the piece of the console
it needs, typed by a Protocol here, instead of reading the whole app (``self.app.<anything>``). The app satisfies
them structurally, so nothing here imports it (no import circle), and a test can hand a part a small double.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel
    from textual.screen import Screen
    from textual.worker import Worker

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


class Dialogs(Protocol):
    """What a part shows the operator: a notification, or a dialog whose answer comes back to ``callback``."""

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...

    def open_dialog(self, screen: Screen[Any], callback: Callable[[Any], None] | None = None) -> None: ...


class Workers(Protocol):
    """Where a part's commands run: workers of the screen (a slow turn never blocks it; ``group`` names them)."""

    def run_worker(
        self,
        work: Coroutine[Any, Any, None],
        name: str | None = "",
        group: str = "default",
        description: str = "",
        exit_on_error: bool = True,
        start: bool = True,
        exclusive: bool = False,
        thread: bool = False,
    ) -> Worker[None]: ...
