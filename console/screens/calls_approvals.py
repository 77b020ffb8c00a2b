"""The Calls screen's approvals part: answer the tool calls waiting for the operator (engine.tools.approvals).

The keys ``approval_approve``, ``approval_deny`` and ``approval_deny_reason`` answer the approval the panel marks
``▶`` (the selected call's oldest, else the oldest; ``approval_next`` moves the mark); they show in the footer only
while something waits. The panel (``console.widgets.approval_panel``) is made here and placed above the calls table
when the first approval arrives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from console.screens.calls_model import Commands, Dialogs
from console.widgets.approval_panel import ApprovalPanel

if TYPE_CHECKING:
    from textual.widget import Widget

    from console.approvals import ApprovalQueue, PendingRow
    from console.format import Clock

#: The screen's approval actions (hidden from the footer while nothing waits).
ACTIONS = ("approve_tool", "deny_tool", "deny_tool_reason", "next_approval")


class ApprovalModel(Protocol):
    """What the approvals part needs of the console: the queue, the selected call, the clock and the commands."""

    selected_call: str | None
    approvals: ApprovalQueue
    tick: bool

    @property
    def clock(self) -> Clock: ...

    @property
    def orders(self) -> Commands: ...


class ApprovalHost(Dialogs, Protocol):
    """The screen the approval keys are bound on."""

    def refresh_bindings(self) -> None: ...

    def bound_keys(self) -> dict[str, str]: ...

    def show_panel(self, panel: Widget) -> None: ...


class Approvals:
    """The approval queue's keys, the panel that shows it, and the answers sent to the engine."""

    def __init__(self, model: ApprovalModel, host: ApprovalHost) -> None:
        self.model, self.host = model, host
        self.panel: ApprovalPanel | None = None

    def waiting(self) -> bool:
        return bool(self.model.approvals.rows)

    def held_key(self, key: str) -> str | None:
        """While a tool waits, its answer keys are held back from the talk and caller boxes (``GuardedInput``):
        neither typed as text nor taken as an answer from a half-typed line; the hint says how to answer."""
        keys = self.keys()
        if not self.waiting() or key not in keys:
            return None
        approve, deny, _reason = keys
        return (
            f"a tool waits for your approval: {key} is not typed here. "
            f"Esc leaves the text box, then {approve} approves, {deny} denies"
        )

    def keys(self) -> tuple[str, str, str]:
        """The keys as bound now (``console.keymap`` may remap them), for the panel's hint."""
        keys = self.host.bound_keys()
        return keys.get("approval_approve", "y"), keys.get("approval_deny", "x"), keys.get("approval_deny_reason", "X")

    def show(self) -> None:
        """The queue changed: the footer's keys and the panel follow (the panel is made on first need)."""
        self.host.refresh_bindings()
        queue = self.model.approvals
        if self.panel is not None:
            self.panel.show()
            return
        if queue.rows:
            model = self.model
            self.panel = ApprovalPanel(
                lambda: list(queue.rows.values()), lambda: model.clock.now(), self.keys, self._marked, tick=model.tick
            )
            self.host.show_panel(self.panel)

    def answer(self, approve: bool, row: PendingRow | None = None, reason: str = "") -> None:
        row = row or self._target()
        if row is None:
            return
        verb = "approved: it runs now" if approve else "denied: it will not run"
        command = "approve_tool" if approve else "deny_tool"
        args = {"by": "console"} if approve else {"reason": reason, "by": "console"}
        # answered or timed out meanwhile (ApprovalError), the engine gone: the toast says so
        self.model.orders.run(
            command,
            row.approval_id,
            args,
            title="approval",
            done=lambda _a: f"{row.exposed_name} on {row.where()} {verb}",
        )

    def _target(self) -> PendingRow | None:
        return self.model.approvals.target(self.model.selected_call)

    def _marked(self) -> str | None:
        row = self._target()
        return row.approval_id if row is not None else None

    def next(self) -> None:
        """Mark the next waiting approval (the keys then answer that one)."""
        if self.model.approvals.pick_next(self.model.selected_call) is not None:
            self.show()

    def deny_with_reason(self) -> None:
        """Deny the first waiting call with a reason typed in a dialog (Esc there denies nothing)."""
        from console.screens.approval_reason import DenyReasonScreen

        row = self._target()
        if row is None:
            return

        def done(reason: str | None) -> None:
            if reason is not None:
                self.answer(False, row, reason)

        self.host.open_dialog(DenyReasonScreen(row), done)
