"""The Calls screen's history: ended calls stay in the table (dimmed, newest first, up to ``MAX_ENDED_KEPT``),
selectable, with their transcript, tier changes and tool invocations, and a key to export one.

Why here and not in ``calls``: the live table is about acting on calls; this is about reading them afterwards.
Rows are ordered live calls first (in start order), then ended ones, the newest ended first; the cursor stays on
the selected call when a row moves. The export comes from the flight recorder (``engine.export_call``), or, in a
replay, from the replayed file (``engine.export_recording``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.text import Text
from textual import work
from textual.widgets import DataTable

from console.attach import engine_of, local_id
from console.format import cost_text, duration, tier_text
from console.screens.calls_detail import CallDetail
from console.screens.calls_phone import line_text, state_text
from console.screens.calls_why import why_text, why_title
from console.state import REPLAYING, CallRow

ENDED_STYLE = "dim"


class CallHistory(CallDetail):
    """A mixin of ``CallsScreen`` (before ``CallDetail`` in its bases: it extends ``_show_call``)."""

    def call_columns(self) -> tuple[str, ...]:
        """The calls table's columns: with the Engine first in an attached console (``--attach``)."""
        from console.screens.calls import ATTACHED_COLUMNS, CALL_COLUMNS

        return ATTACHED_COLUMNS if self.capp.attached else CALL_COLUMNS

    def _whose(self, call_id: str) -> list[str]:
        """The row's first cells: the call id, or (attached) its engine and the engine's own call id."""
        if not self.capp.attached:
            return [call_id]
        return [engine_of(call_id) or "-", local_id(call_id)]

    def _row_cells(self, call_id: str) -> list[str | Text]:
        if call_id not in self.capp.state.calls:
            return self._ended_cells(self.capp.state.ended[call_id])
        row = self.capp.state.calls[call_id]
        session = self._session(call_id)
        state = session.state if session is not None else row.state
        why = why_text(row, self.capp.state.default_tier)
        return [
            *self._whose(row.call_id),
            row.caller,
            row.context,
            row.provider,
            tier_text(row.tier),
            why,
            duration(self.capp.clock.now() - row.started_at),
            cost_text(row.cost),
            state_text(state, session.transfer if session is not None else None, row.operator),
            "-" if self.capp.attached else line_text(session),
        ]

    def _show_why(self) -> None:
        """The selected live call's whole Why in the table's top border (its cell may end in "…")."""
        call_id = self.capp.selected_call or ""
        row = self.capp.state.calls.get(call_id)
        why = why_text(row, self.capp.state.default_tier) if row is not None else ""
        title = Text(why_title(call_id, row, why), style="bold") if row is not None else None
        self.query_one("#calls", DataTable).border_title = title

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
        ended = self.capp.state.ended
        return sorted(ended, key=lambda c: ended[c].ended_at or 0.0, reverse=True)

    def _order_rows(self, table: DataTable[object]) -> None:
        """Live calls first (start order), then ended ones (newest first); the cursor stays on the selection."""
        state = self.capp.state
        order = {cid: i for i, cid in enumerate([*state.calls, *self._history_ids()])}
        if self.capp.attached:  # the key is engine/call: the Call column alone repeats across engines
            table.sort("engine", "call", key=lambda cells: order.get(f"{cells[0]}/{cells[1]}", len(order)))
        else:
            table.sort("call", key=lambda cell: order.get(str(cell), len(order)))
        selected = self.capp.selected_call
        if selected is not None and selected in table.rows:
            table.move_cursor(row=table.get_row_index(selected))

    def _call_ended(self, table: DataTable[object], call_id: str) -> None:
        """A call in the table ended: its row turns into a history row and moves to the top of the history."""
        row = self.capp.state.ended.get(call_id)
        if row is None:
            if call_id in table.rows:
                table.remove_row(call_id)
            return
        cells = self._ended_cells(row)
        if call_id in table.rows:
            for col, value in zip(table.columns, cells, strict=True):
                table.update_cell(call_id, col, value, update_width=True)
        else:
            table.add_row(*cells, key=call_id)

    def _show_call(self, call_id: str | None) -> None:
        super()._show_call(call_id)
        row = self.capp.state.ended.get(call_id) if call_id is not None else None
        if row is not None:
            self._show_history(row)

    def _show_history(self, row: CallRow) -> None:
        """An ended call's transcript with its tier changes between the lines, and how it ended."""
        state, clock = self.capp.state, self.capp.clock
        lines = state.transcript(row.call_id)
        items: list[tuple[float, int, Text]] = []
        for ts, role, text in lines:
            t = Text(clock.hms(ts) + " ", style="dim")
            t.append(f"{role:>9}: ", style="bold green" if role == "assistant" else "bold yellow")
            t.append(text)
            items.append((ts, 0, t))
        for ts, old, new, reason in state.tier_history.get(row.call_id, ()):
            items.append((ts, 1, Text(f"{clock.hms(ts)}      tier: {old.upper()} → {new.upper()} ({reason})", "cyan")))
        if row.ended_at is not None:
            items.append((row.ended_at, 2, Text(f"{clock.hms(row.ended_at)}     ended: {row.end_reason}", "dim")))
        log = self._log("#transcript")
        log.clear()
        for _ts, _kind, line in sorted(items, key=lambda i: (i[0], i[1])):
            log.write(line)
        self._transcript_shown = len(lines)

    # ------------------------------------------------------------------------------------------ export

    def action_export_call(self) -> None:
        call_id = self.capp.selected_call
        if call_id is None or self.capp.state.call_or_ended(call_id) is None:
            self.notify("select a call first (live or ended)", title="export", severity="warning")
            return
        self.export_call(call_id)

    @work(group="export", name="export-call", exit_on_error=False)
    async def export_call(self, call_id: str) -> None:
        app = self.capp
        replay = app.replay
        try:
            if replay is not None and replay.owns(call_id):
                from engine import export_recording

                path: Path = await asyncio.to_thread(export_recording, replay.path, "md")
            else:
                engine = app.require_engine()
                if engine is None:
                    return
                path = await engine.export_call(call_id, "md")
        except Exception as e:  # no recording of it (recording off), a folder we cannot write
            self.notify(f"{call_id}: {e}", title="export", severity="error", timeout=10)
            return
        self.notify(f"{call_id}: transcript, tools and tiers written to {path}", title="export", timeout=10)
