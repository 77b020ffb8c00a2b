"""The Calls screen's call detail: the selected call's transcript (for an ended call with its tier changes and how it
ended), its tools (shown or hidden, and why) and its tool invocations.

A widget given the piece of the console it reads (``DetailModel``). It is not in the screen's first frame: the
screen mounts it (with the softphone panel and the event log) once that frame is drawn, which imports their modules
then (``RichLog`` imports ``rich.pretty`` and ``attrs``, the softphone panel ``Select`` and ``Button``): most of the
screen's widgets, and of the time to import, style and draw them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from rich.text import Text
from textual import on, work
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Label, RichLog

from console.format import cost_text, latency, status_text
from console.orders import call_label
from console.screens.calls_model import EngineAccess, Selection
from console.widgets.tables import ConsoleTable, cell_text, cursor_key
from console.widgets.wrap_log import WrapLog

if TYPE_CHECKING:
    from textual.app import ComposeResult

    from console.attach import AttachLink
    from console.format import Clock
    from console.state import CallRow, Changes, Invocation

log = logging.getLogger(__name__)

#: Transcript roles: what each side said, and the operator's steering (a say-now line, a hidden whisper).
ROLE_STYLES = {"assistant": "bold green", "say-now": "bold magenta", "whisper": "bold magenta"}


class DetailModel(Selection, EngineAccess, Protocol):
    """What the detail reads: the calls, the selection, the engine (or the attached engines' link), the clock."""

    link: AttachLink | None

    @property
    def clock(self) -> Clock: ...


class CallDetail(Horizontal):
    """The selected call's transcript, tools and tool invocations, side by side."""

    def __init__(self, model: DetailModel) -> None:
        super().__init__(id="call-detail")
        self.model = model
        self._transcript_shown = 0

    def compose(self) -> ComposeResult:
        with Vertical(id="transcript-pane"):
            yield Label("Transcript", id="transcript-title", classes="section-title")
            yield WrapLog(id="transcript", max_lines=500)
        with Vertical(id="tools-pane"):
            yield Label("Tools shown  (t: on/off next turn · n: now)", classes="section-title")
            yield ConsoleTable(id="call-tools", cursor_type="row", flex="shown")
            yield Label("Tool invocations", classes="section-title")
            yield ConsoleTable(id="call-invocations", cursor_type="row", follow=True)

    def setup(self) -> None:
        """The tables' columns (once mounted)."""
        tools = self.query_one("#call-tools", DataTable)
        for name in ("On", "Tool", "Server", "Shown"):
            tools.add_column(name, key=name.lower())
        inv = self.query_one("#call-invocations", DataTable)
        for col in ("Time", "Tool", "Status", "Latency"):
            inv.add_column(col, key=col.lower())

    def set_title(self, call_id: str | None) -> None:
        title = self.query_one("#transcript-title", Label)
        row = self.model.state.call_or_ended(call_id) if call_id else None
        if row is None:
            title.update("Transcript — no call selected (Ctrl+N starts a test call)")
        else:
            ended = f" — ended: {row.end_reason}" if row.state == "ended" else ""
            cost = f" · {cost_text(row.cost)}" if row.cost is not None else ""
            title.update(f"Transcript — {call_label(row.call_id)} ({row.context}){cost}{ended}")

    def show_call(self, call_id: str | None) -> None:
        self.set_title(call_id)
        transcript = self.query_one("#transcript", RichLog)
        transcript.clear()
        self._transcript_shown = 0
        if call_id is not None:
            self.append_transcript(call_id)
        self.show_tools(call_id)
        inv = self.query_one("#call-invocations", DataTable)
        inv.clear()
        if call_id is not None:
            for i in self.model.state.invocations_for(call_id)[-100:]:
                inv.add_row(*self._inv_cells(i), key=str(i.seq))
        ended = self.model.state.ended.get(call_id) if call_id is not None else None
        if ended is not None:
            self._show_history(ended)

    def apply(self, changes: Changes, selected: str) -> None:
        """What ``changes`` names of the selected call: its lines, its title (cost), its tools, its invocations."""
        if selected in changes.transcripts:
            self.append_transcript(selected)
        if selected in changes.calls_changed:  # its cost, in the transcript's title
            self.set_title(selected)
        if selected in changes.tools_changed or selected in changes.calls_removed or changes.config_reloaded:
            self.show_tools(selected)
        if selected in changes.calls_removed:
            self.show_call(selected)  # the history view: transcript with its tier changes and the end
        inv = self.query_one("#call-invocations", ConsoleTable)
        for i in changes.invocations_added:
            if i.call_id == selected and not inv.has_row(str(i.seq)):
                inv.add_row(*self._inv_cells(i), key=str(i.seq))
        for i in changes.invocations_changed:
            if i.call_id == selected and inv.has_row(str(i.seq)):
                for col, value in zip(("time", "tool", "status", "latency"), self._inv_cells(i), strict=True):
                    inv.update_cell(str(i.seq), col, value)

    def append_transcript(self, call_id: str) -> None:
        lines = self.model.state.transcript(call_id)
        transcript = self.query_one("#transcript", RichLog)
        shown = self._transcript_shown
        if len(lines) < shown:
            transcript.clear()
            shown = 0
        for ts, role, text in lines[shown:]:
            t = Text(self.model.clock.hms(ts) + " ", style="dim")
            t.append(f"{role:>9}: ", style=ROLE_STYLES.get(role, "bold yellow"))
            t.append(text, style="italic" if role == "whisper" else "")
            if role == "whisper":
                t.append(" — hidden from the caller", style="dim")
            transcript.write(t)
        self._transcript_shown = len(lines)

    def _show_history(self, row: CallRow) -> None:
        """An ended call's transcript with its tier changes between the lines, and how it ended."""
        state, clock = self.model.state, self.model.clock
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
        transcript = self.query_one("#transcript", RichLog)
        transcript.clear()
        for _ts, _kind, line in sorted(items, key=lambda i: (i[0], i[1])):
            transcript.write(line)
        self._transcript_shown = len(lines)

    def _inv_cells(self, i: Invocation) -> list[str | Text]:
        name = i.exposed_name + (" (cache)" if i.cache_hit else "")
        return [self.model.clock.hms(i.ts), name, status_text(i.status), latency(i.latency_ms)]

    @on(DataTable.RowHighlighted, "#call-tools")
    def _tool_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The highlighted tool's whole reason for being hidden in the tools pane's bottom border (its Shown cell may
        end in "…")."""
        tools, name = self.query_one("#call-tools", ConsoleTable), event.row_key.value
        shown = cell_text(tools.get_cell(name, "shown")) if name is not None and name in tools.rows else ""
        pane = self.query_one("#tools-pane")
        pane.border_subtitle = Text(shown) if shown.startswith("hidden") else None  # the highlighted row's

    # ------------------------------------------------------------------------------------------- tools

    def show_tools(self, call_id: str | None) -> None:
        """The call's tools by name, so a toggle never moves a row; the cursor stays on the tool it was on."""
        table = self.query_one("#call-tools", DataTable)
        cursor, at = cursor_key(table), table.cursor_row
        table.clear()
        if self.model.attached:
            self._show_remote_tools(table, call_id)
        else:
            self._show_local_tools(table, call_id)
        if cursor is not None and cursor in {k.value for k in table.rows}:
            table.move_cursor(row=table.get_row_index(cursor), animate=False)
        elif table.row_count:
            table.move_cursor(row=min(at, table.row_count - 1), animate=False)

    def tool_enabled(self, call_id: str, name: str) -> bool:
        """Whether the operator's switch for ``name`` on the call is on (this engine's, or as events reported it)."""
        engine = self.model.engine
        if engine is not None and not self.model.attached:
            current = next((t for t in engine.tool_states(call_id) if t.name == name), None)
            return current is not None and current.enabled
        return self.model.state.tool_switches.get(call_id, {}).get(name, True)

    def _show_remote_tools(self, table: DataTable[object], call_id: str | None) -> None:
        """An attached engine's call: its MCP servers' tools, the tools it used, and the operator's switches as the
        engine reported them (a remote engine's per-call tool view is not sent; a switched-off tool shows off)."""
        link, state = self.model.link, self.model.state
        if link is None or call_id is None or call_id not in state.calls:
            return
        from console.attach import engine_of

        switches = state.tool_switches.get(call_id, {})
        key = (state.calls[call_id].tier, tuple(sorted(switches.items())))
        cached, view = link.call_tools.get(call_id, (None, []))
        if cached != key:
            self._fetch_remote_tools(call_id, key)
        if view:  # the engine's own answer: exactly what the call's next turn is shown, and why not
            for t in sorted(view, key=lambda t: str(t.get("name", ""))):
                name, server = str(t.get("name", "")), str(t.get("server", ""))
                if t.get("shown"):
                    table.add_row(Text("● on", style="green"), name, server, "shown", key=name)
                    continue
                mark = Text("● on", style="green") if t.get("enabled") else Text("○ off", style="red")
                table.add_row(mark, name, "", Text(f"hidden: {t.get('reason', '')}", style="dim"), key=name)
            return
        tools = dict(link.tools.get(engine_of(call_id), {}))
        tools.update(state.tools_used.get(call_id, {}))
        for name in sorted(set(tools) | set(switches)):
            on = switches.get(name, True)
            mark = Text("● on", style="green") if on else Text("○ off", style="red")
            shown = "shown" if on else Text("hidden: switched off", style="dim")
            table.add_row(mark, name, tools.get(name, ""), shown, key=name)

    @work(group="remote-tools", exclusive=True, exit_on_error=False)
    async def _fetch_remote_tools(self, call_id: str, key: object) -> None:
        """The engine's tool view for the attached call; the table is drawn again with it (a failure keeps the
        table as it is: the engine's MCP tools, the tools the call used and the switches)."""
        link = self.model.link
        if link is None:
            return
        try:
            changed = await link.fetch_call_tools(call_id, key)
        except Exception as e:  # the engine is gone, or does not know the command (an older engine)
            log.debug("tool_states for %s: %s", call_id, e)
            return
        if changed and self.model.selected_call == call_id:
            self.show_tools(call_id)

    def _show_local_tools(self, table: DataTable[object], call_id: str | None) -> None:
        engine = self.model.engine
        session = engine.call_info(call_id) if engine is not None and call_id is not None else None
        if session is None or engine is None:
            return
        for t in sorted(engine.tool_states(session.call_id), key=lambda t: t.name):
            if t.shown:
                table.add_row(Text("● on", style="green"), t.name, t.server, "shown", key=t.name)
                continue
            mark = Text("● on", style="green") if t.enabled else Text("○ off", style="red")
            table.add_row(mark, t.name, "", Text(f"hidden: {t.reason}", style="dim"), key=t.name)
