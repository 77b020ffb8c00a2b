"""Ask for the path of a Claude Desktop / VS Code MCP JSON file to import."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

HINT = (
    "Claude Desktop: claude_desktop_config.json ('mcpServers'); VS Code: .vscode/mcp.json ('servers').\n"
    "You will see the diff before anything is written."
)


class ImportScreen(ModalScreen[str | None]):
    CSS_PATH = "modals.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="import_cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Import MCP servers from JSON", classes="section-title")
            yield Input(placeholder="path to the JSON file", id="import-path")
            yield Static(HINT, classes="muted")

    def on_mount(self) -> None:
        self.query_one("#import-path", Input).focus()

    @on(Input.Submitted, "#import-path")
    def _done(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
