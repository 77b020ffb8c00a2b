"""Calls: the live calls, the selected call's transcript, tools (with on/off switches) and invocations, the
softphone panel and the event log.

Tables update row by row from each batch's ``Changes``; engine commands (start, say, end, toggle) run in
workers so a slow turn never blocks the screen. The voice side of the softphone is in ``calls_voice``; the call
detail (transcript, tools, invocations), mounted with the softphone and the event log after the screen's first
frame (which has the calls table and the keys), in ``calls_detail``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable, Header, Input

from console.format import duration
from console.orders import toggle_tool
from console.screens.calls_approvals import ACTIONS as APPROVAL_ACTIONS
from console.screens.calls_approvals import Approvals
from console.screens.calls_history import CallHistory
from console.screens.calls_phone import Phone, line_text
from console.screens.calls_steer import Steering
from console.screens.calls_voice import Voice
from console.screens.calls_why import why_text
from console.state import Changes
from console.widgets.footer import KeyFooter
from console.widgets.keybar import KeyBar
from console.widgets.tables import ConsoleTable, cell_text, cursor_key

if TYPE_CHECKING:  # the softphone panel's and the logs' modules load with the call detail, after the first frame
    from textual.widget import Widget

    from console.widgets.softphone import Softphone
    from engine.config import ConfigDocument


#: Under the calls table while the engine is being built and its servers start.
STARTING_NOTE = "engine starting… calls show here once it runs"
CALL_COLUMNS = ("Call", "Caller", "Context", "Provider", "Tier", "Why", "Duration", "Cost", "State", "Line")
#: An attached console's (``--attach``): whose call it is first; the Call column then shows the engine's own id.
ATTACHED_COLUMNS = ("Engine", *CALL_COLUMNS)
#: The headings wider than their values, shortened while the table would not fit otherwise (80 columns).
SHORT_HEADINGS = {"context": "Ctx", "provider": "Prov", "duration": "Dur"}


class CallsScreen(CallHistory):
    #: Styles: ``calls.tcss`` beside this file, loaded with the app's (``AvaConsole.CSS_PATH``): the first screen.
    #: Below 30 lines (80×24) the screen is ``-short``: calls.tcss gives the call's tool invocations the event log's
    #: room (the log is on the Tool log screen's and in ``ava-console``'s log file too).
    VERTICAL_BREAKPOINTS = [(0, "-short"), (30, "-tall")]  # noqa: RUF012 (Textual types it as an instance variable)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+n", "new_call", "New call", id="call_new"),
        Binding("e", "end_call", "End call", id="call_end"),
        Binding("ctrl+e", "export_call", "Export transcript", id="call_export"),
        Binding("s", "talk", "Talk", id="call_talk"),
        Binding("v", "voice_call", "Voice call", id="voice_call"),
        Binding("m", "mute", "Mute", id="voice_mute"),
        Binding("space", "push_to_talk", "Push to talk", id="voice_ptt"),
        Binding("a", "audio_devices", "Audio devices", id="voice_devices"),
        Binding("t", "toggle_tool('next_turn')", "Tool on/off", id="tool_toggle_next"),
        Binding("n", "toggle_tool('now')", "Tool on/off NOW", id="tool_toggle_now"),
        Binding("g", "call_view", "Latency waterfall and timeline", id="call_view", show=False),
        Binding("escape", "focus_calls", "Calls table", id="call_focus", show=False),
        Binding("l", "monitor('listen')", "Listen", id="op_listen"),
        Binding("w", "monitor('whisper_agent')", "Whisper agent", id="op_whisper_agent"),
        Binding("W", "monitor('whisper_caller')", "Whisper caller", id="op_whisper_caller"),
        Binding("o", "monitor('takeover')", "Take over", id="op_takeover"),
        Binding("b", "monitor('off')", "Leave/hand back", id="op_off"),
        Binding("T", "transfer", "Transfer", id="op_transfer"),
        Binding("S", "steer('say')", "Say now", id="steer_say"),
        Binding("i", "steer('whisper')", "Whisper", id="steer_whisper"),
        Binding("y", "approve_tool", "Approve tool", id="approval_approve"),
        Binding("x", "deny_tool", "Deny tool", id="approval_deny"),
        Binding("X", "deny_tool_reason", "Deny tool, say why", id="approval_deny_reason", show=False),
        Binding("right_square_bracket", "next_approval", "Next waiting tool", id="approval_next", show=False),
    ]
    #: Keys that act on this console's own engine (its softphone, recorder, phone lines): attached, they say so.
    LOCAL_ONLY: ClassVar[dict[str, str]] = {
        "new_call": "a test call",
        "talk": "talking as the caller (S says a line now, i whispers)",
        "voice_call": "a voice call on the softphone",
        "mute": "the softphone's mute",
        "push_to_talk": "the softphone's push-to-talk",
        "audio_devices": "audio devices",
        "monitor": "the operator on the line",
        "export_call": "export (the engine's flight recorder)",
    }

    KEYS_HOME = "#calls"

    def __init__(self) -> None:
        super().__init__()
        self.steering = Steering(self.capp, self)
        self.approvals = Approvals(self.capp, self)
        self.phone = Phone(self.capp, self, self.BINDINGS)
        self.voice = Voice(self.capp, self)

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="calls-main"):
            # Why is free text: it takes the room the other columns leave, so State and Line always show; at 80
            # columns the headings wider than their values are shortened, so no column scrolls off sideways
            yield ConsoleTable(id="calls", cursor_type="row", zebra_stripes=True, flex="why", short=SHORT_HEADINGS)
        yield KeyBar(classes="keybar")
        yield KeyFooter()

    def on_mount(self) -> None:
        calls = self.query_one("#calls", DataTable)
        for col in self.call_columns():
            calls.add_column(col, key=col.lower())
        if self.capp.tick:
            self.set_interval(1.0, self._tick)
        self.refresh_all()
        calls.focus()

    # ------------------------------------------------------------------------------------------ helpers

    def _tick(self) -> None:
        calls = self.query_one("#calls", DataTable)
        now = self.capp.clock.now()
        for call_id, row in self.capp.state.calls.items():
            if call_id in calls.rows:
                calls.update_cell(call_id, "duration", duration(now - row.started_at))
                if not self.capp.attached:
                    calls.update_cell(call_id, "line", line_text(self._session(call_id)))
        self.phone.follow_keys()

    # ------------------------------------------------------------------------------------------ refresh

    def refresh_all(self) -> None:
        if not self.is_mounted:
            return
        calls = self.query_one("#calls", DataTable)
        calls.clear()
        for call_id in [*self.capp.state.calls, *self._history_ids()]:
            calls.add_row(*self._row_cells(call_id), key=call_id)
        starting = not self.capp.engine_running and not self.capp.engine_error and not self.capp.replay_only
        calls.border_subtitle = STARTING_NOTE if starting else None
        settings, panel = self.capp.settings, self.softphone()
        if panel is not None and self.capp.attached:  # the softphone is this console's engine's: none here
            panel.display = False
        if settings is not None and panel is not None:
            panel.set_contexts(sorted(settings.contexts))
        self.voice.show()
        if self.detail_ready:
            log = self._log("#event-log")
            log.clear()
            for line in list(self.capp.state.log)[-200:]:
                log.write(self._log_text(line.ts, line.type, line.text))
            if self.capp.engine_error and not self.capp.attached:  # attached: the header says where, not an error
                log.write(Text(f"engine: {self.capp.engine_error}", style="bold red"))
        selected = self.capp.selected_call
        if selected is not None and selected in calls.rows:
            calls.move_cursor(row=calls.get_row_index(selected))
        self._show_why()
        if self.detail_ready:
            self._show_call(selected)

    def apply_changes(self, changes: Changes) -> None:
        self.phone.follow_keys()
        calls = self.query_one("#calls", ConsoleTable)
        for call_id in changes.calls_added:
            if call_id in self.capp.state.calls and not calls.has_row(call_id):
                calls.add_row(*self._row_cells(call_id), key=call_id)
        for call_id in changes.calls_changed:
            if calls.has_row(call_id) and call_id in self.capp.state.calls:
                for col, value in zip(self.call_columns(), self._row_cells(call_id), strict=True):
                    calls.update_cell(call_id, col.lower(), value)
        for call_id in changes.calls_removed:
            self._call_ended(calls, call_id)
        for call_id in changes.calls_forgotten:
            if calls.has_row(call_id):
                calls.remove_row(call_id)
        if changes.default_tier:  # the Why of every call the operator's default now decides
            for call_id, row in self.capp.state.calls.items():
                if calls.has_row(call_id):
                    calls.update_cell(call_id, "why", why_text(row, self.capp.state.default_tier))
        if changes.calls_removed or (changes.calls_added and self.capp.state.ended):
            self._order_rows(calls)
        if self.capp.selected_call is None and changes.calls_added:
            self._select(changes.calls_added[-1])
        self._show_why()
        selected = self.capp.selected_call
        if selected in changes.calls_removed:  # an ended call's tier keys would do nothing: the bar drops them
            self.update_keybar()
        if selected is not None and selected in changes.calls_added and selected in calls.rows:
            calls.move_cursor(row=calls.get_row_index(selected))
            if self.detail_ready:
                self._set_title(selected)
        if not self.detail_ready:  # the detail and the event log show the state once they are mounted
            return
        log = self._log("#event-log")
        for line in changes.log[-200:]:
            log.write(self._log_text(line.ts, line.type, line.text))
        if selected is None:
            return
        if selected in changes.transcripts:
            self._append_transcript(selected)
        if selected in changes.calls_changed:  # its cost, in the transcript's title
            self._set_title(selected)
        if selected in changes.tools_changed or selected in changes.calls_removed or changes.config_reloaded:
            self._show_tools(selected)
        if selected in changes.calls_removed:
            self._show_call(selected)  # the history view: transcript with its tier changes and the end
        inv = self.query_one("#call-invocations", ConsoleTable)
        for i in changes.invocations_added:
            if i.call_id == selected and not inv.has_row(str(i.seq)):
                inv.add_row(*self._inv_cells(i), key=str(i.seq))
        for i in changes.invocations_changed:
            if i.call_id == selected and inv.has_row(str(i.seq)):
                for col, value in zip(("time", "tool", "status", "latency"), self._inv_cells(i), strict=True):
                    inv.update_cell(str(i.seq), col, value)

    # -------------------------------------------------------------------------------------- call detail

    def show_engine_tools(self) -> None:
        """An attached engine's tools were listed: the selected call's tools table shows them."""
        if self.detail_ready:
            self._show_tools(self.capp.selected_call)

    def call_started(self, call_id: str) -> None:
        self._select(call_id)
        self.query_one("#calls", DataTable).focus()  # so m and space reach the softphone, not the talk box

    def _select(self, call_id: str | None) -> None:
        if call_id == self.capp.selected_call:
            return
        self.capp.selected_call = call_id
        self._show_why()
        if self.detail_ready:
            self._show_call(call_id)
        self.phone.follow_keys()
        self.update_keybar()
        if self.approvals.waiting():  # the ▶ follows the selected call's oldest waiting tool
            self.show_approvals()

    # ---------------------------------------------------------------------------------------- messages

    @on(DataTable.RowHighlighted, "#calls")
    def _call_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self._select(event.row_key.value)

    @on(DataTable.RowHighlighted, "#call-tools")
    def _tool_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The highlighted tool's whole reason for being hidden in the tools pane's bottom border (its Shown cell may
        end in "…")."""
        tools, name = self.query_one("#call-tools", ConsoleTable), event.row_key.value
        shown = cell_text(tools.get_cell(name, "shown")) if name is not None and name in tools.rows else ""
        pane = self.query_one("#tools-pane")
        pane.border_subtitle = Text(shown) if shown.startswith("hidden") else None  # the highlighted row's

    # The softphone's messages by handler name: its module is imported with the detail, after the first frame.
    def on_softphone_start_call(self, message: Softphone.StartCall) -> None:
        self.voice.start_requested(message.context, message.caller_name, message.voice)

    def on_softphone_end_call(self) -> None:
        self.voice.end_selected()

    def on_softphone_say(self, message: Softphone.Say) -> None:
        self.voice.say(message.text)

    # ----------------------------------------------------------------------------------------- actions

    def action_new_call(self) -> None:
        self.voice.new_call()

    def action_end_call(self) -> None:
        self.voice.end_selected()

    def action_talk(self) -> None:
        if self.need_detail():
            self.query_one("#talk", Input).focus()

    def action_call_view(self) -> None:
        """The selected call's latency waterfall and speaking timeline (live or ended)."""
        from console.screens.call_view import CallViewScreen

        call_id = self.capp.selected_call
        if call_id is None:
            self.notify("select a call first", title="waterfall", severity="warning")
            return
        name = f"call-view:{call_id}"  # installed once per call: opening it again is a redraw, not a compose
        if not self.app.is_screen_installed(name):
            self.app.install_screen(CallViewScreen(call_id), name)
        self.app.push_screen(name)

    @on(Input.Submitted, "#talk")
    def action_focus_calls(self) -> None:
        """Esc, or Enter in the talk box (the line is sent): the calls table, where the single keys act again."""
        self.query_one("#calls", DataTable).focus()

    def action_toggle_tool(self, apply: str) -> None:
        call_id = self.capp.selected_call
        if not self.capp.attached and self.capp.require_engine() is None:
            return
        if not self.need_detail():
            return
        table = self.query_one("#call-tools", DataTable)
        if call_id is None or call_id not in self.capp.state.calls or table.row_count == 0:
            self.notify("select a live call with tools first", title="tools", severity="warning")
            return
        name = cursor_key(table)
        if name is None:
            return
        enabled = not self._tool_enabled(call_id, name)
        toggle_tool(self.capp, call_id, name, enabled, apply, then=lambda: self._show_tools(call_id))

    def action_steer(self, kind: str) -> None:
        self.steering.open(kind)

    # ------------------------------------------------------------------------------------------ approvals

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in APPROVAL_ACTIONS:
            return self.approvals.waiting()
        if self.voice.greyed(action):
            return None
        phone = self.phone.allows(action)
        return phone if phone is not None else super().check_action(action, parameters)

    def held_key(self, key: str) -> str | None:
        return self.approvals.held_key(key)

    def show_approvals(self) -> None:
        if self.is_mounted:
            self.approvals.show()

    def show_panel(self, panel: Widget) -> None:
        self.mount(panel, before="#calls-main")

    def action_approve_tool(self) -> None:
        self.approvals.answer(True)

    def action_deny_tool(self) -> None:
        self.approvals.answer(False)

    def action_deny_tool_reason(self) -> None:
        self.approvals.deny_with_reason()

    def action_next_approval(self) -> None:
        self.approvals.next()

    # ---------------------------------------------------------------------------------------------- phone

    def on_key(self, event: events.Key) -> None:
        self.phone.on_key(event)

    def other_focus(self) -> bool:
        focused = self.app.focused
        return focused is not None and focused.id != "calls"

    def action_monitor(self, mode: str) -> None:
        self.phone.monitor(mode)

    def action_transfer(self) -> None:
        self.phone.open_transfer()

    # ---------------------------------------------------------------------------------------------- voice

    def show_voice(self) -> None:
        self.voice.show()

    def softphone(self) -> Softphone | None:
        if not self.is_mounted or not self.query("#softphone"):
            return None
        from console.widgets.softphone import Softphone

        return self.query_one("#softphone", Softphone)

    def save_config(self, doc: ConfigDocument, title: str) -> None:
        from console.config_flow import save_document

        save_document(self.capp, doc, title)

    def action_voice_call(self) -> None:
        self.voice.voice_call()

    def action_mute(self) -> None:
        self.voice.mute()

    def action_push_to_talk(self) -> None:
        self.voice.push_to_talk()

    def action_audio_devices(self) -> None:
        self.voice.choose_devices()
