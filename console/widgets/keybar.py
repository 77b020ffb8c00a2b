"""The key bar above the footer: screen keys and the tier keys (call and global default), keymap-aware.

It renders the app's live bindings, so a remapped key in ``console.keymap`` shows here at once. The active tier is
marked (reverse video): the selected call's current tier, plus "auto" while no operator override holds it, and the
global default. Precedence (engine/budget/selector.py): operator per call > operator global default > context
``mode: fixed`` > the automatic selector.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.binding import Binding
from textual.keys import format_key
from textual.widgets import Static

SHIFTED = {
    "f17": "⇧F5",
    "f18": "⇧F6",
    "f19": "⇧F7",
    "f20": "⇧F8",
    "shift+f5": "⇧F5",
    "shift+f6": "⇧F6",
    "shift+f7": "⇧F7",
    "shift+f8": "⇧F8",
}


def key_label(key: str) -> str:
    """How a key is shown (shift+F5 and its F17 alias both as ⇧F5)."""
    first = key.split(",")[0].strip()
    if first in ("question_mark", "slash"):  # shown as the character typed
        return format_key(first)
    return SHIFTED.get(first, first.upper() if len(first) <= 3 else first)


#: The marked (active) tier's style.
ACTIVE = "bold reverse"
TIER_LABELS = (("fast", "FAST"), ("standard", "STD"), ("deep", "DEEP"), ("auto", "auto"))


#: The screen keys' line: binding id suffix, label, and the label a narrow terminal gets.
SCREEN_KEYS = (
    ("calls", "Calls", "Calls"),
    ("tools", "Tool log", "Log"),
    ("servers", "Servers", "Servers"),
    ("budget", "Budget", "Budget"),
    ("secrets", "Secrets", "Secrets"),
    ("config", "Config", "Config"),
    ("outbox", "Outbox", "Outbox"),
)
#: A selected call's id is cut to this many cells on a terminal too narrow for the whole tier line.
CALL_ID_CELLS = 12


def render_keys(
    bindings: Iterable[Binding],
    selected_call: str | None,
    default_tier: str,
    call_tier: str | None = None,
    overridden: bool = False,
    width: int | None = None,
) -> Text:
    """The two key lines, each fitted to ``width`` (roomy, then compact, then the call id cut).

    ``call_tier`` is the selected call's tier while it is live (None: no live call selected, so its tier keys, which
    would do nothing, are left out); ``overridden`` whether the operator set it."""
    by_id = {b.id: b for b in bindings if b.id}

    def line(compact: bool, call: str | None) -> Text:
        return _tier_line(by_id, compact, call, call_tier, overridden, default_tier)

    def fits(text: Text) -> bool:
        return width is None or text.cell_len <= width

    tiers = line(False, selected_call)
    if not fits(tiers):
        tiers = line(True, selected_call)
    if not fits(tiers) and selected_call is not None and len(selected_call) > CALL_ID_CELLS:
        tiers = line(True, selected_call[: CALL_ID_CELLS - 1] + "…")
    keys = _screen_line(by_id, False)
    if not fits(keys):
        keys = _screen_line(by_id, True)
    if width is not None:  # still too wide (a very narrow terminal): cut, never wrap into the next line's room
        tiers.truncate(width, overflow="ellipsis")
        keys.truncate(width, overflow="ellipsis")
    return Text("\n").join([tiers, keys])


def _tier_line(
    by_id: dict[str, Binding],
    compact: bool,
    call: str | None,
    call_tier: str | None,
    overridden: bool,
    default_tier: str,
) -> Text:
    """The tier keys: the selected live call's (its tier marked, and auto while not overridden), then the default's."""
    out = Text()
    gap, sep = ("", " ") if compact else (" ", "  ")

    def key(binding_id: str, label: str, active: bool = False) -> None:
        b = by_id.get(binding_id)
        if b is None:
            return
        out.append(key_label(b.key), style="bold dark_orange")
        out.append(gap)
        out.append(label, style=ACTIVE if active else "")
        out.append(sep)

    if call_tier is not None and call is not None:
        out.append(f"{call}: " if compact else f"tier {call}: ", style="bold")
        for t, label in TIER_LABELS:
            key(f"tier_{t}", label, t == call_tier or (t == "auto" and not overridden))
        out.append("│ ", style="dim")
    out.append("default: " if compact else f"default ({default_tier}): ", style="bold")
    for t, label in TIER_LABELS:
        key(f"default_{t}", label, t == default_tier)
    out.rstrip()
    return out


def _screen_line(by_id: dict[str, Binding], compact: bool) -> Text:
    """The screen keys, the command palette and the keys help."""
    out = Text()
    for sid, label, short in SCREEN_KEYS:
        b = by_id.get(f"screen_{sid}")
        if b is not None:
            out.append(key_label(b.key), style="bold dark_orange")
            out.append(short if compact else f" {label}")
            out.append(" " if compact else "  ")
    out.append("^P" if compact else "Ctrl+P", style="bold dark_orange")
    out.append(" all " if compact else " all commands  ")
    b = by_id.get("key_help")
    if b is not None:
        out.append(key_label(b.key), style="bold dark_orange")
        out.append("keys")
    out.rstrip()
    return out


class KeyBar(Static):
    """Two lines of keys, fitted to the bar's width; the screen calls ``show`` when the selection, default tier or
    keymap changes, and a resize fits them again."""

    _shown: tuple[list[Binding], str | None, str, str | None, bool] | None = None

    def show(
        self,
        bindings: Iterable[Binding],
        selected_call: str | None,
        default_tier: str,
        call_tier: str | None = None,
        overridden: bool = False,
    ) -> None:
        self._shown = (list(bindings), selected_call, default_tier, call_tier, overridden)
        self._draw()

    def _draw(self) -> None:
        if self._shown is not None:
            self.update(render_keys(*self._shown, width=self.size.width or None))

    def on_resize(self) -> None:
        self._draw()
