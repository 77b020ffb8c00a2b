"""Engines: the engines an attached console follows (``--attach``), live or gone, with their calls.

Why a screen: with many engines, the operator must see at a glance which engine is up, which is draining, which
went away (its calls then show "lost" on the Calls screen) and how many calls each carries. Built from the engines'
heartbeats (``EngineInfo``) and the console's own state; redrawn when an engine joins or leaves
(``show_engines``) and each second (the heartbeat's age). A console running its own engine says so here.
"""

from __future__ import annotations

import time
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.widgets import DataTable, Header, Label, Static

from console.attach import EngineRow, engine_of
from console.format import duration
from console.screens.base import ConsoleScreen
from console.state import Changes
from console.widgets.footer import KeyFooter
from console.widgets.keybar import KeyBar
from console.widgets.tables import ConsoleTable

COLUMNS = ("Engine", "State", "Calls", "Max", "Host", "Version", "Contexts", "Since")
STATE_STYLE = {"live": "green", "draining": "yellow", "gone": "bold red"}


class EnginesScreen(ConsoleScreen):
    CSS_PATH = "engines.tcss"
    BINDINGS: ClassVar[list[BindingType]] = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield Label("Engines — what this console follows", classes="section-title")
        yield Static("", id="engines-note")
        yield ConsoleTable(id="engines", cursor_type="row", zebra_stripes=True)
        yield KeyBar(classes="keybar")
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one("#engines", DataTable)
        for col in COLUMNS:
            table.add_column(col, key=col.lower())
        if self.capp.tick:
            self.set_interval(1.0, self.refresh_all)
        self.refresh_all()
        table.focus()

    def apply_changes(self, changes: Changes) -> None:
        if changes.calls_added or changes.calls_removed:
            self.refresh_all()

    def show_engines(self) -> None:
        """An engine joined or left, or the link changed (the app calls this)."""
        self.refresh_all()

    def refresh_all(self) -> None:
        if not self.is_mounted:
            return
        note = self.query_one("#engines-note", Static)
        table = self.query_one("#engines", DataTable)
        link = self.capp.link
        if link is None:
            table.clear()
            if self.capp.attached:
                note.update(Text(f"attaching to {self.capp.attach_url}…", style="dim"))
            else:
                note.update(
                    Text(
                        "this console runs its own engine; ava-console --attach URL follows engines "
                        "elsewhere (redis://… or http://host:port)",
                        style="dim",
                    )
                )
            return
        gone = sum(1 for r in link.engines.values() if r.status == "gone")
        note.update(Text(f"{link.header()}" + (f" · {gone} gone" if gone else "")))
        calls: dict[str, int] = {}
        for ref in self.capp.state.calls:
            calls[engine_of(ref)] = calls.get(engine_of(ref), 0) + 1
        now = time.time()
        keep = set(link.engines)
        for key in [k for k in table.rows if k.value not in keep]:
            table.remove_row(key)
        for engine_id, row in link.engines.items():
            cells = self._cells(row, calls.get(engine_id, 0), now)
            if engine_id in table.rows:
                for col, value in zip(COLUMNS, cells, strict=True):
                    table.update_cell(engine_id, col.lower(), value)
            else:
                table.add_row(*cells, key=engine_id)

    @staticmethod
    def _cells(row: EngineRow, calls: int, now: float) -> list[str | Text]:
        info = row.info
        state = row.status if not row.reason else f"{row.status}: {row.reason}"
        return [
            row.id,
            Text(state, style=STATE_STYLE.get(row.status, "")),
            str(calls),
            str(info.max_calls) if info is not None and info.max_calls is not None else "-",
            info.host if info is not None and info.host else "-",
            info.version if info is not None and info.version else "-",
            ", ".join(info.contexts) if info is not None and info.contexts else "-",
            duration(now - row.since),
        ]
