"""A RichLog that wraps to the width it really has, and re-wraps what it holds when that width changes.

Why: RichLog renders each line once, at ``max(its width, min_width)`` with ``min_width`` 78 by default, so in a
38-column transcript pane the words past column 38 were drawn off-screen. This log has no minimum and keeps the lines
it was given (as many as ``max_lines``) to render them again after a resize. It follows the newest line only while
the operator is at the bottom: scrolled up to read back, a new line no longer yanks the view down.

It also asks for the Resize that Textual can leave out: a loaded machine laid the Calls screen out in an order where
the transcript pane got its size without the event, and RichLog, which draws nothing before that event, kept the
greeting deferred for as long as the pane lived (an empty transcript at 80×24).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from rich.console import RenderableType
from textual import events
from textual.events import Resize
from textual.scrollbar import ScrollTo, ScrollUp
from textual.strip import Strip
from textual.widgets import RichLog

from console._compat import log_size_known


class WrapLog(RichLog):
    """A wrapping RichLog without a minimum width; resizing re-wraps its lines. The scrollbar's gutter is kept
    (``scrollbar-gutter: stable``) so lines wrapped before the log overflowed still fit once the scrollbar shows."""

    DEFAULT_CSS = """
    WrapLog { scrollbar-gutter: stable; overflow-x: hidden; }
    """

    def __init__(self, *, max_lines: int = 1000, **kwargs: Any) -> None:
        kwargs.setdefault("wrap", True)
        kwargs.setdefault("markup", False)
        super().__init__(max_lines=max_lines, min_width=1, **kwargs)
        self._kept: deque[RenderableType] = deque(maxlen=max_lines)
        self._wrapped_at = 0
        self._replaying = False
        #: At the bottom (or never scrolled): new lines scroll into view. Scrolled up: the view stays put.
        self._follow = True
        self._checked_width = 0

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value >= self.max_scroll_y:
            self._follow = True  # at the bottom again (by the operator, or by following)

    # Only the operator stops the following: scrolling up by wheel, key or scrollbar. Layout changes, clearing and
    # re-wrapping move the offset too, but must not (a log whose pane shrank would stop showing new lines).

    def _on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self._follow = False
        super()._on_mouse_scroll_up(event)

    def _on_scroll_up(self, event: ScrollUp) -> None:
        self._follow = False
        super()._on_scroll_up(event)

    def _on_scroll_to(self, message: ScrollTo) -> None:
        self._follow = False
        super()._on_scroll_to(message)

    def action_scroll_up(self) -> None:
        self._follow = False
        super().action_scroll_up()

    def action_page_up(self) -> None:
        self._follow = False
        super().action_page_up()

    def action_scroll_home(self) -> None:
        self._follow = False
        super().action_scroll_home()

    def _ask_for_missed_resize(self) -> None:
        """Laid out at a width it was never told of (no Resize, or none since the width changed): send itself one,
        so deferred writes are drawn and what it holds is wrapped at the width it has. Checked once per width (this
        runs for every line drawn: the usual case is one attribute read)."""
        width = self.size.width
        if not width or width == self._checked_width:
            return
        self._checked_width = width
        if self.scrollable_content_region.width != self._wrapped_at or not log_size_known(self):
            self.post_message(Resize(self.size, self.virtual_size, self.container_size))

    def render_line(self, y: int) -> Strip:
        self._ask_for_missed_resize()
        return super().render_line(y)

    def write(self, content: RenderableType | object, *args: Any, **kwargs: Any) -> WrapLog:
        self._ask_for_missed_resize()
        if log_size_known(self) and not self._replaying:  # before that RichLog defers it, and writes it again here
            self._kept.append(content)  # type: ignore[arg-type]
        if not args and "scroll_end" not in kwargs:
            kwargs["scroll_end"] = self.auto_scroll and self._follow
        super().write(content, *args, **kwargs)
        return self

    def clear(self) -> WrapLog:
        self._kept.clear()
        super().clear()
        return self

    def on_resize(self, event: Resize) -> None:
        """Re-wrap at the new width (Textual then runs RichLog's handler, which writes what came before the first
        size was known; those writes are kept already)."""
        self._replaying = True
        try:
            width = self.scrollable_content_region.width
            if log_size_known(self) and width and width != self._wrapped_at and self._kept:
                kept = list(self._kept)
                RichLog.clear(self)
                for content in kept:
                    self.write(content)
            self._wrapped_at = width
        finally:
            self._replaying = False
        if self._follow and log_size_known(self):  # a pane that shrank (a panel mounted above) still shows the newest
            self.scroll_end(animate=False)
