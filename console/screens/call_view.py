"""The call view: the selected call's per-turn latency waterfall above its speaking timeline.

Why a screen (pushed over Calls with ``g``, closed with Escape) rather than another Calls pane: the waterfall needs
the width to be read (bars on one time scale, a budget rule, a value column) and the Calls screen is full at
80×24. It draws only from ``AvaConsole.timings`` (built from events), so a live call, an ended call and a replayed
recording look the same; it redraws when a batch changed its call.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Header, Static

from console.screens.base import ConsoleScreen
from console.state import Changes
from console.widgets.footer import KeyFooter
from console.widgets.timeline import Timeline
from console.widgets.waterfall import Waterfall, summary


class CallViewScreen(ConsoleScreen):
    CSS_PATH = "call_view.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,g", "close", "Back to calls", id="view_close"),
    ]

    def __init__(self, call_id: str) -> None:
        super().__init__()
        self.call_id = call_id
        self._drawn = -2
        self._shown_title = ""

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self._title(), id="cv-title")
        yield Static(id="cv-summary")
        with VerticalScroll(id="cv-waterfall-pane"):
            yield Waterfall(id="cv-waterfall")
        yield Static("speaking", id="cv-timeline-title")
        yield Timeline(id="cv-timeline")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#cv-waterfall-pane").border_title = "latency waterfall"
        self.refresh_all()

    def _title(self) -> str:
        row = self.capp.state.call_or_ended(self.call_id)
        where = f" · {row.context} · {row.provider} · tier {row.tier.upper()}" if row is not None else ""
        ended = " · ended" if self.call_id in self.capp.state.ended else ""
        return f"{self.call_id}{where}{ended}"

    def refresh_all(self) -> None:
        """Shown again: draw what changed for this call meanwhile (nothing, when only other calls moved)."""
        if not self.is_mounted:
            return
        self._show_title()
        self._redraw()

    def apply_changes(self, changes: Changes) -> None:
        if self.call_id in changes.calls_changed or self.call_id in changes.calls_removed:
            self._show_title()  # its tier, or that it ended
        self._redraw()

    def _show_title(self) -> None:
        title = self._title()
        if title != self._shown_title:
            self._shown_title = title
            self.query_one("#cv-title", Static).update(title)

    def _redraw(self) -> None:
        timings = self.capp.timings
        rev = timings.revision(self.call_id)
        if rev == self._drawn:
            return
        self._drawn = rev
        call = timings.get(self.call_id)
        self._show_title()
        self.query_one("#cv-summary", Static).update(summary(call))
        self.query_one(Waterfall).show(call)
        self.query_one(Timeline).show(call)
        pane = self.query_one("#cv-waterfall-pane", VerticalScroll)
        self.call_after_refresh(pane.scroll_end, animate=False)  # the newest turn, once its lines are laid out

    def action_close(self) -> None:
        self.app.pop_screen()
