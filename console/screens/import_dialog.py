"""Ask for the path of a Claude Desktop / VS Code MCP JSON file to import, and where its credentials go.

Credentials go to the OS keyring unless the operator ticks "plain text" (the explicit choice ``ava-engine
import-mcp-json --plaintext-secrets`` makes on the command line): both run the one importer.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Input, Label, Static

HINT = (
    "Claude Desktop: claude_desktop_config.json ('mcpServers'); VS Code: .vscode/mcp.json ('servers').\n"
    "Credential-looking env/header values go to the OS keyring as ${keyring:…}.\n"
    "You will see the diff before anything is written."
)


class ImportScreen(ModalScreen[tuple[str, bool] | None]):
    """Dismisses with (path, keep credentials in plain text) or None."""

    CSS_PATH = "modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="import_cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Import MCP servers from JSON", classes="section-title")
            yield Input(placeholder="path to the JSON file", id="import-path")
            yield Checkbox("keep credentials in the YAML (plain text)", id="import-plain")
            yield Static(HINT, classes="muted")

    def on_mount(self) -> None:
        self.query_one("#import-path", Input).focus()

    @on(Input.Submitted, "#import-path")
    def _done(self, event: Input.Submitted) -> None:
        path = event.value.strip()
        self.dismiss((path, self.query_one("#import-plain", Checkbox).value) if path else None)

    def action_cancel(self) -> None:
        self.dismiss(None)
