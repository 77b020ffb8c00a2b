"""The Calls screen's table of calls: the live calls, then their history (ended calls stay, dimmed, newest first,
up to ``MAX_ENDED_KEPT``), with a key to export one.

A widget that owns its rows, given the piece of the console it reads (``CallsModel``): rows are ordered live calls
first (in start order), then ended ones, the newest ended first; the cursor stays on the selected call when a row
moves. The export comes from the flight recorder (``engine.export_call``), or, in a replay, from the replayed file
(``engine.export_recording``).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

from rich.text import Text
from textual import work

from console.attach import engine_of, local_id
from console.format import cost_text, duration, tier_text
from console.screens.calls_model import EngineAccess, Selection
from console.screens.calls_phone import line_text, state_text
from console.screens.calls_why import why_text, why_title
from console.state import REPLAYING, CallRow, Changes
from console.widgets.tables import ConsoleTable

if TYPE_CHECKING:
    from pathlib import Path

    from console.format import Clock
    from console.replay import Replay
    from engine import CallInfo

ENDED_STYLE = "dim"
CALL_COLUMNS = ("Call", "Caller", "Context", "Provider", "Tier", "Why", "Duration", "Cost", "State", "Line")
#: An attached console's (``--attach``): whose call it is first; the Call column then shows the engine's own id.
ATTACHED_COLUMNS = ("Engine", *CALL_COLUMNS)
#: The headings wider than their values, shortened while the table would not fit otherwise (80 columns).
SHORT_HEADINGS = {"context": "Ctx", "provider": "Prov", "duration": "Dur"}


class CallsModel(Selection, EngineAccess, Protocol):
    """What the table reads: the calls, the selection, the clock, and (export) a replay being played."""

    @property
    def clock(self) -> Clock: ...

    @property
    def replay(self) -> Replay | None: ...


class CallsTable(ConsoleTable):
    """The calls, one row each (keyed by call id), live first then ended."""

    def __init__(self, model: CallsModel) -> None:
        # Why is free text: it takes the room the other columns leave, so State and Line always show; at 80
        # columns the headings wider than their values are shortened, so no column scrolls off sideways
        super().__init__(id="calls", cursor_type="row", zebra_stripes=True, flex="why", short=SHORT_HEADINGS)
        self.model = model

    def on_mount(self) -> None:
        for col in self.call_columns():
            self.add_column(col, key=col.lower())

    def call_columns(self) -> tuple[str, ...]:
        """The columns: with the Engine first in an attached console (``--attach``)."""
        return ATTACHED_COLUMNS if self.model.attached else CALL_COLUMNS

    def session(self, call_id: str | None) -> CallInfo | None:
        engine = self.model.engine
        return engine.call_info(call_id) if engine is not None and call_id is not None else None

    def _whose(self, call_id: str) -> list[str]:
        """The row's first cells: the call id, or (attached) its engine and the engine's own call id."""
        if not self.model.attached:
            return [call_id]
        return [engine_of(call_id) or "-", local_id(call_id)]

    def row_cells(self, call_id: str) -> list[str | Text]:
        state = self.model.state
        if call_id not in state.calls:
            return self._ended_cells(state.ended[call_id])
        row = state.calls[call_id]
        session = self.session(call_id)
        return [
            *self._whose(row.call_id),
            row.caller,
            row.context,
            row.provider,
            tier_text(row.tier),
            why_text(row, state.default_tier),
            duration(self.model.clock.now() - row.started_at),
            cost_text(row.cost),
            state_text(
                session.state if session is not None else row.state,
                session.transfer if session is not None else None,
                row.operator,
            ),
            "-" if self.model.attached else line_text(session),
        ]

    def _ended_cells(self, row: CallRow) -> list[str | Text]:
        """An ended call's row: every cell dimmed, its duration as it ended, its state with the reason. A call lost
        with its engine (``--attach``) says so in red: it did not end, nobody knows how it went on."""
        took = duration((row.ended_at or row.started_at) - row.started_at)
        if row.state == "lost":
            state = Text(f"✖ {row.end_reason}" if row.end_reason else "✖ lost", style="bold red")
        elif row.state == REPLAYING:  # a recording replayed beside live calls: history, shown as it plays
            state = Text("▶ replaying", style=ENDED_STYLE)
        else:
            state = Text(f"ended: {row.end_reason}" if row.end_reason else "ended", style=ENDED_STYLE)
        cells = [*self._whose(row.call_id), row.caller, row.context, row.provider, row.tier.upper(), row.tier_reason]
        return [
            *(Text(c, style=ENDED_STYLE) for c in cells),
            Text(took, style=ENDED_STYLE),
            Text(cost_text(row.cost), style=ENDED_STYLE),
            state,
            Text("", style=ENDED_STYLE),
        ]

    def _history_ids(self) -> list[str]:
        """The ended calls the table shows, newest ended first."""
        ended = self.model.state.ended
        return sorted(ended, key=lambda c: ended[c].ended_at or 0.0, reverse=True)

    def fill(self) -> None:
        """Every row again, from the state (the selected call keeps the cursor)."""
        self.clear()
        for call_id in [*self.model.state.calls, *self._history_ids()]:
            self.add_row(*self.row_cells(call_id), key=call_id)
        self.follow_selection()

    def follow_selection(self) -> None:
        selected = self.model.selected_call
        if selected is not None and selected in self.rows:
            self.move_cursor(row=self.get_row_index(selected))

    def tick(self) -> None:
        """The live calls' durations (and lines) as time passes."""
        now = self.model.clock.now()
        for call_id, row in self.model.state.calls.items():
            if call_id in self.rows:
                self.update_cell(call_id, "duration", duration(now - row.started_at))
                if not self.model.attached:
                    self.update_cell(call_id, "line", line_text(self.session(call_id)))

    def apply(self, changes: Changes) -> None:
        """The rows ``changes`` names: added, changed, ended (to history), forgotten; the Why on a new default."""
        state = self.model.state
        for call_id in changes.calls_added:
            if call_id in state.calls and not self.has_row(call_id):
                self.add_row(*self.row_cells(call_id), key=call_id)
        for call_id in changes.calls_changed:
            if self.has_row(call_id) and call_id in state.calls:
                for col, value in zip(self.call_columns(), self.row_cells(call_id), strict=True):
                    self.update_cell(call_id, col.lower(), value)
        for call_id in changes.calls_removed:
            self._call_ended(call_id)
        for call_id in changes.calls_forgotten:
            if self.has_row(call_id):
                self.remove_row(call_id)
        if changes.default_tier:  # the Why of every call the operator's default now decides
            for call_id, row in state.calls.items():
                if self.has_row(call_id):
                    self.update_cell(call_id, "why", why_text(row, state.default_tier))
        if changes.calls_removed or (changes.calls_added and state.ended):
            self._order_rows()

    def _order_rows(self) -> None:
        """Live calls first (start order), then ended ones (newest first); the cursor stays on the selection."""
        state = self.model.state
        order = {cid: i for i, cid in enumerate([*state.calls, *self._history_ids()])}
        if self.model.attached:  # the key is engine/call: the Call column alone repeats across engines
            self.sort("engine", "call", key=lambda cells: order.get(f"{cells[0]}/{cells[1]}", len(order)))
        else:
            self.sort("call", key=lambda cell: order.get(str(cell), len(order)))
        self.follow_selection()

    def _call_ended(self, call_id: str) -> None:
        """A call in the table ended: its row turns into a history row and moves to the top of the history."""
        row = self.model.state.ended.get(call_id)
        if row is None:
            if call_id in self.rows:
                self.remove_row(call_id)
            return
        cells = self._ended_cells(row)
        if call_id in self.rows:
            for col, value in zip(self.columns, cells, strict=True):
                self.update_cell(call_id, col, value, update_width=True)
        else:
            self.add_row(*cells, key=call_id)

    def show_why(self) -> None:
        """The selected live call's whole Why in the table's top border (its cell may end in "…")."""
        state = self.model.state
        call_id = self.model.selected_call or ""
        row = state.calls.get(call_id)
        why = why_text(row, state.default_tier) if row is not None else ""
        self.border_title = Text(why_title(call_id, row, why), style="bold") if row is not None else None

    # ------------------------------------------------------------------------------------------ export

    def export_selected(self) -> None:
        call_id = self.model.selected_call
        if call_id is None or self.model.state.call_or_ended(call_id) is None:
            self.notify("select a call first (live or ended)", title="export", severity="warning")
            return
        self._export(call_id)

    @work(group="export", name="export-call", exit_on_error=False)
    async def _export(self, call_id: str) -> None:
        replay = self.model.replay
        try:
            if replay is not None and replay.owns(call_id):
                from engine import export_recording

                path: Path = await asyncio.to_thread(export_recording, replay.path, "md")
            else:
                engine = self.model.require_engine()
                if engine is None:
                    return
                path = await engine.export_call(call_id, "md")
        except Exception as e:  # no recording of it (recording off), a folder we cannot write
            self.notify(f"{call_id}: {e}", title="export", severity="error", timeout=10)
            return
        self.notify(f"{call_id}: transcript, tools and tiers written to {path}", title="export", timeout=10)
