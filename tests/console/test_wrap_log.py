"""The console's logs (transcript, event log, stderr) follow the newest line only while the operator is at the bottom:
scrolled up to read back, new lines do not yank the view away; back at the bottom, it follows again."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.events import Resize
from textual.message import Message

from console.widgets.wrap_log import WrapLog
from tests.console.conftest import wait_for


class _LogApp(App[None]):
    def __init__(self, log: type[WrapLog] = WrapLog) -> None:
        super().__init__()
        self.log_class = log

    def compose(self) -> ComposeResult:
        yield self.log_class(id="log")


async def test_the_log_follows_only_while_at_the_bottom() -> None:
    app = _LogApp()
    async with app.run_test(size=(40, 10)) as pilot:
        log = app.query_one(WrapLog)
        for i in range(40):
            log.write(f"line {i}")
        await pilot.pause(0.1)
        assert log.max_scroll_y > 0 and log.scroll_y == log.max_scroll_y  # followed the newest
        log.focus()
        await pilot.press("pageup")  # the operator scrolls up to read back
        await pilot.pause(0.1)
        held = log.scroll_y
        assert held < log.max_scroll_y
        for i in range(40, 60):
            log.write(f"line {i}")
        await pilot.pause(0.1)
        assert log.scroll_y == held  # reading back: the view stayed
        await pilot.press("end")
        await pilot.pause(0.1)
        log.write("line 60")
        await pilot.pause(0.1)
        assert log.scroll_y == log.max_scroll_y  # at the bottom again: it follows
        assert "line 60" in str(log.lines[-1].text)


async def test_a_log_whose_pane_shrinks_keeps_following() -> None:
    """A layout change (a panel mounted above) moves the offset but is not the operator scrolling away."""
    app = _LogApp()
    async with app.run_test(size=(40, 20)) as pilot:
        log = app.query_one(WrapLog)
        for i in range(40):
            log.write(f"line {i}")
        await pilot.pause(0.1)
        log.styles.height = 5
        await pilot.pause(0.1)
        assert log.scroll_y == log.max_scroll_y  # the newest line still shows
        log.write("after the shrink")
        await pilot.pause(0.1)
        assert log.scroll_y == log.max_scroll_y


class _ResizeLostLog(WrapLog):
    """A log whose first Resize never arrives: what a loaded machine's layout did to the Calls screen's transcript
    pane (it had its size, and RichLog, drawing nothing before that event, deferred the greeting for ever)."""

    lost = 0

    def post_message(self, message: Message) -> bool:
        if isinstance(message, Resize) and not self.lost:
            self.lost += 1
            return True
        return super().post_message(message)


async def test_a_log_laid_out_without_its_resize_still_draws_what_it_is_given() -> None:
    app = _LogApp(_ResizeLostLog)
    async with app.run_test(size=(40, 10)) as pilot:
        log = app.query_one(_ResizeLostLog)
        await wait_for(pilot, lambda: log.lost == 1 and log.size.width > 0)
        log.write("Hello Operator, console test line.")
        await wait_for(pilot, lambda: len(log.lines) == 1)
        assert "Hello Operator" in str(log.lines[0].text)
