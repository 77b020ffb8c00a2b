"""The console's side of the tool approval queue: what waits for the operator, fed by the engine's events.

Why apart from ``ConsoleState``: the queue is a handful of rows with their own life (arrive, count down, go), and
the console must *attach* to the engine as its approver — without an attached approver the engine denies such
calls at once — so this module owns both the rows and that attachment. Pure data but for ``take``, which tells
the app (a notify and a bell when one arrives) and the screens (``show_approvals``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from engine import Engine
    from engine.events import Event


class _App(Protocol):
    def notify(self, message: str, *, title: str = ..., severity: Any = ..., timeout: float | None = ...) -> None: ...

    def bell(self) -> None: ...


@dataclass(frozen=True, slots=True)
class PendingRow:
    """One tool call waiting for the operator, as the console shows it."""

    approval_id: str
    call_id: str
    exposed_name: str
    server: str
    arguments: dict[str, Any]
    reason: str
    deadline: float

    def arguments_text(self, limit: int = 400) -> str:
        """The (engine-masked) arguments as compact JSON, clipped to ``limit`` characters."""
        text = json.dumps(self.arguments, ensure_ascii=False, default=str, separators=(", ", ": "))
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def where(self) -> str:
        """The call it waits in (``call-3``; attached: ``call-3 on engine e1``), or that no call asked."""
        if not self.call_id:
            return "an MCP client (no call)"
        engine_id, sep, call_id = self.call_id.partition("/")
        return f"{call_id} on engine {engine_id}" if sep else self.call_id


class ApprovalQueue:
    """The pending approvals, oldest first. The keys answer the *target*: the one the operator picked with
    ``next_approval``, else the oldest of the selected call, else the oldest of all."""

    def __init__(self) -> None:
        self.rows: dict[str, PendingRow] = {}
        self._detach: Callable[[], None] | None = None
        #: The approval the operator moved the mark to (dropped once it is answered or gone).
        self.picked: str | None = None

    def target(self, call_id: str | None) -> PendingRow | None:
        if self.picked is not None and self.picked in self.rows:
            return self.rows[self.picked]
        if call_id:
            for row in self.rows.values():
                if row.call_id == call_id:
                    return row
        return self.first

    def pick_next(self, call_id: str | None) -> PendingRow | None:
        """Move the mark to the next waiting approval (round the queue); None when nothing waits."""
        current = self.target(call_id)
        if current is None:
            return None
        ids = list(self.rows)
        self.picked = ids[(ids.index(current.approval_id) + 1) % len(ids)]
        return self.rows[self.picked]

    def attach(self, engine: Engine) -> None:
        """Be the engine's approver (calls needing approval then wait for this console) and show what waits."""
        self._detach = engine.attach_approver("console")
        for p in engine.pending_approvals():
            self.rows[p.approval_id] = PendingRow(
                p.approval_id, p.call_id, p.exposed_name, p.server, dict(p.arguments), p.reason, p.deadline
            )

    def forget_engine(self, engine_id: str) -> None:
        """An attached engine is gone: nothing of it can be answered any more (its approvals are keyed engine/id)."""
        for approval_id in [a for a in self.rows if a.startswith(f"{engine_id}/")]:
            self.rows.pop(approval_id)
            if self.picked == approval_id:
                self.picked = None

    def detach(self) -> None:
        if self._detach is not None:
            self._detach()
            self._detach = None

    @property
    def first(self) -> PendingRow | None:
        return next(iter(self.rows.values()), None)

    def apply(self, events: Iterable[Event]) -> tuple[list[PendingRow], list[tuple[PendingRow, str, str]]]:
        """Fold in approval events; returns the rows that arrived and the (row, outcome, by) that went."""
        from engine.events import ToolApprovalRequested, ToolApprovalResolved

        arrived: list[PendingRow] = []
        gone: list[tuple[PendingRow, str, str]] = []
        for ev in events:
            if isinstance(ev, ToolApprovalRequested):
                row = PendingRow(
                    ev.approval_id, ev.call_id, ev.exposed_name, ev.server, dict(ev.arguments), ev.reason, ev.deadline
                )
                self.rows[row.approval_id] = row
                arrived.append(row)
            elif isinstance(ev, ToolApprovalResolved):
                old = self.rows.pop(ev.approval_id, None)
                if self.picked == ev.approval_id:
                    self.picked = None
                if old is not None:
                    gone.append((old, ev.outcome, ev.by))
        return arrived, gone

    def take(self, app: _App, events: list[Event], tell_screens: Callable[[str], None]) -> None:
        """One event batch: update the rows; a bell and a notify for each arrival (whatever screen is shown), a
        notify when one timed out; the screens redraw their approval panels."""
        if not any(e.type.startswith("tool.approval_") for e in events):
            return
        arrived, gone = self.apply(events)
        for row in arrived:
            if row.approval_id not in self.rows:  # answered within the same batch
                continue
            app.bell()
            app.notify(
                f"{row.exposed_name} on {row.where()} waits for your approval: "
                "y approve · x deny on the Calls screen (F1)",
                title="approval needed",
                severity="warning",
                timeout=10,
            )
        for row, outcome, _by in gone:
            if outcome == "timed_out":
                app.notify(f"{row.exposed_name} on {row.where()} was not approved in time: denied", title="approval")
        tell_screens("show_approvals")
