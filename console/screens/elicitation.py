"""A tool's question to the operator (MCP elicitation): the server, tool and message, a form built from the
requested schema, accept / decline / cancel, and how long is left.

Why a modal: the call's tool is stopped until this is answered, so it comes up over whatever screen is shown (the
console's ``ElicitationPrompts`` pushes it when the engine starts waiting for the operator) and goes when the
question ends elsewhere (timed out, the call ended). The form is ``console.tool_form``'s, the fields checked as the
tool inspector checks arguments; the engine checks the answer against the requested form again and says what is
wrong, shown here, before the server gets it. A URL-mode question shows its link: accept means the operator will
open it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from console.crash_guard import ContainErrors
from console.tool_form import FieldSpec, collect, fields_for
from console.widgets.footer import KeyFooter
from console.widgets.schema_form import field_row, field_texts

if TYPE_CHECKING:
    from console.elicitations import QuestionRow


class ElicitationScreen(ContainErrors, ModalScreen[str | None]):
    """Answers one question through ``answer(elicitation_id, action, content)``; dismissed with the action sent,
    or None when the question ended without this dialog's answer."""

    CSS_PATH = "elicitation.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "accept", "Accept", id="elicitation_accept", priority=True),
        Binding("ctrl+d", "decline", "Decline", id="elicitation_decline", priority=True),
        Binding("escape", "cancel", "Cancel", id="elicitation_cancel"),
    ]

    def __init__(self, row: QuestionRow, answer: Any) -> None:
        super().__init__()
        self.row = row
        self._answer = answer
        self.specs: list[FieldSpec] = fields_for(row.schema) if row.mode == "form" else []

    def compose(self) -> ComposeResult:
        r = self.row
        with Vertical(id="el-dialog"):
            yield Label(f"{r.server} · {r.tool} asks {r.where()}", id="el-title")
            yield Static(r.message, id="el-message", markup=False)
            if r.url is not None:
                yield Static(f"link: {r.url}", id="el-url", markup=False)
            with VerticalScroll(id="el-fields"):
                for spec in self.specs:
                    yield field_row(spec, "el")
            yield Static("", id="el-error")
            yield Static(self._left(), id="el-countdown")
            with Horizontal(id="el-buttons"):
                yield Button("Accept", id="el-accept", variant="success")
                yield Button("Decline", id="el-decline", variant="warning")
                yield Button("Cancel", id="el-cancel")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)
        # the first field, when there is one and the dialog is still up (a question that ended at once dismisses
        # it before its fields are mounted)
        for first in self.query(f"#el-{self.specs[0].name}" if self.specs else "#el-none").results():
            first.focus()

    def _now(self) -> float:
        clock = getattr(self.app, "clock", None)  # the console's (a stopped one in snapshot tests)
        return float(clock.now()) if clock is not None else time.time()

    def _left(self) -> str:
        left = max(0, int(self.row.deadline - self._now()))
        return f"{left} s left, then it is declined" if left else "time is up: declined"

    def _tick(self) -> None:
        for countdown in self.query("#el-countdown").results(Static):
            countdown.update(self._left())

    def ended(self) -> None:
        """The question ended without this dialog (timed out, the call ended, answered elsewhere)."""
        self.dismiss(None)

    @on(Button.Pressed, "#el-accept")
    def _accept_pressed(self) -> None:
        self.action_accept()

    @on(Button.Pressed, "#el-decline")
    def _decline_pressed(self) -> None:
        self.action_decline()

    @on(Button.Pressed, "#el-cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    def action_accept(self) -> None:
        content, problems = collect(self.specs, field_texts(self, self.specs, "el"))
        for spec in self.specs:
            msg = self.query_one(f"#elmsg-{spec.name}", Static)
            msg.update(problems.get(spec.name, ""))
            msg.display = spec.name in problems
        if problems:
            self._error(f"{len(problems)} field(s) need attention: nothing sent")
            return
        self._send("accept", content)

    def action_decline(self) -> None:
        self._send("decline", None)

    def action_cancel(self) -> None:
        self._send("cancel", None)

    def _send(self, action: str, content: dict[str, Any] | None) -> None:
        try:
            self._answer(self.row.elicitation_id, action, content)
        except ValueError as e:  # the engine's check of the answer, or the question already ended
            self._error(str(e))
            return
        self.dismiss(action)

    def _error(self, text: str) -> None:
        self.query_one("#el-error", Static).update(text)
