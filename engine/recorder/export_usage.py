"""The usage part of a call's export: each turn's tokens and cost, the call's total, its budget alerts.

Why apart from export.py: the recorded ``usage.updated``, ``call.usage`` and ``usage.budget`` lines fold into one
section of their own (JSON ``usage``, Markdown "## Usage"), and ``ava-engine usage`` sums the same summaries
over many recordings, so the reading lives in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engine.usage.report import UsageReport


def usage_summary(lines: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The recorded usage of one call: ``{provider, model, priced, cost, session_s, total, turns, budget}`` (total
    and each turn's usage as ``UsageReport`` dicts, costs in US dollars); None when nothing was recorded."""
    turns: list[dict[str, Any]] = []
    budget: list[dict[str, Any]] = []
    final: Mapping[str, Any] | None = None
    head: Mapping[str, Any] | None = None
    for d in lines:
        t = d.get("type")
        if t == "usage.updated":
            head = d
            used = UsageReport.from_dict(d.get("usage") or {})
            turns.append(
                {"ts": d.get("ts"), "turn": d.get("turn"), "usage": used.to_dict(), "cost": _num(d.get("cost"))}
            )
        elif t == "call.usage":
            final = head = d
        elif t == "usage.budget":
            budget.append(
                {k: d.get(k) for k in ("ts", "level", "fraction", "cost", "tokens", "max_cost", "max_tokens", "action")}
            )
    if head is None:
        return None
    if final is not None:
        total = UsageReport.from_dict(final.get("usage") or {})
        if total.empty:  # a first-version call.usage: flat fields only
            total = UsageReport.from_dict(final)
        cost, session_s = _num(final.get("cost")), _num(final.get("session_s"))
    else:  # the engine stopped before the call ended: the last running total
        last = UsageReport()
        for row in turns:
            last = last + UsageReport.from_dict(row["usage"])
        total, cost, session_s = last, sum(r["cost"] for r in turns), _num(head.get("session_s"))
    return {
        "provider": head.get("provider"),
        "model": head.get("model"),
        "priced": bool(head.get("priced")),
        "cost": round(cost, 9),
        "session_s": session_s,
        "total": total.to_dict(),
        "turns": turns,
        "budget": budget,
    }


def _num(v: Any) -> float:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0.0


def usage_markdown(u: Mapping[str, Any] | None) -> list[str]:
    """The "## Usage" section of the Markdown export."""
    out = ["", "## Usage", ""]
    if not u:
        return [*out, "(no usage was reported)"]
    t = u["total"]
    cost = f"${u['cost']:.4f}" if u["priced"] else "no price configured"
    out.append(
        f"{t['input_tokens']} tokens in ({t['cached_input_tokens']} cached, {t['input_audio_tokens']} audio), "
        f"{t['output_tokens']} out ({t['output_audio_tokens']} audio); {cost} "
        f"({u['provider']}, {u.get('model') or '?'})."
    )
    if u["turns"]:
        out += ["", "| Turn | In | Cached | Out | Cost |", "|---|---|---|---|---|"]
        for r in u["turns"]:
            x = r["usage"]
            cells = (r["turn"], x["input_tokens"], x["cached_input_tokens"], x["output_tokens"], f"${r['cost']:.4f}")
            out.append("| " + " | ".join(str(c) for c in cells) + " |")
    for b in u["budget"]:
        out.append(
            f"\n_Budget {b['level']} at {_num(b['fraction']):.0%}{': ' + b['action'] if b.get('action') else ''}._"
        )
    return out
