"""The Calls screen's approval keys: answer the tool calls waiting for the operator (engine.tools.approvals).

A mixin of ``CallsScreen`` (like ``VoiceControls``): the keys ``approval_approve``, ``approval_deny`` and
``approval_deny_reason`` answer the approval the panel marks ``▶`` (the selected call's oldest, else the oldest;
``approval_next`` moves the mark); they show in the footer only while something waits. The
panel (``console.widgets.approval_panel``) is mounted above the calls table when the first approval arrives.
"""

from __future__ import annotations

from textual.css.query import NoMatches

from console.approvals import PendingRow
from console.screens.base import ConsoleScreen
from console.widgets.approval_panel import PANEL_ID, ApprovalPanel

#: The screen's approval actions (hidden from the footer while nothing waits).
ACTIONS = ("approve_tool", "deny_tool", "deny_tool_reason", "next_approval")


class ApprovalControls(ConsoleScreen):
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ACTIONS:
            return bool(self.capp.approvals.rows)
        return super().check_action(action, parameters)

    def held_key(self, key: str) -> str | None:
        """While a tool waits, its answer keys are held back from the talk and caller boxes (``GuardedInput``):
        neither typed as text nor taken as an answer from a half-typed line; the hint says how to answer."""
        keys = self.approval_keys()
        if not self.capp.approvals.rows or key not in keys:
            return None
        approve, deny, _reason = keys
        return (
            f"a tool waits for your approval: {key} is not typed here. "
            f"Esc leaves the text box, then {approve} approves, {deny} denies"
        )

    def approval_keys(self) -> tuple[str, str, str]:
        """The keys as bound now (``console.keymap`` may remap them), for the panel's hint."""
        keys = {b.id: b.key for _n, b, _e, _t in self.active_bindings.values() if b.id}
        return keys.get("approval_approve", "y"), keys.get("approval_deny", "x"), keys.get("approval_deny_reason", "X")

    def show_approvals(self) -> None:
        """The queue changed: the footer's keys and the panel follow (the panel is mounted on first need)."""
        if not self.is_mounted:
            return
        self.refresh_bindings()
        queue = self.capp.approvals
        try:
            panel = self.query_one(f"#{PANEL_ID}", ApprovalPanel)
        except NoMatches:
            if not queue.rows:
                return
            panel = ApprovalPanel(
                lambda: list(queue.rows.values()),
                lambda: self.capp.clock.now(),
                self.approval_keys,
                self._marked,
                tick=self.capp.tick,
            )
            self.mount(panel, before="#calls-main")
            return
        panel.show()

    def _answer(self, approve: bool, row: PendingRow | None = None, reason: str = "") -> None:
        row = row or self._target()
        if row is None:
            return
        verb = "approved: it runs now" if approve else "denied: it will not run"
        command = "approve_tool" if approve else "deny_tool"
        args = {"by": "console"} if approve else {"reason": reason, "by": "console"}
        # answered or timed out meanwhile (ApprovalError), the engine gone: the toast says so
        self.capp.orders.run(
            command,
            row.approval_id,
            args,
            title="approval",
            done=lambda _a: f"{row.exposed_name} on {row.where()} {verb}",
        )

    def _target(self) -> PendingRow | None:
        return self.capp.approvals.target(self.capp.selected_call)

    def _marked(self) -> str | None:
        row = self._target()
        return row.approval_id if row is not None else None

    def action_next_approval(self) -> None:
        """Mark the next waiting approval (the keys then answer that one)."""
        if self.capp.approvals.pick_next(self.capp.selected_call) is not None:
            self.show_approvals()

    def action_approve_tool(self) -> None:
        self._answer(True)

    def action_deny_tool(self) -> None:
        self._answer(False)

    def action_deny_tool_reason(self) -> None:
        """Deny the first waiting call with a reason typed in a dialog (Esc there denies nothing)."""
        from console.screens.approval_reason import DenyReasonScreen

        row = self._target()
        if row is None:
            return

        def done(reason: str | None) -> None:
            if reason is not None:
                self._answer(False, row, reason)

        self.app.push_screen(DenyReasonScreen(row), done)
