"""The softphone panel: start and end a test call in any context, by text or by voice (local mic and speaker).

It only posts messages and shows what it is told (the screen's workers talk to the engine and the sound card).
The voice slot shows the voice call's state, mute and push-to-talk, and the levels of the microphone (the caller)
and of the agent's voice, or why there is no voice (no PortAudio, no device) while text calls keep working.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button, Input, Select, Static

from console.format import voice_slot_text
from console.widgets.guarded_input import GuardedInput


class Softphone(Horizontal):
    class StartCall(Message):
        def __init__(self, context: str, caller_name: str, voice: bool = False) -> None:
            super().__init__()
            self.context = context
            self.caller_name = caller_name
            #: A voice call on the local mic and speaker rather than a text call.
            self.voice = voice

    class EndCall(Message):
        pass

    class Say(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def compose(self) -> ComposeResult:
        yield Select[str]([], prompt="(none)", id="sp-context", allow_blank=True)
        # the screen may hold keys back from the text boxes (a tool waiting for approval: y and x are its answers)
        yield GuardedInput(placeholder="caller", id="sp-caller", value="Operator")
        yield Button("Call", id="sp-start", variant="success", tooltip="text call (Ctrl+N)")
        yield Button("Voice", id="sp-voice", variant="primary", tooltip="voice call on the mic and speaker (v)")
        yield Button("Hang up", id="sp-end", variant="error", tooltip="end the selected call (e)")
        yield GuardedInput(placeholder="say… (Enter)", id="talk")
        yield Static(voice_slot_text("idle"), id="voice-slot")

    def set_contexts(self, names: list[str]) -> None:
        select = self.query_one("#sp-context", Select)
        current = select.value
        select.set_options([(n, n) for n in names])
        if isinstance(current, str) and current in names:
            select.value = current
        elif names:
            select.value = names[0]

    def request_start(self, voice: bool = False) -> None:
        select = self.query_one("#sp-context", Select)
        context = select.value if isinstance(select.value, str) else ""
        caller = self.query_one("#sp-caller", Input).value.strip() or "Operator"
        self.post_message(self.StartCall(context, caller, voice))

    def show_voice(
        self,
        state: str,
        level_dbfs: float = -120.0,
        *,
        muted: bool = False,
        push_to_talk: bool = False,
        talking: bool = False,
        problem: str | None = None,
        agent_dbfs: float = -120.0,
    ) -> None:
        """Redraw the voice slot: ``state`` is the softphone's (idle, starting, listening, hearing, …); the levels
        are the mic's (the caller's) and the agent's."""
        slot = self.query_one("#voice-slot", Static)
        slot.update(
            voice_slot_text(
                state,
                level_dbfs,
                muted=muted,
                push_to_talk=push_to_talk,
                talking=talking,
                problem=problem,
                agent_dbfs=agent_dbfs,
            )
        )
        slot.tooltip = problem

    @on(Button.Pressed, "#sp-start")
    def _start(self) -> None:
        self.request_start()

    @on(Button.Pressed, "#sp-voice")
    def _start_voice(self) -> None:
        self.request_start(voice=True)

    @on(Button.Pressed, "#sp-end")
    def _end(self) -> None:
        self.post_message(self.EndCall())

    @on(Input.Submitted, "#talk")
    def _say(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if text:
            self.post_message(self.Say(text))
            event.input.value = ""
