"""Small modal dialogs shared by screens: confirm, diff-before-save, masked secret entry, and a new name (Esc on an
edited entry asks before anything typed is lost: ``leave_form``)."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from console.crash_guard import ContainErrors
from console.screens.leave_form import FormGuard


class ConfirmScreen(ContainErrors, ModalScreen[bool]):
    """Yes/no; Enter or y confirms, Esc or n cancels."""

    CSS_PATH = "modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="confirm_yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm_no"),
    ]

    def __init__(self, question: str, detail: str = "") -> None:
        super().__init__()
        self.question = question
        self.detail = detail

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.question, classes="section-title")
            if self.detail:
                yield Static(self.detail, markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Yes (y)", id="yes", variant="primary")
                yield Button("No (n)", id="no")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class DiffScreen(ContainErrors, ModalScreen[bool]):
    """Shows the unified diff of a pending save; y saves, Esc cancels (nothing is written)."""

    CSS_PATH = "modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Save", id="diff_save"),
        Binding("n,escape", "answer(False)", "Cancel", id="diff_cancel"),
    ]

    def __init__(self, title: str, diff: str) -> None:
        super().__init__()
        self.title_text = title
        self.diff = diff

    def compose(self) -> ComposeResult:
        from rich.syntax import Syntax  # pygments: loaded when a diff is first shown, not with the app

        with Vertical(classes="dialog wide"):
            yield Label(self.title_text, classes="section-title")
            with VerticalScroll(id="diff-body"):
                yield Static(Syntax(self.diff or "(no changes)", "diff", theme="ansi_dark", word_wrap=True))
            with Horizontal(classes="buttons"):
                yield Button("Save (y)", id="yes", variant="primary")
                yield Button("Cancel (Esc)", id="no")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class SecretEntry(ContainErrors, ModalScreen[tuple[str, str] | None]):
    """Name and value of a secret; the value is typed into a password field and never shown."""

    CSS_PATH = "modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="secret_cancel"),
    ]

    def __init__(self, name: str = "", *, title: str = "Store a secret in the OS keyring") -> None:
        super().__init__()
        self.initial = name
        self.title_text = title
        self.guard = FormGuard(self, save=self._submit, close=lambda: self.dismiss(None), save_label="Store")

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="section-title")
            yield Input(value=self.initial, placeholder="NAME (letters, digits, _ . -)", id="secret-name")
            yield Input(placeholder="value (hidden)", password=True, id="secret-value")
            yield Static("", id="secret-error", classes="error-text")
            with Horizontal(classes="buttons"):
                yield Button("Store", id="store", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#secret-value" if self.initial else "#secret-name", Input).focus()
        self.guard.mark_clean()

    def _submit(self) -> None:
        name = self.query_one("#secret-name", Input).value.strip()
        value = self.query_one("#secret-value", Input).value
        if not name:
            self.query_one("#secret-error", Static).update("a name is required")
            return
        if not value:
            self.query_one("#secret-error", Static).update("a value is required (it is never shown)")
            return
        self.dismiss((name, value))

    @on(Input.Submitted, "#secret-name")
    def _name_done(self) -> None:
        self.query_one("#secret-value", Input).focus()

    @on(Input.Submitted, "#secret-value")
    def _value_done(self) -> None:
        self._submit()

    @on(Button.Pressed, "#store")
    def _store(self) -> None:
        self._submit()

    @on(Button.Pressed, "#cancel")
    def _cancel_button(self) -> None:
        self.dismiss(None)

    def action_cancel(self) -> None:
        self.guard.leave()


class NameEntry(ContainErrors, ModalScreen[str | None]):
    """One name (e.g. a secret's new name); Enter accepts, Esc cancels."""

    CSS_PATH = "modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="name_cancel"),
    ]

    def __init__(self, title: str, value: str = "", placeholder: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.initial = value
        self.placeholder = placeholder
        self.guard = FormGuard(self, save=self._done, close=lambda: self.dismiss(None), save_label="Accept")

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="section-title")
            yield Input(value=self.initial, placeholder=self.placeholder, id="name-value")
            yield Static("Enter: accept · Esc: cancel", classes="muted")

    def on_mount(self) -> None:
        self.query_one("#name-value", Input).focus()
        self.guard.mark_clean()

    @on(Input.Submitted, "#name-value")
    def _done(self) -> None:
        self.dismiss(self.query_one("#name-value", Input).value.strip() or None)

    def action_cancel(self) -> None:
        self.guard.leave()
