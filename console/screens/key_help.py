"""The ``?`` key help: every key of the screen it was opened on (the focused table's too) and the app-wide keys,
each with its action id (the name ``console.keymap`` remaps it by), so an operator never has to guess a key."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Label

from console.commands import binding_key, screen_keys, screen_title
from console.crash_guard import ContainErrors
from console.widgets.tables import ConsoleTable


class KeyHelpScreen(ContainErrors, ModalScreen[None]):
    """A dialog listing the keys: this screen's first, then the app's; ``/`` filters, Esc closes."""

    CSS_PATH = "key_help.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark", "app.pop_screen", "Close", id="help_close"),
    ]

    def __init__(self, screen: Screen[Any]) -> None:
        super().__init__()
        self.for_screen = screen

    def compose(self) -> ComposeResult:
        with Vertical(id="key-help"):
            yield Label(f"Keys — {screen_title(self.for_screen)}", classes="section-title")
            yield ConsoleTable(id="key-table", cursor_type="row", zebra_stripes=True)
            yield Label("/ filter · Esc closes · Ctrl+P runs any of them by name", classes="muted")

    def on_mount(self) -> None:
        table = self.query_one("#key-table", ConsoleTable)
        for col in ("Where", "Key", "Action", "Id"):
            table.add_column(col, key=col.lower())
        app = self.for_screen.app
        rows = sorted(
            screen_keys(self.for_screen),
            key=lambda nb: nb[0] is app,  # this screen's keys first, then the app-wide ones
        )
        for node, binding in rows:
            where = Text("app", style="dim") if node is app else Text("screen", style="bold")
            table.add_row(
                where,
                Text(binding_key(app, binding), style="bold dark_orange"),
                binding.description or binding.action,
                Text(binding.id or "", style="dim"),
                key=binding.id,
            )
        table.focus()
