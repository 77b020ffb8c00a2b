"""The Calls table's Why: why a call has its tier, in the operator's words.

Why a module: the engine's reason is the one its last turn was decided with, so right after the operator sets a
global default (⇧F5–⇧F8) a call still read "context default" although the default decides its next turn. The Why
names the operator's default as soon as it is set (and says when it takes hold), an operator's own override on the
call still wins (engine/budget/selector.py: per-call override > global default > context > selector).
"""

from __future__ import annotations

from console.state import CallRow

OVERRIDE = "operator override"


def tier_label(tier: str) -> str:
    return "auto" if tier == "auto" else tier.upper()


def why_text(row: CallRow, default_tier: str) -> str:
    """The Why cell of a live call: its tier's reason, with the operator's switches on its tools."""
    why = row.tier_reason
    if default_tier != "auto" and why != OVERRIDE:
        why = f"operator's default {tier_label(default_tier)}"
        if row.tier != default_tier:  # the engine applies it when it next decides, at the next turn
            why += " from the next turn"
    return why + (f" · tools: {row.tools_note}" if row.tools_note else "")


def why_title(call_id: str, row: CallRow, why: str) -> str:
    """The calls table's title: the selected call's whole Why (the cell may end in "…")."""
    return f"{call_id}: {why}"
