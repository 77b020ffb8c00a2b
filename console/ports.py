"""The small interfaces console parts are given instead of the app (issue 34 item 13): notify the operator, run
work in a worker.

Why apart: a part typed with the app (``AvaConsole``) imports the module that imports every screen, which is an
import circle and lets the part reach anything. These Protocols are satisfied structurally by the app and by the
screens, so a part needs neither, and a test can hand it a small double.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel
    from textual.worker import Worker


class Notifier(Protocol):
    """Tells the operator something (a toast)."""

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...


class Workers(Protocol):
    """Runs a command in a worker (a slow engine never blocks the screen; ``group`` names the kind of work; a plain
    function runs in a thread worker: ``thread=True``)."""

    def run_worker(
        self,
        work: Callable[[], Coroutine[Any, Any, None]] | Coroutine[Any, Any, None] | Callable[[], None],
        name: str | None = "",
        group: str = "default",
        description: str = "",
        exit_on_error: bool = True,
        start: bool = True,
        exclusive: bool = False,
        thread: bool = False,
    ) -> Worker[None]: ...
