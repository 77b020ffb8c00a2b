"""The operator's answers to the tool approval queue, as part of the engine's public API.

Why apart: the queue itself (``engine.tools.approvals.ApprovalDesk``) sits in the execution path below the operator's
desk; these are the thin doors the console, the CLI or an embedding program use on it. The engine's facade forwards
to an ``ApprovalCommands`` handed the executor's desk, nothing else.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.tools.approvals import ApprovalDesk, PendingApproval


class ApprovalCommands:
    def __init__(self, desk: ApprovalDesk) -> None:
        self.desk = desk

    def approve_tool(self, approval_id: str, by: str = "operator") -> None:
        """Let a tool call waiting for approval run (``tool.approval_resolved`` says so). ``ApprovalError`` (a
        ``ValueError``) when there is no such pending approval: it says whether it was already answered, how."""
        self.desk.approve(approval_id, by)

    def deny_tool(self, approval_id: str, reason: str = "", by: str = "operator") -> None:
        """Refuse a tool call waiting for approval: it never runs and the model is told the operator did not
        approve it (with ``reason``). ``ApprovalError`` when there is no such pending approval."""
        self.desk.deny(approval_id, reason, by)

    def pending_approvals(self) -> list[PendingApproval]:
        """The tool calls waiting for the operator now, oldest first (``PendingApproval`` snapshots)."""
        return self.desk.pending()

    def attach_approver(self, name: str) -> Callable[[], None]:
        """Say an operator is present to answer approvals (the console does, when it runs the engine); returns
        the detach function. With none attached, a tool call that needs approval is denied at once."""
        return self.desk.attach(name)
