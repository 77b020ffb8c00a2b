"""An exception in a screen or widget never takes the engine and its live calls down.

Why it exists: Textual answers any uncaught exception (in compose, an event handler, a timer, a worker, a key's
action) by exiting the app, and the console's engine runs inside the app, so one bad widget would end every live
call. Textual offers no public hook for this; its one funnel is the private ``App._handle_exception``, and an error
in one of the app's own handlers also ends the app's message loop (``MessagePump._dispatch_message`` raising). The
console overrides those two methods with the functions here and nothing else touches Textual's internals for this;
tests/console/test_crash_containment.py fails loudly if Textual changes either.

What the operator gets instead: a notification naming the widget and the error, a ``console.error`` line in the
event log, the traceback in the log file; the console keeps running. A widget whose own handler raised stops
handling events (Textual ends its message loop); the app, the other screens and the engine go on. Screens and
dialogs are not left so: a screen's keys reach the app's bindings through the screen's own message loop, so every
console screen and dialog contains its handlers' errors as the app does (``ContainErrors``, the same override of
``MessagePump._dispatch_message``) and still answers Esc after one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.dom import DOMNode
from textual.message import Message
from textual.message_pump import MessagePump
from textual.worker import WorkerFailed

from console._compat import handle_exception, pending_exception_unset, set_pending_exception
from console.state import Changes, LogLine

if TYPE_CHECKING:
    from console.state import ConsoleState

log = logging.getLogger("console.crash_guard")
#: The apps showing a contained error now (an error while showing one is only logged).
_showing: set[int] = set()


def contain(app: App[Any], error: Exception, state: ConsoleState, dispatch: Callable[[Changes], None]) -> None:
    """Textual's ``_handle_exception``, kept from exiting: show the error (a toast, and a line in the console's
    ``state`` log that ``dispatch`` hands to the screens) and carry on."""
    original = error.error if isinstance(error, WorkerFailed) and isinstance(error.error, Exception) else error
    where = culprit(original.__traceback__)
    log.error("contained an error in %s", where, exc_info=original)
    if app.is_headless and pending_exception_unset(app):
        set_pending_exception(app, original)  # a Pilot re-raises it when the test ends: no test passes over it
    if id(app) in _showing:  # showing the error failed itself: the log has it
        return
    _showing.add(id(app))
    try:
        text = f"{where} failed: {type(original).__name__}: {original}"
        app.notify(
            f"{text}. The console goes on: the engine and its calls go on.",
            title="console error",
            severity="error",
            timeout=15,
        )
        line = LogLine(time.time(), "console.error", None, text)
        state.log.append(line)
        dispatch(Changes(log=[line]))
    except Exception:  # a screen that cannot show the line: the log file has the error
        log.exception("could not show a contained error")
    finally:
        _showing.discard(id(app))


async def dispatch_contained(app: App[Any], dispatch: Callable[[Message], Awaitable[None]], message: Message) -> None:
    """A message pump's dispatch, an error in a handler handed to the app (the console's shows it and goes on)
    instead of ending the pump's message loop."""
    import asyncio

    try:
        await dispatch(message)
    except asyncio.CancelledError:
        raise
    except Exception as e:
        handle_exception(app, e)


class ContainErrors(MessagePump):
    """A screen or dialog whose own handlers' errors leave it answering keys (put it first in the bases).

    A screen's keys reach the app's bindings (Esc included) by bubbling through the screen's message loop, so when
    one of its own handlers (a ``key_`` method, a button's or an input's handler) raised and Textual ended that loop,
    the screen stopped answering keys and the operator was stuck in it. Here the error goes to the app's handler, as
    the app's own do: a notification and the log, and the screen goes on."""

    async def _dispatch_message(self, message: Message) -> None:
        await dispatch_contained(self.app, super()._dispatch_message, message)


def culprit(tb: TracebackType | None) -> str:
    """The innermost widget, screen or app in the traceback (``Exploding#boom-key``), or where the error came from."""
    found: Any = None
    last = "the console"
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if isinstance(owner, DOMNode):
            found = owner
        last = f"{tb.tb_frame.f_code.co_name} ({tb.tb_frame.f_code.co_filename.rsplit('/', 1)[-1]})"
        tb = tb.tb_next
    if found is None:
        return last
    name = type(found).__name__
    return f"{name}#{found.id}" if found.id else name
