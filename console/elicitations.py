"""The console's side of tools' questions to the operator (MCP elicitation), fed by the engine's events.

Why apart from the approval queue: a question is not yes/no but a form, and the tool's call is stopped until it is
answered, so each one opens its dialog at once (``ElicitationScreen``) over whatever screen is shown, with a bell;
the dialog goes when the question ends elsewhere (timed out, the call ended). The console attaches to the engine
as the operator who answers: without one attached, a context whose questions go to the operator has them declined.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.app import App

    from engine import Engine
    from engine.events import Event


class OpenQuestion(Protocol):
    """A question's dialog while it is shown (``console.screens.elicitation.ElicitationScreen``)."""

    @property
    def is_attached(self) -> bool: ...

    def ended(self) -> None:
        """Answered elsewhere, or timed out: the dialog says so and closes."""


@dataclass(frozen=True, slots=True)
class QuestionRow:
    """One question as the console shows it."""

    elicitation_id: str
    call_id: str
    server: str
    tool: str
    exposed_name: str
    message: str
    mode: str
    url: str | None
    deadline: float
    schema: dict[str, Any] = field(default_factory=dict)

    def where(self) -> str:
        return f"on {self.call_id}" if self.call_id else "(no call)"


class ElicitationPrompts:
    """Questions known to the console, and the dialog open for each one waiting for the operator."""

    def __init__(self) -> None:
        self.rows: dict[str, QuestionRow] = {}
        self.open: dict[str, OpenQuestion] = {}
        self._engine: Engine | None = None
        self._detach: Callable[[], None] | None = None

    def attach(self, engine: Engine) -> None:
        """Be the operator who answers (questions then wait for this console) and open what already waits."""
        self._engine = engine
        self._detach = engine.attach_elicitation_operator("console")
        for p in engine.pending_elicitations():
            self.rows[p.elicitation_id] = QuestionRow(
                p.elicitation_id,
                p.call_id,
                p.server,
                p.tool,
                p.exposed_name,
                p.message,
                p.mode,
                p.url,
                p.deadline,
                dict(p.schema),
            )

    def detach(self) -> None:
        if self._detach is not None:
            self._detach()
            self._detach = None

    def take(self, app: App[Any], events: list[Event]) -> None:
        """One event batch: remember questions, open a dialog when one waits for the operator, close it when the
        question ends."""
        if not any(e.type.startswith("elicitation.") for e in events):
            return
        from engine.events import ElicitationRequested, ElicitationResolved, ElicitationWaiting

        for ev in events:
            if isinstance(ev, ElicitationRequested):
                self.rows[ev.elicitation_id] = QuestionRow(
                    ev.elicitation_id,
                    ev.call_id,
                    ev.server,
                    ev.tool,
                    ev.exposed_name,
                    ev.message,
                    ev.mode,
                    ev.url,
                    ev.deadline,
                    dict(ev.schema),
                )
            elif isinstance(ev, ElicitationWaiting) and ev.who == "operator":
                row = self.rows.get(ev.elicitation_id)
                if row is not None and ev.elicitation_id not in self.open:
                    self._show(app, row)
            elif isinstance(ev, ElicitationResolved):
                self.rows.pop(ev.elicitation_id, None)
                screen = self.open.pop(ev.elicitation_id, None)
                if screen is not None and screen.is_attached:
                    screen.ended()
                    if ev.by != "operator":
                        app.notify(f"{ev.exposed_name}: question {ev.action} by {ev.by}", title="question")

    def _show(self, app: App[Any], row: QuestionRow) -> None:
        from console.screens.elicitation import ElicitationScreen

        engine = self._engine
        if engine is None:
            return
        screen = ElicitationScreen(row, engine.answer_elicitation)
        self.open[row.elicitation_id] = screen
        app.bell()

        def closed(_action: str | None) -> None:
            self.open.pop(row.elicitation_id, None)

        app.push_screen(screen, closed)
