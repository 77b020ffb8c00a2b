"""The softphone panel: start and end a test call in any context and talk to it by text.

It only posts messages (the screen's workers talk to the engine). The voice issue adds mic and speaker controls
in the ``#voice-slot`` container.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button, Input, Select, Static


class Softphone(Horizontal):
    class StartCall(Message):
        def __init__(self, context: str, caller_name: str) -> None:
            super().__init__()
            self.context = context
            self.caller_name = caller_name

    class EndCall(Message):
        pass

    class Say(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def compose(self) -> ComposeResult:
        yield Select[str]([], prompt="context", id="sp-context", allow_blank=True)
        yield Input(placeholder="caller", id="sp-caller", value="Operator")
        yield Button("Call", id="sp-start", variant="success")
        yield Button("Hang up", id="sp-end", variant="error")
        yield Input(placeholder="say… (Enter)", id="talk")
        with Horizontal(id="voice-slot"):
            yield Static("voice: text", id="voice-status", classes="muted")

    def set_contexts(self, names: list[str]) -> None:
        select = self.query_one("#sp-context", Select)
        current = select.value
        select.set_options([(n, n) for n in names])
        if isinstance(current, str) and current in names:
            select.value = current
        elif names:
            select.value = names[0]

    def request_start(self) -> None:
        select = self.query_one("#sp-context", Select)
        context = select.value if isinstance(select.value, str) else ""
        caller = self.query_one("#sp-caller", Input).value.strip() or "Operator"
        self.post_message(self.StartCall(context, caller))

    @on(Button.Pressed, "#sp-start")
    def _start(self) -> None:
        self.request_start()

    @on(Button.Pressed, "#sp-end")
    def _end(self) -> None:
        self.post_message(self.EndCall())

    @on(Input.Submitted, "#talk")
    def _say(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if text:
            self.post_message(self.Say(text))
            event.input.value = ""
