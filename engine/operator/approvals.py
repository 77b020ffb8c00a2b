"""The operator's answers to the tool approval queue, as part of the engine's public API.

Why apart: the queue itself (``engine.tools.approvals.ApprovalDesk``) sits in the execution path below the app; these
are the thin doors the console, the CLI or an embedding program use on it. ``Engine`` inherits them through
``OperatorDesk``; they use only the executor's desk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from engine.tools.approvals import PendingApproval

if TYPE_CHECKING:
    from engine.tools.execution import ToolExecutor


class ApprovalCommands:
    executor: ToolExecutor

    def approve_tool(self, approval_id: str, by: str = "operator") -> None:
        """Let a tool call waiting for approval run (``tool.approval_resolved`` says so). ``ApprovalError`` (a
        ``ValueError``) when there is no such pending approval: it says whether it was already answered, how."""
        self.executor.approvals.approve(approval_id, by)

    def deny_tool(self, approval_id: str, reason: str = "", by: str = "operator") -> None:
        """Refuse a tool call waiting for approval: it never runs and the model is told the operator did not
        approve it (with ``reason``). ``ApprovalError`` when there is no such pending approval."""
        self.executor.approvals.deny(approval_id, reason, by)

    def pending_approvals(self) -> list[PendingApproval]:
        """The tool calls waiting for the operator now, oldest first (``PendingApproval`` snapshots)."""
        return self.executor.approvals.pending()

    def attach_approver(self, name: str) -> Callable[[], None]:
        """Say an operator is present to answer approvals (the console does, when it runs the engine); returns
        the detach function. With none attached, a tool call that needs approval is denied at once."""
        return self.executor.approvals.attach(name)
