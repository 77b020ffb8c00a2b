"""Recordings: the flight recorder's calls, newest first; Enter replays the highlighted one through the screens.

A dialog over any screen (Ctrl+O): the list is read in a thread worker (a folder of thousands of calls must not
block the screen); the choice is handed back to the app, which replays it (``console.replay_controls``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

from console.crash_guard import ContainErrors
from console.widgets.tables import cursor_key

#: At most this many recordings are listed (the newest).
MAX_LISTED = 500


class RecordingsScreen(ContainErrors, ModalScreen[Path | None]):
    CSS_PATH = "recordings.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "play", "Replay", id="recording_play", priority=True),
        Binding("escape", "cancel", "Cancel", id="recording_cancel"),
    ]

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(f"Recordings in {self.folder}  (Enter: replay · Esc: cancel)", classes="section-title")
            yield DataTable(id="recordings", cursor_type="row", zebra_stripes=True)
            yield Label("reading…", id="recordings-note")

    def on_mount(self) -> None:
        table = self.query_one("#recordings", DataTable)
        for col in ("Started", "Call", "Size", "File"):
            table.add_column(col, key=col.lower())
        table.focus()
        self.load()

    @work(thread=True, group="recordings", name="list-recordings", exit_on_error=False)
    def load(self) -> None:
        from engine import list_recordings

        recs = list_recordings(self.folder)[:MAX_LISTED]
        self.app.call_from_thread(self._show, recs)

    def _show(self, recs: list[Any]) -> None:  # engine.list_recordings' rows
        table = self.query_one("#recordings", DataTable)
        table.clear()
        for r in recs:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started))
            table.add_row(when, r.call_id, f"{r.size / 1024:.1f} KiB", r.path.name, key=str(r.path))
        note = self.query_one("#recordings-note", Label)
        note.update(f"{len(recs)} recording(s)" if recs else "no recordings here yet: every call is recorded")

    def action_play(self) -> None:
        key = cursor_key(self.query_one("#recordings", DataTable))
        if key is None:
            self.notify("no recording highlighted", title="replay", severity="warning")
            return
        self.dismiss(Path(key))

    @on(DataTable.RowSelected, "#recordings")
    def _selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.dismiss(Path(event.row_key.value))

    def action_cancel(self) -> None:
        self.dismiss(None)
