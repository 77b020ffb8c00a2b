"""Live steering from the Calls screen: a small dialog for a say-now line or a hidden whisper to the selected call.

Why it exists: the operator (a game master voicing an NPC, a supervisor) nudges a live conversation without taking
it over: ``S`` makes the agent say a line next, ``i`` slips it an instruction for its next turn that the caller
never hears. The dialog takes one line (at most the engine's ``steer_max_chars``), Enter sends it, Esc leaves;
the engine's ``say_now`` / ``whisper`` run in a worker and a refusal (the call ended, the provider could not) is a
notification with the reason (``calls_steer``). What was sent shows in the call's transcript (``steering.injected``).
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from console.crash_guard import ContainErrors
from console.screens.leave_form import FormGuard

#: kind -> (title, what it does, the input's placeholder)
KINDS: dict[str, tuple[str, str, str]] = {
    "say": (
        "Say now",
        "The agent says this line next, in its own voice, after what it is saying now.",
        "what the agent says next",
    ),
    "whisper": (
        "Whisper to the agent",
        "A hidden instruction for the agent's next turn: the caller never hears it.",
        "e.g. you recognise the caller as the lost prince",
    ),
}


class SteerModal(ContainErrors, ModalScreen[str | None]):
    """One line of steering for ``call_id``; dismissed with the text, or None when left."""

    CSS_PATH = "steer_modal.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="steer_cancel"),
    ]

    def __init__(self, kind: str, call_id: str, max_chars: int) -> None:
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"unknown steering kind {kind!r} (one of {', '.join(KINDS)})")
        self.kind = kind
        self.call_id = call_id
        self.max_chars = max_chars
        self.guard = FormGuard(self, save=self._submit, close=lambda: self.dismiss(None), save_label="Send")

    def compose(self) -> ComposeResult:
        title, what, placeholder = KINDS[self.kind]
        with Vertical(id="steer-dialog", classes=self.kind):
            yield Label(f"{title} · {self.call_id}", id="steer-title")
            yield Static(what, id="steer-help")
            yield Input(placeholder=placeholder, max_length=self.max_chars, id="steer-text")
            yield Static("", id="steer-error")
            with Horizontal(id="steer-buttons"):
                yield Static(f"Enter sends · Esc leaves · at most {self.max_chars} characters", id="steer-keys")
                yield Button("Send", id="steer-send", variant="primary")
                yield Button("Cancel", id="steer-cancel")

    def on_mount(self) -> None:
        self.query_one("#steer-text", Input).focus()
        self.guard.mark_clean()

    def _submit(self) -> None:
        text = " ".join(self.query_one("#steer-text", Input).value.split())
        if not text:
            what = "the line the agent should say" if self.kind == "say" else "the instruction for the agent"
            self.query_one("#steer-error", Static).update(f"type {what} first (Esc leaves)")
            return
        self.dismiss(text)

    @on(Input.Submitted, "#steer-text")
    def _entered(self) -> None:
        self._submit()

    @on(Button.Pressed, "#steer-send")
    def _send(self) -> None:
        self._submit()

    @on(Button.Pressed, "#steer-cancel")
    def _cancel_button(self) -> None:
        self.dismiss(None)

    def action_cancel(self) -> None:
        self.guard.leave()
