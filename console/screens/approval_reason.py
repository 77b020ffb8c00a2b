"""Deny a waiting tool call with a reason: the model is told why, in the operator's words.

A small modal on the Calls screen (``X``): it names the approval it was opened for (the first waiting one at that
moment), so an answer never lands on another call that arrived meanwhile; if that approval ended while the reason
was being typed, the Calls screen says so instead of denying anything else.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from console.approvals import PendingRow
from console.crash_guard import ContainErrors
from console.screens.leave_form import FormGuard

#: Longest reason sent (the engine keeps at most this much too).
MAX_REASON = 300


class DenyReasonScreen(ContainErrors, ModalScreen[str | None]):
    """Returns the reason (Enter), or None (Esc: nothing is denied)."""

    CSS_PATH = "approval_reason.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="approval_reason_cancel"),
    ]

    def __init__(self, row: PendingRow) -> None:
        super().__init__()
        self.row = row
        self.guard = FormGuard(self, save=self._deny, close=lambda: self.dismiss(None), save_label="Deny")

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"Deny {self.row.exposed_name} on {self.row.where()}", classes="section-title")
            yield Static(f"arguments: {self.row.arguments_text(200)}", markup=False)
            yield Input(
                placeholder="why (the model is told; Enter denies, Esc cancels)",
                max_length=MAX_REASON,
                id="deny-reason",
            )
            yield Static("Enter denies with this reason · Esc cancels (nothing is denied)", classes="hint")

    def on_mount(self) -> None:
        self.query_one("#deny-reason", Input).focus()
        self.guard.mark_clean()

    @on(Input.Submitted, "#deny-reason")
    def _deny(self) -> None:
        self.dismiss(self.query_one("#deny-reason", Input).value.strip())

    def action_cancel(self) -> None:
        self.guard.leave()
