"""Calls: the live calls, the selected call's transcript, tools (with on/off switches) and invocations, the
softphone panel and the event log.

Tables update row by row from each batch's ``Changes``; engine commands (start, say, end, toggle) run in
workers so a slow turn never blocks the screen. The voice side of the softphone is in ``calls_voice``.

The first frame has the calls table, the event log and the keys; the call detail and the softphone panel (about
half of the screen's widgets, and of the time to style and draw them) are mounted right after it, in their places.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Header, Input, Label, RichLog

from console.format import duration, latency, status_text, tier_text
from console.screens.calls_voice import VoiceControls
from console.state import Changes, Invocation
from console.widgets.footer import KeyFooter
from console.widgets.keybar import KeyBar
from console.widgets.softphone import Softphone
from console.widgets.tables import cursor_key

if TYPE_CHECKING:
    from engine import CallInfo

NARROW_WIDTH = 110
#: Under the calls table while the engine is being built and its servers start.
STARTING_NOTE = "engine starting… calls show here once it runs"
CALL_COLUMNS = ("Call", "Caller", "Context", "Provider", "Tier", "Why", "Duration", "State")


class CallsScreen(VoiceControls):
    CSS_PATH = "calls.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+n", "new_call", "New call", id="call_new"),
        Binding("e", "end_call", "End call", id="call_end"),
        Binding("s", "talk", "Talk", id="call_talk"),
        Binding("v", "voice_call", "Voice call", id="voice_call"),
        Binding("m", "mute", "Mute", id="voice_mute"),
        Binding("space", "push_to_talk", "Push to talk", id="voice_ptt"),
        Binding("a", "audio_devices", "Audio devices", id="voice_devices"),
        Binding("t", "toggle_tool('next_turn')", "Tool on/off", id="tool_toggle_next"),
        Binding("n", "toggle_tool('now')", "Tool on/off NOW", id="tool_toggle_now"),
        Binding("escape", "focus_calls", "Calls table", id="call_focus", show=False),
    ]

    #: Whether the call detail and the softphone panel are mounted (just after the first frame).
    detail_ready = False

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="calls-main"):
            yield DataTable(id="calls", cursor_type="row", zebra_stripes=True)
            yield RichLog(id="event-log", wrap=False, markup=False, max_lines=1000)
        yield KeyBar(classes="keybar")
        yield KeyFooter()

    def on_mount(self) -> None:
        calls = self.query_one("#calls", DataTable)
        for col in CALL_COLUMNS:
            calls.add_column(col, key=col.lower())
        if self.capp.tick:
            self.set_interval(1.0, self._tick)
        self.refresh_all()
        calls.focus()
        self.call_after_refresh(self.set_timer, 0.02, self._mount_detail)  # once the first frame is written

    async def _mount_detail(self) -> None:
        """The call detail and the softphone, between the calls table and the event log, after the first frame."""
        detail = Horizontal(
            Vertical(
                Label("Transcript", id="transcript-title", classes="section-title"),
                RichLog(id="transcript", wrap=True, markup=False, max_lines=500),
                id="transcript-pane",
            ),
            Vertical(
                Label("Tools shown  (t: on/off next turn · n: now)", classes="section-title"),
                DataTable(id="call-tools", cursor_type="row"),
                Label("Tool invocations", classes="section-title"),
                DataTable(id="call-invocations", cursor_type="row"),
                id="tools-pane",
            ),
            id="call-detail",
        )
        await self.query_one("#calls-main", Vertical).mount(detail, Softphone(id="softphone"), before="#event-log")
        tools = self.query_one("#call-tools", DataTable)
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
            self.query_one(Softphone).set_class(self.size.width < NARROW_WIDTH, "narrow")

    def _need_detail(self) -> bool:
        """Whether the softphone and call detail are there yet (a key pressed in the first instant: not yet)."""
        if not self.detail_ready:
            self.notify("the engine is still starting", title="engine", severity="warning")
        return self.detail_ready

    # ------------------------------------------------------------------------------------------ helpers

    def _session(self, call_id: str | None) -> CallInfo | None:
        engine = self.capp.engine
        if engine is None or call_id is None:
            return None
        return engine.call_info(call_id)

    def _row_cells(self, call_id: str) -> list[str | Text]:
        row = self.capp.state.calls[call_id]
        session = self._session(call_id)
        state = session.state if session is not None else row.state
        why = row.tier_reason + (f" · tools: {row.tools_note}" if row.tools_note else "")
        return [
            row.call_id,
            row.caller,
            row.context,
            row.provider,
            tier_text(row.tier),
            why,
            duration(self.capp.clock.now() - row.started_at),
            state,
        ]

    def _tick(self) -> None:
        calls = self.query_one("#calls", DataTable)
        now = self.capp.clock.now()
        for call_id, row in self.capp.state.calls.items():
            if call_id in calls.rows:
                calls.update_cell(call_id, "duration", duration(now - row.started_at))

    # ------------------------------------------------------------------------------------------ refresh

    def refresh_all(self) -> None:
        if not self.is_mounted:
            return
        calls = self.query_one("#calls", DataTable)
        calls.clear()
        for call_id in self.capp.state.calls:
            calls.add_row(*self._row_cells(call_id), key=call_id)
        starting = not self.capp.engine_running and not self.capp.engine_error
        calls.border_subtitle = STARTING_NOTE if starting else None
        settings = self.capp.settings
        if settings is not None and self.detail_ready:
            self.query_one(Softphone).set_contexts(sorted(settings.contexts))
        self.show_voice()
        log = self.query_one("#event-log", RichLog)
        log.clear()
        for line in list(self.capp.state.log)[-200:]:
            log.write(self._log_text(line.ts, line.type, line.text))
        if self.capp.engine_error:
            log.write(Text(f"engine: {self.capp.engine_error}", style="bold red"))
        selected = self.capp.selected_call
        if selected is not None and selected in calls.rows:
            calls.move_cursor(row=calls.get_row_index(selected))
        if self.detail_ready:
            self._show_call(selected)

    def _log_text(self, ts: float, etype: str, text: str) -> Text:
        t = Text(self.capp.clock.hms(ts) + " ", style="dim")
        t.append(f"{etype:<17} ", style="cyan")
        t.append(text)
        return t

    def apply_changes(self, changes: Changes) -> None:
        calls = self.query_one("#calls", DataTable)
        for call_id in changes.calls_added:
            if call_id in self.capp.state.calls and call_id not in calls.rows:
                calls.add_row(*self._row_cells(call_id), key=call_id)
        for call_id in changes.calls_changed:
            if call_id in calls.rows and call_id in self.capp.state.calls:
                for col, value in zip(CALL_COLUMNS, self._row_cells(call_id), strict=True):
                    calls.update_cell(call_id, col.lower(), value)
        for call_id in changes.calls_removed:
            if call_id in calls.rows:
                calls.remove_row(call_id)
        if self.capp.selected_call is None and changes.calls_added:
            self._select(changes.calls_added[-1])
        selected = self.capp.selected_call
        if selected is not None and selected in changes.calls_added and selected in calls.rows:
            calls.move_cursor(row=calls.get_row_index(selected))
            if self.detail_ready:
                self._set_title(selected)
        log = self.query_one("#event-log", RichLog)
        for line in changes.log[-200:]:
            log.write(self._log_text(line.ts, line.type, line.text))
        if selected is None or not self.detail_ready:  # the detail shows the selection once it is mounted
            return
        if selected in changes.transcripts:
            self._append_transcript(selected)
        if selected in changes.tools_changed or selected in changes.calls_removed or changes.config_reloaded:
            self._show_tools(selected)
        if selected in changes.calls_removed:
            self._set_title(selected)
        inv = self.query_one("#call-invocations", DataTable)
        for i in changes.invocations_added:
            if i.call_id == selected and str(i.seq) not in inv.rows:
                inv.add_row(*self._inv_cells(i), key=str(i.seq))
        for i in changes.invocations_changed:
            if i.call_id == selected and str(i.seq) in inv.rows:
                for col, value in zip(("time", "tool", "status", "latency"), self._inv_cells(i), strict=True):
                    inv.update_cell(str(i.seq), col, value)

    # -------------------------------------------------------------------------------------- call detail

    def voice_call_started(self, call_id: str) -> None:
        self._select(call_id)
        self.query_one("#calls", DataTable).focus()  # so m and space reach the softphone, not the talk box

    def _select(self, call_id: str | None) -> None:
        if call_id == self.capp.selected_call:
            return
        self.capp.selected_call = call_id
        if self.detail_ready:
            self._show_call(call_id)
        self.update_keybar()

    def _set_title(self, call_id: str | None) -> None:
        title = self.query_one("#transcript-title", Label)
        row = self.capp.state.call_or_ended(call_id) if call_id else None
        if row is None:
            title.update("Transcript — no call selected (Ctrl+N starts a test call)")
        else:
            ended = f" — ended: {row.end_reason}" if row.state == "ended" else ""
            title.update(f"Transcript — {row.call_id} ({row.context}){ended}")

    def _show_call(self, call_id: str | None) -> None:
        self._set_title(call_id)
        log = self.query_one("#transcript", RichLog)
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
        log = self.query_one("#transcript", RichLog)
        shown = getattr(self, "_transcript_shown", 0)
        if len(lines) < shown:
            log.clear()
            shown = 0
        for ts, role, text in lines[shown:]:
            t = Text(self.capp.clock.hms(ts) + " ", style="dim")
            t.append(f"{role:>9}: ", style="bold green" if role == "assistant" else "bold yellow")
            t.append(text)
            log.write(t)
        self._transcript_shown = len(lines)

    def _inv_cells(self, i: Invocation) -> list[str | Text]:
        name = i.exposed_name + (" (cache)" if i.cache_hit else "")
        return [self.capp.clock.hms(i.ts), name, status_text(i.status), latency(i.latency_ms)]

    def _show_tools(self, call_id: str | None) -> None:
        table = self.query_one("#call-tools", DataTable)
        cursor = table.cursor_row
        table.clear()
        session = self._session(call_id)
        engine = self.capp.engine
        if session is None or engine is None:
            return
        for t in engine.tool_states(session.call_id):
            if t.shown:
                table.add_row(Text("● on", style="green"), t.name, t.server, "shown", key=t.name)
                continue
            mark = Text("● on", style="green") if t.enabled else Text("○ off", style="red")
            table.add_row(mark, t.name, "", Text(f"hidden: {t.reason}", style="dim"), key=t.name)
        if table.row_count:
            table.move_cursor(row=min(cursor, table.row_count - 1))

    # ---------------------------------------------------------------------------------------- messages

    @on(DataTable.RowHighlighted, "#calls")
    def _call_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self._select(event.row_key.value)

    @on(Softphone.StartCall)
    def _start_call(self, message: Softphone.StartCall) -> None:
        if self.capp.require_engine() is None:  # still starting (no contexts yet), or failed: it says which
            return
        if not message.context:
            self.notify("choose a context first", title="softphone", severity="warning")
            return
        if message.voice:
            self.start_voice_call(message.context, message.caller_name)
        else:
            self.start_call(message.context, message.caller_name)

    @on(Softphone.EndCall)
    def _end_call(self) -> None:
        self.action_end_call()

    @on(Softphone.Say)
    def _say(self, message: Softphone.Say) -> None:
        call_id = self.capp.selected_call
        if call_id is None or call_id not in self.capp.state.calls:
            self.notify("no live call selected: Ctrl+N starts one", title="softphone", severity="warning")
            return
        self.say(call_id, message.text)

    # ----------------------------------------------------------------------------------------- workers

    @work(group="calls", name="start-call", exit_on_error=False)
    async def start_call(self, context: str, caller: str) -> None:
        engine = self.capp.require_engine()
        if engine is None:
            return
        try:
            session = await engine.start_call(context, caller_name=caller)
        except Exception as e:  # unknown context, provider failure
            self.notify(str(e), title="call", severity="error")
            return
        self._select(session.call_id)
        self.query_one("#talk", Input).focus()

    @work(group="turns", name="say", exit_on_error=False)
    async def say(self, call_id: str, text: str) -> None:
        engine = self.capp.require_engine()
        if engine is None:
            return
        try:
            await engine.user_said(call_id, text)
        except Exception as e:  # call ended meanwhile, provider error
            self.notify(str(e), title="turn", severity="error")

    @work(group="calls", name="end-call", exit_on_error=False)
    async def end_call(self, call_id: str) -> None:
        engine = self.capp.require_engine()
        if engine is not None:
            await engine.end_call(call_id, "ended by operator")

    # ----------------------------------------------------------------------------------------- actions

    def action_new_call(self) -> None:
        if self._need_detail():
            self.query_one(Softphone).request_start()

    def action_end_call(self) -> None:
        call_id = self.capp.selected_call
        if call_id is None or call_id not in self.capp.state.calls:
            self.notify("no live call selected", title="call", severity="warning")
            return
        phone = self.capp.phone
        if phone is not None and phone.active and phone.call_id == call_id:
            self.end_voice_call()  # hangs up and closes the sound devices
        else:
            self.end_call(call_id)

    def action_talk(self) -> None:
        if self._need_detail():
            self.query_one("#talk", Input).focus()

    def action_focus_calls(self) -> None:
        self.query_one("#calls", DataTable).focus()

    def action_toggle_tool(self, apply: str) -> None:
        engine = self.capp.require_engine()
        call_id = self.capp.selected_call
        if engine is None or not self._need_detail():
            return
        session = self._session(call_id)
        table = self.query_one("#call-tools", DataTable)
        if session is None or call_id is None or table.row_count == 0:
            self.notify("select a live call with tools first", title="tools", severity="warning")
            return
        name = cursor_key(table)
        if name is None:
            return
        try:
            current = next((t for t in engine.tool_states(call_id) if t.name == name), None)
            enabled = current is not None and not current.enabled
            restarted = engine.set_tool_enabled(call_id, name, enabled, apply="now" if apply == "now" else "next_turn")
        except Exception as e:  # ended call
            self.notify(str(e), title="tools", severity="error")
            return
        state = "on" if enabled else "off"
        if apply == "now":
            how = "now: the turn in flight was restarted" if restarted else "now: no turn in flight, so next turn"
        else:
            how = "from the next turn"
        self.notify(f"{name} {state} for {call_id}, {how}", title="tools")
        self._show_tools(call_id)
