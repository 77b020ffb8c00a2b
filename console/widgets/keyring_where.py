"""A line of text that says where secrets go, in the engine's words (issue 34 item 10).

Why it exists: the import and add-from-registry hints, the import's inputs form and the sign-in dialog said "the OS
keyring" whatever backend keyring had picked, so a plaintext file keyring passed for a safe place. This line fills its
``{where}`` with ``keyring_state().where`` ("the OS keyring", or "the UNENCRYPTED file keyring (PATH)", shown in bold
yellow). The state is read in a thread: keyring picks its backend the first time it is asked, which may block.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.widgets import Static

PLACEHOLDER = "{where}"
#: Until the thread has read the keyring: says nothing it cannot know yet.
UNKNOWN = "the keyring"


class KeyringWhere(Static):
    """``template`` with ``{where}`` (once) replaced by where a stored secret goes; other braces are left alone."""

    def __init__(self, template: str, **kwargs: Any) -> None:
        if template.count(PLACEHOLDER) != 1:
            raise ValueError(f"KeyringWhere: the template must hold {PLACEHOLDER} once: {template!r}")
        super().__init__(self._line(template, UNKNOWN, unencrypted=False), **kwargs)
        self.template = template
        #: ``keyring_state().where`` once read (None before).
        self.where: str | None = None

    @staticmethod
    def _line(template: str, where: str, *, unencrypted: bool) -> Text:
        before, after = template.split(PLACEHOLDER)
        return Text.assemble(before, (where, "bold yellow" if unencrypted else ""), after)

    def on_mount(self) -> None:
        self._read()

    @work(thread=True, group="keyring-where", name="keyring-where", exit_on_error=False)  # a hint is no reason to stop
    def _read(self) -> None:
        from engine.config.secrets import keyring_state

        state = keyring_state()
        self.app.call_from_thread(self._show, state.where, state.unencrypted)

    def _show(self, where: str, unencrypted: bool) -> None:
        self.where = where
        if self.is_mounted:
            self.update(self._line(self.template, where, unencrypted=unencrypted))
