"""The tier selector: picks each turn's latency tier from what was said, the queue, and the operator.

Priority, first match wins (the operator's choices beat the config's, the config's ``fixed`` beats the heuristics):

1. the operator's override for this call (sticky until set back to "auto");
2. the operator's global default, when set (not "auto"): every turn of every call without its own override, from
   a new call's first turn on, contexts declared ``fixed`` included (the operator is in charge of the floor);
3. context ``tier.mode: fixed`` → the context's default, nothing else is consulted;
4. a deep keyword ("think carefully" …) → DEEP, unless the last DEEP turn began less than ``deep_cooldown_s``
   ago → STANDARD ("deep cooldown");
5. ``waiting_callers >= queue_depth_fast`` → FAST;
6. a standard keyword ("remember", "who is" …) → STANDARD;
7. the call's first turn → STANDARD;
8. the context's default.

Keywords match whole words, case-insensitively, with any run of whitespace between words. ``decide`` is a pure
function of its inputs (the clock is passed in), so tests need no sleeping.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from engine.config.models import ContextTierConfig, SelectorConfig

FAST, STANDARD, DEEP = "fast", "standard", "deep"


@lru_cache(maxsize=64)
def _keyword_rx(keywords: tuple[str, ...]) -> re.Pattern[str] | None:
    words = [k.strip() for k in keywords if k.strip()]
    if not words:
        return None
    alts = "|".join(r"\s+".join(re.escape(w) for w in k.split()) for k in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alts})(?!\w)", re.IGNORECASE)


def find_keyword(text: str, keywords: Sequence[str]) -> str | None:
    rx = _keyword_rx(tuple(keywords))
    if rx is None:
        return None
    m = rx.search(text)
    return " ".join(m.group(0).lower().split()) if m else None


@dataclass(frozen=True, slots=True)
class TurnFacts:
    """Everything one decision depends on."""

    text: str
    turn: int
    now: float
    override: str | None = None
    context_tier: ContextTierConfig = field(default_factory=ContextTierConfig)
    engine_default: str = "auto"
    waiting_callers: int = 0
    last_deep_turn_at: float | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    tier: str
    reason: str

    @property
    def is_deep_turn(self) -> bool:
        return self.tier == DEEP and self.reason.startswith("deep keyword")


def default_decision(ctx: ContextTierConfig, engine_default: str) -> Decision:
    if engine_default != "auto":
        return Decision(engine_default, f"engine default ({engine_default}, set by the operator)")
    return Decision(ctx.default, "context default")


def decide(f: TurnFacts, cfg: SelectorConfig) -> Decision:
    if f.override:
        return Decision(f.override, "operator override")
    if f.engine_default != "auto":
        return default_decision(f.context_tier, f.engine_default)
    if f.context_tier.mode == "fixed":
        return Decision(f.context_tier.default, "context default (fixed)")
    kw = find_keyword(f.text, cfg.deep_keywords)
    if kw is not None:
        if f.last_deep_turn_at is not None and f.now - f.last_deep_turn_at < cfg.deep_cooldown_s:
            since = f.now - f.last_deep_turn_at
            return Decision(
                STANDARD,
                f"deep cooldown: deep keyword '{kw}' {since:.0f} s after the last deep turn "
                f"(cooldown {cfg.deep_cooldown_s:g} s)",
            )
        return Decision(DEEP, f"deep keyword '{kw}'")
    if f.waiting_callers >= cfg.queue_depth_fast:
        return Decision(FAST, f"queue depth: {f.waiting_callers} callers waiting (>= {cfg.queue_depth_fast})")
    kw = find_keyword(f.text, cfg.standard_keywords)
    if kw is not None:
        return Decision(STANDARD, f"standard keyword '{kw}'")
    if f.turn <= 1:
        return Decision(STANDARD, "first turn")
    return default_decision(f.context_tier, f.engine_default)
