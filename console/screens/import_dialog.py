"""Ask for the path of a Claude Desktop / VS Code MCP JSON file to import, and where its credentials go; then for
the values of the file's VS Code ``inputs`` (``InputsScreen``) that are not in the keyring yet.

Credentials go to the keyring (the hint names a plain-file one UNENCRYPTED) unless the operator ticks "plain text"
(the explicit choice ``ava-engine import-mcp-json --plaintext-secrets`` makes on the command line): both run the one
importer, and both ask for the same inputs (the CLI on its terminal).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Input, Label, Static

from console.crash_guard import ContainErrors
from console.screens.leave_form import FormGuard
from console.widgets.keyring_where import KeyringWhere
from console.widgets.tick_box import TickBox

if TYPE_CHECKING:
    from engine.config.mcp_import_result import Ask

HINT = (
    "Claude Desktop: claude_desktop_config.json ('mcpServers'); VS Code: .vscode/mcp.json ('servers').\n"
    "Credentials (env/header values, in arguments and URLs) go to {where} as ${keyring:…}.\n"
    "You will see the diff before anything is written."
)


class ImportScreen(ContainErrors, ModalScreen[tuple[str, bool] | None]):
    """Dismisses with (path, keep credentials in plain text) or None."""

    CSS_PATH = "modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="import_cancel")]

    def __init__(self) -> None:
        super().__init__()
        self.guard = FormGuard(self, save=self._done, close=lambda: self.dismiss(None), save_label="Import")

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Import MCP servers from JSON", classes="section-title")
            yield Input(placeholder="path to the JSON file", id="import-path")
            yield TickBox("keep credentials in the YAML (plain text)", id="import-plain")
            yield KeyringWhere(HINT, classes="muted")

    def on_mount(self) -> None:
        self.query_one("#import-path", Input).focus()
        self.guard.mark_clean()

    @on(Input.Submitted, "#import-path")
    def _done(self) -> None:
        path = self.query_one("#import-path", Input).value.strip()
        self.dismiss((path, self.query_one("#import-plain", Checkbox).value) if path else None)

    def action_cancel(self) -> None:
        self.guard.leave()


class InputsScreen(ContainErrors, ModalScreen[list[str] | None]):
    """One field per VS Code input to fill (passwords hidden); dismisses with the values in order, or None."""

    CSS_PATH = "modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="import_inputs_cancel")]

    def __init__(self, asks: list[Ask]) -> None:
        super().__init__()
        self.asks = asks
        self.guard = FormGuard(self, save=self._submitted, close=lambda: self.dismiss(None), save_label="Use")

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield KeyringWhere("Values the file asks for (stored in {where})", classes="section-title")
            for i, ask in enumerate(self.asks):
                p = ask.prompt
                yield Label(f"{p.description or p.id} (mcp.servers.{', '.join(ask.servers)} → {', '.join(ask.names)})")
                hint = " / ".join(p.options) if p.options else ("hidden" if p.password else p.id)
                yield Input(value=p.default or "", placeholder=hint, password=p.password, id=f"import-input-{i}")
            yield Static("", id="import-inputs-error", classes="error-text")

    def on_mount(self) -> None:
        self.query_one("#import-input-0", Input).focus()
        self.guard.mark_clean()

    @on(Input.Submitted)
    def _submitted(self) -> None:
        """Enter anywhere: the first field still wrong gets the focus and the reason, else the form is done."""
        fields = list(self.query(Input))
        for ask, field in zip(self.asks, fields, strict=True):
            problem = "a value is required" if not field.value else ""
            if ask.prompt.options and field.value not in ask.prompt.options:
                problem = f"one of {', '.join(ask.prompt.options)}"
            if problem:
                self.query_one("#import-inputs-error", Static).update(f"{ask.prompt.id}: {problem}")
                field.focus()
                return
        self.dismiss([f.value for f in fields])

    def action_cancel(self) -> None:
        self.guard.leave()
