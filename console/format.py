"""How the console shows things: status icons and colours, times, durations, masked arguments.

The clock is injectable so snapshot tests render the same screen every run (no ticking durations).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from rich.text import Text

STATUS_STYLE: dict[str, tuple[str, str]] = {
    "running": ("◌", "yellow"),
    "success": ("✔", "green"),
    "error": ("✖", "red"),
    "timeout": ("⧗", "dark_orange"),
    "rejected": ("⊘", "magenta"),
    "cancelled": ("⊗", "grey50"),
    "lost": ("✖", "red"),  # its engine went away (an attached console: ``console.attach``)
}

SERVER_STYLE: dict[str, tuple[str, str]] = {
    "ready": ("●", "green"),
    "up": ("●", "green"),
    "running": ("●", "green"),
    "starting": ("◐", "yellow"),
    "connecting": ("◐", "yellow"),
    "restarting": ("↻", "yellow"),
    "degraded": ("◑", "dark_orange"),
    "failed": ("✖", "red"),
    "needs sign-in": ("◇", "dark_orange"),
    "crashed": ("✖", "red"),
    "unhealthy": ("✖", "red"),
    "stopped": ("○", "grey50"),
    "disabled": ("○", "grey50"),
}

TIER_STYLE = {"fast": "cyan", "standard": "green", "deep": "magenta", "auto": "grey70"}


class Clock:
    """Wall time for the console's displays."""

    def now(self) -> float:
        return time.time()

    def hms(self, ts: float) -> str:
        return time.strftime("%H:%M:%S", time.localtime(ts))


class FixedClock(Clock):
    """A stopped clock: every time shows as the same instant (snapshot tests)."""

    def __init__(self, at: float = 0.0, shown: str = "12:00:00") -> None:
        self._at = at
        self._shown = shown

    def now(self) -> float:
        return self._at

    def hms(self, ts: float) -> str:
        return self._shown


def duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def cost_text(cost: float | None) -> str:
    """A call's cost: "-" when it has no price (or no usage yet), cents below a dollar shown to the hundredth."""
    if cost is None:
        return "-"
    return f"${cost:.4f}" if cost < 1 else f"${cost:.2f}"


def status_text(status: str) -> Text:
    icon, style = STATUS_STYLE.get(status, ("?", "white"))
    return Text(f"{icon} {status}", style=style)


def server_state_text(state: str) -> Text:
    icon, style = SERVER_STYLE.get(state.rstrip("…"), ("?", "white"))  # "starting…": the engine is being built
    return Text(f"{icon} {state}", style=style)


def tier_text(tier: str) -> Text:
    return Text(tier.upper(), style=f"bold {TIER_STYLE.get(tier, 'white')}")


def latency(ms: float | None) -> str:
    if ms is None:
        return "…"
    return f"{ms:.0f} ms" if ms >= 1 else "<1 ms"


def pretty(value: Any) -> str:
    import json  # only the detail views need it: not imported before the first frame

    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def sparkline(values: Iterable[float], width: int = 12) -> str:
    """A tiny unicode sparkline for table cells (the Sparkline widget is too heavy for a cell)."""
    vals = list(values)[-width:]
    if not vals:
        return ""
    bars = "▁▂▃▄▅▆▇█"
    lo, hi = min(vals), max(vals)
    span = hi - lo or 1.0
    return "".join(bars[min(7, int((v - lo) / span * 7))] for v in vals)


VOICE_STYLE: dict[str, tuple[str, str]] = {
    "idle": ("○", "grey50"),
    "starting": ("◐", "yellow"),
    "listening": ("●", "green"),
    "hearing": ("●", "bold green"),
    "thinking": ("◌", "yellow"),
    "speaking": ("▶", "cyan"),
    "ended": ("○", "grey50"),
}
METER_FLOOR_DBFS = -60.0


def level_meter(dbfs: float, width: int = 6) -> Text:
    """The input level as a bar: empty at -60 dBFS or below, full at 0 dBFS, red near clipping."""
    fraction = min(1.0, max(0.0, (dbfs - METER_FLOOR_DBFS) / -METER_FLOOR_DBFS))
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    bar = "█" * full + ("▏▎▍▌▋▊▉"[part - 1] if part else "")
    style = "red" if dbfs > -6 else "yellow" if dbfs > -20 else "green"
    return Text.assemble((bar, style), ("·" * (width - len(bar)), "grey50"))


def voice_slot_text(
    state: str,
    level_dbfs: float = -120.0,
    *,
    muted: bool = False,
    push_to_talk: bool = False,
    talking: bool = False,
    problem: str | None = None,
    agent_dbfs: float = -120.0,
) -> Text:
    """The softphone's voice status in two short lines: state, mute and push-to-talk; then the levels of what
    you (the caller) say into the mic and of what the agent says."""
    if state in ("idle", "ended"):
        if problem:
            return Text("voice: no audio", style="yellow")
        return Text("voice: off (v)", style="grey50")
    icon, style = VOICE_STYLE.get(state, ("?", "white"))
    out = Text(f"{icon} {state}", style=style)
    if muted:
        out.append(" MUTE", style="bold red")
    elif push_to_talk:
        out.append(" TALK" if talking else " ptt", style="bold red" if talking else "grey50")
    out.append("\nyou ", style="grey70")
    out.append_text(level_meter(level_dbfs, 5))
    out.append(" agent ", style="grey70")
    out.append_text(level_meter(agent_dbfs, 5))
    return out
