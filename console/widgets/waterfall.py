"""The per-turn latency waterfall: each turn's stages as bars on one time scale, against its tier's budget line.

Why a widget of its own: the operator's question is "why was that answer slow?" — which stage, which tool on which
server, and whether the turn broke its tier's budget. Every turn of the call is drawn on the same scale (so turns
compare at a glance), the budget is a vertical rule, a bar past it turns red, the turn's slowest stage is named,
and the head line gives p50/p95 and the worst turn. Drawn from ``console.timings_state`` only (events), so a
replayed recording draws the same picture. Playout (the answer itself, often seconds) is clipped at the right edge.
"""

from __future__ import annotations

from rich.text import Text
from textual.strip import Strip
from textual.widget import Widget

from console.timings_state import CallTimings, Stage, TurnRow

#: The stage labels' column: as wide as the longest label (a tool's "server·tool" is often past 20 cells), within
#: these bounds (at most a third of the width: the bars need the room more).
LABEL_MIN = 14
LABEL_MAX_SHARE = 3
VALUE_W = 8
#: Turns drawn (the newest); older ones stay in the percentiles.
SHOWN_TURNS = 20
STAGE_STYLE = {
    "endpointing": "grey62",
    "stt": "cyan",
    "model": "blue",
    "tool": "magenta",
    "tts": "green",
    "playout": "green4",
}


def fmt_ms(ms: float) -> str:
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.0f} ms"


def summary(c: CallTimings | None) -> Text:
    """The head line: turns, p50/p95 of the turns' latency, the worst turn and its slowest stage."""
    out = Text()
    if c is None or not c.turns:
        out.append("no turns timed yet", style="dim")
        return out
    pct = c.latency_percentiles()
    worst = c.worst()
    over = sum(1 for t in c.turns if t.over_budget)
    out.append(f"turns {len(c.turns)}", style="bold")
    if pct is not None:
        out.append(f"  p50 {fmt_ms(pct[0])}  p95 {fmt_ms(pct[1])}")
    if worst is not None:
        slow = worst.slowest()
        style = "bold red" if worst.over_budget else ""
        out.append(f"  worst: turn {worst.turn} {fmt_ms(worst.latency_ms)}", style=style)
        if slow is not None:
            out.append(f" ({slow.title})")
    if over:
        out.append(f"  over budget: {over}", style="red")
    return out


def scale_ms(turns: list[TurnRow]) -> float:
    """One scale for every drawn turn: the latest pre-playout end or budget, with room to spare."""
    top = 1.0
    for t in turns:
        top = max(top, t.budget_ms, t.latency_ms, *(s.end_ms for s in t.stages if s.name != "playout"))
    return top * 1.1


class Waterfall(Widget):
    """Renders the selected call's turns; ``show(timings)`` redraws."""

    DEFAULT_CSS = """
    Waterfall { height: auto; width: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.timings: CallTimings | None = None
        self._cache: tuple[tuple[int, int, int], Text] | None = None
        self._strips: tuple[tuple[int, int, int, object], list[Strip]] | None = None

    def show(self, timings: CallTimings | None) -> None:
        self.timings = timings
        self.refresh(layout=True)

    def _key(self, width: int) -> tuple[int, int, int]:
        return (id(self.timings), self.timings.revision if self.timings else -1, width)

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        return len(self.strips(width))

    def render_line(self, y: int) -> Strip:
        """One line of the drawing (the Line API: a 20-turn waterfall is ~150 lines, and the pane shows a dozen)."""
        strips = self.strips(self.size.width)
        return strips[y] if 0 <= y < len(strips) else Strip.blank(self.size.width, self.rich_style)

    def strips(self, width: int) -> list[Strip]:
        """The drawing as styled lines for ``width``, made once per drawing and width (not on every repaint)."""
        key = (*self._key(width), self.rich_style)
        if self._strips is None or self._strips[0] != key:
            console, style = self.app.console, self.rich_style
            lines = self._drawing(width).split("\n")
            made = [Strip(list(line.render(console)), line.cell_len).crop(0, width) for line in lines]
            self._strips = (key, [strip.apply_style(style) for strip in made])
        return self._strips[1]

    def lines(self, width: int) -> Text:
        """The drawing for ``width``, as text (a copy: the caller may change it)."""
        return self._drawing(width).copy()

    def _drawing(self, width: int) -> Text:
        key = self._key(width)
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, self._draw(width))
        return self._cache[1]

    def _draw(self, width: int) -> Text:
        c = self.timings
        out = Text()
        if c is None or not c.turns:
            out.append("no turns timed yet: a turn shows here once its answer has played", style="dim")
            return out
        turns = list(c.turns)[-SHOWN_TURNS:]
        label_w = label_width(turns, width)
        bar_w = max(10, width - label_w - VALUE_W - 2)
        scale = scale_ms(turns)
        out.append(_axis(scale, bar_w, label_w), style="dim")
        for t in turns:
            out.append("\n")
            out.append_text(_turn_head(t, width))
            budget_col = min(bar_w - 1, int(t.budget_ms / scale * bar_w)) if t.budget_ms else None
            for s in t.stages:
                out.append("\n")
                out.append_text(_stage_line(s, t, scale, bar_w, budget_col, label_w))
        return out


def _label(s: Stage) -> str:
    return ("  " + s.title) if s.name == "tool" else s.title


def label_width(turns: list[TurnRow], width: int) -> int:
    """The label column's width: the longest stage label and a space, within LABEL_MIN and a third of ``width``."""
    longest = max((len(_label(s)) for t in turns for s in t.stages), default=0)
    return max(LABEL_MIN, min(longest + 1, width // LABEL_MAX_SHARE))


def _axis(scale: float, bar_w: int, label_w: int) -> str:
    """The time axis above the bars: a few ms/s ticks over the bar columns."""
    cells = [" "] * bar_w
    step = max(10, bar_w // 4)
    for col in range(0, bar_w - 6, step):
        label = fmt_ms(col / bar_w * scale).replace(" ", "")
        for i, ch in enumerate(f"╵{label}"):
            if col + i < bar_w:
                cells[col + i] = ch
    return " " * label_w + "".join(cells)


def _turn_head(t: TurnRow, width: int) -> Text:
    head = Text()
    head.append(f"turn {t.turn}", style="bold")
    head.append(f"  {t.tier.upper()}", style="bold yellow")
    budget = f" / budget {fmt_ms(t.budget_ms)}" if t.budget_ms else ""
    head.append(f"  {fmt_ms(t.latency_ms)}{budget}", style="bold red" if t.over_budget else "")
    slow = t.slowest()
    if slow is not None:
        head.append("  slowest: ", style="dim")
        head.append(slow.title, style="bold")
    head.truncate(width, overflow="ellipsis")
    return head


def _stage_line(s: Stage, t: TurnRow, scale: float, bar_w: int, budget_col: int | None, label_w: int) -> Text:
    """One stage: its label, its bar (red past the budget rule, ``›`` when clipped), its duration.

    Built from runs of equal style (not cell by cell): the view redraws on every batch that timed a turn."""
    line = Text()
    label = _label(s)
    if len(label) >= label_w:  # a narrow terminal: the label ends in "…" (the turn's head names the slowest whole)
        label = label[: label_w - 2] + "…"
    line.append(label.ljust(label_w), style=STAGE_STYLE.get(s.name, ""))
    first = min(bar_w - 1, int(s.start_ms / scale * bar_w))
    last = max(first + 1, min(bar_w, round(s.end_ms / scale * bar_w)))
    ch = "░" if s.name == "playout" else "█"
    base = STAGE_STYLE.get(s.name, "white")
    split = last if budget_col is None or s.name == "playout" else max(first, min(last, budget_col))
    rule = budget_col is not None and not first <= budget_col < last
    if rule and budget_col is not None and budget_col < first:
        line.append(" " * budget_col)
        line.append("│", style="yellow")
        line.append(" " * (first - budget_col - 1))
    else:
        line.append(" " * first)
    line.append(ch * (split - first), style=base)
    line.append(ch * (last - split), style="red")
    if s.end_ms > scale:
        line.right_crop(1)
        line.append("›", style=base)
    if rule and budget_col is not None and budget_col >= last:
        line.append(" " * (budget_col - last))
        line.append("│", style="yellow")
        line.append(" " * (bar_w - budget_col - 1))
    else:
        line.append(" " * (bar_w - last))
    mark = {"cut": "✂", "": "", "success": ""}.get(s.status, "✖")  # cut by barge-in; a tool that failed
    value = f"{fmt_ms(s.duration_ms)}{mark}"
    line.append(" " + value.rjust(VALUE_W - 1), style="red" if mark == "✖" else "")
    return line
