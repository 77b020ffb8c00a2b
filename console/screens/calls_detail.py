"""The Calls screen's call detail: the selected call's transcript, its tools (shown or hidden, and why) and its tool
invocations, with the softphone panel and the event log under them.

None of it is in the screen's first frame. The app calls ``after_first_frame`` once that frame is drawn, which mounts
these widgets in their places and imports their modules then (``RichLog`` imports ``rich.pretty`` and ``attrs``, the
softphone panel ``Select`` and ``Button``): most of the screen's widgets, and of the time to import, style and draw
them. Until then ``detail_ready`` is False and the screen's keys that need the detail say the engine is starting.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.widgets import DataTable, Label

from console.format import cost_text, latency, status_text
from console.orders import call_label
from console.screens.base import ConsoleScreen
from console.state import Invocation
from console.widgets.tables import ConsoleTable, cursor_key

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from textual.widgets import RichLog

    from engine import CallInfo

NARROW_WIDTH = 110
#: Transcript roles: what each side said, and the operator's steering (a say-now line, a hidden whisper).
ROLE_STYLES = {"assistant": "bold green", "say-now": "bold magenta", "whisper": "bold magenta"}


class CallDetail(ConsoleScreen):
    """The detail half of the Calls screen (a mixin: the screen composes the calls table and the keys)."""

    #: Whether the call detail, the softphone panel and the event log are mounted (just after the first frame).
    detail_ready = False
    _transcript_shown = 0

    async def after_first_frame(self) -> None:
        """The call detail, the softphone and the event log, under the calls table, after the first frame."""
        if self.detail_ready:
            return
        from console.widgets.softphone import Softphone
        from console.widgets.wrap_log import WrapLog

        detail = Horizontal(
            Vertical(
                Label("Transcript", id="transcript-title", classes="section-title"),
                WrapLog(id="transcript", max_lines=500),
                id="transcript-pane",
            ),
            Vertical(
                Label("Tools shown  (t: on/off next turn · n: now)", classes="section-title"),
                ConsoleTable(id="call-tools", cursor_type="row", flex="shown"),
                Label("Tool invocations", classes="section-title"),
                ConsoleTable(id="call-invocations", cursor_type="row", follow=True),
                id="tools-pane",
            ),
            id="call-detail",
        )
        try:
            await self.query_one("#calls-main", Vertical).mount(
                detail, Softphone(id="softphone"), WrapLog(id="event-log", max_lines=1000)
            )
            tools = self.query_one("#call-tools", DataTable)
        except NoMatches:
            if self.app.is_running and self.is_attached:
                raise
            return  # the console closed while the detail was being mounted: nothing left to fill in
        tools.add_column("On", key="on")
        tools.add_column("Tool", key="tool")
        tools.add_column("Server", key="server")
        tools.add_column("Shown", key="shown")
        inv = self.query_one("#call-invocations", DataTable)
        for col in ("Time", "Tool", "Status", "Latency"):
            inv.add_column(col, key=col.lower())
        self.detail_ready = True
        self.on_resize()
        self.refresh_all()

    def on_resize(self) -> None:
        """On a narrow terminal the softphone drops its buttons and caller box (the keys do the same) so the
        talk box and the voice status keep their room."""
        if self.detail_ready:
            self.query_one("#softphone").set_class(self.size.width < NARROW_WIDTH, "narrow")

    def need_detail(self) -> bool:
        """Whether the softphone and call detail are there yet (a key pressed in the first instant: not yet)."""
        if not self.detail_ready:
            self.notify("the engine is still starting", title="engine", severity="warning")
        return self.detail_ready

    def _log(self, widget_id: str) -> RichLog:
        """The event log or the transcript (both in the detail, mounted after the first frame)."""
        from textual.widgets import RichLog

        return self.query_one(widget_id, RichLog)

    def _log_text(self, ts: float, etype: str, text: str) -> Text:
        t = Text(self.capp.clock.hms(ts) + " ", style="dim")
        t.append(f"{etype:<17} ", style="cyan")
        t.append(text)
        return t

    def _session(self, call_id: str | None) -> CallInfo | None:
        engine = self.capp.engine
        if engine is None or call_id is None:
            return None
        return engine.call_info(call_id)

    def _set_title(self, call_id: str | None) -> None:
        title = self.query_one("#transcript-title", Label)
        row = self.capp.state.call_or_ended(call_id) if call_id else None
        if row is None:
            title.update("Transcript — no call selected (Ctrl+N starts a test call)")
        else:
            ended = f" — ended: {row.end_reason}" if row.state == "ended" else ""
            cost = f" · {cost_text(row.cost)}" if row.cost is not None else ""
            title.update(f"Transcript — {call_label(row.call_id)} ({row.context}){cost}{ended}")

    def _show_call(self, call_id: str | None) -> None:
        self._set_title(call_id)
        log = self._log("#transcript")
        log.clear()
        self._transcript_shown = 0
        if call_id is not None:
            self._append_transcript(call_id)
        self._show_tools(call_id)
        inv = self.query_one("#call-invocations", DataTable)
        inv.clear()
        if call_id is not None:
            for i in self.capp.state.invocations_for(call_id)[-100:]:
                inv.add_row(*self._inv_cells(i), key=str(i.seq))

    def _append_transcript(self, call_id: str) -> None:
        lines = self.capp.state.transcript(call_id)
        log = self._log("#transcript")
        shown = self._transcript_shown
        if len(lines) < shown:
            log.clear()
            shown = 0
        for ts, role, text in lines[shown:]:
            t = Text(self.capp.clock.hms(ts) + " ", style="dim")
            t.append(f"{role:>9}: ", style=ROLE_STYLES.get(role, "bold yellow"))
            t.append(text, style="italic" if role == "whisper" else "")
            if role == "whisper":
                t.append(" — hidden from the caller", style="dim")
            log.write(t)
        self._transcript_shown = len(lines)

    @on(DataTable.RowSelected, "#call-invocations")
    def _invocation_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on an invocation: its arguments and result, as on the Tool log."""
        from console.screens.invocations import open_invocation

        open_invocation(self.capp, event.row_key.value)

    def _inv_cells(self, i: Invocation) -> list[str | Text]:
        name = i.exposed_name + (" (cache)" if i.cache_hit else "")
        return [self.capp.clock.hms(i.ts), name, status_text(i.status), latency(i.latency_ms)]

    def _show_tools(self, call_id: str | None) -> None:
        """The call's tools by name, so a toggle never moves a row; the cursor stays on the tool it was on."""
        table = self.query_one("#call-tools", DataTable)
        cursor, at = cursor_key(table), table.cursor_row
        table.clear()
        if self.capp.attached:
            self._show_remote_tools(table, call_id)
        else:
            self._show_local_tools(table, call_id)
        if cursor is not None and cursor in {k.value for k in table.rows}:
            table.move_cursor(row=table.get_row_index(cursor), animate=False)
        elif table.row_count:
            table.move_cursor(row=min(at, table.row_count - 1), animate=False)

    def _tool_enabled(self, call_id: str, name: str) -> bool:
        """Whether the operator's switch for ``name`` on the call is on (this engine's, or as events reported it)."""
        engine = self.capp.engine
        if engine is not None and not self.capp.attached:
            current = next((t for t in engine.tool_states(call_id) if t.name == name), None)
            return current is not None and current.enabled
        return self.capp.state.tool_switches.get(call_id, {}).get(name, True)

    def _show_remote_tools(self, table: DataTable[object], call_id: str | None) -> None:
        """An attached engine's call: its MCP servers' tools, the tools it used, and the operator's switches as the
        engine reported them (a remote engine's per-call tool view is not sent; a switched-off tool shows off)."""
        link, state = self.capp.link, self.capp.state
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
        link = self.capp.link
        if link is None:
            return
        try:
            changed = await link.fetch_call_tools(call_id, key)
        except Exception as e:  # the engine is gone, or does not know the command (an older engine)
            log.debug("tool_states for %s: %s", call_id, e)
            return
        if changed and self.capp.selected_call == call_id:
            self._show_tools(call_id)

    def _show_local_tools(self, table: DataTable[object], call_id: str | None) -> None:
        session = self._session(call_id)
        engine = self.capp.engine
        if session is None or engine is None:
            return
        for t in sorted(engine.tool_states(session.call_id), key=lambda t: t.name):
            if t.shown:
                table.add_row(Text("● on", style="green"), t.name, t.server, "shown", key=t.name)
                continue
            mark = Text("● on", style="green") if t.enabled else Text("○ off", style="red")
            table.add_row(mark, t.name, "", Text(f"hidden: {t.reason}", style="dim"), key=t.name)
