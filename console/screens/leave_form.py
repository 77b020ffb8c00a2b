"""Esc on an edited form asks: save, discard or go back (issue 34 item 5); an untouched form closes at once.

Why it exists: every form where the operator types (the server form, the secret and name entries, say-now and
whisper, transfer, deny-with-a-reason, the add and import dialogs) threw away what was typed on one Esc, without a
word. ``FormGuard`` remembers the form's values once it is filled and compares them on Esc; ``LeaveFormScreen`` is
the question. One implementation for every form: each names its own "save" (Save, Store, Send, Transfer, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Label, Static

from console.crash_guard import ContainErrors

#: Every widget an operator types into or sets: their values are what "edited" compares.
FORM_FIELDS = "Input, TextArea, Switch, Checkbox, RadioButton, Select"


def form_values(root: DOMNode) -> tuple[object, ...]:
    """What the form under ``root`` holds now: each field's kind, id and value, in order (a row added or removed
    counts as a change too)."""
    out: list[object] = []
    for field in root.query(FORM_FIELDS):
        value = getattr(field, "text", None) if type(field).__name__ == "TextArea" else getattr(field, "value", None)
        out.append((type(field).__name__, field.id, value))
    return tuple(out)


class LeaveFormScreen(ContainErrors, ModalScreen[str]):
    """Dismissed with "save", "discard" or "back" (Esc: back to the form, nothing lost)."""

    CSS_PATH = "modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "choose('save')", "Save", id="leave_save"),
        Binding("d", "choose('discard')", "Discard", id="leave_discard"),
        Binding("escape", "choose('back')", "Go back", id="leave_back"),
    ]

    def __init__(self, what: str, save_label: str) -> None:
        super().__init__()
        self.what = what
        self.save_label = save_label

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="leave-dialog"):
            yield Label(f"Leave {self.what}? You changed it.", classes="section-title")
            yield Static(
                f"s: {self.save_label.lower()} it · d: discard the changes · Esc: go back to it", classes="muted"
            )
            with Horizontal(classes="buttons"):
                yield Button(f"{self.save_label} (s)", id="leave-save", variant="primary")
                yield Button("Discard (d)", id="leave-discard", variant="error")
                yield Button("Go back (Esc)", id="leave-back")

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss((event.button.id or "leave-back").removeprefix("leave-"))


class FormGuard:
    """Esc on ``screen``'s form: ``close()`` at once when nothing changed since ``mark_clean()``, else ask, then
    ``save()`` (which may stay open, e.g. to show what is wrong), ``close()``, or nothing (back to the form)."""

    def __init__(
        self,
        screen: Screen[Any],
        *,
        save: Callable[[], object],
        close: Callable[[], object],
        save_label: str = "Save",
        what: str = "this form",
    ) -> None:
        self.screen = screen
        self.save = save
        self.close = close
        self.save_label = save_label
        self.what = what
        self._clean: tuple[object, ...] | None = None

    def mark_clean(self) -> None:
        """The form as filled (by compose, or by a load): what "unchanged" means from now on."""
        self._clean = form_values(self.screen)

    @property
    def edited(self) -> bool:
        return self._clean is not None and form_values(self.screen) != self._clean

    def leave(self) -> None:
        """What Esc does on the form."""
        if not self.edited:
            self.close()
            return

        def answered(choice: str | None) -> None:
            if choice == "save":
                self.save()
            elif choice == "discard":
                self.close()

        self.screen.app.push_screen(LeaveFormScreen(self.what, self.save_label), answered)
