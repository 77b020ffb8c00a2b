"""One env or header row in the server form: name, masked value, "store in keyring", remove."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button, Checkbox, Input, Static

from console.widgets.tick_box import TickBox


class KVRow(Horizontal):
    class Removed(Message):
        def __init__(self, row: KVRow) -> None:
            super().__init__()
            self.row = row

    def __init__(self, kind: str, key: str = "", value: str = "", keyring: bool = False) -> None:
        super().__init__(classes=f"kv-row kv-{kind}")
        self.kind = kind
        self._init = (key, value, keyring)

    def compose(self) -> ComposeResult:
        key, value, keyring = self._init
        yield Input(value=key, placeholder="NAME" if self.kind == "env" else "Header-Name", classes="kv-key")
        yield Input(value=value, placeholder="value", password=True, classes="kv-value")
        yield TickBox("store in keyring", value=keyring, classes="kv-keyring")
        yield Button("✕", classes="kv-remove")
        yield Static("", classes="kv-msg fmsg")

    @property
    def key(self) -> str:
        return self.query_one(".kv-key", Input).value

    @property
    def value(self) -> str:
        return self.query_one(".kv-value", Input).value

    @property
    def keyring(self) -> bool:
        return self.query_one(".kv-keyring", Checkbox).value

    def set_message(self, text: str) -> None:
        self.query_one(".kv-msg", Static).update(text)

    @on(Button.Pressed, ".kv-remove")
    def _remove(self) -> None:
        self.post_message(self.Removed(self))
