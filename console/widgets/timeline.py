"""The speaking timeline: caller and agent lanes, tool spans and announcements on one time axis.

Why: the waterfall says how long each stage took; the timeline shows the conversation's rhythm — who talked when,
where the caller cut the agent off (✂ barge-in marks), which tool ran while the caller waited, and when a "one
moment" announcement filled the silence. It shows the call's last ``window_s`` seconds (the whole call when it is
shorter), ending at the call's latest event: event time only, so a replay draws the same lanes. An announcement's
text in the notes lane ends in "…" when cut; the line under the axis says the latest one whole.
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from console.timings_state import CallTimings, Span

LANE_W = 8
LANES = (("caller", "caller", "cyan"), ("agent", "agent", "green"), ("tool", "tools", "magenta"))
MIN_WINDOW_S = 10.0


class Timeline(Widget):
    """Renders the selected call's spans; ``show(timings)`` redraws."""

    DEFAULT_CSS = """
    Timeline { height: 6; width: 1fr; }  /* three lanes, the notes, the axis, the latest note whole */
    """

    def __init__(self, *, window_s: float = 60.0, id: str | None = None) -> None:
        super().__init__(id=id)
        self.window_s = window_s
        self.timings: CallTimings | None = None

    def show(self, timings: CallTimings | None) -> None:
        self.timings = timings
        self.refresh()

    def render(self) -> Text:
        return self.lines(self.size.width)

    def lines(self, width: int) -> Text:
        c = self.timings
        out = Text()
        if c is None or c.started is None:
            out.append("nothing said yet", style="dim")
            return out
        cols = max(10, width - LANE_W)
        end = max(c.last_ts, c.started + 0.001)
        length = max(MIN_WINDOW_S, min(self.window_s, end - c.started))
        start = max(c.started, end - length) if end - c.started > length else c.started
        per_col = length / cols
        spans = c.all_spans()
        for i, (lane, title, style) in enumerate(LANES):
            if i:
                out.append("\n")
            out.append(title.ljust(LANE_W), style=f"bold {style}")
            out.append_text(_lane([s for s in spans if s.lane == lane], start, per_col, cols, end, style))
        out.append("\n")
        out.append("notes".ljust(LANE_W), style="bold yellow")
        out.append_text(_notes([s for s in spans if s.lane == "note"], start, per_col, cols))
        out.append("\n")
        out.append(" " * LANE_W)
        out.append(_axis(start - c.started, per_col, cols), style="dim")
        notes = [s for s in spans if s.lane == "note" and s.start >= start]
        if notes:  # the latest announcement whole: the lane cuts it where the next note or the edge is
            out.append("\n")
            out.append(f"♪ {notes[-1].start - c.started:.0f}s".ljust(LANE_W) + notes[-1].text, style="yellow")
        return out


def _col(t: float, start: float, per_col: float) -> int:
    return int((t - start) / per_col)


def _lane(spans: list[Span], start: float, per_col: float, cols: int, now: float, style: str) -> Text:
    cells: list[tuple[str, str]] = [("·", "grey23")] * cols
    for s in spans:
        a = _col(s.start, start, per_col)
        b = _col(s.end if s.end is not None else now, start, per_col)
        if b < 0 or a >= cols:
            continue
        a, b = max(0, a), min(cols - 1, max(a, b))
        bad = s.status in ("error", "timeout", "rejected")
        name = s.text if s.lane == "tool" else ""
        for col in range(a, b + 1):
            k = col - a
            ch = name[k] if k < len(name) and b - a + 1 > len(name) + 1 and k < b - a else "█"
            cells[col] = (ch, f"reverse {'red' if bad else style}" if ch != "█" else ("red" if bad else style))
        if s.barge_in:
            cells[b] = ("✂", "bold red")
    out = Text()
    run, style = "", ""
    for ch, st in cells:  # runs of one style: a few appends per lane, not one per cell
        if st != style and run:
            out.append(run, style=style)
            run = ""
        run, style = run + ch, st
    out.append(run, style=style)
    return out


def _notes(spans: list[Span], start: float, per_col: float, cols: int) -> Text:
    cells = [" "] * cols
    for s in spans:
        a = _col(s.start, start, per_col)
        if 0 <= a < cols:
            cells[a] = "♪"
            room = max(0, min(24, cols - a - 2))
            text = s.text if len(s.text) <= room else s.text[: room - 1] + "…"
            for k, ch in enumerate(text[:room]):
                if cells[a + 1 + k] == " ":
                    cells[a + 1 + k] = ch
    return Text("".join(cells), style="yellow")


def _axis(offset_s: float, per_col: float, cols: int) -> str:
    """Seconds since the call began, a tick every few columns."""
    cells = [" "] * cols
    step = max(8, cols // 8)
    for col in range(0, cols - 4, step):
        label = f"╵{offset_s + col * per_col:.0f}s"
        for i, ch in enumerate(label):
            if col + i < cols:
                cells[col + i] = ch
    return "".join(cells)
