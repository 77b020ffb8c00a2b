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


def render_keys(
    bindings: Iterable[Binding],
    selected_call: str | None,
    default_tier: str,
    call_tier: str | None = None,
    overridden: bool = False,
) -> Text:
    """The key lines; ``call_tier`` is the selected call's tier, ``overridden`` whether the operator set it."""
    by_id = {b.id: b for b in bindings if b.id}
    out = Text()

    def key(binding_id: str, label: str, active: bool = False) -> None:
        b = by_id.get(binding_id)
        if b is None:
            return
        out.append(key_label(b.key), style="bold dark_orange")
        out.append(" ")
        out.append(label, style=ACTIVE if active else "")
        out.append("  ")

    out.append(f"tier {selected_call or '(no call)'}: ", style="bold")
    for t, label in TIER_LABELS:
        active = call_tier is not None and (t == call_tier or (t == "auto" and not overridden))
        key(f"tier_{t}", label, active)
    out.append("│ ", style="dim")
    out.append(f"default ({default_tier}): ", style="bold")
    for t, label in TIER_LABELS:
        key(f"default_{t}", label, t == default_tier)
    out.append("\n")
    for sid, label in (
        ("calls", "Calls"),
        ("tools", "Tool log"),
        ("servers", "Servers"),
        ("budget", "Budget"),
        ("secrets", "Secrets"),
        ("config", "Config"),
        ("outbox", "Outbox"),
    ):
        key(f"screen_{sid}", label)
    out.append("Ctrl+P", style="bold dark_orange")
    out.append(" all commands  ")
    key("key_help", "keys")
    return out


class KeyBar(Static):
    """One line of keys; the screen calls ``show`` when the selection, default tier or keymap changes."""

    def show(
        self,
        bindings: Iterable[Binding],
        selected_call: str | None,
        default_tier: str,
        call_tier: str | None = None,
        overridden: bool = False,
    ) -> None:
        self.update(render_keys(bindings, selected_call, default_tier, call_tier, overridden))
