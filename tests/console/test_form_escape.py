"""Esc on an edited form asks: save, discard or go back (issue 34 item 5); an untouched form closes at once.

Before: one Esc threw away whatever had been typed, in every form: the server form, the secret and name entries,
say-now and whisper, the transfer, deny-with-a-reason, and the add and import dialogs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.screen import ModalScreen

from console.app import AvaConsole
from console.approvals import PendingRow
from console.screens.add_source import AddSourceScreen
from console.screens.approval_reason import DenyReasonScreen
from console.screens.import_dialog import ImportScreen, InputsScreen
from console.screens.modals import NameEntry, SecretEntry
from console.screens.steer_modal import SteerModal
from console.screens.transfer_modal import TransferModal
from engine.config.mcp_import_result import Ask
from engine.config.mcp_vscode import InputPrompt
from tests.console.test_server_form_secrets import DICE, _config, _open_form, _raw, _servers

ROW = PendingRow("a1", "call-1", "mcp_notes_delete_note", "notes", {"name": "x"}, "destructive", 1e12)
#: name -> (the dialog, the keys that fill it, what it is dismissed with when saved from the question)
DIALOGS: dict[str, tuple[Callable[[], ModalScreen[Any]], tuple[str, ...], object]] = {
    "steer": (lambda: SteerModal("say", "call-1", 200), tuple("hi"), "hi"),
    "transfer": (lambda: TransferModal("call-1", None), tuple("sales"), ("sales", "blind")),
    "deny-reason": (lambda: DenyReasonScreen(ROW), tuple("no"), "no"),
    "secret": (lambda: SecretEntry(""), (*"KEY", "tab", *"value"), ("KEY", "value")),
    "name": (lambda: NameEntry("Rename", "OLD"), ("end", "X"), "OLDX"),
    "add-source": (lambda: AddSourceScreen(), tuple("npm:pkg"), "npm:pkg"),
    "import": (lambda: ImportScreen(), tuple("a.json"), ("a.json", False)),
    "import-inputs": (
        lambda: InputsScreen([Ask(InputPrompt(id="tok", description="token"), ("TOK",), ("s",))]),
        tuple("v"),
        ["v"],
    ),
}


class Host(App[None]):
    """Opens one dialog and records what it was dismissed with."""

    def __init__(self, make: Callable[[], ModalScreen[Any]]) -> None:
        super().__init__()
        self.make = make
        self.results: list[object] = []

    def open(self) -> None:
        self.push_screen(self.make(), self.results.append)


def _name(app: App[Any]) -> str:
    return type(app.screen).__name__


@pytest.mark.parametrize("name", list(DIALOGS))
async def test_esc_on_an_edited_dialog_asks(name: str, wait: Any) -> None:
    make, keys, saved = DIALOGS[name]
    app = Host(make)
    async with app.run_test(size=(100, 30)) as pilot:
        app.open()
        await pilot.pause()
        dialog = _name(app)
        await pilot.press("escape")  # untouched: closes at once
        await wait(pilot, lambda: app.results == [None])

        app.open()
        await wait(pilot, lambda: _name(app) == dialog)
        await pilot.press(*keys, "escape")
        await wait(pilot, lambda: _name(app) == "LeaveFormScreen")
        await pilot.press("escape")  # go back: what was typed is still there
        await wait(pilot, lambda: _name(app) == dialog)
        await pilot.press("escape")
        await wait(pilot, lambda: _name(app) == "LeaveFormScreen")
        await pilot.press("d")  # discard
        await wait(pilot, lambda: app.results == [None, None])

        app.open()
        await wait(pilot, lambda: _name(app) == dialog)
        await pilot.press(*keys, "escape")
        await wait(pilot, lambda: _name(app) == "LeaveFormScreen")
        await pilot.press("s")  # save: the dialog's own action (send, store, transfer, ...)
        await wait(pilot, lambda: len(app.results) == 3)
        assert app.results[2] == saved


async def test_esc_on_the_edited_server_form_asks(config_path: Path, wait: Any) -> None:
    _config(config_path, DICE + '      env: {REGION: "eu"}\n')
    before = _raw(config_path)
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open_form(pilot, app, wait, "e")
        await pilot.pause(0.2)
        await pilot.press("escape")  # untouched (its env row included): closes at once
        await wait(pilot, lambda: _name(app) == "ServersScreen")

        await pilot.press("e")
        await wait(pilot, lambda: _name(app) == "ServerForm" and app.screen.loaded)  # type: ignore[attr-defined]
        form = app.screen
        field = form.query_one("#f-timeout_ms").focus()
        await wait(pilot, lambda: app.focused is field)  # focus() lands on a later turn: keys before it go elsewhere
        await pilot.press(*"4000", "escape")
        await wait(pilot, lambda: _name(app) == "LeaveFormScreen")
        await pilot.press("escape")  # back to the form, the value kept
        await wait(pilot, lambda: app.screen is form)
        assert form.query_one("#f-timeout_ms").value == "4000"  # type: ignore[attr-defined]
        await pilot.press("escape")
        await wait(pilot, lambda: _name(app) == "LeaveFormScreen")
        await pilot.press("s")  # save: the diff, then the file
        await wait(pilot, lambda: _name(app) == "DiffScreen")
        await pilot.press("y")
        await wait(pilot, lambda: "defaults" in _servers(config_path)["dice"], within=20)
        assert _servers(config_path)["dice"]["defaults"]["timeout_ms"] == 4000

        await wait(pilot, lambda: _name(app) == "ServersScreen")
        saved = _raw(config_path)
        await pilot.press("e")
        await wait(pilot, lambda: _name(app) == "ServerForm" and app.screen.loaded)  # type: ignore[attr-defined]
        field = app.screen.query_one("#f-timeout_ms").focus()
        await wait(pilot, lambda: app.focused is field)
        await pilot.press("5", "escape")
        await wait(pilot, lambda: _name(app) == "LeaveFormScreen")
        await pilot.press("d")  # discard: nothing written
        await wait(pilot, lambda: _name(app) == "ServersScreen")
        assert _raw(config_path) == saved != before
