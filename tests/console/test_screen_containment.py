"""A dialog or screen whose own handler raised still answers keys (issue 34 item 2, follow-up): Textual ends the
message loop of a widget whose handler raised, and a screen's keys bubble through its message loop to the app's
bindings, so a dialog whose key handler raised used to ignore every key after it (Esc too): the operator was stuck
in it. The console's screens contain their own handlers' errors the way the app does (console/crash_guard.py)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.screen import Screen

import console
from console.app import AvaConsole
from console.crash_guard import ContainErrors
from console.screens.modals import ConfirmScreen
from tests.console.helpers import record_notifications
from tests.console.test_crash_containment import _said, _talk
from tests.waiting import wait_until


class Boom(Exception):
    """The test dialog's failure."""


class BrokenConfirm(ConfirmScreen):
    """The console's yes/no dialog with one key whose handler raises."""

    CSS_PATH = str(Path(inspect.getfile(ConfirmScreen)).with_name("modals.tcss"))  # read beside the subclass else

    def key_b(self) -> None:  # a key handler runs in the dialog's own message loop (a binding's action in the app's)
        raise Boom("raised in the dialog's key handler")


async def test_a_dialog_whose_key_handler_raised_still_closes_on_escape(config_path: Path, wait: Any) -> None:
    app = AvaConsole(config_path)
    finished = False  # the Pilot re-raises the contained error when it ends: this says the checks all ran
    with pytest.raises(Boom, match="dialog's key handler"):
        async with app.run_test(size=(100, 30)) as pilot:
            notes = record_notifications(app)
            await wait(pilot, lambda: app.engine_running, 60)
            await pilot.press("ctrl+n")
            await wait(pilot, lambda: app.selected_call in app.state.calls)
            call_id = app.selected_call
            assert call_id is not None
            answers: list[bool | None] = []
            dialog = BrokenConfirm("Go on?")
            app.push_screen(dialog, answers.append)
            await wait(pilot, lambda: app.screen is dialog)
            app.simulate_key("b")
            await wait_until(lambda: _said(notes, "raised in the dialog's key handler"), what="the notification")
            assert any("BrokenConfirm" in n for n in notes)  # the notification names the dialog
            app.simulate_key("escape")  # before: the key stopped in the dialog's ended message loop
            await wait_until(lambda: answers == [False], what="the dialog closed by Esc")
            await wait(pilot, lambda: app.screen is not dialog)
            await _talk(app, pilot, wait, call_id, "hello")  # the call goes on, the console still takes keys
            assert app.engine is not None and [c.call_id for c in app.engine.calls_info()] == [call_id]
            finished = True
    assert finished


def _console_screens() -> list[type[Screen[Any]]]:
    """Every screen class the console defines (its modules imported)."""
    for info in pkgutil.walk_packages(console.__path__, "console."):
        importlib.import_module(info.name)
    found: list[type[Screen[Any]]] = []
    for module in [m for name, m in list(sys.modules.items()) if name.startswith("console.")]:
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Screen) and cls.__module__.startswith("console.") and cls not in found:
                found.append(cls)
    return found


def test_every_console_screen_and_dialog_contains_its_own_errors() -> None:
    screens = _console_screens()
    assert len(screens) > 20 and ConfirmScreen in screens  # the walk found the dialogs
    bare = sorted(cls.__qualname__ for cls in screens if not issubclass(cls, ContainErrors))
    assert not bare, f"screens whose handler errors would leave them deaf to keys: {bare}"
