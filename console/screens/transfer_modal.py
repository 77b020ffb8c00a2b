"""The operator's transfer dialog: pick a destination of ``tools.extensions`` and blind or warm, for a phone call.

Why it exists: the operator ends or transfers a live phone call by key (``T`` on the Calls screen, beside ``e``
for end). The destinations are the ones the AI's transfer tools may use (name, description, what is dialled), so
the operator never types a dial string; blind sends the caller at once, warm has the AI ask the caller to hold while
the target rings. The engine's ``transfer_call`` runs in a worker (``calls_phone``); its refusal is a notification.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, RadioButton, RadioSet, Static
from textual.widgets.option_list import Option

from console.crash_guard import ContainErrors
from console.screens.leave_form import FormGuard
from engine.config.models.tools import TransferTarget

#: mode -> what the radio button says
MODES = {
    "blind": "Blind: the AI leaves at once and the caller rings through",
    "warm": "Warm: the AI asks the caller to hold; music while it rings",
}


class TransferModal(ContainErrors, ModalScreen[tuple[str, str] | None]):
    """Destination and mode for transferring ``call_id``; dismissed with (destination, mode), or None when left."""

    CSS_PATH = "transfer_modal.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="transfer_cancel"),
        # priority: the typed destination's input would take Ctrl+W (delete a word) otherwise
        Binding("ctrl+w", "toggle_mode", "Blind / warm", id="transfer_mode", priority=True),
    ]

    def __init__(self, call_id: str, extensions: Mapping[str, TransferTarget] | None) -> None:
        """``extensions`` None: the destinations are another engine's (``--attach``): the operator types one of
        its names, and that engine refuses a name it does not have."""
        super().__init__()
        self.call_id = call_id
        self.typed = extensions is None
        self.extensions = dict(extensions or {})
        self.guard = FormGuard(self, save=self._go, close=lambda: self.dismiss(None), save_label="Transfer")

    def compose(self) -> ComposeResult:
        with Vertical(id="transfer-dialog"):
            yield Label(f"Transfer · {self.call_id}", id="transfer-title")
            if self.typed:
                yield Static(
                    "The destinations are that engine's tools.extensions: type one of its names.", id="transfer-help"
                )
                yield Input(placeholder="destination (e.g. support)", id="transfer-typed")
            elif not self.extensions:
                yield Static("No destinations: add them under tools.extensions in the config.", id="transfer-help")
            options = [
                Option(f"{name}  {t.destination}" + (f"  · {t.description}" if t.description else ""), id=name)
                for name, t in self.extensions.items()
            ]
            yield OptionList(*options, id="transfer-targets")
            with RadioSet(id="transfer-mode"):
                for mode, text in MODES.items():
                    yield RadioButton(text, value=mode == "blind", id=f"transfer-{mode}")
            with Horizontal(id="transfer-buttons"):
                yield Static("Enter transfers · Ctrl+W blind/warm · Esc leaves", id="transfer-keys")
                yield Button("Transfer", id="transfer-go", variant="warning")
                yield Button("Cancel", id="transfer-no")

    def on_mount(self) -> None:
        if self.typed:
            self.query_one("#transfer-targets", OptionList).display = False
            self.query_one("#transfer-typed", Input).focus()
        else:
            targets = self.query_one("#transfer-targets", OptionList)
            if self.extensions:
                targets.highlighted = 0
            targets.focus()
        self.guard.mark_clean()

    @property
    def mode(self) -> str:
        return "warm" if self.query_one("#transfer-warm", RadioButton).value else "blind"

    def _go(self) -> None:
        if self.typed:
            typed = self.query_one("#transfer-typed", Input).value.strip()
            if typed:
                self.dismiss((typed, self.mode))
            return
        targets = self.query_one("#transfer-targets", OptionList)
        if targets.highlighted is None:
            return
        option = targets.get_option_at_index(targets.highlighted)
        self.dismiss((str(option.id), self.mode))

    @on(OptionList.OptionSelected, "#transfer-targets")
    def _picked(self) -> None:
        self._go()

    @on(Input.Submitted, "#transfer-typed")
    def _typed(self) -> None:
        self._go()

    @on(Button.Pressed, "#transfer-go")
    def _go_button(self) -> None:
        self._go()

    @on(Button.Pressed, "#transfer-no")
    def _cancel_button(self) -> None:
        self.dismiss(None)

    def action_toggle_mode(self) -> None:
        warm = self.query_one("#transfer-warm", RadioButton)
        if warm.value:
            self.query_one("#transfer-blind", RadioButton).value = True
        else:
            warm.value = True

    def action_cancel(self) -> None:
        self.guard.leave()
