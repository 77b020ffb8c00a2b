"""No exception in a screen or widget ends the engine or its calls (issue 34 item 2): with a call live, widgets that
raise in compose, in an event handler, in a key's action, in a timer and in a worker each bring a notification and
an event-log line naming them, and the console keeps running: the engine runs, the call stays live and answers the
next line. Under a Pilot the first contained error still fails the test that caused it (when the test ends)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, ClassVar

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.message_pump import MessagePump
from textual.widgets import Static

from console.app import AvaConsole
from tests.console.helpers import record_notifications
from tests.waiting import wait_until


class Boom(Exception):
    """The test widgets' failure."""


class Exploding(Static, can_focus=True):
    """A widget that raises where it is told to."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("b", "boom", "Boom")]

    def __init__(self, where: str) -> None:
        super().__init__(f"boom in {where}", id=f"boom-{where}")
        self.where = where

    def compose(self) -> ComposeResult:
        if self.where == "compose":
            raise Boom("raised in compose")
        yield from ()

    def on_mount(self) -> None:
        if self.where == "timer":
            self.set_timer(0.01, self._explode)
        elif self.where == "worker":
            self.run_worker(self._work(), name="boom-worker")

    def _explode(self) -> None:
        raise Boom("raised in a timer")

    async def _work(self) -> None:
        raise Boom("raised in a worker")

    class Poke(Message):
        """An event for the widget's own handler."""

    def on_exploding_poke(self) -> None:
        raise Boom("raised in an event handler")

    def action_boom(self) -> None:
        raise Boom("raised in a key's action")


ARTICLE = {"compose": "", "timer": "a ", "worker": "a "}


def _said(notes: list[str], text: str) -> bool:
    return any(text in n and "the engine and its calls go on" in n for n in notes)


async def _talk(app: AvaConsole, pilot: Any, wait: Any, call_id: str, line: str) -> None:
    """The live call answers ``line`` (typed in the Calls screen's talk box)."""
    calls = app.screen.query_one("#calls")
    calls.focus()
    await wait(pilot, lambda: app.focused is calls)
    before = len(app.state.transcript(call_id))
    await pilot.press("s")
    await wait(pilot, lambda: app.focused is not None and app.focused.id == "talk")
    await pilot.press(*line, "enter")
    await wait(pilot, lambda: any("listening" in t for _, _, t in app.state.transcript(call_id)[before:]), 30)


async def test_an_exception_in_a_widget_never_ends_the_engine_or_its_calls(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    finished = False  # the Pilot re-raises the contained error over anything else: this says the checks all ran
    with pytest.raises(Boom, match="raised in compose"):  # the first one, re-raised when the Pilot ends
        async with app.run_test(size=(120, 40)) as pilot:
            notes = record_notifications(app)
            await wait(pilot, lambda: app.engine_running, 60)
            await pilot.press("ctrl+n")
            await wait(pilot, lambda: app.selected_call in app.state.calls)
            call_id = app.selected_call
            assert call_id is not None
            screen = app.screen
            for where in ("compose", "timer", "worker"):
                await screen.mount(Exploding(where))
                await wait(pilot, lambda where=where: _said(notes, f"raised in {ARTICLE[where]}{where}"), 10)
            key = Exploding("key")
            await screen.mount(key)
            key.focus()
            await wait(pilot, lambda: app.focused is key)
            await pilot.press("b")  # the app runs a key's action: its own message loop must survive it
            await wait(pilot, lambda: _said(notes, "raised in a key's action"), 10)
            assert any("Exploding#boom-key" in n for n in notes)  # the notification names the widget
            poked = Exploding("handler")
            await screen.mount(poked)
            poked.post_message(Exploding.Poke())
            # Textual ends the message loop of a widget whose own handler raised: it handles nothing more, so the
            # Pilot (which waits for every widget of the screen to be idle, even to pause) would wait on it for ever
            await wait_until(lambda: _said(notes, "raised in an event handler"), what="the handler's notification")
            await poked.remove()
            assert any(line.type == "console.error" and "raised in a timer" in line.text for line in app.state.log)
            await _talk(app, pilot, wait, call_id, "hello")  # the call goes on, the console still takes keys
            assert app.is_running and app.engine_running
            assert app.engine is not None and [c.call_id for c in app.engine.calls_info()] == [call_id]
            finished = True
    assert finished


def _params(fn: Any) -> list[str]:
    return list(inspect.signature(fn).parameters)


def test_textual_still_routes_uncaught_errors_the_way_console_crash_guard_relies_on() -> None:
    """console/crash_guard.py overrides two private Textual methods; this fails loudly when Textual changes them."""
    assert _params(App._handle_exception) == ["self", "error"]
    assert _params(MessagePump._dispatch_message) == ["self", "message"]
    loop = inspect.getsource(MessagePump._process_messages_loop)
    assert "await self._dispatch_message(message)" in loop and "self.app._handle_exception(error)" in loop
    assert "self._exception = error" in inspect.getsource(App._handle_exception)
    assert AvaConsole._handle_exception is not App._handle_exception
    assert AvaConsole._dispatch_message is not MessagePump._dispatch_message
