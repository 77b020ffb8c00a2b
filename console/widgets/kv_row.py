"""One env or header row in the server form: name, masked value, "store in keyring", remove.

"store in keyring" says UNENCRYPTED when the keyring in use keeps secrets in a plain file (read in a thread: keyring
picks its backend the first time it is asked)."""

from __future__ import annotations

from textual import on, work
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

    def on_mount(self) -> None:
        self._read_keyring()

    @work(thread=True, group="keyring-state", name="keyring-state", exit_on_error=False)  # a label is no reason to stop
    def _read_keyring(self) -> None:
        from engine.config.secrets import keyring_state

        if keyring_state().unencrypted:
            self.app.call_from_thread(self._unencrypted)

    def _unencrypted(self) -> None:
        if self.is_mounted:
            self.query_one(".kv-keyring", Checkbox).label = "UNENCRYPTED keyring"  # as short as the usual label

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
