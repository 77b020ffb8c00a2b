"""The approval panel: the tool calls waiting for the operator, with their arguments and a live countdown.

Why a panel and not a modal: a modal popping up while the operator types in the talk box would take the next key
as an answer. The panel sits above the calls table, only while something waits (it is mounted on the first
approval, never in the first frame); the Calls screen's keys (``y`` approve, ``x`` deny, ``X`` deny with a
reason) answer the row marked ``▶``: the oldest of the selected call, else the oldest of all (the one whose time runs
out first); ``]`` moves the mark to the next one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.text import Text
from textual.widgets import Static

from console.approvals import PendingRow

PANEL_ID = "approvals"


def remaining_text(seconds: float) -> str:
    """The countdown as shown: whole seconds left, never below zero."""
    return f"{max(0, int(seconds + 0.999))} s left"


def render_rows(
    rows: Sequence[PendingRow], now: float, keys: tuple[str, str, str] = ("y", "x", "X"), marked: str | None = None
) -> Text:
    """The rows, the ``marked`` one (default: the first) with ▶, then the keys (approve, deny, deny with a reason)."""
    out = Text()
    mark = marked if any(r.approval_id == marked for r in rows) else (rows[0].approval_id if rows else None)
    for i, row in enumerate(rows):
        if i:
            out.append("\n")
        left = row.deadline - now
        out.append("▶ " if row.approval_id == mark else "  ", style="bold")
        out.append(f"{remaining_text(left):>9}", style="bold red" if left < 5 else "bold yellow")
        out.append("  ")
        out.append(row.exposed_name, style="bold")
        out.append(f" ({row.server}) on {row.where()}")
        out.append(f"\n    arguments: {row.arguments_text()}")
        out.append(f"\n    why: {row.reason}", style="dim")
    if rows:
        out.append("\n")
        for key, label in zip(keys, ("approve the ▶ call", "deny it", "deny, say why"), strict=True):
            out.append(key, style="bold dark_orange")
            out.append(f" {label}  ")
        if len(rows) > 1:
            out.append(f"  ·  {len(rows) - 1} more waiting (] next)", style="dim")
    return out


class ApprovalPanel(Static):
    """Shows ``rows()`` against ``now()``; ticks every half second while anything waits (when ``tick``)."""

    def __init__(
        self,
        rows: Callable[[], Sequence[PendingRow]],
        now: Callable[[], float],
        keys: Callable[[], tuple[str, str, str]],
        marked: Callable[[], str | None] = lambda: None,
        *,
        tick: bool = True,
    ) -> None:
        super().__init__(id=PANEL_ID)
        self._marked = marked
        self._rows = rows
        self._now = now
        self._keys = keys
        self._tick = tick

    def on_mount(self) -> None:
        self.border_title = "⚠ Tool approval needed"
        if self._tick:
            self.set_interval(0.5, self.show)
        self.show()

    def show(self) -> None:
        rows = self._rows()
        self.display = bool(rows)
        if rows:
            self.border_subtitle = f"{len(rows)} waiting"
            self.update(render_rows(rows, self._now(), self._keys(), self._marked()))
