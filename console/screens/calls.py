"""Calls: the live calls, the selected call's transcript, tools (with on/off switches) and invocations, the
softphone panel and the event log.

The screen is built of parts, each in its own module and given the narrow piece of the console it needs
(``calls_model``): the calls table (``calls_table``), the call detail (``calls_detail``, mounted with the softphone
and the event log after the screen's first frame, which has the calls table and the keys), the softphone
(``calls_voice``), the phone keys (``calls_phone``), steering (``calls_steer``) and approvals (``calls_approvals``).
The screen holds the keys (their actions hand over to the parts) and routes each batch's ``Changes`` to them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.widgets import DataTable, Header, Input

from console.orders import toggle_tool
from console.screens.base import ConsoleScreen
from console.screens.calls_approvals import ACTIONS as APPROVAL_ACTIONS
from console.screens.calls_approvals import Approvals
from console.screens.calls_phone import Phone
from console.screens.calls_steer import Steering
from console.screens.calls_table import CallsTable
from console.screens.calls_voice import Voice
from console.widgets.footer import KeyFooter
from console.widgets.keybar import KeyBar
from console.widgets.tables import cursor_key

if TYPE_CHECKING:  # the detail's, the softphone panel's and the logs' modules load after the first frame
    from textual.widget import Widget
    from textual.widgets import RichLog

    from console.screens.calls_detail import CallDetail
    from console.state import Changes
    from console.widgets.softphone import Softphone
    from engine.config import ConfigDocument


#: Under the calls table while the engine is being built and its servers start.
STARTING_NOTE = "engine starting… calls show here once it runs"
NARROW_WIDTH = 110


class CallsScreen(ConsoleScreen):
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
        self.calls = CallsTable(self.capp)
        #: The call detail, once mounted (just after the first frame).
        self.detail: CallDetail | None = None

    @property
    def detail_ready(self) -> bool:
        """Whether the call detail, the softphone panel and the event log are mounted (just after the first frame)."""
        return self.detail is not None

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="calls-main"):
            yield self.calls
        yield KeyBar(classes="keybar")
        yield KeyFooter()

    def on_mount(self) -> None:
        if self.capp.tick:
            self.set_interval(1.0, self._tick)
        self.refresh_all()
        self.calls.focus()

    async def after_first_frame(self) -> None:
        """The call detail, the softphone and the event log, under the calls table, after the first frame."""
        if self.detail is not None:
            return
        from console.screens.calls_detail import CallDetail
        from console.widgets.softphone import Softphone
        from console.widgets.wrap_log import WrapLog

        detail = CallDetail(self.capp)
        try:
            await self.query_one("#calls-main", Vertical).mount(
                detail, Softphone(id="softphone"), WrapLog(id="event-log", max_lines=1000)
            )
            detail.setup()
        except NoMatches:
            if self.app.is_running and self.is_attached:
                raise
            return  # the console closed while the detail was being mounted: nothing left to fill in
        self.detail = detail
        self.on_resize()
        self.refresh_all()

    def on_resize(self) -> None:
        """On a narrow terminal the softphone drops its buttons and caller box (the keys do the same) so the
        talk box and the voice status keep their room."""
        if self.detail is not None:
            self.query_one("#softphone").set_class(self.size.width < NARROW_WIDTH, "narrow")

    def need_detail(self) -> bool:
        """Whether the softphone and call detail are there yet (a key pressed in the first instant: not yet)."""
        if self.detail is None:
            self.notify("the engine is still starting", title="engine", severity="warning")
        return self.detail is not None

    def _tick(self) -> None:
        self.calls.tick()
        self.phone.follow_keys()

    # ------------------------------------------------------------------------------------------ refresh

    def _event_log(self) -> RichLog:
        from textual.widgets import RichLog

        return self.query_one("#event-log", RichLog)

    def _log_text(self, ts: float, etype: str, text: str) -> Text:
        t = Text(self.capp.clock.hms(ts) + " ", style="dim")
        t.append(f"{etype:<17} ", style="cyan")
        t.append(text)
        return t

    def refresh_all(self) -> None:
        if not self.is_mounted:
            return
        calls = self.calls
        calls.fill()
        starting = not self.capp.engine_running and not self.capp.engine_error and not self.capp.replay_only
        calls.border_subtitle = STARTING_NOTE if starting else None
        settings, panel = self.capp.settings, self.softphone()
        if panel is not None and self.capp.attached:  # the softphone is this console's engine's: none here
            panel.display = False
        if settings is not None and panel is not None:
            panel.set_contexts(sorted(settings.contexts))
        self.voice.show()
        if self.detail is not None:
            log = self._event_log()
            log.clear()
            for line in list(self.capp.state.log)[-200:]:
                log.write(self._log_text(line.ts, line.type, line.text))
            if self.capp.engine_error and not self.capp.attached:  # attached: the header says where, not an error
                log.write(Text(f"engine: {self.capp.engine_error}", style="bold red"))
        calls.show_why()
        if self.detail is not None:
            self.detail.show_call(self.capp.selected_call)

    def apply_changes(self, changes: Changes) -> None:
        self.phone.follow_keys()
        calls = self.calls
        calls.apply(changes)
        if self.capp.selected_call is None and changes.calls_added:
            self._select(changes.calls_added[-1])
        calls.show_why()
        selected = self.capp.selected_call
        if selected in changes.calls_removed:  # an ended call's tier keys would do nothing: the bar drops them
            self.update_keybar()
        if selected is not None and selected in changes.calls_added and selected in calls.rows:
            calls.move_cursor(row=calls.get_row_index(selected))
            if self.detail is not None:
                self.detail.set_title(selected)
        if self.detail is None:  # the detail and the event log show the state once they are mounted
            return
        log = self._event_log()
        for line in changes.log[-200:]:
            log.write(self._log_text(line.ts, line.type, line.text))
        if selected is not None:
            self.detail.apply(changes, selected)

    # -------------------------------------------------------------------------------------- call detail

    def show_engine_tools(self) -> None:
        """An attached engine's tools were listed: the selected call's tools table shows them."""
        if self.detail is not None:
            self.detail.show_tools(self.capp.selected_call)

    def call_started(self, call_id: str) -> None:
        self._select(call_id)
        self.calls.focus()  # so m and space reach the softphone, not the talk box

    def _select(self, call_id: str | None) -> None:
        if call_id == self.capp.selected_call:
            return
        self.capp.selected_call = call_id
        self.calls.show_why()
        if self.detail is not None:
            self.detail.show_call(call_id)
        self.phone.follow_keys()
        self.update_keybar()
        if self.approvals.waiting():  # the ▶ follows the selected call's oldest waiting tool
            self.show_approvals()

    # ---------------------------------------------------------------------------------------- messages

    @on(DataTable.RowHighlighted, "#calls")
    def _call_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self._select(event.row_key.value)

    @on(DataTable.RowSelected, "#call-invocations")
    def _invocation_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on an invocation: its arguments and result, as on the Tool log."""
        from console.screens.invocations import open_invocation

        open_invocation(self.capp, event.row_key.value)

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
        self.calls.focus()

    def action_toggle_tool(self, apply: str) -> None:
        call_id = self.capp.selected_call
        if not self.capp.attached and self.capp.require_engine() is None:
            return
        detail = self.detail
        if not self.need_detail() or detail is None:
            return
        table = detail.query_one("#call-tools", DataTable)
        if call_id is None or call_id not in self.capp.state.calls or table.row_count == 0:
            self.notify("select a live call with tools first", title="tools", severity="warning")
            return
        name = cursor_key(table)
        if name is None:
            return
        enabled = not detail.tool_enabled(call_id, name)
        toggle_tool(self.capp, call_id, name, enabled, apply, then=lambda: detail.show_tools(call_id))

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

    def action_export_call(self) -> None:
        self.calls.export_selected()
